"""Batched warp shuffles: independent shfl instructions share one suspension point.

In region mode every warp collective is a suspension point: every thread of the CTA saves its live
registers, the region's loop over the threads ends, and the next region's loop restores them. A
Triton reduction of several rows at once (`tl.sum(acc, axis=1)` over an [8, 128] block) emits one
butterfly chain per row, each chain written out in full before the next:

    shfl r31 <- r162, 16;  add r32;  shfl r33 <- r32, 8;  add r34; ... (8 chains of 5 shuffles)

40 suspension points where the chains' dependences allow 5. `group_shuffles` reorders the pure
register instructions of each basic block (a list schedule over the block's dependences) so that
the shuffles of equal shuffle depth stand back to back; `batched_shfls` then names the shuffles
that share the suspension of the one before them (lower/rules/sync.py publishes the operands of the
whole run before that one suspension and reads every result after it).

Reordering inside a basic block changes no result: every thread that enters the block runs all of
its unguarded instructions, so the lanes of a warp still meet at the same shuffles; register
dependences (read after write, write after read, write after write) are kept, and every instruction
that is not a pure register operation (memory, barriers, other collectives, control flow) keeps its
place relative to the others and to the shuffles.
"""

from __future__ import annotations

import dataclasses

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import CARRY_READERS, PURE, defs_uses

MAX_RUN = 16  # shuffles sharing one suspension at most


def is_shuffle(st) -> bool:
    """An unguarded shfl (a guarded one runs in some lanes only: it keeps its own point)."""
    return isinstance(st, ir.Instr) and st.opcode == "shfl" and st.guard is None


def _pure(ins: ir.Instr) -> bool:
    # (mov/cvt of a special register is pure too: %tid, %ctaid, ... do not change within a block)
    # (addc/subc/madc read the carry flag, a .cc instruction writes it: neither moves)
    return ins.opcode in PURE and ins.opcode not in CARRY_READERS and not ins.has("cc")


def _schedule(block: list[ir.Instr]) -> list[ir.Instr]:
    """The block's instructions with the shuffles of each shuffle depth back to back: for each depth,
    the instructions it needs (in their original order), then its shuffles; the rest after, in order."""
    n = len(block)
    deps: list[set[int]] = [set() for _ in range(n)]
    last_def: dict[str, int] = {}
    reads_since: dict[str, list[int]] = {}
    last_ordered = -1  # the last instruction that keeps its place (not pure, not a shuffle)
    shuffles_since: list[int] = []
    for j, ins in enumerate(block):
        d, u = defs_uses(ins)
        for r in u:  # read after write
            if r in last_def:
                deps[j].add(last_def[r])
        for r in d:  # write after write, write after read
            if r in last_def:
                deps[j].add(last_def[r])
            deps[j].update(reads_since.get(r, ()))
        shuffle = is_shuffle(ins)
        if not shuffle and not _pure(ins):
            if last_ordered >= 0:
                deps[j].add(last_ordered)
            deps[j].update(shuffles_since)
            last_ordered, shuffles_since = j, []
        elif shuffle:
            if last_ordered >= 0:
                deps[j].add(last_ordered)
            shuffles_since.append(j)
        for r in u:
            reads_since.setdefault(r, []).append(j)
        for r in d:
            last_def[r] = j
            reads_since[r] = []
    # depth: how many shuffles lie on the longest dependence path before an instruction
    depth = [0] * n
    for j in range(n):
        depth[j] = max((depth[i] + is_shuffle(block[i]) for i in deps[j]), default=0)
    levels = sorted({depth[j] for j in range(n) if is_shuffle(block[j])})
    done = [False] * n
    out: list[ir.Instr] = []
    for level in levels:
        group = [j for j in range(n) if is_shuffle(block[j]) and depth[j] == level]
        need: set[int] = set()
        stack = [i for j in group for i in deps[j]]
        while stack:
            i = stack.pop()
            if i not in need and not done[i]:
                need.add(i)
                stack.extend(deps[i])
        for j in sorted(need) + group:
            out.append(block[j])
            done[j] = True
    out.extend(block[j] for j in range(n) if not done[j])
    return out


def group_shuffles(fn: ir.Function) -> ir.Function:
    """A copy of `fn` whose basic blocks have their independent shuffles back to back (`fn` itself when
    no block holds two shuffles)."""
    body = fn.body or []
    targets = referenced_names(fn)
    out: list = []
    block: list[ir.Instr] = []
    quiet: list[ir.Label] = []  # labels nothing refers to (Triton's debug-line labels between shuffles)
    changed = False

    def flush() -> None:
        nonlocal changed
        out.extend(quiet)  # (at the block's start: no instruction can jump to them)
        changed = changed or bool(quiet and block)
        quiet.clear()
        if sum(is_shuffle(s) for s in block) > 1:
            new = _schedule(block)
            changed = changed or any(a is not b for a, b in zip(new, block, strict=True))
            out.extend(new)
        else:
            out.extend(block)
        block.clear()

    for st in body:
        if isinstance(st, ir.Instr) and st.opcode not in ("bra", "brx", "ret", "exit", "trap"):
            block.append(st)
            continue
        if isinstance(st, ir.Label) and st.name not in targets:
            quiet.append(st)
            continue
        # labels, terminators and anything else end a block
        flush()
        out.append(st)
    flush()
    return dataclasses.replace(fn, body=out) if changed else fn


def _names(op) -> list[str]:
    if isinstance(op, ir.Sym):
        return [op.name]
    if isinstance(op, ir.Addr):
        return _names(op.base)
    if isinstance(op, ir.Vec | ir.CallList):
        return [n for x in op.items for n in _names(x)]
    return []


def referenced_names(fn: ir.Function) -> set[str]:
    """Every name an instruction or branch table of `fn` refers to (the labels that are jump targets)."""
    out = {name for labels in fn.branch_tables.values() for name in labels}
    for ins in fn.instructions:
        for op in ins.operands:
            out.update(_names(op))
    return out


def batched_shfls(fn: ir.Function, skip: set[int] = frozenset()) -> set[int]:
    """ids of the shuffles that share the suspension of the shuffle right before them: back to back
    (no label between), unguarded, and independent of the run so far (none reads or writes a register
    an earlier one of the run writes, nor writes one it reads), so that every operand of the run can be
    read before the one suspension and every result written after it.  `skip`: ids of shuffles that
    are no suspension of their own (a butterfly chain's later steps: passes/shflchain.py)."""
    out: set[int] = set()
    written: set[str] = set()
    read: set[str] = set()
    length = 0
    for st in fn.body or ():
        if not is_shuffle(st) or id(st) in skip:
            length, written, read = 0, set(), set()
            continue
        d, u = defs_uses(st)
        if length and length < MAX_RUN and not ((set(u) | set(d)) & written) and not (set(d) & read):
            out.add(id(st))
            length += 1
        else:
            length, written, read = 1, set(), set()
        written |= set(d)
        read |= set(u)
    return out
