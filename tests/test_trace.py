"""Instrumentation (ptxjit.trace, src/ptxjit/instrument): records of basic blocks and memory accesses,
buffers sized exactly by a counting run, merged in (cta, epoch, tid, seq) order.

Expected values are derived by hand from the PTX (which instructions run for which thread) or with NumPy,
never from the instrumentation itself.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.instrument import trace as tr
from tests.corpus_util import cdiv, kernel

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

BENCH = Path(__file__).parent.parent / "bench" / "kernels" / "ptx"


def bench_kernel(name: str) -> ptxjit.Kernel:
    return ptxjit.Module.from_file(BENCH / f"{name}.ptx").get_function(name)


def col(table, name) -> np.ndarray:
    c = table.column(name)
    if pa.types.is_dictionary(c.type):
        return np.array(c.to_pylist(), dtype=object)
    return c.to_numpy()


# ------------------------------------------------------------------------------------------- vadd
@pytest.mark.parametrize("generic", [False, True], ids=["thread-loop", "generic"])
def test_vadd_memory_records(generic):
    k = bench_kernel("vadd")
    n = 1000  # 4 CTAs of 256, the last partial
    rng = np.random.default_rng(1)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    t = ptxjit.trace(k, cdiv(n, 256), 256, (a, b, c, n), _generic=generic)
    np.testing.assert_array_equal(c, a + b)
    c2 = np.zeros(n, np.float32)
    k(cdiv(n, 256), 256, (a, b, c2, n))
    np.testing.assert_array_equal(c, c2)

    assert t.counts() == t.capacity() == {"blocks": 1024 + n + 1024, "memory": 3 * n}
    assert t.dropped() == {"blocks": 0, "memory": 0}
    m = t.table("memory")
    kind, space, size, addr = col(m, "kind"), col(m, "space"), col(m, "size"), col(m, "addr")
    cta, tid = col(m, "cta").astype(np.int64), col(m, "tid").astype(np.int64)
    i = cta * 256 + tid  # the element of each record's thread
    assert (kind == "load").sum() == 2 * n and (kind == "store").sum() == n
    assert set(space) == {"global"} and set(size) == {4}
    # per thread, in program order: ld b[i] (%rd8), ld a[i] (%rd6), st c[i]
    np.testing.assert_array_equal(i, np.repeat(np.arange(n), 3))
    base = np.tile([b.ctypes.data, a.ctypes.data, c.ctypes.data], n).astype(np.uint64)
    np.testing.assert_array_equal(addr, base + 4 * i.astype(np.uint64))
    np.testing.assert_array_equal(kind, np.tile(["load", "load", "store"], n))
    # blocks: every thread runs the entry block and the return block, threads i < n the body
    bl = t.table("blocks")
    blk = col(bl, "block")
    assert (blk == 0).sum() == 1024 and (blk == 1).sum() == n and (blk == 2).sum() == 1024


def test_vadd_summary_counts_lines():
    k = bench_kernel("vadd")
    n = 700
    a = np.ones(n, np.float32)
    t = ptxjit.trace(k, 3, 256, (a, a.copy(), np.zeros(n, np.float32), n))
    s = t.summary().to_pydict()
    rows = dict(zip(s["instruction"], zip(s["executions"], s["memory_accesses"], strict=True), strict=False))
    assert rows["st.global.f32"] == (n, n)
    assert rows["ret"] == (768, 0)
    lines = dict(zip(s["ptx_line"], s["executions"], strict=True))
    assert lines[37] == 768  # @%p1 bra: every thread of the 3 CTAs
    assert lines[45] == n    # ld.global.nc.f32 (the body runs for i < n)


# ------------------------------------------------------------------------------- barriers (dot)
def _dot(generic: bool = False):
    k = bench_kernel("dot")
    n, nb = 3000, 4  # 4 CTAs of 256 threads; a grid-stride loop of 3 or 2 iterations
    rng = np.random.default_rng(2)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    part = np.zeros(nb, np.float32)
    t = ptxjit.trace(k, nb, 256, (x, y, part, n), _generic=generic)
    part2 = np.zeros(nb, np.float32)
    k(nb, 256, (x, y, part2, n))
    np.testing.assert_array_equal(part, part2)
    return t, x, y, n, nb


def test_dot_barrier_epochs_and_order():
    t, x, y, n, nb = _dot()
    assert t.counts() == t.capacity()
    assert t.dropped() == {"blocks": 0, "memory": 0}
    m = t.table("memory")
    cta, epoch, tid, seq = (col(m, c).astype(np.int64) for c in ("cta", "epoch", "tid", "seq"))
    space, kind, addr = col(m, "space"), col(m, "kind"), col(m, "addr").astype(np.int64)
    # global loads: thread i of CTA c reads y[j], x[j] for j = c*256 + i, + 1024, ... below n (epoch 0)
    g = space == "global"
    loads = g & (kind == "load")
    exp_j = [j for c in range(nb) for i in range(256) for j in range(c * 256 + i, n, nb * 256) for _ in (0, 1)]
    got_j = np.where(np.arange(loads.sum()) % 2 == 0, addr[loads] - y.ctypes.data, addr[loads] - x.ctypes.data) // 4
    np.testing.assert_array_equal(got_j, exp_j)
    assert (epoch[loads] == 0).all()
    # shared: epoch 0 one store per thread at 4*tid; epoch k = 1..7: threads below 256 >> k load
    # [4t] and [4t + 4*(256 >> k)] and store [4t]; epoch 8: thread 0 loads [4], [0], stores [0]
    for c in range(nb):
        sh = (space == "shared") & (cta == c)
        e, tt, kk, aa = epoch[sh], tid[sh], kind[sh], addr[sh]
        exp = [(0, i, "store", 4 * i) for i in range(256)]
        for k in range(1, 8):
            h = 256 >> k
            exp += [r for i in range(h) for r in ((k, i, "load", 4 * i), (k, i, "load", 4 * i + 4 * h),
                                                  (k, i, "store", 4 * i))]
        exp += [(8, 0, "load", 4), (8, 0, "load", 0), (8, 0, "store", 0), (9, 0, "load", 0)]
        assert list(zip(e.tolist(), tt.tolist(), kk.tolist(), aa.tolist(), strict=True)) == exp
    # the partial sum's store: thread 0 of each CTA, after the ninth barrier
    st = g & (kind == "store")
    assert epoch[st].tolist() == [9] * nb and tid[st].tolist() == [0] * nb and cta[st].tolist() == list(range(nb))
    # merged trace: per CTA epochs never go back; per thread, seq increases
    mt = t.merged()
    mc, me, mtid, mseq = (col(mt, c).astype(np.int64) for c in ("cta", "epoch", "tid", "seq"))
    assert len(mt) == sum(t.counts().values())
    assert (np.diff(mc) >= 0).all()
    same = np.diff(mc) == 0
    assert (np.diff(me)[same] >= 0).all()
    for c in range(nb):
        for i in (0, 1, 100, 255):
            s = mseq[(mc == c) & (mtid == i)]
            assert (np.diff(s) > 0).all()
    # merged rows point at the rows of their type's table
    types = col(mt, "type")
    rows = col(mt, "row")
    np.testing.assert_array_equal(seq, mseq[types == "memory"][np.argsort(rows[types == "memory"])])


def test_dot_scheduler_mode_gives_the_same_trace():
    """The generic translation runs barriers with the per-thread scheduler: same records, same order
    (seq, the worker's execution order, may differ)."""
    t1, x1, y1, *_ = _dot()
    t2, x2, y2, *_ = _dot(generic=True)
    assert t1.counts() == t2.counts()
    assert t1.table("blocks").drop(["seq"]).equals(t2.table("blocks").drop(["seq"]))
    m1, m2 = t1.table("memory"), t2.table("memory")
    assert m1.drop(["seq", "addr"]).equals(m2.drop(["seq", "addr"]))
    # global addresses: the same elements of each run's own arrays
    rels = []
    for m, x, y in ((m1, x1, y1), (m2, x2, y2)):
        a = col(m, "addr").astype(np.int64)
        g = (col(m, "space") == "global") & (col(m, "kind") == "load")
        rel = np.where((a >= x.ctypes.data) & (a < x.ctypes.data + x.nbytes), a - x.ctypes.data,
                       a - y.ctypes.data + (1 << 40))
        rels.append(rel[g])
    np.testing.assert_array_equal(*rels)


def test_transpose_shared_before_and_after_barrier():
    k = bench_kernel("transpose")
    n = 64
    inp = np.random.default_rng(3).random((n, n), dtype=np.float32)
    out = np.zeros_like(inp)
    t = ptxjit.trace(k, (n // 32, n // 32), (32, 8), (inp, out, n), records=("memory",))
    np.testing.assert_array_equal(out, inp.T)
    assert t.counts() == t.capacity() == {"memory": 4 * 16 * 256}  # 16 CTAs, 4 x (ld, st) x 2 per thread
    m = t.table("memory")
    space, kind, epoch = col(m, "space"), col(m, "kind"), col(m, "epoch")
    assert ((space == "shared") & (kind == "store") == ((space == "shared") & (epoch == 0))).all()
    assert (((space == "shared") & (kind == "load")) == ((space == "shared") & (epoch == 1))).all()
    # the 4 shared stores of thread (x, y): tile[y + 8j][x], row pitch 132 bytes
    cta, tid = col(m, "cta").astype(np.int64), col(m, "tid").astype(np.int64)
    sel = (space == "shared") & (kind == "store") & (cta == 0)
    x, y = tid[sel] % 32, tid[sel] // 32
    j = np.tile(np.arange(4), 256)
    np.testing.assert_array_equal(col(m, "addr")[sel].astype(np.int64), (y + 8 * j) * 132 + 4 * x)


# ------------------------------------------------------------------------------ in-place updates
INC_PTX = r"""
.version 7.0
.target sm_80
.address_size 64
.visible .entry inc(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    mul.wide.s32 %rd2, %r5, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r6, [%rd3];
    add.s32 %r7, %r6, 1;
    st.global.u32 [%rd3], %r7;
    setp.eq.s32 %p2, %r6, 0;
    @%p2 st.global.u32 [%rd3], 100;
DONE:
    ret;
}
"""


def test_counting_run_does_not_disturb_data():
    """x[i] += 1, and x[i] = 100 where x[i] was 0: run twice (counting run not undone) it would give
    x + 2 and different guarded stores."""
    k = ptxjit.Module(INC_PTX).get_function("inc")
    n = 500
    x = np.arange(n, dtype=np.int32) % 3
    exp = np.where(x == 0, 100, x + 1)
    zeros = int((x == 0).sum())
    t = ptxjit.trace(k, cdiv(n, 128), 128, (x, n))
    np.testing.assert_array_equal(x, exp)
    kinds = col(t.table("memory"), "kind")
    assert t.counts()["memory"] == t.capacity()["memory"] == 2 * n + zeros
    assert (kinds == "load").sum() == n and (kinds == "store").sum() == n + zeros


def test_counting_run_snapshots_only_what_the_kernel_may_write(monkeypatch):
    """vadd stores through c only: a and b (read-only parameters) are not copied for the counting run
    (the general path; vadd's own counting run runs without memory accesses and copies nothing:
    tests/test_trace_independence.py)."""
    monkeypatch.setattr(tr, "MEMORY_FREE_COUNT", False)
    k = bench_kernel("vadd")
    n = 3000
    a, b, c = np.ones(n, np.float32), np.full(n, 2, np.float32), np.zeros(n, np.float32)
    t = ptxjit.trace(k, cdiv(n, 256), 256, (a, b, c, n), records=("memory",))
    assert t.snapshot_bytes == c.nbytes
    np.testing.assert_array_equal(c, 3)


# ----------------------------------------------------------------------------------------- parquet
def test_parquet_round_trip(tmp_path):
    t, *_ = _dot()
    paths = t.to_parquet(tmp_path / "trace")
    assert sorted(p.name for p in paths.values()) == ["blocks.parquet", "memory.parquet"]
    for kind, p in paths.items():
        back = pq.read_table(p)
        assert back.equals(t.table(kind)), kind


# ------------------------------------------------------------------------------------------ corpus
def _launch_hist():
    rng = np.random.default_rng(5)
    n = 2000
    data = rng.integers(0, 256, n).astype(np.uint8)
    hist = np.zeros(256, np.uint32)
    return ("histogram", "hist256"), 5, 128, (data, n, hist), lambda: np.testing.assert_array_equal(
        hist, np.bincount(data, minlength=256))


def _launch_matmul():
    rng = np.random.default_rng(6)
    M, N, K = 40, 35, 23
    A, B = rng.uniform(-1, 1, (M, K)).astype(np.float32), rng.uniform(-1, 1, (K, N)).astype(np.float32)
    C = np.zeros((M, N), np.float32)
    return ("matmul", "matmul_tiled"), (cdiv(N, 16), cdiv(M, 16)), (16, 16), (A, B, C, M, N, K), \
        lambda: np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-5, atol=2e-6)


def _launch_local():
    rng = np.random.default_rng(7)
    n, m = 100, 20
    inp = rng.integers(0, 256, (n, m)).astype(np.uint32)
    out = np.zeros((n, 16), np.uint32)
    return ("localmem", "local_counts"), cdiv(n, 64), 64, (inp, out, n, m), \
        lambda: np.testing.assert_array_equal(out.sum(axis=1), m)


def _launch_reduce_shfl():
    rng = np.random.default_rng(8)
    n = 3001
    x = rng.integers(-50, 51, n).astype(np.float32)
    out = np.zeros(1, np.float32)
    return ("reduce", "reduce_shfl_f32"), 4, 256, (x, out, n), lambda: np.testing.assert_array_equal(
        out, [x.astype(np.int64).sum()])


def _launch_calls():
    rng = np.random.default_rng(9)
    n = 200
    x = rng.uniform(-3, 3, n).astype(np.float32)
    y = np.zeros(n, np.float32)
    steps = np.zeros(n, np.int32)
    return ("devfuncs", "noinline_calls"), cdiv(n, 128), 128, (x, y, steps, n), \
        lambda: np.testing.assert_allclose(y, (0.5 * x.astype(np.float64) - 1.25) * x + 2.0, rtol=1e-6, atol=1e-6)


def _launch_stencil2d():
    rng = np.random.default_rng(10)
    h, w = 45, 70
    a = rng.uniform(-1, 1, (h, w)).astype(np.float32)
    out = np.zeros((h, w), np.float32)
    p = np.pad(a.astype(np.float64), 1)
    exp = 4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]
    return ("stencil", "stencil2d"), (cdiv(w, 16), cdiv(h, 16)), (16, 16), (a, out, h, w), \
        lambda: np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [_launch_hist, _launch_matmul, _launch_local, _launch_reduce_shfl, _launch_calls,
                                  _launch_stencil2d],
                         ids=["hist256", "matmul_tiled", "local_counts", "reduce_shfl_f32", "noinline_calls",
                              "stencil2d"])
