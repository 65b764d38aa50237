"""Control-flow graph, register use/def and liveness over a PTX function body.

Used by lowering to save only the registers live across a suspension point (barrier or warp
collective) instead of the whole register file.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ptxjit.frontend import ir

# instructions whose first operand is not a destination register
NO_DEST = frozenset({"st", "red", "bra", "brx", "ret", "exit", "trap", "membar", "fence", "prefetch",
                     "prefetchu", "cp", "call", "pmevent", "nanosleep", "brkpt", "applypriority", "discard",
                     "griddepcontrol", "setmaxnreg"})
TERMINATORS = frozenset({"bra", "brx", "ret", "exit", "trap"})
# register-to-register operations: their results are functions of their operands (and guard) only --
# but for CARRY_READERS, which also read the carry flag an add.cc/sub.cc/mad.cc wrote: an implicit
# register that defs_uses does not name (the taint analysis of instrument/independence.py tracks it,
# the shuffle scheduler of passes/shflsched.py leaves those instructions in place)
PURE = frozenset({
    "add", "sub", "mul", "mad", "fma", "div", "rem", "abs", "neg", "min", "max", "addc", "subc", "madc",
    "mul24", "mad24", "sad", "dp4a", "dp2a", "and", "or", "xor", "not", "cnot", "lop3", "shl", "shr", "shf",
    "bfe", "bfi", "bfind", "bmsk", "brev", "clz", "fns", "popc", "prmt", "szext", "selp", "set", "setp",
    "slct", "cvt", "cvta", "copysign", "rcp", "sqrt", "rsqrt", "sin", "cos", "lg2", "ex2", "tanh", "testp",
    "mov", "isspacep", "createpolicy",
})
CARRY_READERS = frozenset({"addc", "subc", "madc"})


def operand_reg_names(op) -> list[str]:
    """The names of the registers an operand reads or writes (an address's base included, the sink `_` not)."""
    if isinstance(op, ir.Reg):
        return [op.name] if op.name != "_" else []
    if isinstance(op, ir.Addr):
        return operand_reg_names(op.base) if isinstance(op.base, ir.Reg) else []
    if isinstance(op, ir.Vec | ir.CallList):
        return [r for x in op.items for r in operand_reg_names(x)]
    if isinstance(op, ir.Pair):
        return operand_reg_names(op.first) + operand_reg_names(op.second)
    return []




def has_dest(ins: ir.Instr) -> bool:
    if ins.opcode in ("bar", "barrier"):
        return "red" in ins.mods
    return ins.opcode not in NO_DEST and bool(ins.operands)


def defs_uses(ins: ir.Instr) -> tuple[list[str], list[str]]:
    """(registers written, registers read).  A guarded write may not happen: it also counts as a read.
    Kept on the instruction (never changed in place): the passes and the lowering ask tens of times."""
    kept = ins.__dict__.get("_defs_uses")
    if kept is None:
        kept = ins.__dict__["_defs_uses"] = tuple(map(tuple, _defs_uses(ins)))
    return list(kept[0]), list(kept[1])


def _defs_uses(ins: ir.Instr) -> tuple[list[str], list[str]]:
    ops = ins.operands
    if has_dest(ins):
        d = operand_reg_names(ops[0])
        u = [r for op in ops[1:] for r in operand_reg_names(op)]
        # a vector destination of ld is written; an address in operand 0 would be a read
        if isinstance(ops[0], ir.Addr):
            d, u = [], operand_reg_names(ops[0]) + u
    else:
        d = []
        u = [r for op in ops for r in operand_reg_names(op)]
    if ins.opcode == "wgmma":  # wgmma.mma_async reads its accumulator too (scale-d)
        u = u + d
    if ins.guard is not None:
        u = u + [ins.guard.name] + d
    return d, u


@dataclass
class Block:
    start: int  # index into body
    end: int  # exclusive
    succs: list[int] = field(default_factory=list)
    live_in: set[str] = field(default_factory=set)
    live_out: set[str] = field(default_factory=set)


def build_cfg(fn: ir.Function) -> tuple[list[Block], dict[str, int]]:
    body = fn.body or []
    starts = {0}
    for i, st in enumerate(body):
        if isinstance(st, ir.Label):
            starts.add(i)
        elif st.opcode in TERMINATORS:
            starts.add(i + 1)
    order = sorted(s for s in starts if s <= len(body))
    blocks = [Block(s, e) for s, e in zip(order, order[1:] + [len(body)], strict=True) if s < e or s == 0]
    label_block: dict[str, int] = {}
    for bi, blk in enumerate(blocks):
        for st in body[blk.start:blk.end]:
            if isinstance(st, ir.Label):
                label_block[st.name] = bi
            else:
                break
    branch_tables = getattr(fn, "branch_tables", {})
    for bi, blk in enumerate(blocks):
        last = body[blk.end - 1] if blk.end > blk.start else None
        falls = True
        if isinstance(last, ir.Instr) and last.opcode in TERMINATORS:
            if last.opcode == "bra" and isinstance(last.operands[0], ir.Sym):
                blk.succs.append(label_block.get(last.operands[0].name, -1))
            elif last.opcode == "brx":
                for name in branch_tables.get(getattr(last.operands[1], "name", ""), []):
                    blk.succs.append(label_block.get(name, -1))
            falls = last.guard is not None
        if falls and bi + 1 < len(blocks):
            blk.succs.append(bi + 1)
        blk.succs = [s for s in blk.succs if s >= 0]
    return blocks, label_block


def liveness(fn: ir.Function) -> tuple[list[Block], dict[int, set[str]]]:
    """Live registers per block, and live-after sets per instruction id (id(instr)) for all instructions.
    Kept on the function while its body holds the same statements (instructions are never changed in
    place: passes build new ones), so the lowering's several asks compute it once; read-only."""
    body = fn.body or []
    signature = (id(body), tuple(map(id, body)))
    kept = fn.__dict__.get("_liveness")
    if kept is not None and kept[0] == signature:
        return kept[1]
    result = _liveness(fn, body)
    fn.__dict__["_liveness"] = (signature, result)
    return result


def _liveness(fn: ir.Function, body: list) -> tuple[list[Block], dict[int, set[str]]]:
    blocks, _ = build_cfg(fn)
    summaries = []
    for blk in blocks:
        use: set[str] = set()
        dfn: set[str] = set()
        for st in body[blk.start:blk.end]:
            if isinstance(st, ir.Instr):
                d, u = defs_uses(st)
                use.update(r for r in u if r not in dfn)
                dfn.update(d if st.guard is None else ())
        summaries.append((use, dfn))
    changed = True
    while changed:
        changed = False
        for bi in range(len(blocks) - 1, -1, -1):
            blk = blocks[bi]
            out = set().union(*(blocks[s].live_in for s in blk.succs)) if blk.succs else set()
            use, dfn = summaries[bi]
            new_in = use | (out - dfn)
            if out != blk.live_out or new_in != blk.live_in:
                blk.live_out, blk.live_in = out, new_in
                changed = True
    after: dict[int, set[str]] = {}
    for blk in blocks:
        live = set(blk.live_out)
        for st in reversed(body[blk.start:blk.end]):
            if isinstance(st, ir.Instr):
                after[id(st)] = set(live)
                d, u = defs_uses(st)
                if st.guard is None:
                    live -= set(d)
                live |= set(u)
    return blocks, after


def with_marker_after(fn: ir.Function, positions: set[int], opcode: str) -> ir.Function:
    """A copy of `fn` with a scheduling-only pseudo-instruction `opcode` after each body index in
    `positions` (loop heads: lockstep points, spin points); `fn` itself is left as it was."""
    if not positions:
        return fn
    body = fn.body or []
    new_body: list[ir.Instr | ir.Label] = []
    for i, st in enumerate(body):
        new_body.append(st)
        if i in positions:
            new_body.append(ir.Instr(opcode, (), [], None, st.pos))
    return dataclasses.replace(fn, body=new_body)
