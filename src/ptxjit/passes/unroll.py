"""Unrolling lockstep loops (tier 1, from the trip counts tier 0's counters saw).

A lockstep loop (passes/lockstep.py) returns to the CTA scheduler after every iteration: each
round, every thread restores its live registers, runs one iteration, and saves them and its resume
code again.  For a loop whose body is a few instructions (histogram's `atomicAdd(&h[data[i]], 1)`)
that bookkeeping is most of the work.  Unrolled `factor` times with the lockstep point only at the
first copy's head, a round runs up to `factor` iterations per thread for one save and restore.

Each copy is the loop's own instructions in the same order (PTX registers are not SSA, so no
renaming is needed): the copies' labels get fresh names, a back edge goes on to the next copy's
head and the last copy's back to the lockstep head, and a copy's exit leaves the loop as the
original did.  A thread therefore executes exactly the instruction sequence it executed before;
only how many iterations a scheduler round holds changes, and lockstep points may be suspended
at any iteration (they exchange nothing), so results are bit-identical.
"""

from __future__ import annotations

import dataclasses

from ptxjit.frontend import ir
from ptxjit.passes.lockstep import LOCKSTEP


def lockstep_heads(fn: ir.Function) -> dict[str, int]:
    """Label name -> body index of every loop head carrying a lockstep point."""
    body = fn.body or []
    return {st.name: i for i, st in enumerate(body[:-1])
            if isinstance(st, ir.Label) and isinstance(body[i + 1], ir.Instr) and body[i + 1].opcode == LOCKSTEP}


def unroll_lockstep(fn: ir.Function, factors: dict[str, int]) -> tuple[ir.Function, dict[int, ir.Instr]]:
    """`fn` with the lockstep loops headed by the labels in `factors` unrolled that many times, and
    for each instruction object new in the copies the original it was made from (branch weights
    and other per-instruction facts carry over).  Loops nested in another lockstep loop, loops
    whose labels are used other than as branch targets, and unknown labels are left alone."""
    heads = lockstep_heads(fn)
    body = list(fn.body or [])
    origin: dict[int, ir.Instr] = {}
    spans = {name: (h, _back_edge_end(body, h)) for name, h in heads.items()}
    todo = sorted(((h, k, name) for name, (h, k) in spans.items()
                   if k is not None and factors.get(name, 1) > 1), reverse=True)
    for h, k, name in todo:
        if any(o != name and oh is not None and ok is not None and (h < oh <= k or oh < h <= ok)
               for o, (oh, ok) in spans.items()):
            continue
        new = _unrolled(body, h, k, factors[name], origin)
        if new is not None:
            body = new
    if body == (fn.body or []):
        return fn, origin
    return dataclasses.replace(fn, body=body), origin


def _branch_target(st) -> str | None:
    if isinstance(st, ir.Instr) and st.opcode == "bra" and st.operands and isinstance(st.operands[0], ir.Sym):
        return st.operands[0].name
    return None


def _back_edge_end(body: list, h: int) -> int | None:
    """Index of the last branch back to the label at body[h]."""
    name = body[h].name
    ends = [k for k in range(h, len(body)) if _branch_target(body[k]) == name]
    return max(ends) if ends else None


def _unrolled(body: list, h: int, k: int, factor: int, origin: dict[int, ir.Instr]) -> list | None:
    """`body` with the loop body[h..k] followed by factor-1 copies of itself (module doc); None if
    a label of the loop is referenced other than as a branch's target."""
    loop = body[h:k + 1]
    head = body[h].name
    inner = {st.name for st in loop if isinstance(st, ir.Label)}
    for st in loop:
        if isinstance(st, ir.Instr):
            refs = [i for i, op in enumerate(st.operands) if isinstance(op, ir.Sym) and op.name in inner]
            if refs and (refs != [0] or st.opcode != "bra"):
                return None
    taken = {st.name for st in body if isinstance(st, ir.Label)}

    def fresh(name: str, tag: str) -> str:
        n = f"{name}$u{tag}"
        while n in taken:
            n += "_"
        taken.add(n)
        return n

    names = [{n: (n if j == 0 else fresh(n, str(j))) for n in inner} for j in range(factor)]
    back = body[k]
    # a conditional back edge falls through out of the loop: the copies before the last jump there
    exit_label = fresh(head, "x") if back.guard is not None else None
    out: list = []
    for j in range(factor):
        rename = names[j]
        next_head = names[j + 1][head] if j + 1 < factor else head
        for st in loop:
            if isinstance(st, ir.Label):
                out.append(st if j == 0 else ir.Label(rename[st.name], st.pos))
                continue
            if j > 0 and st.opcode == LOCKSTEP:
                continue  # one scheduler round holds all the copies
            target = _branch_target(st)
            new = st
            if target in inner:
                new = dataclasses.replace(st, operands=[ir.Sym(next_head if target == head else rename[target]),
                                                        *st.operands[1:]])
            elif j > 0:
                new = dataclasses.replace(st)  # a distinct object per copy: lowering keys facts by id
            if new is not st:
                origin[id(new)] = origin.get(id(st), st)
            out.append(new)
        if exit_label is not None and j + 1 < factor:
            out.append(ir.Instr("bra", (), [ir.Sym(exit_label)], None, back.pos))
    if exit_label is not None:
        out.append(ir.Label(exit_label, back.pos))
    return [*body[:h], *out, *body[k + 1:]]
