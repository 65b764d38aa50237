"""The counting run without memory accesses (src/ptxjit/instrument/independence.py): which kernels the
analysis proves independent of memory, and that traces of both kinds count exactly.

Kernels: tests/data/trace_independence.cu (nvcc 13, tests/data/regen.sh).  Expected record counts are
counted by hand from the PTX (which thread runs which access); expected arrays come from NumPy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.frontend import ir
from ptxjit.instrument import trace as tr
from ptxjit.instrument.independence import independent, kernel_independence

pytest.importorskip("pyarrow")

DATA = Path(__file__).parent / "data"
ALL = ("blocks", "memory", "branches", "barriers")


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA / "trace_independence.ptx")


def kinds(t) -> dict[str, int]:
    """Memory records per kind (load/store/atomic)."""
    col = t.table("memory").column("kind").to_pylist()
    return {k: col.count(k) for k in ("load", "store", "atomic")}


@pytest.mark.parametrize("name,expected", [
    ("vadd", True), ("scale_inplace", True), ("bin_count", True), ("block_sum", True),
    ("branch_on_load", False), ("loop_from_memory", False), ("ticket", False), ("shfl_branch", False),
    ("guarded_store", False)])
@pytest.mark.parametrize("block", [(64, 1, 1), None])
def test_analysis(mod, name, expected, block):
    got = kernel_independence(mod.get_function(name), block)
    assert got.independent is expected, got.reason
    if not expected:
        assert "memory" in got.reason


# ------------------------------------------------------------------------ independent: no snapshot
def test_vadd(mod):
    """2n loads and n stores (threads i < n), the bound check's branch for every thread."""
    k = mod.get_function("vadd")
    n, block = 1000, 128
    rng = np.random.default_rng(1)
    a, b = rng.random(n, np.float32), rng.random(n, np.float32)
    c = np.zeros(n, np.float32)
    t = ptxjit.trace(k, 8, block, (a, b, c, n), records=ALL)
    np.testing.assert_array_equal(c, a + b)
    assert t.snapshot_bytes == 0  # nothing copied: the counting run touched no data
    assert t.counts() == t.capacity()
    assert kinds(t) == {"load": 2 * n, "store": n, "atomic": 0}
    assert t.counts()["branches"] == 8 * block  # @%p1 bra (i >= n), every thread


def test_grid_stride_in_place(mod):
    """x[i] *= f over a grid-stride loop: one load and one store per element, each exactly once (a
    counting run that stored would leave x * f * f)."""
    k = mod.get_function("scale_inplace")
    n, grid, block = 5000, 3, 128
    x = np.arange(n, dtype=np.float32)
    t = ptxjit.trace(k, grid, block, (x, n, np.float32(1.5)), records=("memory", "blocks"))
    np.testing.assert_array_equal(x, np.arange(n, dtype=np.float32) * np.float32(1.5))
    assert t.snapshot_bytes == 0
    assert kinds(t) == {"load": n, "store": n, "atomic": 0}
    assert t.counts() == t.capacity()


