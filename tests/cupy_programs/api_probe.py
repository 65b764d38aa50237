"""CuPy's public API, area by area, each result checked against NumPy: run under `ptxjit exec`.

Prints one JSON line per check: {"area", "name", "ok", "error"}.  `ok` is true only when CuPy's result
equals NumPy's (to float tolerance); `error` names what CuPy raised.  tests/test_cupy.py reads these lines,
and docs/runtime.md's table of what works is this program's output.

Usage: ptxjit exec -- python api_probe.py [area ...]
"""

from __future__ import annotations

import json
import sys
import traceback

import cupy as cp
import numpy as np

CHECKS: list[tuple[str, str, object]] = []


def check(area: str, name: str | None = None):
    def register(fn):
        CHECKS.append((area, name or fn.__name__, fn))
        return fn

    return register


def same(got, want, rtol=1e-5, atol=1e-6) -> bool:
    got = cp.asnumpy(got) if isinstance(got, cp.ndarray) else np.asarray(got)
    want = np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "fc":
        return bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
    return bool(np.array_equal(got, want))


rng = np.random.default_rng(7)
A = rng.standard_normal((37, 53)).astype(np.float32)
B = rng.standard_normal((37, 53)).astype(np.float32)
V = rng.integers(-50, 50, 1000).astype(np.int32)


# --- creation and host copies ------------------------------------------------------------------------------
@check("creation")
def arange():
    return same(cp.arange(1000, dtype=cp.float32), np.arange(1000, dtype=np.float32))


@check("creation")
def zeros_ones_full():
    return (same(cp.zeros((3, 4)), np.zeros((3, 4))) and same(cp.ones(7, dtype=cp.int8), np.ones(7, np.int8))
            and same(cp.full((2, 5), 3.5), np.full((2, 5), 3.5)))


@check("creation")
def linspace_eye_identity():
    return (same(cp.linspace(0, 1, 11), np.linspace(0, 1, 11)) and same(cp.eye(5, k=1), np.eye(5, k=1))
            and same(cp.identity(4), np.identity(4)))


@check("creation")
def asarray_get_roundtrip():
    return same(cp.asarray(A).get(), A) and same(cp.asnumpy(cp.asarray(V)), V)


@check("creation")
def set_into_existing():
    d = cp.empty(A.shape, dtype=A.dtype)
    d.set(A)
    return same(d, A)


@check("creation")
def copy_and_like():
    d = cp.asarray(A)
    return same(d.copy(), A) and same(cp.zeros_like(d), np.zeros_like(A)) and same(cp.ones_like(d), np.ones_like(A))


@check("creation")
def meshgrid_tri():
    x, y = cp.meshgrid(cp.arange(4), cp.arange(3))
    nx, ny = np.meshgrid(np.arange(4), np.arange(3))
    return same(x, nx) and same(y, ny) and same(cp.tril(cp.asarray(A)), np.tril(A))


# --- elementwise ---------------------------------------------------------------------------------------------
@check("elementwise")
def arithmetic():
    a, b = cp.asarray(A), cp.asarray(B)
    return same(a + b * 2 - a / (cp.abs(b) + 1), A + B * 2 - A / (np.abs(B) + 1))


@check("elementwise")
def math_ufuncs():
    a = cp.asarray(A)
    return (same(cp.exp(a), np.exp(A)) and same(cp.sin(a), np.sin(A)) and same(cp.sqrt(cp.abs(a)), np.sqrt(np.abs(A)))
            and same(cp.log1p(cp.abs(a)), np.log1p(np.abs(A))) and same(cp.tanh(a), np.tanh(A)))


@check("elementwise")
def power_and_clip():
    a = cp.asarray(A)
    return same(cp.power(a, 2), np.power(A, 2)) and same(cp.clip(a, -0.5, 0.5), np.clip(A, -0.5, 0.5))


@check("elementwise")
def comparisons_and_where():
    a, b = cp.asarray(A), cp.asarray(B)
    return same(cp.where(a > b, a, b), np.where(A > B, A, B)) and same(a <= 0, A <= 0)