def test_corpus_capacity_equals_records(make):
    (stem, name), grid, block, args, check = make()
    t = ptxjit.trace(kernel(stem, name), grid, block, args)
    check()  # traced results are the kernel's results
    assert t.counts() == t.capacity()
    assert t.dropped() == {"blocks": 0, "memory": 0}
    assert all(v > 0 for v in t.counts().values())
    # per thread, records are in program order; per CTA, epochs do not go back
    mt = t.merged()
    mc, me = col(mt, "cta").astype(np.int64), col(mt, "epoch").astype(np.int64)
    assert (np.diff(mc) >= 0).all() and (np.diff(me)[np.diff(mc) == 0] >= 0).all()
    # the blocks' counts agree with the counting run's
    per_block = np.bincount(t.records("blocks")["site"], minlength=len(t.block_counts))
    np.testing.assert_array_equal(per_block, t.block_counts)


def test_records_argument_checked():
    k = bench_kernel("vadd")
    a = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="records"):
        ptxjit.trace(k, 1, 4, (a, a, a, 4), records=("instructions",))


GROW_PTX = r"""
.version 7.0
.target sm_80
.address_size 64
.visible .entry grow(.param .u64 p)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    ld.global.u32 %r1, [%rd1];
    add.s32 %r2, %r1, 1;
    st.global.u32 [%rd1], %r2;
    mov.u32 %r3, 0;
LOOP:
    ld.global.u32 %r2, [%rd1+4];
    add.s32 %r3, %r3, 1;
    setp.le.s32 %p1, %r3, %r1;
    @%p1 bra LOOP;
    ret;
}
"""


