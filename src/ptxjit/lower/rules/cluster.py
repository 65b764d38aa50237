"""Thread-block clusters (sm_90): `mapa` (distributed shared memory), `barrier.cluster.arrive/wait` and
cp.async.bulk's .multicast::cluster (`lower_bulk_multicast`); the cluster special registers are
lower/clusters.py's.

A cluster launch (runtime/clusters.py) runs the blocks of a cluster at the same time, each on a worker
thread of its own, and gives the launch a workspace (abi.L_CLUSTER):

    +16  u32 cluster dims x, y, z; +28 u32 1 if the kernel declares its cluster (.explicitcluster)
    +32  i64 address of the shared-memory base of every block (by linear block index)
    +40  i64 address of one u32 barrier counter per cluster (by linear cluster index)

Without one (L_CLUSTER = 0) every block is a cluster of its own, as on a GPU.

barrier.cluster.wait is rewritten at load (passes/grid_barriers.py) into a CTA barrier, the internal
`clusterwait` (thread 0 arrives at the cluster's counter and spins until every block of the cluster has
arrived: nvcc's grid.sync() scheme, block rank 0 adding 0x80000001 - blocks) and a second CTA barrier.
barrier.cluster.arrive is folded into that wait: the arrive-wait split is honoured as one barrier at the
wait, which is correct for every program that does not make a block's progress between its arrive and
its wait depend on another block passing its own wait.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower import abi
from ptxjit.lower.clusters import cluster_dims, cluster_workspace, ctaid_xyz, nctaid_xyz
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.rules.grid_sync import arrive_and_spin
from ptxjit.lower.rules.mbarrier import (
    EXP_SHIFT,
    PEND_MASK,
    PHASE_SHIFT,
    TX_BITS,
    TX_SHIFT,
    mbar_modify,
    memcpy_intrinsics,
)
from ptxjit.lower.safety.bounds import ADDR_BITS, KIND_SHARED, pack_fault
from ptxjit.lower.special import special_register
from ptxjit.lower.types import I1, I32, I64, PTR, const_int
from ptxjit.passes.grid_barriers import CLUSTER_WAIT


def _target_block(lw: FnLowering, rank: ll.Value) -> ll.Value:
    """Linear block index (i64) of block `rank` of this block's cluster."""
    b = lw.b
    k = cluster_dims(lw)
    ctaid, nctaid = ctaid_xyz(lw), nctaid_xyz(lw)
    r = [b.urem(rank, k[0]), b.urem(b.udiv(rank, k[0]), k[1]), b.udiv(rank, b.mul(k[0], k[1]))]
    t = [b.add(b.sub(c, b.urem(c, kk)), rr) for c, kk, rr in zip(ctaid, k, r, strict=True)]
    t = [b.zext(v, I64) for v in t]
    g = [b.zext(v, I64) for v in nctaid]
    return b.add(t[0], b.mul(g[0], b.add(t[1], b.mul(g[1], t[2]))))


def _check_mapa(ins: Instr) -> str | None:
    if ins.has("shared::cluster"):
        return None if ins.types() == ["u32"] else "mapa.shared::cluster supports .u32 addresses"
    if ins.types() != ["u64"]:
        return "only mapa.u64 on 64-bit generic addresses is supported"
    return None


def _lower_mapa_cluster(lw: FnLowering, ins: Instr) -> None:
    """mapa.shared::cluster.u32 d, a, rank.  A 32-bit shared::cluster address in ptxjit is an offset in
    the issuing block's own shared window (ld/st/atom/mbarrier/cp.async.bulk on .shared::cluster read it
    so; the hot 32-bit shared accesses stay one add), so the address of the variable in the block's own
    rank is `a` itself, and that is what runs.  Another block's shared memory has no 32-bit address
    here: mapping to another rank stops the thread with an illegal-address error naming this line
    (use mapa.u64 on generic addresses, which nvcc emits for cluster.map_shared_rank; it maps any rank)."""

    b = lw.b
    a = lw.read(ins.operands[1], "u32")
    rank = lw.read(ins.operands[2], "u32")
    own = special_register(lw, "%cluster_ctarank")
    with b.if_then(b.icmp_unsigned("!=", rank, own), likely=False):
        lw.trap(abi.ERR_ILLEGAL_ADDRESS)
    lw.write(ins.operands[0], a, "u32")