@check("elementwise")
def integer_ops():
    v = cp.asarray(V)
    return (same(v // 7, V // 7) and same(v % 7, V % 7) and same(v << 2, V << 2) and same(v & 0x0F, V & 0x0F)
            and same(cp.bitwise_xor(v, 5), np.bitwise_xor(V, 5)))


@check("elementwise")
def broadcasting():
    a = cp.asarray(A)
    row = cp.asarray(A[0])
    col = cp.asarray(A[:, :1])
    return same(a - row + col, A - A[0] + A[:, :1])


@check("elementwise")
def astype_conversions():
    a = cp.asarray(A * 100)
    return (same(a.astype(cp.int32), (A * 100).astype(np.int32)) and
            same(a.astype(cp.float16), (A * 100).astype(np.float16), rtol=1e-3) and
            same(a.astype(cp.float64), (A * 100).astype(np.float64)))


@check("elementwise")
def complex_numbers():
    z = (A + 1j * B).astype(np.complex64)
    d = cp.asarray(z)
    return same(cp.abs(d), np.abs(z)) and same(d * d.conj(), z * z.conj()) and same(cp.angle(d), np.angle(z))


@check("elementwise")
def float64_math():
    x = A.astype(np.float64)
    d = cp.asarray(x)
    return same(cp.arctan2(d, d + 1), np.arctan2(x, x + 1)) and same(cp.cbrt(d), np.cbrt(x))


@check("elementwise")
def isnan_isinf_nan_to_num():
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0])
    d = cp.asarray(x)
    return (same(cp.isnan(d), np.isnan(x)) and same(cp.isinf(d), np.isinf(x))
            and same(cp.nan_to_num(d), np.nan_to_num(x)))


# --- reductions ----------------------------------------------------------------------------------------------
@check("reductions")
def sum_all_and_axis():
    a = cp.asarray(A)
    return (same(a.sum(), A.sum(), rtol=1e-4) and same(a.sum(axis=0), A.sum(axis=0), rtol=1e-4)
            and same(a.sum(axis=1), A.sum(axis=1), rtol=1e-4))


@check("reductions")
def mean_var_std():
    a = cp.asarray(A)
    return (same(a.mean(), A.mean(), rtol=1e-4) and same(a.var(axis=0), A.var(axis=0), rtol=1e-4)
            and same(a.std(), A.std(), rtol=1e-4))


@check("reductions")
def min_max_argmax():
    a = cp.asarray(A)
    return (same(a.max(), A.max()) and same(a.min(axis=1), A.min(axis=1)) and same(a.argmax(), A.argmax())
            and same(a.argmin(axis=0), A.argmin(axis=0)))


@check("reductions")
def prod_any_all():
    v = cp.asarray(V[:20] % 3 + 1)
    return (same(v.prod(), (V[:20] % 3 + 1).prod()) and same(cp.any(cp.asarray(V) > 40), np.any(V > 40))
            and same(cp.all(cp.asarray(V) > -51), np.all(V > -51)))


@check("reductions")
def cumsum_cumprod():
    v = cp.asarray(V)
    return same(cp.cumsum(v), np.cumsum(V)) and same(cp.cumsum(cp.asarray(A), axis=1), np.cumsum(A, axis=1), rtol=1e-4)


@check("reductions")
def count_nonzero_and_bincount():
    v = cp.asarray(V)
    return (same(cp.count_nonzero(v), np.count_nonzero(V)) and
            same(cp.bincount(cp.asarray(V + 50)), np.bincount(V + 50)))


@check("reductions")
def nansum_and_float16_sum():
    x = A.copy()
    x[3, 4] = np.nan
    h = A.astype(np.float16)
    return (same(cp.nansum(cp.asarray(x)), np.nansum(x), rtol=1e-4) and
            same(cp.asarray(h).sum(dtype=cp.float32), h.sum(dtype=np.float32), rtol=1e-3))


# --- user kernels --------------------------------------------------------------------------------------------
@check("kernels")
def elementwise_kernel():
    k = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * x + 3 * y", "probe_ew")
    return same(k(cp.asarray(A), cp.asarray(B)), A * A + 3 * B)


