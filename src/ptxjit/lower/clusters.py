"""The cluster special registers (%cluster_ctaid, %clusterid, %cluster_ctarank, ...) and the cluster
launch's workspace they read (abi.L_CLUSTER, laid out in abi.WS_*; runtime/clusters.py fills it).
Without a cluster launch every block is a cluster of its own, as on a GPU.  `lw`: the function's
lowering (lower/function.py FnLowering, which reads its special registers through here)."""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.lower import abi
from ptxjit.lower.types import I32, I64, const_int

_AXIS = {"x": 0, "y": 1, "z": 2}


def cluster_workspace(lw) -> tuple[ll.Value, ll.Value, list[ll.Value], ll.Value]:
    """(workspace address, cluster launch?, cluster dims (1, 1, 1 without one), explicit flag), loaded
    once per function.  Without a workspace the fields read a zeroed constant."""
    def make(b: ll.IRBuilder):
        ws = b.load(b.gep(lw.launch, [const_int(I32, abi.L_CLUSTER)]))
        base = b.select(b.icmp_unsigned("==", ws, const_int(I64, 0)), b.ptrtoint(_zeros(lw), I64), ws)

        def u32(off: int) -> ll.Value:
            return b.load(b.inttoptr(b.add(base, const_int(I64, off)), I32.as_pointer()))

        on = b.icmp_unsigned("!=", u32(abi.WS_DIMS), const_int(I32, 0))
        dims = [b.select(on, u32(abi.WS_DIMS + 4 * i), const_int(I32, 1)) for i in range(3)]
        return ws, on, dims, u32(abi.WS_EXPLICIT)
    return lw.once_in_entry(("cluster_ws",), make)


def _zeros(lw) -> ll.Value:
    g = lw.cg.llmod.globals.get("ptxjit_cluster_zeros")
    if g is None:
        ty = ll.ArrayType(I64, 8)
        g = ll.GlobalVariable(lw.cg.llmod, ty, name="ptxjit_cluster_zeros")
        g.initializer = ll.Constant(ty, None)
        g.global_constant = True
        g.linkage = "internal"
    return g


def cluster_dims(lw) -> list[ll.Value]:
    """The launch's cluster dims (1, 1, 1 without a cluster launch)."""
    return cluster_workspace(lw)[2]


def ctaid_xyz(lw) -> list[ll.Value]:
    return [lw.special(f"%ctaid.{a}") for a in "xyz"]


def nctaid_xyz(lw) -> list[ll.Value]:
    return [lw.special(f"%nctaid.{a}") for a in "xyz"]


def cluster_register(lw, base: str, comp: str) -> ll.Value:
    """%cluster_ctaid, %cluster_nctaid, %clusterid, %nclusterid (.x/.y/.z), %cluster_ctarank,
    %cluster_nctarank, %is_explicit_cluster."""
    b = lw.b
    k = cluster_dims(lw)
    if base == "%is_explicit_cluster":
        return b.icmp_unsigned("!=", cluster_workspace(lw)[3], const_int(I32, 0))
    if base == "%cluster_nctarank":
        return b.mul(b.mul(k[0], k[1]), k[2])
    if base == "%cluster_ctarank":
        c = [b.urem(v, kk) for v, kk in zip(ctaid_xyz(lw), k, strict=True)]
        return b.add(c[0], b.mul(k[0], b.add(c[1], b.mul(k[1], c[2]))))
    axis = _AXIS.get(comp)
    if axis is None:  # .w or no component: 0 as for %tid.w
        return const_int(I32, 1 if base in ("%cluster_nctaid", "%nclusterid") else 0)
    if base == "%cluster_nctaid":
        return k[axis]
    if base == "%cluster_ctaid":
        return b.urem(ctaid_xyz(lw)[axis], k[axis])
    if base == "%clusterid":
        return b.udiv(ctaid_xyz(lw)[axis], k[axis])
    return b.udiv(nctaid_xyz(lw)[axis], k[axis])  # %nclusterid
