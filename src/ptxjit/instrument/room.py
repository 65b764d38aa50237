"""Static per-thread record bounds: the room check that lets record stores go unchecked.

Every record store of the traced code normally goes to `buffer[select(pos < claim end, pos, scratch)]`:
a kernel whose paths differ between the counting run and the traced run (data-dependent control flow on
memory the snapshot does not cover) must never write past its CTA's claim.  That select hides from LLVM
that consecutive records go to consecutive addresses, so the loop over threads stays scalar.

Most kernels' threads run, between two suspension points (from the start or a barrier to the next
barrier or exit), through an acyclic part of the CFG: the records of type t one thread emits in one such
stretch are at most a static number R_t, the longest path's (`record_bounds`).  In the thread loop
(barrier-free kernels: one call of the lowered body runs all N threads of a CTA from start to exit) each
copy of the loop is lowered twice (lower/threadloop.py): once with unchecked record stores, taken when
every type's claim has room for N x R_t more records (`ProbeEmitter.room_ok`, checked once before the
loop), so that no store can leave the claim, and once with the checked stores, taken otherwise -- a CTA
whose threads do not all take the longest path leaves less room than the worst case, and so does a
non-deterministic kernel.  Loops without a suspension point inside, calls and indirect branches give no
bound: those kernels keep the checked stores only.

Region mode (kernels with barriers) is not versioned: a per-call room check as a loop-invariant select
on every record's position bought nothing there (LLVM did not turn it into a vector loop; sgemm's traced
run got slower), and its loops belong to lower/regions.py.

Both versions fill the claim in the same order (a running position), so traces are the same records in
the same places whichever ran.
"""

from __future__ import annotations

from collections.abc import Callable

from ptxjit.frontend import ir
from ptxjit.instrument.probes import NTYPES, T_BARRIERS, T_BLOCKS, T_BRANCHES, T_MEMORY, Plan


def stmt_records(plan: Plan, fname: str, body: list, types: tuple[int, ...]) -> list[list[int]]:
    """Per statement of function `fname`: the records of each type its probes write when it runs
    (its block site's record where a basic block starts there, every memory access, its branch and
    barrier records); guarded instructions count as executed (an upper bound)."""
    want = set(types)
    nparts: dict[int, int] = {}
    for (f, stmt, _part) in plan.memory_at:
        if f == fname:
            nparts[stmt] = nparts.get(stmt, 0) + 1
    out = []
    for i in range(len(body)):
        w = [0] * NTYPES
        if T_BLOCKS in want and (fname, i) in plan.block_at:
            w[T_BLOCKS] = 1
        if T_MEMORY in want:
            w[T_MEMORY] = nparts.get(i, 0)
        if T_BRANCHES in want and (fname, i) in plan.branch_at:
            w[T_BRANCHES] = 1
        if T_BARRIERS in want and (fname, i) in plan.barrier_at:
            w[T_BARRIERS] = 1
        out.append(w)
    return out


def record_bounds(fn: ir.Function, plan: Plan, types: tuple[int, ...],
                  suspends: Callable[[ir.Instr], bool]) -> tuple[int, ...] | None:
    """Per record type: the most records one thread of kernel `fn` (as lowered, the plan's form) writes
    between two suspension points (`suspends(ins)`: the instruction ends the body's call; its own records
    come before), or None when some stretch is unbounded (a loop without a suspension point, a call, an
    indirect branch whose targets are unknown)."""
    from ptxjit.passes.dataflow import build_cfg

    body = fn.body or []
    if any(isinstance(s, ir.Instr) and s.opcode == "call" for s in body):
        return None  # the callee's records are not this function's sites (and it may loop)
    cfg, _ = build_cfg(fn)
    tables = getattr(fn, "branch_tables", {})
    for blk in cfg:
        last = body[blk.end - 1] if blk.end > blk.start else None
        if isinstance(last, ir.Instr) and last.opcode == "brx" and \
                getattr(last.operands[1], "name", "") not in tables:
            return None
    weights = stmt_records(plan, fn.name, body, types)
    stops = [isinstance(s, ir.Instr) and suspends(s) for s in body]
    bounds = []
    for t in range(NTYPES):
        if t not in types:
            bounds.append(0)
            continue
        try:
            r = _bound(cfg, [w[t] for w in weights], stops)
        except RecursionError:  # a very long chain of blocks: no bound (the checked stores are safe)
            r = None
        if r is None:
            return None
        bounds.append(r)
    return tuple(bounds)


def _bound(cfg, w: list[int], stops: list[bool]) -> int | None:
    """The heaviest path between suspension points (weights per statement), None if one is cyclic."""
    memo: dict[int, int] = {}
    on_stack: set[int] = set()

    def run(i: int, end: int, bi: int) -> int | None:
        """Weight from statement i to the next stop (inclusive) in block bi, then on through its successors."""
        acc = 0
        for k in range(i, end):
            acc += w[k]
            if stops[k]:
                return acc
        succ = [enter(s) for s in cfg[bi].succs]
        if any(s is None for s in succ):
            return None
        return acc + max(succ, default=0)

    def enter(bi: int) -> int | None:
        if bi in memo:
            return memo[bi]
        if bi in on_stack:
            return None  # a cycle with no suspension point on it
        on_stack.add(bi)
        r = run(cfg[bi].start, cfg[bi].end, bi)
        on_stack.discard(bi)
        if r is not None:
            memo[bi] = r
        return r

    starts = [enter(0)] if cfg else [0]
    for bi, blk in enumerate(cfg):
        for k in range(blk.start, blk.end):
            if stops[k]:  # a call resumes right after a suspension point
                starts.append(run(k + 1, blk.end, bi))
    if any(s is None for s in starts):
        return None
    return max(starts, default=0)
