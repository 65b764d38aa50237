"""alloca, stacksave and stackrestore (PTX ISA 7.3+): a per-thread dynamic stack in local memory.  At load
they are rewritten onto the function's stack area and stack pointer (passes/stack.py, which says how);
what is left to lower is the internal alloca form, which moves the stack pointer down, aligned, and
faults where that leaves the area."""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.lower import abi
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.safety.bounds import ADDR_BITS, KIND_LOCAL, pack_fault
from ptxjit.lower.types import I64, const_int
from ptxjit.passes.stack import AREA, MIN_ALIGN


def _check(ins: ir.Instr) -> str | None:
    if "u32" in ins.mods:
        return (f"{ins.opcode}.u32 (a 32-bit local address): ptxjit's local addresses are 64-bit; "
                f"use .u64 (as nvcc and clang do with 64-bit addressing)")
    if ins.opcode == "alloca" and len(ins.operands) > 2:
        a = ins.operands[2]
        if not isinstance(a, ir.Imm) or a.value <= 0 or a.value & (a.value - 1) or a.value > 1 << 23:
            return "the alignment must be an immediate power of 2 up to 2**23"
    return None


@rule("alloca", family="memory", check=_check)
def lower_alloca(lw: FnLowering, ins: ir.Instr) -> None:
    """alloca (rewritten by rewrite_stack): move the stack pointer down, aligned; overflow faults."""
    b = lw.b
    if not (ins.operands and isinstance(ins.operands[0], ir.Vec)):
        raise lw.unsupported("alloca outside a function rewritten for its stack (internal error)")
    sp_dst = ins.operands[0]
    base = b.ptrtoint(lw.var_ptrs[AREA], I64)
    if ins.has("init"):  # function entry: an empty stack
        lw.write(sp_dst, b.add(base, const_int(I64, _area_size(lw))), "u64")
        return
    sp = lw.read(ins.operands[1], "u64")
    size = lw.read(ins.operands[2], "u64")
    align = max(_imm(ins.operands[3]), MIN_ALIGN)
    new = b.and_(b.sub(sp, size), const_int(I64, -align))
    # unsigned: size beyond what is left, or alignment taking it below the area
    over = b.or_(b.icmp_unsigned(">", size, b.sub(sp, base)), b.icmp_unsigned("<", new, base))
    with b.if_then(over, likely=False):
        word = pack_fault(lw.cg.location_id(lw.cur), KIND_LOCAL)
        lw.trap(abi.ERR_FAULT, b.or_(const_int(I64, word), b.and_(new, const_int(I64, (1 << ADDR_BITS) - 1))))
    lw.write(sp_dst, new, "u64")


def _area_size(lw: FnLowering) -> int:
    return next(v.size for v in lw.fn.vars if v.name == AREA)


def _imm(op) -> int:
    assert isinstance(op, ir.Imm)  # _check refused anything else at load
    return op.value


@rule("stacksave", "stackrestore", family="memory", check=_check)
def lower_stack_moved(lw: FnLowering, ins: ir.Instr) -> None:
    """stacksave/stackrestore (rewritten by rewrite_stack into movs of the stack pointer)."""
    raise lw.unsupported(f"{ins.opcode} outside a function rewritten for its stack (internal error)")