@check("kernels")
def reduction_kernel():
    k = cp.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = sqrt(a)", "0", "probe_l2")
    return same(k(cp.asarray(A), axis=1), np.sqrt((A * A).sum(axis=1)), rtol=1e-4)


@check("kernels")
def raw_kernel():
    k = cp.RawKernel(r'''
extern "C" __global__ void probe_saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}''', "probe_saxpy")
    x, y = cp.asarray(A.ravel()), cp.asarray(B.ravel())
    n = x.size
    k(((n + 127) // 128,), (128,), (cp.float32(2.5), x, y, cp.int32(n)))
    return same(y, 2.5 * A.ravel() + B.ravel())


@check("kernels")
def raw_module_templates():
    m = cp.RawModule(code=r'''
template <typename T> __global__ void probe_scale(T *x, T s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}''', options=("-std=c++17",), name_expressions=("probe_scale<float>", "probe_scale<int>"))
    x = cp.asarray(A.ravel())
    m.get_function("probe_scale<float>")((8,), (256,), (x, cp.float32(3), cp.int32(x.size)))
    v = cp.asarray(V)
    m.get_function("probe_scale<int>")((4,), (256,), (v, cp.int32(-2), cp.int32(v.size)))
    return same(x, A.ravel() * 3) and same(v, V * -2)


@check("kernels")
def raw_kernel_shared_memory():
    k = cp.RawKernel(r'''
extern "C" __global__ void probe_block_sum(const int *x, int *out) {
    extern __shared__ int s[];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) { if (t < w) s[t] += s[t + w]; __syncthreads(); }
    if (t == 0) out[blockIdx.x] = s[0];
}''', "probe_block_sum")
    x = cp.asarray(V[:1024] if V.size >= 1024 else np.resize(V, 1024))
    out = cp.zeros(8, dtype=cp.int32)
    k((8,), (128,), (x, out), shared_mem=128 * 4)
    return same(out, cp.asnumpy(x).reshape(8, 128).sum(axis=1))


@check("kernels")
def fuse():
    @cp.fuse()
    def f(x, y):
        return cp.sqrt(x * x + y * y) - 1

    return same(f(cp.asarray(A), cp.asarray(B)), np.sqrt(A * A + B * B) - 1)


# --- indexing and shape --------------------------------------------------------------------------------------
@check("indexing")
def slicing_views():
    a = cp.asarray(A)
    return same(a[3:20:2, ::-3], A[3:20:2, ::-3]) and same(a.T.copy(), A.T) and same(a[5], A[5])


@check("indexing")
def integer_array_indexing():
    idx = np.array([0, 5, 5, 36, 2])
    a = cp.asarray(A)
    return same(a[cp.asarray(idx)], A[idx]) and same(a[:, cp.asarray(idx)], A[:, idx])


@check("indexing")
def boolean_mask():
    a = cp.asarray(A)
    return same(a[a > 0.5], A[A > 0.5])


@check("indexing")
def take_and_scatter():
    a = cp.asarray(A.ravel())
    idx = np.array([1, 4, 4, 9])
    t = same(cp.take(a, cp.asarray(idx)), np.take(A.ravel(), idx))
    z = cp.zeros(10, dtype=cp.float32)
    cp.add.at(z, cp.asarray(idx), cp.float32(1))
    want = np.zeros(10, np.float32)
    np.add.at(want, idx, 1)
    return t and same(z, want)


@check("indexing")
def setitem():
    a = cp.asarray(A)
    w = A.copy()
    a[2:5, 7] = 9
    w[2:5, 7] = 9
    a[a < -1] = 0
    w[w < -1] = 0
    return same(a, w)


@check("indexing")
def reshape_concatenate_stack():
    a, b = cp.asarray(A), cp.asarray(B)
    return (same(cp.concatenate([a, b], axis=1), np.concatenate([A, B], axis=1)) and
            same(cp.stack([a, b]), np.stack([A, B])) and same(a.reshape(53, 37), A.reshape(53, 37)) and
            same(cp.flip(a, 0), np.flip(A, 0)) and same(cp.roll(a, 3, axis=1), np.roll(A, 3, axis=1)))


@check("indexing")
def nonzero_argwhere():
    v = cp.asarray(V)
    return same(cp.nonzero(v > 30)[0], np.nonzero(V > 30)[0]) and same(cp.argwhere(v < -45), np.argwhere(V < -45))


@check("indexing")
def diff_and_pad():
    a = cp.asarray(A)
    return same(cp.diff(a, axis=0), np.diff(A, axis=0)) and same(cp.pad(a, 2), np.pad(A, 2))


# --- sorting and searching -----------------------------------------------------------------------------------
@check("sorting")
def sort():
    return same(cp.sort(cp.asarray(V)), np.sort(V))


@check("sorting")
def argsort():
    x = rng.permutation(500).astype(np.float32)
    return same(cp.argsort(cp.asarray(x)), np.argsort(x))


@check("sorting")
def unique():
    return same(cp.unique(cp.asarray(V)), np.unique(V))


@check("sorting")
def searchsorted():
    s = np.sort(A.ravel())
    return same(cp.searchsorted(cp.asarray(s), cp.asarray(B.ravel())), np.searchsorted(s, B.ravel()))


@check("sorting")
def partition_median():
    return same(cp.median(cp.asarray(A)), np.median(A))


# --- streams, events, memory ---------------------------------------------------------------------------------
@check("runtime")
def streams_and_events():
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        a = cp.asarray(A)
        b = a * 2
        e = s.record()
    e.synchronize()
    cp.cuda.Stream.null.wait_event(e)
    return same(b, A * 2) and e.done


@check("runtime")
def event_timing():
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    (cp.asarray(A) + 1).sum()
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) >= 0


@check("runtime")
def memory_pool():
    pool = cp.get_default_memory_pool()
    x = cp.zeros(1 << 20, dtype=cp.uint8)
    used = pool.used_bytes()
    del x
    pool.free_all_blocks()
    return used >= 1 << 20


@check("runtime")
def async_copies_pinned():
    h = cp.cuda.alloc_pinned_memory(A.nbytes)
    dst = np.frombuffer(h, A.dtype, A.size).reshape(A.shape)
    d = cp.asarray(A)
    s = cp.cuda.Stream()
    d.get(stream=s, out=dst)
    s.synchronize()
    return same(dst, A)


@check("runtime")
def device_properties():
    p = cp.cuda.runtime.getDeviceProperties(0)
    return p["major"] >= 8 and p["multiProcessorCount"] > 0 and cp.cuda.Device(0).compute_capability >= "80"


# --- linear algebra, FFT, random (NVIDIA libraries) ----------------------------------------------------------
@check("libraries")
def matmul():
    a = cp.asarray(A)
    return same(a @ a.T, A @ A.T, rtol=1e-3, atol=1e-3)


@check("libraries")
def dot_vectors():
    return same(cp.dot(cp.asarray(A[0]), cp.asarray(B[0])), np.dot(A[0], B[0]), rtol=1e-4)


@check("libraries")
def linalg_norm():
    return same(cp.linalg.norm(cp.asarray(A)), np.linalg.norm(A), rtol=1e-4)


@check("libraries")
def fft():
    return same(cp.fft.fft(cp.asarray(A[0])), np.fft.fft(A[0]), rtol=1e-3, atol=1e-3)


@check("libraries")
def legacy_random():
    cp.random.seed(3)
    h = cp.asnumpy(cp.random.rand(1000))
    return bool(h.min() >= 0 and h.max() < 1)


# last: its kernels are SASS-only, and the launch error it cannot see leaves the context unusable
@check("libraries")
def random_uniform():
    x = cp.random.default_rng(1).random(1000)
    h = cp.asnumpy(x)
    return bool(h.min() >= 0 and h.max() < 1 and abs(h.mean() - 0.5) < 0.05)


def run(areas: list[str]) -> int:
    for area, name, fn in CHECKS:
        if areas and area not in areas:
            continue
        error = ""
        try:
            ok = bool(fn())
        except Exception as exc:  # noqa: BLE001 - each check reports what CuPy raised and the next one runs
            ok = False
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
            if "PTXJIT_PROBE_TRACEBACK" in __import__("os").environ:
                traceback.print_exc()
        print(json.dumps({"area": area, "name": name, "ok": ok, "error": error}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