@rule("mapa", family="memory", check=_check_mapa)
def lower_mapa(lw: FnLowering, ins: Instr) -> None:
    """mapa.u64 d, a, rank: the generic address of the variable at generic address `a` (in this block's
    shared memory) in the shared memory of block `rank` of the cluster.  Without a cluster launch the
    only rank is 0 and d = a.  mapa.shared::cluster: `_lower_mapa_cluster`."""
    b = lw.b
    if ins.has("shared::cluster"):
        _lower_mapa_cluster(lw, ins)
        return
    a = lw.read(ins.operands[1], "u64")
    rank = lw.read(ins.operands[2], "u32")
    ws, on, _k, _e = cluster_workspace(lw)
    off = b.sub(a, lw.shared_base())
    out = lw.llfn.append_basic_block("mapa_cluster")
    done = lw.llfn.append_basic_block("mapa_done")
    entry = b.block
    b.cbranch(on, out, done)
    b.position_at_end(out)
    table_slot = b.inttoptr(b.add(ws, const_int(I64, abi.WS_SHARED_TABLE)), I64.as_pointer())
    table = b.inttoptr(b.load(table_slot), I64.as_pointer())
    mapped = b.add(b.load(b.gep(table, [_target_block(lw, rank)])), off)
    mapped_blk = b.block
    b.branch(done)
    b.position_at_end(done)
    d = b.phi(I64)
    d.add_incoming(a, entry)
    d.add_incoming(mapped, mapped_blk)
    lw.write(ins.operands[0], d, "u64")


@rule(CLUSTER_WAIT, family="sync")
def lower_cluster_wait(lw: FnLowering, ins: Instr) -> None:
    """Internal (after a CTA barrier): thread 0 arrives at the cluster's barrier counter and waits for
    the other blocks of the cluster; polls the launch's error word and yields its core meanwhile."""
    b = lw.b
    ws, on, k, _e = cluster_workspace(lw)
    size = b.mul(b.mul(k[0], k[1]), k[2])
    leader = b.and_(on, b.icmp_unsigned("==", lw.tlin, const_int(I32, 0)))
    leader = b.and_(leader, b.icmp_unsigned(">", size, const_int(I32, 1)))
    go = lw.llfn.append_basic_block("cluster_arrive")
    after = lw.llfn.append_basic_block("cluster_passed")
    b.cbranch(leader, go, after)
    b.position_at_end(go)
    ctaid, nctaid = ctaid_xyz(lw), nctaid_xyz(lw)
    cl = [b.zext(b.udiv(c, kk), I64) for c, kk in zip(ctaid, k, strict=True)]
    ncl = [b.zext(b.udiv(n, kk), I64) for n, kk in zip(nctaid, k, strict=True)]
    cluster = b.add(cl[0], b.mul(ncl[0], b.add(cl[1], b.mul(ncl[1], cl[2]))))
    counters = b.inttoptr(b.load(b.inttoptr(b.add(ws, const_int(I64, abi.WS_COUNTERS)), I64.as_pointer())),
                          I32.as_pointer())
    ctr = b.gep(counters, [cluster])
    rank0 = const_int(I1, 1)
    for c, kk in zip(ctaid, k, strict=True):
        rank0 = b.and_(rank0, b.icmp_unsigned("==", b.urem(c, kk), const_int(I32, 0)))
    arrive_and_spin(lw, ctr, rank0, size, after, "cluster")


@rule("getctarank", family="memory")
def lower_getctarank(lw: FnLowering, ins: Instr) -> None:
    """getctarank[.shared::cluster] d, a: the cluster rank of the block whose shared memory holds `a`.
    A shared::cluster address here is always this block's own (mapa.shared::cluster maps only to it); a
    generic one is looked up among the cluster's blocks (this block's rank when none holds it)."""

    b = lw.b
    own = special_register(lw, "%cluster_ctarank")
    if ins.has("shared::cluster"):
        lw.write(ins.operands[0], own, "u32")
        return
    a = lw.read(ins.operands[1], "u64")
    ws, on, k, _e = cluster_workspace(lw)
    size = b.mul(b.mul(k[0], k[1]), k[2])
    out = lw.llfn.append_basic_block("getctarank_cluster")
    done = lw.llfn.append_basic_block("getctarank_done")
    entry = b.block
    b.cbranch(on, out, done)
    b.position_at_end(out)
    table = b.inttoptr(b.load(b.inttoptr(b.add(ws, const_int(I64, abi.WS_SHARED_TABLE)), I64.as_pointer())),
                       I64.as_pointer())
    nbytes = lw.worker_slot(abi.W_SHARED_SIZE)
    rank = own
    for r in range(8):  # CUDA's largest portable cluster
        rc = const_int(I32, r)
        valid = b.icmp_unsigned("<", rc, size)
        base = b.load(b.gep(table, [_target_block(lw, b.select(valid, rc, const_int(I32, 0)))]))
        hit = b.and_(valid, b.icmp_unsigned("<", b.sub(a, base), nbytes))
        rank = b.select(hit, rc, rank)
    found = b.block
    b.branch(done)
    b.position_at_end(done)
    d = b.phi(I32)
    d.add_incoming(own, entry)
    d.add_incoming(rank, found)
    lw.write(ins.operands[0], d, "u32")