def test_more_records_than_counted_are_dropped():
    """Memory behind a raw Pointer is not restored after the counting run: here the traced run loops
    p[0] + 1 = 2 times where the counting run looped once.  The extra records are dropped (counted,
    never written past the buffers) and strict tracing raises."""
    k = ptxjit.Module(GROW_PTX).get_function("grow")
    mem = np.zeros(2, np.uint32)
    with pytest.raises(ptxjit.TraceOverflow, match="dropped 1"):
        ptxjit.trace(k, 1, 1, (ptxjit.Pointer(mem.ctypes.data),))
    assert mem[0] == 2
    mem[0] = 0
    t = ptxjit.trace(k, 1, 1, (ptxjit.Pointer(mem.ctypes.data),), strict=False)
    # counted: 3 blocks (entry, loop once, ret) and 3 accesses (ld, st, one loop ld); ran: 4 and 4
    assert t.capacity() == t.counts() == {"blocks": 3, "memory": 3}
    assert t.dropped() == {"blocks": 1, "memory": 1}
    m = t.table("memory")
    assert col(m, "kind").tolist() == ["load", "store", "load"]
    assert (col(m, "addr") - mem.ctypes.data).tolist() == [0, 0, 4]


# ------------------------------------------------------------------------------ branches, barriers
def test_vadd_branch_records():
    """vadd's one conditional branch, `@%p1 bra` after `setp.ge.s32 %p1, i, n`: every thread evaluates
    it once, and exactly the threads with i >= n take it."""
    k = bench_kernel("vadd")
    n = 1000
    a, b, c = np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    t = ptxjit.trace(k, 4, 256, (a, b, c, n), records=("branches",))
    assert t.counts() == t.capacity() == {"branches": 1024}
    br = t.table("branches")
    i = col(br, "cta").astype(np.int64) * 256 + col(br, "tid")
    np.testing.assert_array_equal(np.sort(i), np.arange(1024))
    np.testing.assert_array_equal(col(br, "taken"), i >= n)
    assert set(col(br, "ptx_line")) == {37} and set(col(br, "instruction")) == {"bra"}


