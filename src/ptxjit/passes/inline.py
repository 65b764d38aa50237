"""PTX-level inlining of calls to device functions that contain barriers or warp collectives
(or warp-synchronous volatile steps, which run in lockstep rounds: passes/warpsync.py).

A suspension point must be in the kernel body itself (a thread suspends by returning to the CTA
scheduler), so calls to such functions -- nvcc keeps `__noinline__` helpers that call
`__syncthreads()` or `__shfl_sync()` as real `.func`s -- are replaced by the callee's body, with its
registers, labels and local variables renamed apart, `.param` accesses redirected to the caller's
argument variables and `ret` turned into a branch to the call's continuation.
"""

from __future__ import annotations

import dataclasses
import itertools

from ptxjit.frontend import ir
from ptxjit.isa.calls import split_call
from ptxjit.passes.warpsync import warp_sync_points

MAX_DEPTH = 16


def _suspending(module: ir.Module, yields) -> set[str]:
    """Functions that (transitively) contain a suspension point."""
    calls: dict[str, set[str]] = {}
    direct: set[str] = set()
    for f in module.functions.values():
        if f.body is None or f.is_entry:
            continue
        calls[f.name] = set()
        if warp_sync_points(f, yields) is not f:  # warp-synchronous volatile steps: lockstep rounds
            direct.add(f.name)
        for ins in f.instructions:
            if yields(ins):
                direct.add(f.name)
            if ins.opcode == "call":
                for op in ins.operands:
                    if isinstance(op, ir.Sym):
                        calls[f.name].add(op.name)
    out = set(direct)
    changed = True
    while changed:
        changed = False
        for name, callees in calls.items():
            if name not in out and callees & out:
                out.add(name)
                changed = True
    return out


def inline_suspending_calls(module: ir.Module, yields) -> int:
    """Inline, into every kernel, the calls to functions with suspension points; returns how many."""
    targets = _suspending(module, yields)
    if not targets:
        return 0
    counter = itertools.count(1)
    done = 0
    for fn in module.entries:
        for _ in range(MAX_DEPTH):
            new_body: list = []
            changed = False
            for st in fn.body or ():
                callee = _callee(st, targets, module)
                if callee is None:
                    new_body.append(st)
                    continue
                new_body.extend(_expand(fn, st, callee, next(counter)))
                changed = True
                done += 1
            fn.body = new_body
            if not changed:
                break
    return done


def _callee(st, targets: set[str], module: ir.Module) -> ir.Function | None:
    if not isinstance(st, ir.Instr) or st.opcode != "call":
        return None
    _rets, target, _args = split_call(st)
    if isinstance(target, ir.Sym) and target.name in targets:
        return module.functions[target.name]
    return None


def _expand(caller: ir.Function, call: ir.Instr, callee: ir.Function, k: int) -> list:
    rets, _target, args = split_call(call)
    tag = f"$inl{k}"
    regs = {r: f"{r}{tag}" for r in callee.regs}
    for r, t in callee.regs.items():
        caller.regs[regs[r]] = t
    syms: dict[str, object] = {}
    for p, a in zip(callee.params, args, strict=False):
        syms[p.name] = a
    for p, a in zip(callee.rets, rets, strict=False):
        syms[p.name] = a
    for v in callee.vars:
        if v.space in ("local", "param"):
            nv = dataclasses.replace(v, name=f"{v.name}{tag}")
            caller.vars.append(nv)
            syms[v.name] = ir.Sym(nv.name)
    labels = {st.name: f"{st.name}{tag}" for st in callee.body or () if isinstance(st, ir.Label)}
    done = f"$Lret{tag}"
    for name, targets in callee.branch_tables.items():
        caller.branch_tables[f"{name}{tag}"] = [labels.get(t, t) for t in targets]

    def sym(s: ir.Sym):
        if s.name in labels:
            return ir.Sym(labels[s.name], s.offset)
        if s.name in callee.branch_tables:
            return ir.Sym(f"{s.name}{tag}", s.offset)
        a = syms.get(s.name)
        if isinstance(a, ir.Sym):
            return ir.Sym(a.name, a.offset + s.offset)
        return s if a is None else a

    def op(o):
        if isinstance(o, ir.Reg):
            return dataclasses.replace(o, name=regs.get(o.name, o.name))  # keeps neg, video selectors
        if isinstance(o, ir.Sym):
            return sym(o)
        if isinstance(o, ir.Addr):
            base = o.base
            if isinstance(base, ir.Sym):
                m = sym(base)
                if isinstance(m, ir.Sym):
                    return ir.Addr(ir.Sym(m.name), o.offset + m.offset)
                return ir.Addr(m, o.offset)  # argument passed in a register
            return ir.Addr(op(base) if base is not None else None, o.offset)
        if isinstance(o, ir.Vec):
            return ir.Vec(tuple(op(x) for x in o.items))
        if isinstance(o, ir.CallList):
            return ir.CallList(tuple(op(x) for x in o.items))
        if isinstance(o, ir.Pair):
            return ir.Pair(op(o.first), op(o.second))
        return o

    out: list = []
    skip = f"$Lskip{tag}"
    if call.guard is not None:  # @p call f  ->  @!p bra skip; <body>; skip:
        g = ir.Reg(call.guard.name, not call.guard.neg)
        out.append(ir.Instr("bra", (), [ir.Sym(skip)], g, call.pos, call.src_loc))
    for st in callee.body or ():
        if isinstance(st, ir.Label):
            out.append(ir.Label(labels[st.name], st.pos))
            continue
        guard = op(st.guard) if st.guard is not None else None
        if st.opcode == "ret":
            out.append(ir.Instr("bra", (), [ir.Sym(done)], guard, st.pos, st.src_loc))
            continue
        out.append(ir.Instr(st.opcode, st.mods, [op(o) for o in st.operands], guard, st.pos, st.src_loc))
    out.append(ir.Label(done, call.pos))
    if call.guard is not None:
        out.append(ir.Label(skip, call.pos))
    return out
