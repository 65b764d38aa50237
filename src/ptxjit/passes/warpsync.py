"""Warp-synchronous volatile code: lockstep rounds between a warp's volatile loads and stores.

Pre-Volta CUDA code (the CUDA samples' reductions, SHOC, Rodinia, old CUB) ends a block reduction
or scans a warp's elements through a `volatile` shared (or global) pointer with no barrier and no
`__syncwarp()`:

    if (tid < 32) { volatile float* s = sdata; s[tid] += s[tid + 32]; s[tid] += s[tid + 16]; ... }

It relies on the lanes of a warp running each instruction together: every lane's volatile loads of
step k happen before any lane's store of step k, and every lane's store of step k before any lane's
loads of step k + 1.  A GPU runs it that way.  Region mode runs a CTA's threads one after another
between suspension points, so thread 0 would finish all its steps before thread 1 stores its first
partial sum.

This pass puts a scheduling-only suspension point (`warpstep`, lowered as a warp point: it exchanges
nothing) wherever a volatile access may follow a volatile access of the other kind (a load after a
store, a store after a load) with no suspension point between them.  The scheduler resumes warp
points in program order, so each point starts a round that runs every thread waiting there up to the
next one: the lanes then see each other's accesses in the order lockstep execution gives, lanes that
skip a step (`if (lane >= 2)`) wait at a later point while the others run it, and code with no
volatile access is returned unchanged.

Loops without a suspension point of their own get points only where they step an induction register
and store volatile memory: a spin-wait on a volatile flag (`while (*flag == 0);`) must not hold its
thread at a warp point, which the scheduler would resume round after round ahead of the thread that
sets the flag (lower/progress.py gives such loops their spin points).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ptxjit.frontend import ir

WARPSTEP = "warpstep"
# state spaces a volatile access orders between lanes (local memory is the thread's own; a missing
# space is generic, which may be shared or global)
_PRIVATE = frozenset({"param", "local", "const"})
_LOAD, _STORE = "ld", "st"


def _volatile_kind(st: ir.Instr | ir.Label) -> str | None:
    """"ld" or "st" for a volatile load or store that other lanes may see, else None."""
    if not isinstance(st, ir.Instr) or st.opcode not in (_LOAD, _STORE):
        return None
    if not st.has("volatile") or st.has(*_PRIVATE):
        return None
    return st.opcode


def _hazard(pending: frozenset[str], kind: str) -> bool:
    """A store after a load, or a load after a store, since the last suspension point.  (Loads after
    loads read the same memory in any order; stores after stores leave the last lane's value as a
    lockstep step does, since lanes run in order within a round.)"""
    return (_STORE if kind == _LOAD else _LOAD) in pending


def _successors(body: list, i: int, labels: dict[str, int]) -> list[int]:
    st = body[i]
    nxt = [i + 1] if i + 1 < len(body) else []
    if not isinstance(st, ir.Instr):
        return nxt
    if st.opcode == "bra" and st.operands:
        t = st.operands[0]
        tgt = [labels[t.name]] if isinstance(t, ir.Sym) and t.name in labels else []
        return tgt + (nxt if st.guard is not None else [])
    if st.opcode == "brx":  # a target list: any label may follow
        return sorted(labels.values()) + (nxt if st.guard is not None else [])
    if st.opcode in ("ret", "exit", "trap") and st.guard is None:
        return []
    return nxt


def _loops(body: list, labels: dict[str, int]) -> list[tuple[int, int]]:
    """(head, back edge) body index spans of the loops, by their back edges."""
    out = []
    for k, st in enumerate(body):
        if isinstance(st, ir.Instr) and st.opcode == "bra" and st.operands and isinstance(st.operands[0], ir.Sym):
            h = labels.get(st.operands[0].name)
            if h is not None and h <= k:
                out.append((h, k))
    return out


def _steps_induction(loop: list[ir.Instr]) -> bool:
    """Some register stepped by itself plus something (`add i, i, s`): a counted or stride loop."""
    for s in loop:
        if s.opcode in ("add", "sub") and len(s.operands) == 3:
            d, a, c = s.operands
            if isinstance(d, ir.Reg) and any(isinstance(x, ir.Reg) and x.name == d.name for x in (a, c)):
                return True
    return False


def warp_sync_points(fn: ir.Function, yields: Callable[[ir.Instr], bool]) -> ir.Function:
    """A copy of kernel `fn` with a `warpstep` point before each volatile load or store that may
    follow a volatile access of the other kind with no suspension point between (`fn` itself if none)."""
    body = fn.body or []
    if not any(_volatile_kind(st) for st in body):
        return fn
    labels = {st.name: i for i, st in enumerate(body) if isinstance(st, ir.Label)}
    # positions inside a loop with no suspension point where a point could hold a spinning thread
    barred: set[int] = set()
    for h, k in _loops(body, labels):
        loop = [s for s in body[h:k + 1] if isinstance(s, ir.Instr)]
        if any(yields(s) for s in loop):
            continue
        if _steps_induction(loop) and any(_volatile_kind(s) == _STORE for s in loop):
            continue
        barred.update(range(h, k + 1))
    # forward dataflow: the volatile access kinds since the last suspension point, at each statement
    empty: frozenset[str] = frozenset()
    state: list[frozenset[str] | None] = [None] * len(body)
    if body:
        state[0] = empty
    work = [0] if body else []
    while work:
        i = work.pop()
        cur = state[i]
        st = body[i]
        kind = _volatile_kind(st)
        if kind is not None:
            out = frozenset({kind}) if _hazard(cur, kind) and i not in barred else cur | {kind}
        elif isinstance(st, ir.Instr) and yields(st):
            out = empty
        else:
            out = cur
        for j in _successors(body, i, labels):
            old = state[j]
            new = out if old is None else old | out
            if new != old:
                state[j] = new
                work.append(j)
    points = {i for i, st in enumerate(body)
              if (kind := _volatile_kind(st)) is not None and state[i] is not None
              and _hazard(state[i], kind) and i not in barred}
    if not points:
        return fn
    new_body: list[ir.Instr | ir.Label] = []
    for i, st in enumerate(body):
        if i in points:
            new_body.append(ir.Instr(WARPSTEP, (), [], None, st.pos))
        new_body.append(st)
    return dataclasses.replace(fn, body=new_body)
