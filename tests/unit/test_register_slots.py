"""Register slots (lower/function.py Registers): slots for the registers the instructions name, zeroed only
where a register may be read before it is written, and a slot made on demand for any other declared
register at the top of the entry block without moving the lowering's builder."""

from __future__ import annotations

from types import SimpleNamespace

import llvmlite.binding as llvm
from llvmlite import ir as ll

from ptxjit.lower.function import FnLowering, Registers
from ptxjit.lower.types import I32


def _lowering(regs: dict[str, str]):
    mod = ll.Module(name="slots")
    f = ll.Function(mod, ll.FunctionType(I32, [I32]), name="f")
    entry = f.append_basic_block("entry")
    lw = SimpleNamespace(fn=SimpleNamespace(regs=regs), pointer_regs=set(), entry=entry, b=ll.IRBuilder(entry))
    lw.new_register_slot = FnLowering.new_register_slot.__get__(lw)
    return mod, f, lw


def test_named_registers_get_slots_zeroed_only_where_read_first():
    mod, f, lw = _lowering({"%r1": "u32", "%r2": "u32", "%r3": "u32"})
    regs = Registers(lw, named={"%r1", "%r2"}, read_first={"%r2"})
    assert dict.__contains__(regs, "%r1") and dict.__contains__(regs, "%r2")
    assert not dict.__contains__(regs, "%r3") and "%r3" in regs  # declared: made when asked for
    lw.b.ret(lw.b.load(regs["%r2"]))
    text = str(mod)
    assert "store i32 0, i32* %\"r2\"" in text and "store i32 0, i32* %\"r1\"" not in text


def test_a_slot_made_on_demand_keeps_the_builder_in_place():
    mod, f, lw = _lowering({"%r1": "u32", "%r9": "u32"})
    regs = Registers(lw, named={"%r1"}, read_first=set())
    b = lw.b
    first = b.add(f.args[0], ll.Constant(I32, 1))
    b.store(first, regs["%r1"])
    # the builder mid-block (before `last`): the new slot goes to the top, the next instruction after `first`
    last = b.add(first, ll.Constant(I32, 2))
    b.position_before(last)
    late = regs["%r9"]  # declared, named by no instruction
    mid = b.mul(first, ll.Constant(I32, 3))
    b.position_at_end(lw.entry)
    b.store(b.add(mid, last), late)
    b.ret(b.load(late))
    order = lw.entry.instructions
    assert order[0] is late and order.index(mid) == order.index(last) - 1
    llvm.parse_assembly(str(mod)).verify()