SCAN_BRANCHES = {  # PTX line of each `@%p bra` in scan.ptx -> (condition for taking it, who evaluates it)
    67: (lambda lane, warp: lane != 31, lambda lane, warp: np.ones_like(lane, bool)),
    79: (lambda lane, warp: warp != 0, lambda lane, warp: np.ones_like(lane, bool)),
    84: (lambda lane, warp: lane > 15, lambda lane, warp: warp == 0),
    114: (lambda lane, warp: lane > 15, lambda lane, warp: warp == 0),
    125: (lambda lane, warp: warp == 0, lambda lane, warp: np.ones_like(lane, bool)),
}


@pytest.mark.parametrize("generic", [False, True], ids=["region", "generic"])
def test_scan_branches_and_barriers(generic):
    """scan.cu (bench/kernels): 512 threads per CTA, 16 warps: a 5-step warp scan with shfl.sync.up,
    __syncthreads, warp 0 scans the warp sums (5 more shuffles), __syncthreads, add.  Expected records
    follow from the source and the PTX's branches (SCAN_BRANCHES), per thread."""
    k = bench_kernel("scan")
    nctas, nt = 8, 512
    inp = np.arange(nctas * nt, dtype=np.int32) % 7
    out = np.zeros_like(inp)
    t = ptxjit.trace(k, nctas, nt, (inp, out), records=("branches", "barriers"), _generic=generic)
    np.testing.assert_array_equal(out, np.cumsum(inp.reshape(nctas, nt), axis=1, dtype=np.int32).ravel())
    assert t.counts() == t.capacity()

    br = t.table("branches")
    line, tid, taken = col(br, "ptx_line"), col(br, "tid").astype(np.int64), col(br, "taken")
    assert set(line) == set(SCAN_BRANCHES)
    for ln, (cond, runs) in SCAN_BRANCHES.items():
        sel = line == ln
        threads = np.arange(nt)
        who = threads[runs(threads & 31, threads >> 5)]
        assert sel.sum() == nctas * len(who), ln
        np.testing.assert_array_equal(np.sort(np.unique(tid[sel])), who)
        np.testing.assert_array_equal(taken[sel], cond(tid[sel] & 31, tid[sel] >> 5), err_msg=str(ln))

    bar = t.table("barriers")
    ins, kind, epoch = col(bar, "instruction"), col(bar, "kind"), col(bar, "epoch")
    tid, cta, ns = col(bar, "tid").astype(np.int64), col(bar, "cta"), col(bar, "time_ns")
    syncs, shfl = ins == "bar.sync", ins == "shfl.sync.up.b32"
    assert syncs.sum() == 2 * nctas * nt and set(kind[syncs]) == {"cta"}
    assert shfl.sum() == 5 * nctas * nt + 5 * nctas * 32 and set(kind[shfl]) == {"warp"}
    assert set(tid[shfl & (epoch == 1)]) == set(range(32))  # the second scan: warp 0, after the barrier
    np.testing.assert_array_equal(np.bincount(epoch[syncs].astype(np.int64)), [nctas * nt] * 2)
    # time: a CTA barrier releases no thread before the last one arrived, within the CTA's span
    spans = t.ctas()
    start, end = col(spans, "start_ns"), col(spans, "end_ns")
    assert (start <= end).all()
    for c in range(nctas):
        mine = cta == c
        assert (ns[mine] >= start[c]).all() and (ns[mine] <= end[c]).all()
        last_arrival = ns[mine & syncs & (epoch == 0)].max()
        assert ns[mine & (epoch == 1)].min() >= last_arrival
    per_worker = {}
    for c, w in enumerate(col(spans, "worker")):
        per_worker.setdefault(w, []).append((start[c], end[c]))
    for spans_w in per_worker.values():  # a worker runs one CTA at a time
        spans_w.sort()
        assert all(e0 <= s1 for (_, e0), (s1, _) in zip(spans_w, spans_w[1:], strict=False))


