"""Real-kernel corpus: elementwise, tiled, stencil, transpose, grids, const/local memory, calls, printf.

The PTX under corpus/ptx*/ is generated from corpus/*.cu by scripts/gen_corpus.py (nvcc / NVRTC) and
committed, so these tests need neither.  Every expectation is computed independently with NumPy or
plain Python.
"""

from __future__ import annotations

import re
import sys
from fractions import Fraction

import numpy as np
import pytest

import ptxjit
from tests.corpus_util import CORPUS, cdiv, kernel


def aligned_empty(n: int, dtype, align: int = 16) -> np.ndarray:
    """A 1-D array whose data pointer is `align`-byte aligned (for float4 loads)."""
    dtype = np.dtype(dtype)
    raw = np.zeros(n * dtype.itemsize + align, dtype=np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + n * dtype.itemsize].view(dtype)


def f32_fma_ref(a, b, c) -> np.ndarray:
    """fma in float32 via float64 (the product is exact in float64)."""
    prod = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    return (prod + np.asarray(c, np.float64)).astype(np.float32)


def fma_f64(a: float, b: float, c: float) -> float:
    """Correctly rounded a*b+c (exact rational arithmetic; int/int division rounds correctly)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


# The same elementwise source compiled by nvcc (sm_80), NVRTC 12 (compute_80) and NVRTC 12 (compute_52).
ELEMENTWISE = [("ptx", "elementwise"), ("ptx_nvrtc", "elementwise"), ("ptx_nvrtc", "elementwise_sm52")]
ELEM_IDS = ["nvcc-sm80", "nvrtc-sm80", "nvrtc-sm52"]


# ----------------------------------------------------------------------------------------- elementwise
@pytest.mark.parametrize("src", ELEMENTWISE, ids=ELEM_IDS)
def test_vadd(src):
    rng = np.random.default_rng(1)
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = np.full(n + 5, -7.0, np.float32)
    kernel(src[1], "vadd", src[0])(cdiv(n, 128), 128, (a, b, c, n))
    np.testing.assert_array_equal(c[:n], a + b)
    np.testing.assert_array_equal(c[n:], -7.0)  # nothing written past n


@pytest.mark.parametrize("src", ELEMENTWISE, ids=ELEM_IDS)
def test_saxpy(src):
    rng = np.random.default_rng(2)
    n = 3001
    x = rng.uniform(-4, 4, n).astype(np.float32)
    y = rng.uniform(-4, 4, n).astype(np.float32)
    a = 2.75
    exp = f32_fma_ref(np.float32(a), x, y)
    kernel(src[1], "saxpy", src[0])(cdiv(n, 256), 256, (n, a, x, y))
    np.testing.assert_allclose(y, exp, rtol=2.5e-7, atol=0)


@pytest.mark.parametrize("src", ELEMENTWISE, ids=ELEM_IDS)
def test_saxpy_gridstride(src):
    rng = np.random.default_rng(3)
    n = 5000
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    exp = f32_fma_ref(np.float32(-1.5), x, y)
    kernel(src[1], "saxpy_gridstride", src[0])(3, 64, (n, np.float32(-1.5), x, y))
    np.testing.assert_allclose(y, exp, rtol=2.5e-7, atol=1e-30)


def test_daxpy_gridstride_u64():
    rng = np.random.default_rng(4)
    n = 4099
    x = rng.standard_normal(n)
    y = rng.standard_normal(n)
    exp = np.array([fma_f64(0.3, float(a), float(b)) for a, b in zip(x, y, strict=True)])
    kernel("elementwise", "daxpy_gridstride")((5,), (32,), (np.uint64(n), 0.3, x, y))
    np.testing.assert_array_equal(y, exp)  # fma.rn.f64: one rounding


@pytest.mark.parametrize("src", ELEMENTWISE, ids=ELEM_IDS)
def test_float4_ops(src):
    rng = np.random.default_rng(5)
    n4 = 777
    inp = aligned_empty(4 * n4, np.float32)
    inp[:] = rng.uniform(-10, 10, 4 * n4).astype(np.float32)
    out = aligned_empty(4 * n4, np.float32)
    out[:] = 0
    s = np.float32(1.25)
    kernel(src[1], "float4_ops", src[0])(cdiv(n4, 64), 64, (inp, out, s, n4))
    v = inp.reshape(n4, 4)
    exp = np.stack([v[:, 0] * s, v[:, 1] + s, v[:, 2] - s, v[:, 3] * v[:, 0]], axis=1)
    np.testing.assert_array_equal(out.reshape(n4, 4), exp)


@pytest.mark.parametrize("src", ELEMENTWISE, ids=ELEM_IDS)
def test_early_exit_before_syncthreads(src):
    rng = np.random.default_rng(6)
    n = 999  # 4 blocks of 256, last one partial; partner of the last element is out of range
    inp = rng.integers(0, 1000, n).astype(np.int32)
    out = np.full(n, -99, np.int32)
    kernel(src[1], "early_exit_sync", src[0])(cdiv(n, 256), 256, (inp, out, n))
    idx = np.arange(n)
    partner = idx ^ 1
    pv = np.where(partner < n, inp[np.minimum(partner, n - 1)], -1)
    np.testing.assert_array_equal(out, inp * 1000 + pv)


# ------------------------------------------------------------------------------------------- matmul
MATMUL = [("ptx", "matmul"), ("ptx_nvrtc", "matmul_nvrtc13")]


@pytest.mark.parametrize("src", MATMUL, ids=["nvcc", "nvrtc13"])
def test_matmul_tiled_random(src):
    rng = np.random.default_rng(7)
    M, N, K = 70, 45, 53
    A = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    C = np.zeros((M, N), np.float32)
    kernel(src[1], "matmul_tiled", src[0])((cdiv(N, 16), cdiv(M, 16)), (16, 16), (A, B, C, M, N, K))
    exp = A.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_allclose(C, exp, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("src", MATMUL, ids=["nvcc", "nvrtc13"])
def test_matmul_tiled_exact_integers(src):
    rng = np.random.default_rng(8)
    M, N, K = 33, 50, 40
    A = rng.integers(-4, 5, (M, K)).astype(np.float32)
    B = rng.integers(-4, 5, (K, N)).astype(np.float32)
    C = np.full((M, N), np.nan, np.float32)
    kernel(src[1], "matmul_tiled", src[0])((cdiv(N, 16), cdiv(M, 16), 1), (16, 16, 1), (A, B, C, M, N, K))
    np.testing.assert_array_equal(C, (A.astype(np.int64) @ B.astype(np.int64)).astype(np.float32))


# ---------------------------------------------------------------------------------------- transpose
@pytest.mark.parametrize("shape", [(100, 75), (32, 64), (1, 40)])
def test_transpose_padded(shape):
    rows, cols = shape
    rng = np.random.default_rng(9)
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.zeros((cols, rows), np.float32)
    kernel("transpose", "transpose_padded")((cdiv(cols, 32), cdiv(rows, 32)), (32, 8), (out, a, rows, cols))
    np.testing.assert_array_equal(out, a.T)


# ------------------------------------------------------------------------------------------ stencils
def test_stencil1d_halo():
    rng = np.random.default_rng(10)
    n = 1000
    inp = rng.integers(-100, 100, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    kernel("stencil", "stencil1d")(cdiv(n, 128), 128, (inp, out, n))
    p = np.pad(inp.astype(np.int64), 3)
    exp = sum((o + 4) * p[3 + o:3 + o + n] for o in range(-3, 4))
    np.testing.assert_array_equal(out, exp)


def test_stencil2d_halo():
    rng = np.random.default_rng(11)
    h, w = 45, 70
    a = rng.uniform(-1, 1, (h, w)).astype(np.float32)
    out = np.zeros((h, w), np.float32)
    kernel("stencil", "stencil2d")((cdiv(w, 16), cdiv(h, 16)), (16, 16), (a, out, h, w))
    p = np.pad(a.astype(np.float64), 1)
    exp = 4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]
    np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-6)


# -------------------------------------------------------------------------------------------- grids
def test_grid2d_coords():
    w, h = 50, 37
    out = np.zeros((h, w), np.uint32)
    kernel("grids", "grid2d_coords")((cdiv(w, 8), cdiv(h, 4)), (8, 4), (out, w, h))
    y, x = np.indices((h, w))
    np.testing.assert_array_equal(out, (x.astype(np.uint32) << 16) | y.astype(np.uint32))


def test_grid3d_ids():
    grid, block = (2, 3, 2), (4, 2, 3)
    nthr = 4 * 2 * 3
    total = 2 * 3 * 2 * nthr
    out = np.full((total, 8), -1, np.int32)
    kernel("grids", "grid3d_ids")(grid, block, (out,))
    exp = np.zeros((total, 8), np.int32)
    for bz in range(2):
        for by in range(3):
            for bx in range(2):
                blin = (bz * 3 + by) * 2 + bx
                for tz in range(3):
                    for ty in range(2):
                        for tx in range(4):
                            g = blin * nthr + (tz * 2 + ty) * 4 + tx
                            exp[g] = [bx, by, bz, tx, ty, tz, 20302, 40203]
    np.testing.assert_array_equal(out, exp)


def test_vol3d_add():
    rng = np.random.default_rng(12)
    d, h, w = 5, 9, 13
    a = rng.standard_normal((d, h, w)).astype(np.float32)
    b = rng.standard_normal((d, h, w)).astype(np.float32)
    c = np.zeros_like(a)
    kernel("grids", "vol3d_add")((cdiv(w, 4), cdiv(h, 4), cdiv(d, 2)), (4, 4, 2), (a, b, c, d, h, w))
    np.testing.assert_array_equal(c, a + np.float32(2) * b)


# ----------------------------------------------------------------------------------- constant memory
def test_constant_memory_poly_and_lut():
    rng = np.random.default_rng(13)
    n = 600
    x = rng.uniform(-1, 1, n).astype(np.float32)
    idx = rng.integers(-1000, 1000, n).astype(np.int32)
    y = np.zeros(n, np.float32)
    z = np.zeros(n, np.float64)
    kernel("constmem", "const_poly")(cdiv(n, 128), 128, (x, y, idx, z, n))
    coeffs = [1.0, -0.5, 0.25, -0.125, 0.0625, 0.03125, -2.0, 3.0]
    xd = x.astype(np.float64)
    acc = np.full(n, coeffs[7])
    for k in range(6, -1, -1):
        acc = acc * xd + coeffs[k]
    np.testing.assert_allclose(y, acc, rtol=1e-5, atol=1e-6)
    lut = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3])
    np.testing.assert_array_equal(z, lut[idx & 15] * 2.5)


def test_constant_memory_set_through_get_global():
    """Module.get_global: typed views of __constant__ variables; writes are what the next launch reads."""
    mod = ptxjit.Module.from_file(CORPUS / "ptx" / "constmem.ptx")
    # nvcc declares initialized variables as .b8 arrays: the PTX type is bytes, dtype= gives the C type
    assert mod.get_global("c_poly").dtype == np.uint8 and mod.get_global("c_poly").shape == (32,)
    poly = mod.get_global("c_poly", dtype=np.float32)
    lut, scale = mod.get_global("c_lut", dtype=np.int32), mod.get_global("c_scale", dtype=np.float64)
    assert poly.shape == (8,) and lut.shape == (16,) and scale.shape == (1,)
    np.testing.assert_array_equal(poly, [1.0, -0.5, 0.25, -0.125, 0.0625, 0.03125, -2.0, 3.0])
    poly[:] = 0
    poly[1] = 2.0  # y = 2x
    lut[:] = np.arange(16)
    scale[0] = 0.5
    n = 256
    x = np.linspace(-1, 1, n, dtype=np.float32)
    idx = np.arange(n, dtype=np.int32)
    y = np.zeros(n, np.float32)
    z = np.zeros(n, np.float64)
    mod.get_function("const_poly")(cdiv(n, 128), 128, (x, y, idx, z, n))
    np.testing.assert_allclose(y, 2 * x, rtol=1e-6)
    np.testing.assert_array_equal(z, (idx & 15) * 0.5)
    assert mod.get_global("c_lut", dtype=np.uint8).nbytes == 64
    with pytest.raises(KeyError, match="c_poly"):
        mod.get_global("no_such_symbol")


# -------------------------------------------------------------------------------------- local memory
def test_local_counts_dynamic_index():
    rng = np.random.default_rng(14)
    n, m = 300, 20
    inp = rng.integers(0, 256, (n, m)).astype(np.uint32)
    out = np.zeros((n, 16), np.uint32)
    kernel("localmem", "local_counts")(cdiv(n, 64), 64, (inp, out, n, m))
    exp = np.zeros((n, 16), np.uint32)
    for i in range(n):
        cnt = np.bincount(inp[i] & 15, minlength=16)
        rot = int(inp[i, 0]) >> 4
        exp[i] = [cnt[(k + rot) & 15] for k in range(16)]
    np.testing.assert_array_equal(out, exp)


def test_local_permute():
    rng = np.random.default_rng(15)
    n, L = 200, 24
    inp = rng.standard_normal((n, L)).astype(np.float32)
    out = np.zeros((n, L), np.float32)
    kernel("localmem", "local_permute")(cdiv(n, 96), 96, (inp, out, n))
    i = np.arange(n)[:, None]
    k = np.arange(L)[None, :]
    np.testing.assert_array_equal(out, inp[i, (k * 7 + i) % L] * np.float32(2))


# ------------------------------------------------------------------------------- device functions
DEVFUNCS = [("ptx", "devfuncs"), ("ptx_nvrtc", "devfuncs_nvrtc13")]
DEV_IDS = ["nvcc", "nvrtc13"]


def _collatz(x: int) -> int:
    s = 0
    while x != 1:
        x = 3 * x + 1 if x & 1 else x // 2
        s += 1
    return s


@pytest.mark.parametrize("src", DEVFUNCS, ids=DEV_IDS)
def test_noinline_calls(src):
    rng = np.random.default_rng(16)
    n = 500
    x = rng.uniform(-3, 3, n).astype(np.float32)
    y = np.zeros(n, np.float32)
    steps = np.zeros(n, np.int32)
    kernel(src[1], "noinline_calls", src[0])(cdiv(n, 128), 128, (x, y, steps, n))
    xd = x.astype(np.float64)
    np.testing.assert_allclose(y, (0.5 * xd - 1.25) * xd + 2.0, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(steps, [_collatz(i + 1) for i in range(n)])


@pytest.mark.parametrize("src", DEVFUNCS, ids=DEV_IDS)
def test_noinline_struct_by_value(src):
    rng = np.random.default_rng(17)
    n = 300
    a = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    b = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    out = np.zeros((n, 3), np.float32)
    kernel(src[1], "noinline_struct", src[0])(cdiv(n, 64), 64, (a, b, out, n))
    exp = np.cross(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-5)


def _fib(k: int) -> int:
    a, b = 0, 1
    for _ in range(k):
        a, b = b, a + b
    return a


@pytest.mark.parametrize("src", DEVFUNCS, ids=DEV_IDS)
def test_recursive_fib(src):
    rng = np.random.default_rng(18)
    n = 100
    inp = rng.integers(0, 17, n).astype(np.int32)
    inp[:3] = [0, 1, 16]
    out = np.zeros(n, np.int32)
    kernel(src[1], "recursive_fib", src[0])(cdiv(n, 32), 32, (inp, out, n))
    np.testing.assert_array_equal(out, [_fib(int(k)) for k in inp])


def _rec_a(n: int, acc: int) -> int:
    if n <= 0:
        return acc
    return _rec_b(n - 1, (acc * 3 + n) % 2**64) ^ n


def _rec_b(n: int, acc: int) -> int:
    if n <= 0:
        return (acc + 7) % 2**64
    return (_rec_a(n - 1, (acc + 2 * n) % 2**64) * 5) % 2**64


@pytest.mark.parametrize("src", DEVFUNCS, ids=DEV_IDS)
def test_recursive_mutual(src):
    rng = np.random.default_rng(19)
    n = 150
    inp = rng.integers(-2, 40, n).astype(np.int32)
    out = np.zeros(n, np.uint64)
    kernel(src[1], "recursive_mutual", src[0])(cdiv(n, 64), 64, (inp, out, n))
    np.testing.assert_array_equal(out, np.array([_rec_a(int(k), i) for i, k in enumerate(inp)], np.uint64))


PARAMS_DTYPE = np.dtype({
    "names": ["scale", "offset", "bias", "flag", "delta", "big"],
    "formats": ["<f4", "<i4", "<f8", "u1", "<i2", "<i8"],
    "offsets": [0, 4, 8, 16, 18, 24],
    "itemsize": 32,
})


@pytest.mark.parametrize("src", DEVFUNCS, ids=DEV_IDS)
@pytest.mark.parametrize("flag", [1, 0])
def test_struct_param_by_value(src, flag):
    rng = np.random.default_rng(20)
    n = 257
    inp = rng.uniform(-5, 5, n).astype(np.float32)
    out = np.zeros(n, np.float64)
    p = np.zeros(1, PARAMS_DTYPE)
    p[0] = (1.5, -7, 0.125, flag, -3, 2**40 + 5)
    kernel(src[1], "struct_param", src[0])(cdiv(n, 128), 128, (p[0], inp, out, n))
    if flag:
        f = f32_fma_ref(np.float32(1.5), inp, np.float32(-7))
        exp = f.astype(np.float64) + 0.125
    else:
        exp = (2**40 + 5 - 3 * np.arange(n, dtype=np.int64)).astype(np.float64)
    np.testing.assert_array_equal(out, exp)


# --------------------------------------------------------------------------------------------- printf
def _flush():
    sys.stdout.flush()


def test_printf_formats(capfd):
    n = 40
    x = (np.arange(n, dtype=np.float32) * np.float32(0.37) - np.float32(3.1)).astype(np.float32)
    capfd.readouterr()
    kernel("printf", "printf_kernel")(cdiv(n, 16), 16, (x, n))
    _flush()
    lines = capfd.readouterr().out.splitlines()
    exp = []
    for i in range(n):
        xv = float(x[i])
        # Python's %-formatting follows C printf for these conversions
        exp.append("tid=%d blk=%u x=%.3f sq=%e name=%s big=%d hex=%x c=%c"  # noqa: UP031
                   % (i, i // 16, xv, xv * xv, "odd" if i & 1 else "even", i * 1000000007, i * 255,
                      chr(65 + i % 26)))
    assert sorted(lines) == sorted(exp)


def test_printf_simple(capfd):
    capfd.readouterr()
    kernel("printf", "printf_simple")(2, 32, (42,))
    _flush()
    lines = capfd.readouterr().out.splitlines()
    assert lines == ["hello from ptx", "[   42|ab  |%|+2.50]"]


def test_printf_line_count_matches_threads(capfd):
    n = 77
    x = np.ones(n, np.float32)
    capfd.readouterr()
    kernel("printf", "printf_kernel")(cdiv(n, 32), 32, (x, n))
    _flush()
    lines = capfd.readouterr().out.splitlines()
    assert len(lines) == n
    tids = sorted(int(re.match(r"tid=(\d+) ", ln).group(1)) for ln in lines)
    assert tids == list(range(n))
