"""CUDA C++ source through NVRTC: compile_cuda, RawKernel, RawModule, load_module, the on-disk PTX cache."""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.cuda import _nvrtc

RNG = np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PTXJIT_CACHE_DIR", str(tmp_path / "cache"))


def _cache_files(tmp_path) -> list[Path]:
    return sorted((tmp_path / "cache" / "nvrtc").rglob("*.json"))


# ------------------------------------------------------------------ kernels
def test_vector_add_rawkernel():
    k = ptxjit.RawKernel(r'''
    extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) c[i] = a[i] + b[i];
    }''', "vadd")
    n = 1000
    a, b = RNG.random(n, dtype=np.float32), RNG.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    k(((n + 127) // 128,), (128,), (a, b, c, np.int32(n)))
    np.testing.assert_array_equal(c, a + b)
    assert k.mangled_name == "vadd" and ".entry vadd" in k.ptx
    s, c2 = ptxjit.Stream(), np.zeros(n, np.float32)  # CuPy's stream= keyword: asynchronous
    k(((n + 127) // 128,), (128,), (a, b, c2, np.int32(n)), stream=s)
    s.synchronize()
    np.testing.assert_array_equal(c2, a + b)
    assert k.attributes["max_threads_per_block"] == 1024 and k.attributes["num_params"] == 4


def test_templates_with_name_expressions():
    src = r'''
    template <typename T, int F>
    __global__ void axpy(T a, const T* x, T* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i] * F + y[i];
    }'''
    exprs = ["axpy<float, 1>", "axpy<double, 2>"]
    res = ptxjit.compile_cuda(src, exprs)
    assert set(res.lowered_names) == set(exprs)
    assert all(v.startswith("_Z4axpy") and v in res.ptx for v in res.lowered_names.values())
    mod = ptxjit.RawModule(code=src, name_expressions=exprs)
    x32, y32 = RNG.random(300, dtype=np.float32), RNG.random(300, dtype=np.float32)
    ref32 = 3.0 * x32 + y32
    mod.get_function("axpy<float, 1>")(3, 128, (np.float32(3.0), x32, y32, 300))
    np.testing.assert_allclose(y32, ref32, rtol=1e-6)
    x64, y64 = RNG.random(300), RNG.random(300)
    ref64 = 0.5 * x64 * 2 + y64
    mod.get_function("axpy<double, 2>")(3, 128, (0.5, x64, y64, 300))
    np.testing.assert_allclose(y64, ref64, rtol=1e-15)
    with pytest.raises(KeyError, match="name_expressions"):
        mod.get_function("axpy<int, 3>")
    # a RawKernel given a template instance adds it to the name expressions itself
    k = ptxjit.RawKernel(src, "axpy<double, 1>")
    y = np.zeros(4)
    k(1, 4, (2.0, np.arange(4.0), y, 4))
    np.testing.assert_array_equal(y, [0, 2, 4, 6])


def test_half_precision_header():
    if not _nvrtc._nvrtc().include_dirs:
        pytest.skip("no cuda_fp16.h beside this NVRTC")
    k = ptxjit.RawKernel(r'''
    #include <cuda_fp16.h>
    extern "C" __global__ void hfma(const __half* x, const __half* y, __half* out, float* out32, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            __half r = __hfma(x[i], y[i], __float2half(1.0f));
            out[i] = r;
            out32[i] = __half2float(x[i]) * 2.0f;
        }
    }''', "hfma")
    n = 100
    x = RNG.random(n).astype(np.float16)
    y = RNG.random(n).astype(np.float16)
    out, out32 = np.zeros(n, np.float16), np.zeros(n, np.float32)
    k(1, 128, (x, y, out, out32, n))
    ref = (x.astype(np.float32) * y.astype(np.float32) + 1).astype(np.float16)
    np.testing.assert_allclose(out.astype(np.float32), ref.astype(np.float32), rtol=1e-3)
    np.testing.assert_array_equal(out32, x.astype(np.float32) * 2)


def test_cccl_headers_cub_cooperative_groups_cuda_std():
    """CCCL from the nvidia-cuda-cccl wheel (the `cuda` extra): cub's block-wide reduce and scan,
    cooperative_groups tiles, cuda::std types, compiled by NVRTC without a CUDA toolkit."""
    if not any((d / "cub" / "version.cuh").is_file() for d in _nvrtc._nvrtc().include_dirs):
        pytest.skip("no CCCL headers (pip install nvidia-cuda-cccl)")
    m = ptxjit.RawModule(code=r'''
    #include <cooperative_groups.h>
    #include <cooperative_groups/reduce.h>
    #include <cub/block/block_reduce.cuh>
    #include <cub/block/block_scan.cuh>
    #include <cuda/std/cstdint>
    namespace cg = cooperative_groups;
    extern "C" __global__ void sums(const int* in, int* scan, int* total, int* tile_sums) {
        typedef cub::BlockReduce<int, 128> Reduce;
        typedef cub::BlockScan<int, 128> Scan;
        __shared__ typename Reduce::TempStorage r;
        __shared__ typename Scan::TempStorage s;
        int v = in[blockIdx.x * 128 + threadIdx.x];
        cuda::std::int32_t t = Reduce(r).Sum(v);
        int prefix;
        Scan(s).ExclusiveSum(v, prefix);
        scan[blockIdx.x * 128 + threadIdx.x] = prefix;
        if (threadIdx.x == 0) total[blockIdx.x] = t;
        cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
        int w = cg::reduce(tile, v, cg::plus<int>());
        if (tile.thread_rank() == 0) tile_sums[blockIdx.x * 4 + tile.meta_group_rank()] = w;
    }''')
    x = RNG.integers(-1000, 1000, 3 * 128).astype(np.int32)
    scan, total, tiles = np.zeros_like(x), np.zeros(3, np.int32), np.zeros(12, np.int32)
    m.get_function("sums")((3,), (128,), (x, scan, total, tiles))
    rows = x.reshape(3, 128)
    np.testing.assert_array_equal(total, rows.sum(1))
    np.testing.assert_array_equal(scan.reshape(3, 128), np.cumsum(rows, 1) - rows)
    np.testing.assert_array_equal(tiles, x.reshape(12, 32).sum(1))


def test_shared_memory_block_reduction():
    k = ptxjit.RawKernel(r'''
    extern "C" __global__ void block_sum(const float* x, float* partial, float* total, int n) {
        __shared__ float s[256];
        int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        s[t] = i < n ? x[i] : 0.0f;
        __syncthreads();
        for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
            if (t < stride) s[t] += s[t + stride];
            __syncthreads();
        }
        if (t == 0) { partial[blockIdx.x] = s[0]; atomicAdd(total, s[0]); }
    }''', "block_sum")
    n = 5000
    x = RNG.random(n, dtype=np.float32)
    blocks = (n + 255) // 256
    partial, total = np.zeros(blocks, np.float32), np.zeros(1, np.float32)
    k(blocks, 256, (x, partial, total, n))
    ref = np.pad(x, (0, blocks * 256 - n)).reshape(blocks, 256).astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(partial, ref, rtol=1e-5)
    np.testing.assert_allclose(total[0], x.astype(np.float64).sum(), rtol=1e-5)
    assert k.attributes["shared_size_bytes"] == 256 * 4


def test_dynamic_shared_memory():
    k = ptxjit.RawKernel(r'''
    extern "C" __global__ void reverse_blocks(int* d) {
        extern __shared__ int s[];
        int t = threadIdx.x, base = blockIdx.x * blockDim.x;
        s[t] = d[base + t];
        __syncthreads();
        d[base + t] = s[blockDim.x - 1 - t];
    }''', "reverse_blocks")
    d = np.arange(4 * 64, dtype=np.int32)
    k(4, 64, (d,), shared_mem=64 * 4)
    np.testing.assert_array_equal(d, np.arange(4 * 64, dtype=np.int32).reshape(4, 64)[:, ::-1].ravel())


def test_atomic_histogram_shared_and_global():
    k = ptxjit.RawKernel(r'''
    extern "C" __global__ void hist(const unsigned char* x, unsigned int* bins, int n) {
        __shared__ unsigned int local[256];
        for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
        __syncthreads();
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
            atomicAdd(&local[x[i]], 1u);
        __syncthreads();
        for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
    }''', "hist")
    x = RNG.integers(0, 256, 20000).astype(np.uint8)
    bins = np.zeros(256, np.uint32)
    k(8, 128, (x, bins, x.size))
    np.testing.assert_array_equal(bins, np.bincount(x, minlength=256))


def test_math_functions():
    k = ptxjit.RawKernel(r'''
    extern "C" __global__ void mathk(const float* x, const double* y, float* o32, double* o64, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        o32[i] = sinf(x[i]) + expf(x[i]) + sqrtf(x[i]) + logf(1.0f + x[i]) + fminf(x[i], 0.5f);
        o64[i] = pow(y[i], 1.5) + erf(y[i]) + atan2(y[i], 0.25) + cbrt(y[i]) + tanh(y[i]);
    }''', "mathk")
    n = 257
    x, y = RNG.random(n, dtype=np.float32), RNG.random(n)
    o32, o64 = np.zeros(n, np.float32), np.zeros(n)
    k(3, 128, (x, y, o32, o64, n))
    xd = x.astype(np.float64)
    ref32 = np.sin(xd) + np.exp(xd) + np.sqrt(xd) + np.log1p(xd) + np.minimum(xd, 0.5)
    np.testing.assert_allclose(o32, ref32, rtol=2e-6, atol=1e-6)
    ref64 = y ** 1.5 + np.array([math.erf(v) for v in y]) + np.arctan2(y, 0.25) + np.cbrt(y) + np.tanh(y)
    np.testing.assert_allclose(o64, ref64, rtol=1e-14)


def test_struct_parameter_and_struct_array():
    src = r'''
    struct Params { float scale; int offset; double bias; };
    struct Point { float x, y; };
    extern "C" __global__ void apply(Params p, const Point* pts, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] = p.scale * (pts[i].x * pts[i].y) + p.offset + (float)p.bias;
    }'''

    class Params(ctypes.Structure):
        _fields_ = [("scale", ctypes.c_float), ("offset", ctypes.c_int), ("bias", ctypes.c_double)]

    k = ptxjit.RawModule(code=src).get_function("apply")
    assert k.kernel.info.params[0].array and k.kernel.info.params[0].size == 16
    n = 50
    pts = np.zeros(n, dtype=[("x", np.float32), ("y", np.float32)])
    pts["x"], pts["y"] = RNG.random(n), RNG.random(n)
    out = np.zeros(n, np.float32)
    k(1, 64, (Params(2.0, 3, 0.25), pts, out, n))
    np.testing.assert_allclose(out, 2.0 * pts["x"] * pts["y"] + 3 + 0.25, rtol=1e-6)
    # a NumPy record is accepted for the struct too
    rec = np.array((1.0, -1, 0.5), dtype=[("scale", "f4"), ("offset", "i4"), ("bias", "f8")])[()]
    k(1, 64, (rec, pts, out, n))
    np.testing.assert_allclose(out, pts["x"] * pts["y"] - 0.5, rtol=1e-6, atol=1e-6)


def test_printf(capfd):
    k = ptxjit.RawKernel(r'''
    extern "C" __global__ void hello(int v) {
        if (threadIdx.x == 1) printf("hello %d from block %d, %.2f\n", v, blockIdx.x, 1.5);
    }''', "hello")
    k(2, 4, (41,))
    out = capfd.readouterr().out
    assert sorted(out.splitlines()) == ["hello 41 from block 0, 1.50", "hello 41 from block 1, 1.50"]


def test_2d_transpose_and_cpp_name_lookup():
    mod = ptxjit.RawModule(code=r'''
    namespace ops {
    __global__ void transpose(const float* in, float* out, int rows, int cols) {
        __shared__ float tile[16][17];
        int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
        if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
        __syncthreads();
        x = blockIdx.y * 16 + threadIdx.x; y = blockIdx.x * 16 + threadIdx.y;
        if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
    }
    }''', name_expressions=["ops::transpose"])
    rows, cols = 37, 50
    a = RNG.random((rows, cols), dtype=np.float32)
    out = np.zeros((cols, rows), np.float32)
    mod.get_function("ops::transpose")(((cols + 15) // 16, (rows + 15) // 16), (16, 16), (a, out, rows, cols))
    np.testing.assert_array_equal(out, a.T)
    assert mod.lowered_names["ops::transpose"].startswith("_ZN3ops9transpose")


def test_warp_shuffle_and_define_option():
    k = ptxjit.RawKernel(r'''
    extern "C" __global__ void warp_sum(const int* x, int* out) {
        int v = x[blockIdx.x * blockDim.x + threadIdx.x] * FACTOR;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if ((threadIdx.x & 31) == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v;
    }''', "warp_sum", options=("-DFACTOR=3",))
    x = RNG.integers(-100, 100, 256).astype(np.int32)
    out = np.zeros(8, np.int32)
    k(2, 128, (x, out))
    np.testing.assert_array_equal(out, 3 * x.reshape(8, 32).sum(axis=1))


def test_constant_memory_and_device_globals():
    mod = ptxjit.RawModule(code=r'''
    __constant__ float coeffs[4] = {1.0f, -2.0f, 0.5f, 0.25f};
    __device__ unsigned int calls;
    extern "C" __global__ void poly(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            float v = x[i];
            y[i] = ((coeffs[3] * v + coeffs[2]) * v + coeffs[1]) * v + coeffs[0];
            atomicAdd(&calls, 1u);
        }
    }''')
    x = RNG.random(100, dtype=np.float32)
    y = np.zeros_like(x)
    mod.get_function("poly")(1, 128, (x, y, 100))
    np.testing.assert_allclose(y, ((0.25 * x + 0.5) * x - 2.0) * x + 1.0, rtol=1e-6, atol=1e-6)
    assert mod.get_global("calls").view(np.uint32)[0] == 100
    np.testing.assert_array_equal(mod.get_global("coeffs").view(np.float32), [1.0, -2.0, 0.5, 0.25])


def test_load_module_from_file_with_include(tmp_path):
    (tmp_path / "helpers.cuh").write_text("__device__ inline float twice(float v) { return 2.0f * v; }\n")
    cu = tmp_path / "kernel.cu"
    cu.write_text('#include "helpers.cuh"\n'
                  'extern "C" __global__ void dbl(float* x, int n) {\n'
                  '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
                  '    if (i < n) x[i] = twice(x[i]) + OFFSET;\n}\n')
    mod = ptxjit.cuda.load_module(cu, options=["-DOFFSET=1"])
    assert isinstance(mod, ptxjit.Module) and set(mod.kernels) == {"dbl"}
    x = np.arange(10, dtype=np.float32)
    mod.get_function("dbl")(1, 32, (x, 10))
    np.testing.assert_array_equal(x, 2 * np.arange(10, dtype=np.float32) + 1)
    # str paths and source text work too
    assert set(ptxjit.cuda.load_module(str(cu), options=["-DOFFSET=2"]).kernels) == {"dbl"}
    src_mod = ptxjit.cuda.load_module('extern "C" __global__ void nop() {}\n')
    assert set(src_mod.kernels) == {"nop"}


# ------------------------------------------------------------------ errors
def test_compile_error_has_log_and_line():
    src = 'extern "C" __global__ void bad(float* x) {\n    x[0] = 1.0f;\n    x[1] = undefined_name;\n}\n'
    with pytest.raises(ptxjit.CudaCompileError) as ei:
        ptxjit.compile_cuda(src, filename="bad.cu")
    msg = str(ei.value)
    assert "bad.cu(3)" in msg and "undefined_name" in msg and "error" in msg
    assert isinstance(ei.value, ptxjit.PTXError)
    assert "bad.cu(3)" in ei.value.log
    with pytest.raises(ptxjit.CudaCompileError, match=r"kernel\.cu\(1\)"):
        ptxjit.RawKernel("this is not C++", "k")


def test_missing_nvrtc_says_how_to_install(monkeypatch):
    monkeypatch.setattr(_nvrtc, "_lib", None)
    monkeypatch.setattr(_nvrtc, "_candidates", lambda: [])
    with pytest.raises(ImportError, match=r"ptxjit\[cuda\]"):
        ptxjit.compile_cuda('extern "C" __global__ void k() {}')
    assert not ptxjit.cuda.nvrtc_available()


# ------------------------------------------------------------------ the disk cache
SRC = 'extern "C" __global__ void fill(int* x, int v) { x[threadIdx.x] = v + threadIdx.x; }\n'


def test_cache_hit_on_second_compile(tmp_path):
    s0 = ptxjit.cuda.nvrtc_stats()
    first = ptxjit.compile_cuda(SRC)
    s1 = ptxjit.cuda.nvrtc_stats()
    assert s1["compiles"] == s0["compiles"] + 1 and s1["disk_hits"] == s0["disk_hits"]
    assert not first.from_cache
    files = _cache_files(tmp_path)
    assert len(files) == 1
    second = ptxjit.compile_cuda(SRC)
    s2 = ptxjit.cuda.nvrtc_stats()
    assert s2["compiles"] == s1["compiles"] and s2["disk_hits"] == s1["disk_hits"] + 1
    assert second.from_cache and second.ptx == first.ptx
    # every input is part of the key: options, arch, name expressions and the source
    ptxjit.compile_cuda(SRC, options=["-DX=1"])
    ptxjit.compile_cuda(SRC, arch="compute_75")
    ptxjit.compile_cuda(SRC + "\n")
    ptxjit.compile_cuda(SRC, cache=False)
    assert ptxjit.cuda.nvrtc_stats()["compiles"] == s2["compiles"] + 4
    assert len(_cache_files(tmp_path)) == 4
    assert not list((tmp_path / "cache" / "nvrtc").rglob("*.tmp"))  # atomic writes leave no temporaries
    # the cached PTX runs
    x = np.zeros(8, np.int32)
    ptxjit.Module(second.ptx).get_function("fill")(1, 8, (x, 5))
    np.testing.assert_array_equal(x, np.arange(8) + 5)


def test_cache_keeps_lowered_names(tmp_path):
    src = "template <int N> __global__ void k(int* x) { x[0] = N; }\n"
    a = ptxjit.compile_cuda(src, ["k<3>"])
    b = ptxjit.compile_cuda(src, ["k<3>"])
    assert b.from_cache and b.lowered_names == a.lowered_names == {"k<3>": "_Z1kILi3EEvPi"}
    hits = ptxjit.cuda.nvrtc_stats()["disk_hits"]
    ptxjit.RawModule(code=src, name_expressions=["k<3>"]).get_function("k<3>")
    assert ptxjit.cuda.nvrtc_stats()["disk_hits"] == hits + 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupted_cache_entry_is_recompiled(tmp_path, damage):
    good = ptxjit.compile_cuda(SRC)
    (path,) = _cache_files(tmp_path)
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip":  # still valid JSON, but the PTX no longer matches the stored checksum
        path.write_bytes(raw.replace(b"fill", b"fIll", 1))
    elif damage == "garbage":
        path.write_bytes(b"\xff\xfe not json")
    else:
        path.write_bytes(b"")
    s0 = ptxjit.cuda.nvrtc_stats()
    again = ptxjit.compile_cuda(SRC)
    s1 = ptxjit.cuda.nvrtc_stats()
    assert s1["corrupt_entries"] == s0["corrupt_entries"] + 1
    assert s1["compiles"] == s0["compiles"] + 1 and s1["disk_hits"] == s0["disk_hits"]
    assert not again.from_cache and again.ptx == good.ptx
    # the entry was rewritten: the next compile is a clean hit
    third = ptxjit.compile_cuda(SRC)
    assert third.from_cache and ptxjit.cuda.nvrtc_stats()["corrupt_entries"] == s1["corrupt_entries"]