class _Traced:
    """Stands in for a Kernel in the benchmark suite's launch code: the launch runs ptxjit.trace."""

    def __init__(self, kernel: ptxjit.Kernel) -> None:
        self.kernel = kernel
        self.traces: list = []

    def __call__(self, grid, block, args, shared_mem=0):
        self.traces.append(ptxjit.trace(self.kernel, grid, block, args, shared_mem,
                                        records=ptxjit.instrument.RECORD_TYPES))


@pytest.mark.parametrize("name", ["vadd", "saxpy", "dot", "sgemm", "jacobi", "histogram", "transpose", "nbody",
                                  "blackscholes", "bitonic", "scan"])
def test_bench_kernels_traced_with_every_record_type(name):
    """Every benchmark kernel (tiny size) traced with all four record types: results equal the case's
    NumPy reference, capacities equal the records written, block counts agree with the counting run."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from ptxbench.suite import CASES

    case = CASES[name]
    n = case.sizes["tiny"]
    d = case.make(n, np.random.default_rng(0))
    expected = case.reference(d)
    traced = _Traced(bench_kernel(name))
    case.ptxjit(traced, d, n)()
    assert case.check(d, expected) == []
    assert traced.traces
    for t in traced.traces:
        assert t.counts() == t.capacity() and not any(t.dropped().values())
        per_block = np.bincount(t.records("blocks")["site"], minlength=len(t.block_counts))
        np.testing.assert_array_equal(per_block, t.block_counts)


def test_device_printf_prints_once(capfd):
    """The counting run is muted: a traced kernel's printf output appears once, as one launch's."""
    n = 20
    x = np.arange(n, dtype=np.float32)
    capfd.readouterr()
    ptxjit.trace(kernel("printf", "printf_kernel"), cdiv(n, 16), 16, (x, n), records=("blocks",))
    sys.stdout.flush()
    lines = capfd.readouterr().out.splitlines()
    assert sorted(int(ln.split()[0][4:]) for ln in lines) == list(range(n))  # "tid=%d ...", each once


@pytest.mark.parametrize("generic", [False, True], ids=["thread-loop", "generic"])
def test_single_type_traces_of_a_barrier_free_kernel(generic):
    """One record type of a kernel without barriers: lean records (no seq: blocks and branches 4 bytes,
    memory 8: address, tid and site in one key), the same trace as with the sequence number written: each
    thread's records in program order with seq = its position in the CTA's execution (vadd: thread t's
    loads and store are 3t..3t+2)."""
    k = bench_kernel("vadd")
    n = 1000
    rng = np.random.default_rng(5)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    t = ptxjit.trace(k, cdiv(n, 256), 256, (a, b, c, n), records=("memory",), _generic=generic)
    np.testing.assert_array_equal(c, a + b)
    assert t.nbytes() == {"memory": 3 * n * (8 if platform.machine().lower() in ("x86_64", "amd64") else 12)}
    m = t.table("memory")
    tid, seq = col(m, "tid").astype(np.int64), col(m, "seq").astype(np.int64)
    np.testing.assert_array_equal(col(m, "cta").astype(np.int64) * 256 + tid, np.repeat(np.arange(n), 3))
    np.testing.assert_array_equal(seq, 3 * tid + np.tile([0, 1, 2], n))
    base = np.tile([b.ctypes.data, a.ctypes.data, c.ctypes.data], n).astype(np.uint64)
    np.testing.assert_array_equal(col(m, "addr"), base + 4 * np.repeat(np.arange(n), 3).astype(np.uint64))
    blocks = ptxjit.trace(k, cdiv(n, 256), 256, (a, b, c, n), records=("blocks",), _generic=generic)
    assert blocks.nbytes() == {"blocks": 4 * (1024 + n + 1024)}
    bl = blocks.table("blocks")
    blk = col(bl, "block")
    assert (blk == 0).sum() == 1024 and (blk == 1).sum() == n and (blk == 2).sum() == 1024


@pytest.mark.parametrize("generic", [False, True], ids=["thread-loop", "generic"])
def test_memory_values(generic):
    """values=True: each memory record carries the bits of the value accessed (vadd: ld b[i], ld a[i],
    st c[i] per thread)."""
    k = bench_kernel("vadd")
    n = 700
    rng = np.random.default_rng(3)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    t = ptxjit.trace(k, cdiv(n, 256), 256, (a, b, c, n), records=("memory",), values=True, _generic=generic)
    np.testing.assert_array_equal(c, a + b)
    m = t.table("memory")
    i = col(m, "cta").astype(np.int64) * 256 + col(m, "tid")
    bits = np.stack([b.view(np.uint32), a.view(np.uint32), c.view(np.uint32)], axis=1).ravel()
    np.testing.assert_array_equal(i, np.repeat(np.arange(n), 3))
    np.testing.assert_array_equal(col(m, "value"), bits.astype(np.uint64))
    key = 8 if platform.machine().lower() in ("x86_64", "amd64") else 12  # x86-64: address, tid, site in a key
    assert t.nbytes()["memory"] == 3 * n * (key + 8)  # lean records (one type, no barriers) with an 8-byte value


def test_memory_values_with_barriers_and_shared():
    """transpose (shared tile, a barrier): the value stored to the tile is the one loaded from `in`, the
    value read back from the tile and stored to `out` is the transposed element."""
    k = bench_kernel("transpose")
    n = 64
    inp = np.arange(n * n, dtype=np.float32).reshape(n, n)
    out = np.zeros_like(inp)
    t = ptxjit.trace(k, (n // 32, n // 32), (32, 8), (inp, out, n), records=("memory",), values=True)
    np.testing.assert_array_equal(out, inp.T)
    m = t.table("memory")
    kind, space, value = col(m, "kind"), col(m, "space"), col(m, "value")
    addr = col(m, "addr").astype(np.int64)
    g_load = (kind == "load") & (space == "global")
    g_store = (kind == "store") & (space == "global")
    # global loads read in[...] at their address, global stores write out[...] at theirs
    np.testing.assert_array_equal(value[g_load], inp.ravel().view(np.uint32)[(addr[g_load] - inp.ctypes.data) // 4])
    np.testing.assert_array_equal(value[g_store], out.ravel().view(np.uint32)[(addr[g_store] - out.ctypes.data) // 4])
    assert g_load.sum() == g_store.sum() == n * n
    sh_st = (kind == "store") & (space == "shared")
    np.testing.assert_array_equal(np.sort(value[sh_st]), np.sort(inp.ravel().view(np.uint32)))


def test_perfetto_warp_tracks(tmp_path):
    """scan, 2 CTAs of 16 warps, 2 __syncthreads: per CTA a process with a track per warp and 3 epoch
    spans per warp, epoch e ending when the warp's last lane reached barrier e (from the barrier
    records: max time_ns over its 32 lanes), nested in the CTA's span."""
    import json

    k = bench_kernel("scan")
    inp = np.ones(1024, np.int32)
    out = np.zeros_like(inp)
    t = ptxjit.trace(k, 2, 512, (inp, out), records=("barriers",))
    doc = json.loads(t.to_perfetto(tmp_path / "scan.json", warps=True).read_text())
    ev = doc["traceEvents"]
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"].endswith("_name")}
    warp_spans = [e for e in ev if e["ph"] == "X" and e["cat"] == "warp"]
    assert len(warp_spans) == 2 * 16 * 3
    bar = t.table("barriers")
    sync = col(bar, "instruction") == "bar.sync"
    cta, epoch, tid, ns = (col(bar, c).astype(np.int64) for c in ("cta", "epoch", "tid", "time_ns"))
    spans = t.ctas()
    for c in range(2):
        pid = next(p for (p, tr), n in names.items() if tr is None and n.startswith(f"CTA {c} ") and "warps" in n)
        for w in range(16):
            assert names[(pid, w + 1)] == f"warp {w}"
            mine = sorted((e for e in warp_spans if e["pid"] == pid and e["tid"] == w + 1), key=lambda e: e["ts"])
            assert [e["name"] for e in mine] == ["epoch 0", "epoch 1", "epoch 2"]
            for e in (0, 1):
                lanes = sync & (cta == c) & (epoch == e) & (tid // 32 == w)
                assert lanes.sum() == 32
                end_us = mine[e]["ts"] + mine[e]["dur"]
                assert abs(end_us - ns[lanes].max() / 1000) < 0.01
            assert mine[0]["ts"] >= col(spans, "start_ns")[c] / 1000 - 0.01
            assert mine[2]["ts"] + mine[2]["dur"] <= col(spans, "end_ns")[c] / 1000 + 0.01


def test_buffer_pool_reuses_sorted_traces_buffers():
    """Once a type's records are sorted its buffer goes to the pool and the next trace writes into it
    (no page faults); the second trace's records are still exactly right."""
    from ptxjit.instrument.buffers import POOL

    k = bench_kernel("vadd")
    n = 1 << 17  # 3 * n memory records of 16 bytes: 6 MB, above the pool's 1 MB floor
    a, b, c = np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    with POOL._lock:
        POOL._free.clear()  # earlier tests' buffers
    t1 = ptxjit.trace(k, n // 256, 256, (a, b, c, n), records=("memory",))
    t1.records("memory")
    pooled = {id(x) for x in POOL._free}
    assert pooled, "the sorted trace's buffer went to the pool"
    b[:] = 2
    t2 = ptxjit.trace(k, n // 256, 256, (a, b, c, n), records=("memory",))
    assert not pooled & {id(x) for x in POOL._free}  # taken again
    m = t2.table("memory")
    i = col(m, "cta").astype(np.int64) * 256 + col(m, "tid")
    base = np.tile([b.ctypes.data, a.ctypes.data, c.ctypes.data], n).astype(np.uint64)
    np.testing.assert_array_equal(col(m, "addr"), base + 4 * i.astype(np.uint64))
    np.testing.assert_array_equal(c, 3)
