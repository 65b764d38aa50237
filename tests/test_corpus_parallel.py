"""Real-kernel corpus: reductions, scans, histogram, bitonic sort, warp collectives, atomics, globals.

Expectations are computed independently with NumPy / plain Python.  Floating-point reductions whose
summation order differs from NumPy's are compared with tight tolerances; integer-valued float inputs
give exact comparisons as well.
"""

from __future__ import annotations

import numpy as np
import pytest

import ptxjit
from tests.corpus_util import CORPUS, cdiv, kernel

FULL = 0xFFFFFFFF
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def chunks(a: np.ndarray, size: int) -> list[np.ndarray]:
    return [a[i:i + size] for i in range(0, len(a), size)]


REDUCE = [("ptx", "reduce"), ("ptx_nvrtc", "reduce")]
RED_IDS = ["nvcc", "nvrtc12"]


# ----------------------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("src", REDUCE, ids=RED_IDS)
def test_reduce_tree_f32(src):
    rng = np.random.default_rng(100)
    n = 5000
    x = rng.uniform(0, 1, n).astype(np.float32)
    out = np.zeros(1, np.float32)
    kernel(src[1], "reduce_tree_f32", src[0])(cdiv(n, 512), 256, (x, out, n))
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=2e-6)


@pytest.mark.parametrize("src", REDUCE, ids=RED_IDS)
def test_reduce_tree_f32_exact_integers(src):
    rng = np.random.default_rng(101)
    n = 7777
    x = rng.integers(0, 10, n).astype(np.float32)
    out = np.full(1, 5.0, np.float32)  # atomicAdd accumulates onto the initial value
    kernel(src[1], "reduce_tree_f32", src[0])(cdiv(n, 512), 256, (x, out, n))
    assert out[0] == 5 + int(x.astype(np.int64).sum())


@pytest.mark.parametrize("src", REDUCE, ids=RED_IDS)
def test_reduce_tree_f64_partials(src):
    rng = np.random.default_rng(102)
    n = 3000
    x = rng.standard_normal(n)
    partials = np.zeros(cdiv(n, 128))
    kernel(src[1], "reduce_tree_f64_partials", src[0])(len(partials), 128, (x, partials, n))
    exp = np.array([c.sum() for c in chunks(x, 128)])
    np.testing.assert_allclose(partials, exp, rtol=1e-13, atol=1e-13)


# The shuffle-loop kernels are the slowest to JIT; they run from the nvcc PTX only.
@pytest.mark.parametrize("src", REDUCE[:1], ids=RED_IDS[:1])
def test_reduce_shfl_f32(src):
    rng = np.random.default_rng(103)
    n = 10001
    x = rng.uniform(-1, 1, n).astype(np.float32)
    out = np.zeros(1, np.float32)
    kernel(src[1], "reduce_shfl_f32", src[0])(4, 256, (x, out, n))
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)
    y = rng.integers(-50, 51, n).astype(np.float32)
    out[0] = 0
    kernel(src[1], "reduce_shfl_f32", src[0])(4, 256, (y, out, n))
    assert out[0] == int(y.astype(np.int64).sum())


