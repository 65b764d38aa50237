"""Numba @cuda.jit kernels compiled to PTX by numba-cuda (no GPU) and run by ptxjit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import cuda, float32, float64, int32

import ptxjit
import ptxjit.numba as pn

RNG = np.random.default_rng(99)


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXJIT_CACHE_DIR", str(tmp_path / "cache"))


@pn.jit
def vadd(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def test_elementwise_grid1_and_signature_cache():
    n = 1000
    a, b = RNG.random(n, dtype=np.float32), RNG.random(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    vadd[(n + 127) // 128, 128](a, b, out)
    np.testing.assert_array_equal(out, a + b)
    out[:] = 0
    s0 = pn.numba_stats()
    vadd[(n + 127) // 128, 128](a, b, out)  # same types: no new compile
    np.testing.assert_array_equal(out, a + b)
    s1 = pn.numba_stats()
    assert s1["compiles"] == s0["compiles"] and s1["launches"] == s0["launches"] + 1
    ai, bi, oi = np.arange(10), np.arange(10), np.zeros(10, np.int64)  # int64: a second specialization
    vadd[1, 32](ai, bi, oi)
    np.testing.assert_array_equal(oi, 2 * np.arange(10))
    assert len(vadd.signatures) >= 2 and all(".entry" in p for p in vadd.inspect_ptx().values())
    with pytest.raises(ValueError, match="launch configuration"):
        vadd(a, b, out)


def test_2d_grid_on_2d_array_and_numba_dispatcher():
    @cuda.jit
    def scale2d(x, out, s):
        i, j = cuda.grid(2)
        if i < x.shape[0] and j < x.shape[1]:
            out[i, j] = x[i, j] * s + i - j

    x = RNG.random((37, 23))
    out = np.zeros_like(x)
    pn.run(scale2d, (3, 2), (16, 16), x, out, 2.5)
    ii, jj = np.indices(x.shape)
    np.testing.assert_allclose(out, x * 2.5 + ii - jj, rtol=1e-13, atol=1e-13)  # fma contraction
    # a Fortran-ordered and a transposed view ('F' and 'A' layouts) go through the same kernel
    xf = np.asfortranarray(x)
    outf = np.zeros_like(xf)
    pn.run(scale2d, (3, 2), (16, 16), xf, outf, 2.5)
    np.testing.assert_allclose(outf, out, rtol=1e-15)
    xt, outt = x.T, np.zeros((23, 37))
    pn.run(scale2d, (2, 3), (16, 16), xt, outt, 1.0)
    ii, jj = np.indices(xt.shape)
    np.testing.assert_allclose(outt, xt + ii - jj, rtol=1e-13, atol=1e-13)


def test_strided_views():
    base = np.zeros(3000, np.float32)
    a = np.arange(1000, dtype=np.float32)
    b = np.arange(2000, dtype=np.float32)[::2]  # a strided input
    vadd[8, 128](a, b, base[::3])
    np.testing.assert_array_equal(base[::3], a + np.arange(0, 2000, 2))
    assert not base[1::3].any() and not base[2::3].any()
    # a reversed view (negative stride) and a column of a 2-D array
    m = np.zeros((1000, 4), np.float32)
    vadd[8, 128](a[::-1], a, m[:, 2])
    np.testing.assert_array_equal(m[:, 2], a[::-1] + a)
    assert not m[:, [0, 1, 3]].any()


TPB = 16


@pn.jit
def matmul_tiled(A, B, C):
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    x, y = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    acc = float32(0.0)
    for t in range((A.shape[1] + TPB - 1) // TPB):
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and tx + t * TPB < A.shape[1]:
            sA[ty, tx] = A[y, tx + t * TPB]
        if x < B.shape[1] and ty + t * TPB < B.shape[0]:
            sB[ty, tx] = B[ty + t * TPB, x]
        cuda.syncthreads()
        for k in range(TPB):
            acc += sA[ty, k] * sB[k, tx]
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = acc


def test_shared_tiled_matmul():
    A = RNG.random((40, 70), dtype=np.float32)
    B = RNG.random((70, 33), dtype=np.float32)
    C = np.zeros((40, 33), np.float32)
    matmul_tiled[((33 + 15) // 16, (40 + 15) // 16), (16, 16)](A, B, C)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-5)


def test_atomic_histogram():
    @pn.jit
    def histogram(x, bins, lo, width):
        i = cuda.grid(1)
        stride = cuda.gridsize(1)
        while i < x.size:
            b = int32((x[i] - lo) / width)
            if b >= 0 and b < bins.size:
                cuda.atomic.add(bins, b, 1)
            i += stride

    x = RNG.normal(size=20000)
    bins = np.zeros(20, np.int32)
    histogram[4, 128](x, bins, -2.0, 0.2)
    b = ((x - -2.0) / 0.2).astype(np.int32)  # truncation toward zero, as int32() does
    ref = np.bincount(b[(b >= 0) & (b < 20)], minlength=20)
    np.testing.assert_array_equal(bins, ref)
    assert bins.sum() > 18000


def test_shared_memory_reduction():
    @pn.jit
    def block_sum(x, out):
        s = cuda.shared.array(256, dtype=float64)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        s[t] = x[i] if i < x.size else 0.0
        cuda.syncthreads()
        step = cuda.blockDim.x // 2
        while step > 0:
            if t < step:
                s[t] += s[t + step]
            cuda.syncthreads()
            step //= 2
        if t == 0:
            cuda.atomic.add(out, 0, s[0])

    x = RNG.random(10000)
    out = np.zeros(1)
    block_sum[(x.size + 255) // 256, 256](x, out)
    np.testing.assert_allclose(out[0], x.sum(), rtol=1e-12)


def test_math_functions():
    @pn.jit
    def mathk(x, out32, out64):
        i = cuda.grid(1)
        if i < x.size:
            v = x[i]
            out64[i] = math.sin(v) + math.exp(v) + math.sqrt(v) + math.log(1.0 + v) + math.atan2(v, 0.3)
            w = float32(v)
            out32[i] = math.cos(w) * math.tanh(w) + math.pow(w, float32(1.5))

    x = RNG.random(300)
    o32, o64 = np.zeros(300, np.float32), np.zeros(300)
    mathk[3, 128](x, o32, o64)
    np.testing.assert_allclose(o64, np.sin(x) + np.exp(x) + np.sqrt(x) + np.log1p(x) + np.arctan2(x, 0.3),
                               rtol=1e-14)
    w = x.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(o32, np.cos(w) * np.tanh(w) + w ** 1.5, rtol=1e-5, atol=1e-6)


def test_int_and_float64_scalars():
    @pn.jit
    def affine(x, out, a, b, k, flag):
        i = cuda.grid(1)
        if i < x.size:
            v = x[i] * a + b
            if flag:
                v += k * i
            out[i] = v

    x = np.arange(100, dtype=np.int64)
    out = np.zeros(100)
    affine[1, 128](x, out, 1.5, -2.25, 7, True)
    np.testing.assert_array_equal(out, x * 1.5 - 2.25 + 7 * np.arange(100))
    affine[1, 128](x, out, np.float64(0.5), 3, np.int32(-4), False)  # new types: a new specialization
    np.testing.assert_array_equal(out, x * 0.5 + 3)
    big = 2**40 + 3
    affine[1, 128](x, out, 0.0, 0.0, big, True)
    np.testing.assert_array_equal(out, (big * np.arange(100)).astype(np.float64))


def test_3d_array():
    @pn.jit
    def fill3(a, c):
        i, j, k = cuda.grid(3)
        if i < a.shape[0] and j < a.shape[1] and k < a.shape[2]:
            a[i, j, k] = i * 10000 + j * 100 + k + c

    a = np.zeros((5, 9, 17), np.int32)
    fill3[(1, 2, 3), (8, 8, 8)](a, np.int32(3))
    np.testing.assert_array_equal(a, np.fromfunction(lambda i, j, k: i * 10000 + j * 100 + k + 3, a.shape))
    # a strided 3-D view
    big = np.zeros((10, 9, 34), np.int32)
    fill3[(1, 2, 3), (8, 8, 8)](big[::2, :, ::2], np.int32(0))
    np.testing.assert_array_equal(big[::2, :, ::2], a - 3)
    assert not big[1::2].any() and not big[:, :, 1::2].any()


@cuda.jit(device=True)
def clamp(v, lo, hi):
    return min(max(v, lo), hi)


@pn.jit(device=True)
def smoothstep(v):
    return v * v * (3.0 - 2.0 * v)


def test_device_functions():
    @pn.jit
    def kern(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = smoothstep(clamp(x[i], 0.0, 1.0))

    x = np.linspace(-0.5, 1.5, 101)
    out = np.zeros_like(x)
    kern[1, 128](x, out)
    c = np.clip(x, 0, 1)
    np.testing.assert_allclose(out, c * c * (3 - 2 * c), rtol=1e-15)


def test_declared_signature_warp_shuffle_and_device_array():
    @pn.jit("void(float32[:], float32[:])")
    def warp_sum(x, out):
        i = cuda.grid(1)
        v = x[i]
        off = 16
        while off > 0:
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
            off //= 2
        if cuda.laneid == 0:
            out[i // 32] = v

    assert len(warp_sum.signatures) == 1  # compiled eagerly
    x = ptxjit.to_device(RNG.integers(0, 100, 128).astype(np.float32))
    out = ptxjit.zeros(4, np.float32)
    warp_sum[1, 128](x, out)
    np.testing.assert_array_equal(out.copy_to_host(), x.copy_to_host().reshape(4, 32).sum(axis=1))
    with pytest.raises(TypeError, match="no declared signature"):
        warp_sum[1, 128](np.zeros(128), np.zeros(4))


def test_dynamic_shared_memory_and_local_array():
    @pn.jit
    def kern(x, out):
        s = cuda.shared.array(0, dtype=int32)
        loc = cuda.local.array(4, dtype=int32)
        t = cuda.threadIdx.x
        s[t] = x[cuda.grid(1)]
        cuda.syncthreads()
        for j in range(4):
            loc[j] = s[(t + j) % cuda.blockDim.x]
        acc = 0
        for j in range(4):
            acc += loc[j] * (j + 1)
        out[cuda.grid(1)] = acc

    x = RNG.integers(0, 1000, 256).astype(np.int32)
    out = np.zeros_like(x)
    kern[2, 128, 0, 128 * 4](x, out)
    xb = x.reshape(2, 128)
    ref = sum((j + 1) * np.roll(xb, -j, axis=1) for j in range(4)).ravel()
    np.testing.assert_array_equal(out, ref)


def test_run_accepts_plain_function_and_caches():
    def neg(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] = -x[i]

    x = np.arange(50, dtype=np.float32)
    c0 = pn.numba_stats()["compiles"]
    pn.run(neg, 1, 64, x)
    pn.run(neg, 1, 64, x)
    np.testing.assert_array_equal(x, np.arange(50, dtype=np.float32))
    assert pn.numba_stats()["compiles"] == c0 + 1
    with pytest.raises(TypeError, match="cannot pass"):
        pn.run(neg, 1, 64, [1.0, 2.0])


def test_fp16_links_numba_cuda_cpp_shims():
    # cuda.fp16 is implemented by CUDA C++ shims that Numba links; ptxjit compiles them with NVRTC and merges them
    @pn.jit
    def hfma(x, y, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = cuda.fp16.hfma(x[i], y[i], x[i])

    x = RNG.random(100).astype(np.float16)
    y = RNG.random(100).astype(np.float16)
    out = np.zeros_like(x)
    hfma[1, 128](x, y, out)
    ref = (x.astype(np.float32) * y.astype(np.float32) + x.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=1e-3)
    (ptx,) = hfma.inspect_ptx().values()
    assert ".extern .func" not in ptx and "fma.rn.f16" in ptx
