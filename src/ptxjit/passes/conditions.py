"""Execution conditions: predicates that hold whenever an instruction executes, known from the control flow.

A block with one predecessor is entered only over that edge, so when the predecessor ends in a
conditional branch `@p bra T`, the block runs only where p holds (it is T) or only where p does not
(the fall-through); and so on up a chain of such blocks.  The bounds precheck (lower/safety/bounds.py) checks an
access only for the threads whose conditions hold, so that a guarded access like a reduction's

    setp.lt.u32   %p3, %r1, 128;          // if (tid < 128)
    @!%p3 bra     $L__BB0_4;
    ld.shared.f32 %f2, [%r9+512];         //     s[tid + 128]

does not send every CTA to the fully checked copy because threads that never run it would overrun.  Only
predicates computed by pure definitions (`pure`: the rematerializable registers of passes/remat.py, the
same value whenever a thread computes them) count; a chain stops at the first other one, which is
conservative (fewer conditions: more threads checked).
"""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import build_cfg

Condition = tuple[tuple[str, bool], ...]  # (predicate register, holds when true) for each edge


def execution_conditions(fn: ir.Function, pure: set[str]) -> dict[int, Condition]:
    """id(instruction) -> the predicates that hold whenever it executes (only instructions with some)."""
    body = fn.body or []
    cfg, _ = build_cfg(fn)
    preds: dict[int, list[int]] = {}
    for bi, blk in enumerate(cfg):
        for s in blk.succs:
            preds.setdefault(s, []).append(bi)
    memo: dict[int, Condition] = {}

    def cond(bi: int, depth: int = 0) -> Condition:
        if bi in memo:
            return memo[bi]
        memo[bi] = ()  # (a cycle of single-predecessor blocks: no condition)
        ps = preds.get(bi, [])
        out: Condition = ()
        if len(ps) == 1 and bi != 0 and depth < 64:
            p = cfg[ps[0]]
            last = body[p.end - 1] if p.end > p.start else None
            edge = _edge(last, p.succs, bi, pure)
            if edge is not None:
                out = (*cond(ps[0], depth + 1), edge)
        memo[bi] = out
        return out

    out: dict[int, Condition] = {}
    for bi, blk in enumerate(cfg):
        c = cond(bi)
        if c:
            for st in body[blk.start:blk.end]:
                if isinstance(st, ir.Instr):
                    out[id(st)] = c
    return out


def _edge(last, succs: list[int], target: int, pure: set[str]) -> tuple[str, bool] | None:
    """The condition of the edge into block `target` from a block ending in `last`, or None."""
    if not (isinstance(last, ir.Instr) and last.opcode == "bra" and last.guard is not None and len(succs) == 2):
        return None
    if succs[0] == succs[1]:
        return None
    g = last.guard
    if not isinstance(g, ir.Reg) or g.name not in pure or g.sel or g.minus:
        return None
    taken = target == succs[0]  # build_cfg: the branch target first, the fall-through second
    return g.name, taken != g.neg