def lower_bulk_multicast(lw: FnLowering, ins: Instr) -> None:
    """cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [dst], [src],
    size, [mbar], ctaMask: the `size` bytes at global `src` land at the same shared offset `dst` in every
    block of the cluster whose rank has its bit set in the 16-bit ctaMask, and each such block's mbarrier
    at offset `mbar` counts them as completed transactions (async_copy.py's mbarrier word).  Without a
    cluster launch the only rank is 0 (this block).  A destination past the shared window faults.

    Another block's mbarrier is updated with a compare-and-swap, as every mbarrier change is
    (async_copy.py), so a multicast racing with the target block's own arrive/expect_tx loses nothing."""

    b = lw.b
    sbase = b.ptrtoint(lw.shared_ptr(), I64)
    dst = b.sub(b.ptrtoint(lw.address(ins.operands[0], "shared"), I64), sbase)
    mbar = b.sub(b.ptrtoint(lw.address(ins.operands[3], "shared"), I64), sbase)
    src = lw.address(ins.operands[1], "global")
    op2 = ins.operands[2]
    size = const_int(I64, op2.value) if isinstance(op2, ir.Imm) else b.zext(lw.read(op2, "u32"), I64)
    mask = b.zext(lw.read(ins.operands[4], "u16"), I32)
    nbytes = lw.worker_slot(abi.W_SHARED_SIZE)
    bad = b.or_(b.icmp_unsigned(">", b.add(dst, size), nbytes),
                b.icmp_unsigned(">", b.add(mbar, const_int(I64, 8)), nbytes))
    with b.if_then(bad, likely=False):
        word = pack_fault(lw.cg.location_id(ins), KIND_SHARED)
        off = b.select(b.icmp_unsigned(">", b.add(dst, size), nbytes), dst, mbar)
        lw.trap(abi.ERR_FAULT, b.or_(const_int(I64, word), b.and_(off, const_int(I64, (1 << ADDR_BITS) - 1))))
    memcpy, _ = memcpy_intrinsics(lw)
    ws, on, k, _e = cluster_workspace(lw)
    csize = b.select(on, b.mul(b.mul(k[0], k[1]), k[2]), const_int(I32, 1))
    own = special_register(lw, "%cluster_ctarank")
    table = b.inttoptr(b.load(b.inttoptr(b.add(b.select(on, ws, sbase), const_int(I64, abi.WS_SHARED_TABLE)),
                                         I64.as_pointer())), I64.as_pointer())
    for r in range(16):
        rc = const_int(I32, r)
        hit = b.and_(b.icmp_unsigned("!=", b.and_(b.lshr(mask, rc), const_int(I32, 1)), const_int(I32, 0)),
                     b.icmp_unsigned("<", rc, csize))
        with b.if_then(hit):
            mine = b.icmp_unsigned("==", rc, own)
            with b.if_else(mine) as (then, other):
                with then:
                    b.call(memcpy, [b.gep(lw.shared_ptr(), [dst]), src, size, const_int(I1, 0)])
                    mbar_modify(lw, ins, ins.operands[3], tx=b.sub(const_int(I64, 0), size), space="shared")
                with other:  # only in a cluster launch (csize > 1): the shared table exists
                    base = b.load(b.gep(table, [_target_block(lw, rc)]))
                    b.call(memcpy, [b.inttoptr(b.add(base, dst), PTR), src, size, const_int(I1, 0)])
                    _remote_complete_tx(lw, b.inttoptr(b.add(base, mbar), I64.as_pointer()), size)


def _remote_complete_tx(lw: FnLowering, p: ll.Value, size: ll.Value) -> None:
    """complete_tx of `size` bytes on another block's mbarrier word at p, as one compare-and-swap
    (async_copy.py's word layout and phase rule)."""
    b = lw.b
    head = lw.llfn.append_basic_block("mcast_cas")
    done = lw.llfn.append_basic_block("mcast_cas_done")
    b.branch(head)
    b.position_at_end(head)
    w = b.load_atomic(p, "monotonic", 8)
    txm = const_int(I64, (1 << TX_BITS) - 1)
    txc = b.sub(b.and_(b.lshr(w, const_int(I64, TX_SHIFT)), txm), size)
    pend = b.and_(w, const_int(I64, PEND_MASK))
    exp = b.and_(b.lshr(w, const_int(I64, EXP_SHIFT)), const_int(I64, PEND_MASK))
    phase = b.lshr(w, const_int(I64, PHASE_SHIFT))
    fin = b.and_(b.icmp_unsigned("==", pend, const_int(I64, 0)),
                 b.icmp_unsigned("==", b.and_(txc, txm), const_int(I64, 0)))
    nw = b.or_(b.select(fin, exp, pend), b.shl(exp, const_int(I64, EXP_SHIFT)))
    nw = b.or_(nw, b.shl(b.and_(txc, txm), const_int(I64, TX_SHIFT)))
    nw = b.or_(nw, b.shl(b.xor(phase, b.zext(fin, I64)), const_int(I64, PHASE_SHIFT)))
    res = b.cmpxchg(p, w, nw, "acq_rel", "monotonic")
    b.cbranch(b.extract_value(res, 1), done, head)
    b.position_at_end(done)