@pytest.mark.parametrize("src", REDUCE[:1], ids=RED_IDS[:1])
def test_reduce_shfl_f64_atomic(src):
    rng = np.random.default_rng(104)
    n = 9000
    x = rng.standard_normal(n)
    out = np.zeros(1)
    kernel(src[1], "reduce_shfl_f64", src[0])(5, 128, (x, out, n))
    np.testing.assert_allclose(out[0], x.sum(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("src", REDUCE, ids=RED_IDS)
@pytest.mark.parametrize("block", [64, 128])
def test_reduce_dynamic_shared(src, block):
    rng = np.random.default_rng(105)
    n = 1500
    x = rng.integers(-1000, 1000, n).astype(np.float32)
    partials = np.full(cdiv(n, block), np.nan, np.float32)
    k = kernel(src[1], "reduce_dyn_smem_f32", src[0])
    k(len(partials), block, (x, partials, n), shared_mem=block * 4)
    exp = [int(c.astype(np.int64).sum()) for c in chunks(x, block)]
    np.testing.assert_array_equal(partials, np.array(exp, np.float32))


@pytest.mark.parametrize("src", REDUCE, ids=RED_IDS)
def test_reduce_warp_redux_u32(src):
    rng = np.random.default_rng(106)
    n = 1000
    x = rng.integers(0, 2**20, n).astype(np.uint32)
    x[17] = 0xFFF0F0F0  # large value for max/or/xor
    out = np.array([0, FULL, 0, FULL, 0, 0], np.uint32)
    kernel(src[1], "reduce_warp_redux_u32", src[0])(cdiv(n, 128), 128, (x, out, n))
    xs = [int(v) for v in x]
    a, o, xo = FULL, 0, 0
    for v in xs:
        a &= v
        o |= v
        xo ^= v
    exp = [sum(xs) % 2**32, min(xs), max(xs), a, o, xo]
    np.testing.assert_array_equal(out, np.array(exp, np.uint32))


@pytest.mark.parametrize("src", REDUCE, ids=RED_IDS)
def test_reduce_warp_redux_s32(src):
    rng = np.random.default_rng(107)
    n = 1000
    x = rng.integers(-(10**6), 10**6, n).astype(np.int32)
    nwarps = cdiv(n, 128) * 4
    out = np.zeros((nwarps, 3), np.int32)
    kernel(src[1], "reduce_warp_redux_s32", src[0])(cdiv(n, 128), 128, (x, out, n))
    exp = np.zeros((nwarps, 3), np.int32)
    for w in range(nwarps):
        seg = x[w * 32:(w + 1) * 32]  # inactive tail lanes contribute 0 / INT_MAX / INT_MIN
        exp[w] = [seg.sum(), seg.min(), seg.max()] if len(seg) else [0, INT_MAX, INT_MIN]
    np.testing.assert_array_equal(out, exp)


# ---------------------------------------------------------------------------------------------- scans
SCAN = [("ptx", "scan"), ("ptx_nvrtc", "scan"), ("ptx", "scan_sm75")]
SCAN_IDS = ["nvcc-sm80", "nvrtc12", "nvcc-sm75"]


@pytest.mark.parametrize("src", SCAN, ids=SCAN_IDS)
def test_scan_inclusive_smem(src):
    rng = np.random.default_rng(200)
    n = 1000
    x = rng.integers(-50, 51, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    sums = np.zeros(cdiv(n, 256), np.int32)
    kernel(src[1], "scan_incl_smem", src[0])(len(sums), 256, (x, out, sums, n))
    np.testing.assert_array_equal(out, np.concatenate([np.cumsum(c) for c in chunks(x, 256)]))
    np.testing.assert_array_equal(sums, [c.sum() for c in chunks(x, 256)])


@pytest.mark.parametrize("src", SCAN, ids=SCAN_IDS)
@pytest.mark.parametrize("block", [256, 64])
def test_scan_exclusive_blelloch(src, block):
    rng = np.random.default_rng(201)
    n = 1500
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    out = np.full(n, 12345, np.int32)
    m = 2 * block
    kernel(src[1], "scan_excl_blelloch", src[0])(cdiv(n, m), block, (x, out, n))
    exp = np.concatenate([np.cumsum(c) - c for c in chunks(x, m)])
    np.testing.assert_array_equal(out, exp)


@pytest.mark.parametrize("src", SCAN[:1], ids=SCAN_IDS[:1])  # slow to JIT: nvcc PTX only
@pytest.mark.parametrize("n,block", [(1000, 256), (500, 96), (70, 1024)])
def test_scan_shfl_inclusive_exclusive(src, n, block):
    rng = np.random.default_rng(202)
    x = rng.integers(-100, 100, n).astype(np.int32)
    inc = np.zeros(n, np.int32)
    exc = np.zeros(n, np.int32)
    kernel(src[1], "scan_incl_shfl", src[0])(cdiv(n, block), block, (x, inc, n))
    kernel(src[1], "scan_excl_shfl", src[0])(cdiv(n, block), block, (x, exc, n))
    exp = np.concatenate([np.cumsum(c) for c in chunks(x, block)])
    np.testing.assert_array_equal(inc, exp)
    np.testing.assert_array_equal(exc, exp - x)


@pytest.mark.parametrize("src", SCAN, ids=SCAN_IDS)
def test_scan_warp_f32(src):
    rng = np.random.default_rng(203)
    n = 700
    x = rng.integers(-20, 20, n).astype(np.float32)
    out = np.zeros(n, np.float32)
    kernel(src[1], "scan_warp_f32", src[0])(cdiv(n, 128), 128, (x, out, n))
    np.testing.assert_array_equal(out, np.concatenate([np.cumsum(c) for c in chunks(x, 32)]))
    y = rng.uniform(0, 1, n).astype(np.float32)
    kernel(src[1], "scan_warp_f32", src[0])(cdiv(n, 128), 128, (y, out, n))
    exp = np.concatenate([np.cumsum(c.astype(np.float64)) for c in chunks(y, 32)])
    np.testing.assert_allclose(out, exp, rtol=2e-6)


# ----------------------------------------------------------------------------------------- histogram
@pytest.mark.parametrize("dist", ["uniform", "skewed"])
def test_histogram_256(dist):
    rng = np.random.default_rng(300)
    n = 10007
    if dist == "uniform":
        data = rng.integers(0, 256, n).astype(np.uint8)
    else:
        data = np.minimum(rng.exponential(6, n), 255).astype(np.uint8)
    hist = np.zeros(256, np.uint32)
    kernel("histogram", "hist256")(5, 128, (data, n, hist))
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=256))


# ---------------------------------------------------------------------------------------------- sort
def test_bitonic_sort_f32():
    rng = np.random.default_rng(400)
    n = 1000
    x = rng.integers(-50, 50, n).astype(np.float32) + rng.choice([0, 0.5], n).astype(np.float32)
    x[:10] = np.float32(3.0)  # duplicates
    data = x.copy()
    kernel("bitonic", "bitonic_sort_f32")(cdiv(n, 256), 256, (data, n))
    np.testing.assert_array_equal(data, np.concatenate([np.sort(c) for c in chunks(x, 256)]))


@pytest.mark.parametrize("block", [64, 128])
def test_bitonic_sort_desc_i32_dynamic_shared(block):
    rng = np.random.default_rng(401)
    n = 1000
    x = rng.integers(-(2**31), 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    x[5] = INT_MIN + 1
    data = x.copy()
    m = 2 * block
    kernel("bitonic", "bitonic_sort_desc_i32")(cdiv(n, m), block, (data, n), shared_mem=m * 4)
    np.testing.assert_array_equal(data, np.concatenate([np.sort(c)[::-1] for c in chunks(x, m)]))


# ---------------------------------------------------------------------------------- warp collectives
WARPVOTE = [("ptx", "warpvote"), ("ptx", "warpvote_sm90")]
WV_IDS = ["sm80", "sm90"]


def _lanes_mask(bits) -> int:
    return sum(1 << lane for lane, b in enumerate(bits) if b)


@pytest.mark.parametrize("src", WARPVOTE, ids=WV_IDS)
def test_ballot_any_all(src):
    rng = np.random.default_rng(500)
    n, thr = 1000, 50
    x = rng.integers(0, 101, n).astype(np.int32)
    x[96:128] = 99  # warp 3: all above
    x[160:192] = 0  # warp 5: none above
    nw = cdiv(n, 128) * 4
    out = np.full((nw, 4), 0xDEAD, np.uint32)
    kernel(src[1], "warp_votes", src[0])(cdiv(n, 128), 128, (x, out, thr, n))
    for w in range(nw):
        seg = x[w * 32:(w + 1) * 32]
        b = _lanes_mask(seg > thr)
        exp = [b, int(b != 0), int(b == FULL), _lanes_mask(seg & 1)]
        assert list(out[w]) == exp, f"warp {w}"
    assert out[3, 2] == 1 and out[5, 1] == 0


@pytest.mark.parametrize("src", WARPVOTE, ids=WV_IDS)
def test_match_any(src):
    rng = np.random.default_rng(501)
    n = 1000
    keys = rng.integers(0, 4, n).astype(np.int32)
    out = np.zeros(n, np.uint32)
    kernel(src[1], "warp_match_any", src[0])(cdiv(n, 128), 128, (keys, out, n))
    exp = np.zeros(n, np.uint32)
    for i in range(n):
        w = i // 32
        seg = keys[w * 32:(w + 1) * 32]
        exp[i] = _lanes_mask(seg == keys[i])
    np.testing.assert_array_equal(out, exp)


@pytest.mark.parametrize("src", WARPVOTE, ids=WV_IDS)
def test_match_all(src):
    rng = np.random.default_rng(502)
    n = 1000
    keys = rng.integers(0, 3, n).astype(np.int32)
    keys[0:32] = 7
    keys[64:96] = -5
    keys[990:] = keys[999]  # last (partial) warp: inactive lanes use keys[n-1] -> uniform
    nw = cdiv(n, 128) * 4
    out = np.full(nw, 0xDEAD, np.uint32)
    pred = np.full(nw, 99, np.int32)
    kernel(src[1], "warp_match_all", src[0])(cdiv(n, 128), 128, (keys, out, pred, n))
    padded = np.concatenate([keys, np.full(nw * 32 - n, keys[n - 1], np.int32)])
    uniform = np.array([len(set(padded[w * 32:(w + 1) * 32])) == 1 for w in range(nw)])
    np.testing.assert_array_equal(out, np.where(uniform, FULL, 0).astype(np.uint32))
    np.testing.assert_array_equal(pred, uniform.astype(np.int32))
    assert uniform[0] and uniform[2] and uniform[31]


@pytest.mark.parametrize("src", WARPVOTE, ids=WV_IDS)
def test_shfl_xor_butterfly(src):
    rng = np.random.default_rng(503)
    n = 1000
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    s = np.zeros(n, np.int32)
    m = np.zeros(n, np.int32)
    kernel(src[1], "shfl_xor_allreduce", src[0])(cdiv(n, 128), 128, (x, s, m, n))
    w = np.arange(n) // 32
    sums = np.array([c.sum() for c in chunks(x, 32)])
    maxs = np.array([c.max() for c in chunks(x, 32)])
    np.testing.assert_array_equal(s, sums[w])
    np.testing.assert_array_equal(m, maxs[w])


@pytest.mark.parametrize("src", WARPVOTE, ids=WV_IDS)
def test_shfl_broadcast(src):
    rng = np.random.default_rng(504)
    n = 1000
    nw = cdiv(n, 128) * 4
    x = rng.standard_normal(n).astype(np.float32)
    srcs = rng.integers(0, 32, nw).astype(np.int32)
    out, out2, out3 = (np.zeros(n, np.float32) for _ in range(3))
    kernel(src[1], "shfl_broadcast", src[0])(cdiv(n, 128), 128, (x, srcs, out, out2, out3, n))
    padded = np.concatenate([x, np.full(nw * 32 - n, -1.0, np.float32)])
    i = np.arange(n)
    base = (i // 32) * 32
    lane = i % 32
    np.testing.assert_array_equal(out, padded[base + srcs[i // 32]])
    np.testing.assert_array_equal(out2, padded[base + (lane + 5) % 32])
    np.testing.assert_array_equal(out3, padded[base + (lane // 8) * 8 + 3])


@pytest.mark.parametrize("src", WARPVOTE, ids=WV_IDS)
def test_syncthreads_count_or_and(src):
    rng = np.random.default_rng(505)
    n, thr, block = 1000, 10, 128
    x = rng.integers(0, 21, n).astype(np.int32)
    x[0:128] = 20  # block 0: all true
    x[128:256] = 0  # block 1: all false
    nb = cdiv(n, block)
    out = np.full((nb, 3), -1, np.int32)
    kernel(src[1], "syncthreads_reduce", src[0])(nb, block, (x, out, thr, n))
    for b in range(nb):
        seg = x[b * block:(b + 1) * block] > thr
        full = len(seg) == block
        assert list(out[b]) == [int(seg.sum()), int(seg.any()), int(full and seg.all())], f"block {b}"


@pytest.mark.parametrize("src", WARPVOTE, ids=WV_IDS)
def test_shfl_ballot_partial_mask(src):
    rng = np.random.default_rng(506)
    n = 1000
    x = rng.integers(-5, 5, n).astype(np.int32)
    out = np.full(n, -777, np.int32)
    kernel(src[1], "shfl_partial_mask", src[0])(cdiv(n, 128), 128, (x, out, n))
    nw = cdiv(n, 128) * 4
    padded = np.concatenate([x, np.zeros(nw * 32 - n, np.int32)])
    exp = np.full(n, -777, np.int32)
    for i in range(0, n, 2):
        base, lane = (i // 32) * 32, i % 32
        seg = padded[base:base + 32]
        ballot = _lanes_mask([(lane_ % 2 == 0) and seg[lane_] > 0 for lane_ in range(32)])
        exp[i] = padded[base + (lane + 2) % 32] + bin(ballot).count("1")
    np.testing.assert_array_equal(out, exp)


# -------------------------------------------------------------------------------------------- atomics
ATOMICS = [("ptx", "atomics"), ("ptx_nvrtc", "atomics_sm52")]
AT_IDS = ["nvcc-sm80", "nvrtc-sm52"]


@pytest.mark.parametrize("src", ATOMICS, ids=AT_IDS)
def test_atomic_cas_float_max(src):
    rng = np.random.default_rng(600)
    n, m = 5000, 37
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(m, -np.inf, np.float32)
    kernel(src[1], "atomic_cas_fmax", src[0])(cdiv(n, 256), 256, (x, out, m, n))
    np.testing.assert_array_equal(out, [x[k::m].max() for k in range(m)])


@pytest.mark.parametrize("src", ATOMICS, ids=AT_IDS)
def test_atomic_cas_double_add(src):
    rng = np.random.default_rng(601)
    n, m = 4000, 13
    x = rng.standard_normal(n)
    out = np.zeros(m)
    kernel(src[1], "atomic_cas_dadd", src[0])(cdiv(n, 128), 128, (x, out, m, n))
    np.testing.assert_allclose(out, [x[k::m].sum() for k in range(m)], rtol=1e-12, atol=1e-12)
    y = rng.integers(-(2**20), 2**20, n).astype(np.float64)
    out[:] = 0.5
    kernel(src[1], "atomic_cas_dadd", src[0])(cdiv(n, 128), 128, (y, out, m, n))
    np.testing.assert_array_equal(out, [0.5 + y[k::m].sum() for k in range(m)])


@pytest.mark.parametrize("src", ATOMICS, ids=AT_IDS)
def test_atomic_int_ops(src):
    rng = np.random.default_rng(602)
    n, limit = 3000, 17
    x = rng.integers(-(2**19), 2**19, n).astype(np.int32)
    slots = np.array([INT_MAX, INT_MIN, 0, 0, -12345], np.int32)
    uslots = np.array([0, 5, FULL, 0, 0, FULL, 0], np.uint32)
    old = np.zeros(n, np.int32)
    kernel(src[1], "atomic_int_ops", src[0])(cdiv(n, 256), 256, (x, slots, uslots, old, limit, n))
    xs = [int(v) for v in x]
    ux = [v & FULL for v in xs]
    a, o, xo = FULL, 0, 0
    for v in ux:
        a &= v | 0x0F0F0000
        o |= 1 << (v & 31)
        xo ^= v
    assert slots[0] == min(xs) and slots[1] == max(xs)
    assert slots[2] == sum(xs) and slots[3] == -sum(xs)
    exp_u = [n % (limit + 1), (5 - n) % (limit + 1), a, o, xo, min(ux), max(ux)]
    np.testing.assert_array_equal(uslots, np.array(exp_u, np.uint32))
    # atomicExch: the returned values plus the final value are a permutation of the initial + new values
    assert sorted([*old.tolist(), int(slots[4])]) == sorted([-12345, *xs])


@pytest.mark.parametrize("src", ATOMICS, ids=AT_IDS)
def test_atomic_64bit_ops(src):
    rng = np.random.default_rng(603)
    n = 2000
    x = rng.integers(-(2**62), 2**62, n, dtype=np.int64)
    s = np.array([0, 2**63 - 1, -(2**63)], np.int64)
    u = np.array([2**64 - 1, 0, 0], np.uint64)
    kernel(src[1], "atomic_u64_ops", src[0])(cdiv(n, 128), 128, (x, s, u, n))
    xs = [int(v) for v in x]
    total = sum(xs) % 2**64
    total = total - 2**64 if total >= 2**63 else total
    a, o, xo = 2**64 - 1, 0, 0
    for v in xs:
        a &= (v % 2**64) | 0xFF00FF00FF00FF00
        o |= 1 << (v & 63)
        xo ^= v % 2**64
    assert s.tolist() == [total, min(xs), max(xs)]
    assert [int(v) for v in u] == [a, o, xo]


@pytest.mark.parametrize("src", ATOMICS, ids=AT_IDS)
def test_device_global_counter(src):
    mod = ptxjit.Module.from_file(CORPUS / src[0] / f"{src[1]}.ptx")  # fresh globals
    count = mod.get_function("global_counter")
    read = mod.get_function("read_globals")
    g = np.zeros(5, np.uint32)
    read(1, 32, (g,))
    assert g.tolist() == [1000, 10, 20, 30, 40]  # static initializers
    n = 700
    t = np.zeros(n, np.uint32)
    count(cdiv(n, 128), 128, (t, n))
    np.testing.assert_array_equal(np.sort(t), np.arange(1000, 1000 + n))
    read(1, 32, (g,))
    assert g.tolist() == [1000 + n, 10 + 175, 20 + 175, 30 + 175, 40 + 175]
    # globals persist across launches of the same module
    t2 = np.zeros(10, np.uint32)
    count(1, 32, (t2, 10))
    np.testing.assert_array_equal(np.sort(t2), np.arange(1000 + n, 1000 + n + 10))
    read(1, 32, (g,))
    assert g.tolist() == [1000 + n + 10, 188, 198, 207, 217]


@pytest.mark.parametrize("src", ATOMICS, ids=AT_IDS)
def test_atomic_shared_f32(src):
    rng = np.random.default_rng(604)
    n, m, block = 3000, 5, 128
    x = rng.integers(-100, 100, n).astype(np.float32)
    out = np.zeros(m, np.float32)
    kernel(src[1], "atomic_shared_f32", src[0])(cdiv(n, block), block, (x, out, m, n))
    exp = np.zeros(m, np.int64)
    for b, c in enumerate(chunks(x, block)):
        exp[b % m] += int(c.astype(np.int64).sum())
    np.testing.assert_array_equal(out, exp.astype(np.float32))
