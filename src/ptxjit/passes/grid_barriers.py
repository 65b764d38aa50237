"""CUDA's grid-wide and cluster-wide barriers as CTA barriers around ptxjit's internal waits, rewritten after
validation (the load pipeline, jit/load.py):

- Numba's cooperative-groups calls (`cudaCGGetIntrinsicHandle`, `cudaCGSynchronize`, which nvcc resolves
  in its device runtime): the handle call becomes a store of 0 to its return value, the synchronize call
  `bar.sync 0; gridwait; bar.sync 0`, where `gridwait` (lower/rules/grid_sync.py) has thread 0 arrive at
  the launch's grid barrier and wait for every block;
- `barrier.cluster.wait` becomes `barrier.sync 0; clusterwait; barrier.sync 0`, where `clusterwait`
  (lower/rules/cluster.py) waits for every block of the cluster; `barrier.cluster.arrive` is folded into
  the wait.
"""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.isa.calls import CG_HANDLE, CG_SYNC

# ptxjit's internal instructions the rewrites insert (not PTX: a PTX module naming them is refused)
GRID_WAIT = "gridwait"
CLUSTER_WAIT = "clusterwait"


def _target(ins: Instr) -> tuple[str, tuple]:
    """(callee name, return operands) of a direct call, or ('', ())."""
    ops = list(ins.operands)
    rets: tuple = ()
    if ops and isinstance(ops[0], ir.CallList):
        rets = ops.pop(0).items
    name = ops[0].name if ops and isinstance(ops[0], ir.Sym) else ""
    return name, rets


def _store_zero(ret, width: str, like: Instr) -> Instr:
    return Instr("st", ("param", width), [ir.Addr(ret, 0), ir.Imm(0)], like.guard, like.pos, like.src_loc)


def rewrite_cg_calls(module: ir.Module) -> None:
    """Replace Numba's cooperative-groups calls (see the module docstring).  Runs after validation."""
    for f in module.functions.values():
        if not f.body or not any(isinstance(s, Instr) and s.opcode == "call" and _target(s)[0] in (CG_HANDLE, CG_SYNC)
                                 for s in f.body):
            continue
        out: list = []
        for s in f.body:
            name, rets = _target(s) if isinstance(s, Instr) and s.opcode == "call" else ("", ())
            if name == CG_HANDLE:
                out += [_store_zero(r, "b64", s) for r in rets[:1] if isinstance(r, ir.Sym)]
            elif name == CG_SYNC:
                out += [Instr("barrier", ("sync",), [ir.Imm(0)], s.guard, s.pos, s.src_loc),
                        Instr(GRID_WAIT, (), [], s.guard, s.pos, s.src_loc),
                        Instr("barrier", ("sync",), [ir.Imm(0)], s.guard, s.pos, s.src_loc)]
                out += [_store_zero(r, "b32", s) for r in rets[:1] if isinstance(r, ir.Sym)]
            else:
                out.append(s)
        f.body = out


def rewrite_cluster_barriers(module: ir.Module) -> None:
    """barrier.cluster.wait -> barrier.sync 0; clusterwait; barrier.sync 0.  barrier.cluster.arrive is
    dropped (folded into the wait: lower/rules/cluster.py says why).  Runs after validation."""
    for f in module.functions.values():
        if not f.body or not any(isinstance(s, Instr) and s.opcode == "barrier" and s.has("cluster")
                                 for s in f.body):
            continue
        out: list = []
        for s in f.body:
            if not (isinstance(s, Instr) and s.opcode == "barrier" and s.has("cluster")):
                out.append(s)
                continue
            if s.has("wait"):
                bar = Instr("barrier", ("sync",), [ir.Imm(0)], s.guard, s.pos, s.src_loc)
                out += [bar, Instr(CLUSTER_WAIT, (), [], s.guard, s.pos, s.src_loc),
                        Instr("barrier", ("sync",), [ir.Imm(0)], s.guard, s.pos, s.src_loc)]
        f.body = out
