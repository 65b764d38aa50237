"""A static proof that a launch makes no misaligned access, so that memcheck can skip the trace.

memcheck finds out-of-bounds accesses with the launch's own bounds checks (about the cost of a plain
launch) but misaligned ones only from memory records (a trace: counting run, traced run, sorting).  Most
kernels index arrays as `base + i * sizeof(T)`: their alignment follows from the argument pointers'
alignment, which is known at launch.  This module computes, per register, a power of two that surely
divides its value (flow-insensitive: the minimum over every definition, iterated to a fixed point), for
the kernel function with the launch's actual argument values; when every memory access's address is a
multiple of its natural alignment, the launch cannot be misaligned and memcheck runs it plainly.
Anything it does not understand counts as alignment 1 (no proof: memcheck then traces).
"""

from __future__ import annotations

import numpy as np

from ptxjit.frontend import ir
from ptxjit.util import PerObject

TOP = 16  # the largest alignment that matters (16-byte vector accesses)


def lowbit(v: int) -> int:
    """The largest power of two (<= TOP) dividing v."""
    v &= (1 << 64) - 1
    return TOP if v == 0 else min(v & -v, TOP)


def _arg_alignment(arg) -> int:
    from ptxjit.runtime.memory import DeviceArray, Pointer

    if isinstance(arg, DeviceArray):
        arg = arg.array
    if isinstance(arg, np.ndarray):
        return lowbit(int(arg.ctypes.data))
    if isinstance(arg, Pointer):
        return lowbit(int(arg.address))
    if isinstance(arg, bool):
        return 1
    if isinstance(arg, int | np.integer):
        return lowbit(int(arg))
    return 1


def _var_alignment(module: ir.Module, fn: ir.Function, name: str) -> int:
    for v in (*fn.vars, *module.globals):
        if v.name == name:
            return min(max(v.alignment, 1), TOP)
    return 1


class Alignment:
    """Register alignments of one function for one launch's arguments."""

    def __init__(self, module: ir.Module, fn: ir.Function, args) -> None:
        self.module = module
        self.fn = fn
        self.params = {p.name: _arg_alignment(a) for p, a in zip(fn.params, args, strict=False)}
        self.regs: dict[str, int] = {}
        defs = [(ins, ins.operands[0].name) for ins in fn.instructions
                if ins.operands and isinstance(ins.operands[0], ir.Reg) and ins.opcode not in ("st", "red")]
        for ins in fn.instructions:  # multi-register destinations (ld.v2, Pair): nothing known
            if ins.operands and isinstance(ins.operands[0], ir.Vec | ir.Pair):
                items = ins.operands[0].items if isinstance(ins.operands[0], ir.Vec) else \
                    (ins.operands[0].first, ins.operands[0].second)
                for r in items:
                    if isinstance(r, ir.Reg):
                        self.regs[r.name] = 1
        for _, name in defs:
            self.regs.setdefault(name, TOP)
        changed = True
        while changed:  # monotone: alignments only decrease, so this ends
            changed = False
            for ins, name in defs:
                v = self._eval(ins)
                if v < self.regs[name]:
                    self.regs[name] = v
                    changed = True

    def operand(self, op) -> int:
        if isinstance(op, ir.Reg):
            return self.regs.get(op.name, 1)  # special registers (%tid.x ...): unknown
        if isinstance(op, ir.Imm):
            return lowbit(op.value)
        if isinstance(op, ir.Sym):
            return min(_var_alignment(self.module, self.fn, op.name), lowbit(op.offset))
        return 1

    def address(self, addr: ir.Addr) -> int:
        base = TOP if addr.base is None else self.operand(addr.base)
        return min(base, lowbit(addr.offset))

    def _eval(self, ins: ir.Instr) -> int:
        op, ops = ins.opcode, ins.operands
        types = ins.types()
        if any(ir.is_float_type(t) for t in types) and op != "mov":
            return 1
        a = lambda k: self.operand(ops[k]) if len(ops) > k else 1  # noqa: E731
        if op == "mov" and len(ops) == 2:
            return a(1)
        if op in ("add", "sub") and len(ops) == 3 and not ins.has("cc", "sat"):
            return min(a(1), a(2))
        if op == "mul" and len(ops) == 3 and ins.has("lo", "wide"):
            return min(a(1) * a(2), TOP)
        if op == "mad" and len(ops) == 4 and ins.has("lo", "wide") and not ins.has("cc"):
            return min(a(1) * a(2), a(3), TOP)
        if op == "shl" and len(ops) == 3 and isinstance(ops[2], ir.Imm):
            return min(a(1) << min(max(ops[2].value, 0), 4), TOP)
        if op in ("cvta", "cvt") and len(ops) == 2 and not ins.has("sat"):
            return a(1)
        if op == "and" and len(ops) == 3:
            return max(a(1), a(2))
        if op == "ld" and ins.has("param") and len(ops) == 2 and isinstance(ops[1], ir.Addr) \
                and isinstance(ops[1].base, ir.Sym) and ops[1].offset == 0 and not ins.has("v2", "v4"):
            return self.params.get(ops[1].base.name, 1)
        return 1


_PROVEN = PerObject()  # kernel -> {the arguments' alignments: whether every access is aligned}


def proven_aligned(kernel, plan, args) -> bool:
    """Whether every memory access of the launch (plan: its "memory" sites) is surely aligned."""
    from ptxjit.checking.records import site_instr

    # the proof depends on the code and on the arguments' alignments only: cached per kernel by those
    key = tuple(_arg_alignment(a) for a in args)
    cache = _PROVEN.of(kernel)
    got = cache.get(key)
    if got is None:
        got = cache[key] = _proven(kernel, plan, args, site_instr)
    return got


def _proven(kernel, plan, args, site_instr) -> bool:
    fn = kernel.fn
    al = None
    for s in plan.memory:
        if s.function != fn.name:  # device functions: their pointers come from the caller; no proof
            return False
        if al is None:
            al = Alignment(kernel.module.ir, fn, args)
        ins = site_instr(kernel.module, s)
        addrs = [o for o in ins.operands if isinstance(o, ir.Addr)]
        if ins.opcode == "cp":
            addrs = addrs[::-1]  # cp.async: part 0 the global source (second operand), part 1 the destination
        if len(addrs) <= s.part:
            return False
        need = min(max(s.size & -s.size, 1), TOP)
        if al.address(addrs[s.part]) < need:
            return False
    return True
