"""Rematerializable registers: values that can be recomputed at a resume point instead of saved.

A register qualifies when it has exactly one (unguarded) definition, made by a pure instruction whose
register operands all qualify too (special registers, immediates and kernel parameters are leaves), and
no path from the entry reads it before that definition (it is not live on entry: such a read sees 0,
which is no function of its definition; a hoisted bounds check computed from the definition let such a
load of address 0 through, and the process died).
Its value is then the same function of %tid/%ctaid/parameters wherever it is computed.  Recomputing it
after a barrier keeps it affine in the thread index for LLVM (so the region loop can be vectorized)
and takes it out of the register save area.
"""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import defs_uses, liveness, operand_reg_names

PURE_OPS = frozenset({"add", "sub", "mul", "mad", "mul24", "mad24", "shl", "shr", "and", "or", "xor", "not",
                      "cvt", "cvta", "mov", "setp", "selp", "min", "max", "neg", "abs", "bfe", "bfi", "prmt",
                      "shf", "popc", "clz", "brev", "lop3"})
# integer division too (its lowering never traps: division by zero and INT_MIN / -1 give the H100's
# values, lower/rules/integer.py): framework kernels index with `(i / plane) % channels`, whose
# accesses the bounds precheck can then take out of the thread loop (lower/safety/ranges.py offset_range)
INT_DIVISION = frozenset({"div", "rem"})


def is_pure(ins: ir.Instr) -> bool:
    """A pure opcode: PURE_OPS, or integer div/rem."""
    if ins.opcode in PURE_OPS:
        return True
    t = ins.types()
    return ins.opcode in INT_DIVISION and bool(t) and t[-1][:1] in "usb"


def rematerializable(fn: ir.Function, kernel_params: set[str], is_special) -> dict[str, ir.Instr]:
    """register -> its defining instruction, for every rematerializable register."""
    ndefs: dict[str, int] = {}
    def_of: dict[str, ir.Instr] = {}
    for ins in fn.instructions:
        d, _ = defs_uses(ins)
        for r in d:
            ndefs[r] = ndefs.get(r, 0) + 1
            def_of[r] = ins

    def leaf_ok(ins: ir.Instr) -> bool:
        if ins.guard is not None or any(m in ("cc", "sat") for m in ins.mods) and ins.opcode in ("add", "sub"):
            return False
        if ins.opcode == "ld":
            a = ins.operands[1] if len(ins.operands) > 1 else None
            return (ins.has("param") and isinstance(a, ir.Addr) and isinstance(a.base, ir.Sym)
                    and a.base.name in kernel_params and not isinstance(ins.operands[0], ir.Vec))
        if not is_pure(ins) or ins.has("cc"):
            return False
        return not any(isinstance(op, ir.Addr) for op in ins.operands)

    blocks, _ = liveness(fn)
    read_first = blocks[0].live_in if blocks else set()  # read before any definition on some path
    cand = {r: i for r, i in def_of.items() if ndefs[r] == 1 and r not in read_first and leaf_ok(i)}
    changed = True
    while changed:
        changed = False
        for r, ins in list(cand.items()):
            srcs = [x for op in ins.operands[1:] for x in operand_reg_names(op)] if ins.opcode != "ld" else []
            if ins.guard is not None or any(s not in cand and not is_special(s) for s in srcs):
                del cand[r]
                changed = True
    return cand


def recompute_order(regs: set[str], remat: dict[str, ir.Instr], order: dict[int, int]) -> list[ir.Instr]:
    """The defining instructions needed to recompute `regs` (with their remat operands), in program order."""
    need: dict[int, ir.Instr] = {}
    stack = list(regs)
    while stack:
        r = stack.pop()
        ins = remat.get(r)
        if ins is None or id(ins) in need:
            continue
        need[id(ins)] = ins
        if ins.opcode != "ld":
            stack.extend(x for op in ins.operands[1:] for x in operand_reg_names(op) if x in remat)
    return sorted(need.values(), key=lambda i: order[id(i)])