def test_atomics_once(mod):
    """bins[v & 15] += 1 by red.global: n atomic records, each bin counted once."""
    k = mod.get_function("bin_count")
    n = 3000
    v = np.random.default_rng(2).integers(0, 1000, n).astype(np.int32)
    bins = np.full(16, 7, np.int32)
    t = ptxjit.trace(k, (n + 255) // 256, 256, (v, bins, n), records=("memory",))
    np.testing.assert_array_equal(bins, 7 + np.bincount(v & 15, minlength=16))
    assert t.snapshot_bytes == 0
    assert kinds(t) == {"load": n, "store": 0, "atomic": n}
    assert t.counts() == t.capacity()


def test_shared_reduction_region_mode(mod):
    """block_sum with 64 threads: the tree k = 32, 16, ..., 1 (threads t < k add), a barrier after the
    first store and after every step; out[b] += s[0] by thread 0."""
    k = mod.get_function("block_sum")
    nb, nt = 5, 64
    x = np.random.default_rng(3).random(nb * nt).astype(np.float32)
    out = np.ones(nb, np.float32)
    t = ptxjit.trace(k, nb, nt, (x, out), shared_mem=nt * 4, records=ALL)
    np.testing.assert_allclose(out, 1 + x.reshape(nb, nt).sum(axis=1), rtol=1e-5)
    assert t.snapshot_bytes == 0
    adds = sum(2 ** j for j in range(6))  # threads adding over the steps: 32 + 16 + ... + 1 = 63
    per_block = {"load": nt + 2 * adds + 2, "store": nt + adds + 1}  # global in, shared, s[0] and out[b]
    assert kinds(t) == {"load": nb * per_block["load"], "store": nb * per_block["store"], "atomic": 0}
    bars = t.table("barriers").column("kind").to_pylist()
    assert bars.count("cta") == nb * nt * 7  # 1 + 6 steps, every thread
    assert t.counts() == t.capacity()


# ------------------------------------------------------------------------ dependent: the general path
def test_branch_on_load(mod):
    k = mod.get_function("branch_on_load")
    n = 700
    a = np.random.default_rng(4).integers(-5, 5, n).astype(np.int32)
    out = np.arange(2 * n, dtype=np.int32)
    exp = out.copy()
    pos = a > 0
    exp[:n][pos] += a[pos]
    exp[n:][pos] += 2 * a[pos]
    t = ptxjit.trace(k, 6, 128, (a, out, n), records=("memory",))
    np.testing.assert_array_equal(out, exp)
    assert t.snapshot_bytes == out.nbytes  # the general path: out copied and restored
    p = int(pos.sum())
    assert kinds(t) == {"load": n + 2 * p, "store": 2 * p, "atomic": 0}
    assert t.counts() == t.capacity()


def test_loop_bound_from_memory(mod):
    k = mod.get_function("loop_from_memory")
    n = 300
    reps = np.random.default_rng(5).integers(-2, 9, n).astype(np.int32)
    out = np.random.default_rng(6).random(n).astype(np.float32)
    exp = out.copy()
    for i in range(n):
        for _ in range(max(reps[i], 0)):
            exp[i] = exp[i] * np.float32(0.5) + np.float32(1.0)
    t = ptxjit.trace(k, 3, 128, (reps, out, n), records=("memory",))
    np.testing.assert_array_equal(out, exp)
    assert t.snapshot_bytes == out.nbytes
    r = int(np.maximum(reps, 0).sum())
    # nvcc keeps out[i] in a register across the loop (unrolled by 4): one load and one store of out[i]
    # per thread that iterates at all, besides reps[i]
    iterating = int((reps > 0).sum())
    assert r > 0 and kinds(t) == {"load": n + iterating, "store": iterating, "atomic": 0}
    assert t.counts() == t.capacity()


def test_flag_via_atomic(mod):
    """One CTA of 64 threads draws tickets: 64 atomics; the one with ticket 0 does two read-modify-writes."""
    k = mod.get_function("ticket")
    counter = np.zeros(1, np.int32)
    out = np.array([1, 2], np.int32)
    t = ptxjit.trace(k, 1, 64, (counter, out), records=("memory",))
    assert counter[0] == 64 and out[0] == 43 and 2 < out[1] <= 2 + 64
    assert t.snapshot_bytes == counter.nbytes + out.nbytes
    assert kinds(t) == {"load": 2, "store": 2, "atomic": 64}
    assert t.counts() == t.capacity()


def test_shfl_of_a_load_decides(mod):
    """Each warp's lane 0 value decides for the whole warp (4 warps, two of them positive)."""
    k = mod.get_function("shfl_branch")
    nt = 128
    a = np.arange(nt, dtype=np.int32) - 40  # lane 0 of warps 0..3: -40, -8, 24, 56
    out = np.zeros(2 * nt, np.int32)
    exp = out.copy()
    for w in range(4):
        lead = a[32 * w]
        if lead > 0:
            exp[32 * w:32 * w + 32] += lead
            exp[nt + 32 * w:nt + 32 * w + 32] += np.arange(32 * w, 32 * w + 32)
    t = ptxjit.trace(k, 1, nt, (a, out), records=("memory", "barriers"))
    np.testing.assert_array_equal(out, exp)
    assert kinds(t) == {"load": nt + 2 * 64, "store": 2 * 64, "atomic": 0}
    assert t.counts()["barriers"] == nt  # the shfl, every thread
    assert t.counts() == t.capacity()


def test_guarded_store(mod):
    k = mod.get_function("guarded_store")
    nt = 96
    a = (np.arange(nt, dtype=np.int32) % 5) - 2
    out = np.full(nt, -9, np.int32)
    exp = np.where(a > 0, a, -9)
    t = ptxjit.trace(k, 1, nt, (a, out), records=("memory",))
    np.testing.assert_array_equal(out, exp)
    assert kinds(t) == {"load": nt, "store": int((a > 0).sum()), "atomic": 0}
    assert t.counts() == t.capacity()


# ------------------------------------------------------------------------ both paths agree
@pytest.mark.parametrize("name", ["vadd", "scale_inplace", "bin_count"])
def test_same_records_either_way(mod, name, monkeypatch):
    """The counting run with and without memory accesses sizes the same buffers, and the traces hold the
    same records (the traced run is the same code)."""
    k = mod.get_function(name)
    n = 900

    def run():
        rng = np.random.default_rng(7)
        if name == "vadd":
            args = (rng.random(n, np.float32), rng.random(n, np.float32), np.zeros(n, np.float32), n)
        elif name == "scale_inplace":
            args = (rng.random(n, np.float32), n, np.float32(2))
        else:
            args = (rng.integers(0, 99, n).astype(np.int32), np.zeros(16, np.int32), n)
        t = ptxjit.trace(k, 4, 128, args, records=("memory", "blocks"))
        return t, args

    t1, a1 = run()
    monkeypatch.setattr(tr, "MEMORY_FREE_COUNT", False)
    t2, a2 = run()
    assert t1.snapshot_bytes == 0 and t2.snapshot_bytes > 0
    assert t1.capacity() == t2.capacity() == t1.counts() == t2.counts()
    for x, y in zip(a1, a2, strict=True):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
    m1, m2 = t1.table("memory"), t2.table("memory")  # (addresses: of other arrays)
    for c in ("cta", "tid", "seq", "site", "kind"):
        assert m1.column(c).to_pylist() == m2.column(c).to_pylist(), c


def test_fault_still_reported(mod):
    """vadd told n is larger than its arrays (checked): the counting run touches no memory, the traced
    run raises the KernelFault a plain launch raises."""
    k = mod.get_function("vadd")
    n = 256
    a, b, c = np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    assert kernel_independence(k, (128, 1, 1)).independent
    with pytest.raises(ptxjit.KernelFault):
        ptxjit.trace(k, 4, 128, (a, b, c, 2 * n), records=("memory",), checked=True)


# ------------------------------------------------------------------------ the analysis on small PTX
HEAD = ".version 7.0\n.target sm_80\n.address_size 64\n"


def _fn(body: str, regs: str = ".reg .pred %p<3>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;") -> ir.Function:
    src = HEAD + f".visible .entry k(.param .u64 p, .param .u32 n)\n{{\n{regs}\n{body}\nret;\n}}\n"
    return ptxjit.Module(src).ir.functions["k"]


@pytest.mark.parametrize("body,expected", [
    # a loop bound from a parameter: independent
    ("ld.param.u32 %r1, [n];\nmov.u32 %r2, 0;\nL: add.s32 %r2, %r2, 1;\nsetp.lt.s32 %p1, %r2, %r1;\n@%p1 bra L;",
     True),
    # .const is read-only during a launch: a branch on it is fine
    ("ld.const.u32 %r1, [c];\nsetp.eq.s32 %p1, %r1, 0;\n@%p1 bra L;\nL: mov.u32 %r2, 0;", True),
    # %clock decides: dependent
    ("mov.u32 %r1, %clock;\nsetp.eq.s32 %p1, %r1, 0;\n@%p1 bra L;\nL: mov.u32 %r2, 0;", False),
    # a loaded value through a carry chain (add.cc -> addc) into a branch
    ("ld.param.u64 %rd1, [p];\nld.global.u32 %r1, [%rd1];\nadd.cc.u32 %r2, %r1, 1;\naddc.u32 %r3, 0, 0;\n"
     "setp.eq.s32 %p1, %r3, 0;\n@%p1 bra L;\nL: mov.u32 %r4, 0;", False),
    # a loaded value selected (selp) and used as data only: independent
    ("ld.param.u64 %rd1, [p];\nld.global.u32 %r1, [%rd1];\nsetp.gt.s32 %p1, %r1, 0;\nselp.b32 %r2, 1, 2, %p1;\n"
     "st.global.u32 [%rd1], %r2;", True),
    # a guarded mov whose guard comes from memory taints its result, which then decides a branch
    ("ld.param.u64 %rd1, [p];\nld.global.u32 %r1, [%rd1];\nsetp.gt.s32 %p1, %r1, 0;\nmov.u32 %r2, 0;\n"
     "@%p1 mov.u32 %r2, 1;\nsetp.eq.s32 %p2, %r2, 0;\n@%p2 bra L;\nL: mov.u32 %r4, 0;", False),
    # a barrier's thread count from memory
    ("ld.param.u64 %rd1, [p];\nld.global.u32 %r1, [%rd1];\nbar.sync 0, %r1;", False),
    # a vote's member mask from memory
    ("ld.param.u64 %rd1, [p];\nld.global.u32 %r1, [%rd1];\nvote.sync.ballot.b32 %r2, %p1, %r1;", False),
    # an atomic's result decides
    ("ld.param.u64 %rd1, [p];\natom.global.add.u32 %r1, [%rd1], 1;\nsetp.eq.s32 %p1, %r1, 0;\n@%p1 exit;", False),
    # an instruction outside the analysed set (a texture fetch, a call): the general path
    ("ld.param.u64 %rd1, [p];\nprefetch.global.L2 [%rd1];\ncp.async.commit_group;", False),
])
def test_analysis_forms(body, expected):
    if "ld.const" in body:
        src = HEAD + ".const .align 4 .u32 c;\n.visible .entry k(.param .u64 p, .param .u32 n)\n{\n" \
            ".reg .pred %p<3>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n" + body + "\nret;\n}\n"
        fn = ptxjit.Module(src).ir.functions["k"]
    else:
        fn = _fn(body)
    got = independent(fn)
    assert got.independent is expected, got.reason
