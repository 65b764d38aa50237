"""A Numba CUDA program of many distinct small kernels, each launched once and checked against NumPy: the
shape of a kernel library's test suite or a notebook, where the first launch of every kernel is the cost.

Written once against numba-cuda's API and run three ways by bench/ptxbench/many_kernels.py, each in a
fresh process:

    python many_kernels_app.py cuda        numba-cuda's real target (run it under `ptxjit exec`)
    python many_kernels_app.py ptxjit      the same kernels through ptxjit.numba (in-process front door)
    python many_kernels_app.py sim         NUMBA_ENABLE_CUDASIM=1 (Numba's simulator: no compile step)

Prints one line `RESULT{json}`: the seconds to import, per kernel (compile, translate and run: the
first result), the whole program, and whether every result matched NumPy.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "cuda"
if MODE == "sim":
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

T_START = time.perf_counter()
import numpy as np  # noqa: E402
from numba import cuda, float32, int32  # noqa: E402

if MODE == "ptxjit":
    import ptxjit.numba

    jit = ptxjit.numba.jit
else:
    jit = cuda.jit
T_IMPORT = time.perf_counter() - T_START

N = 4096  # elements of the 1-D kernels
TPB = 128  # threads per block of the 1-D kernels
W = 64  # side of the 2-D kernels
TILE = 16
PADDED = TILE + 1  # a padded tile row: no bank conflicts on the GPU
HALO = TPB + 2  # shared.array needs a constant shape: a global, not an expression


# ------------------------------------------------------------------------------------ elementwise
@jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = a * x[i] + y[i]


@jit
def exp_mul(x, y, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = math.exp(x[i]) * y[i]


@jit
def sin_cos(x, y, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = math.sin(x[i]) + math.cos(y[i])


@jit
def clamp(x, lo, hi, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = min(max(x[i], lo), hi)


@jit
def select_max(x, y, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] if x[i] > y[i] else y[i]


@jit
def horner(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[i] = ((0.5 * v - 1.25) * v + 2.0) * v - 0.75


@jit
def sqrt_log(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = math.sqrt(x[i]) + math.log(x[i] + 1.0)


@jit
def int_bits(a, b, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = ((a[i] ^ b[i]) & 0xFF) + (a[i] >> 3) - (b[i] << 1)


@jit
def f64_fma(x, y, z, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * y[i] + z[i]


@jit
def floor_cast(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = int32(math.floor(x[i] * 10.0))


@jit
def gather(x, idx, out):
    i = cuda.grid(1)
    if i < idx.shape[0]:
        out[i] = x[idx[i]]


@jit
def broadcast_2d(a, b, out):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        out[i, j] = 2.0 * a[i, j] + b[j]


# ------------------------------------------------------------------------ shared memory and atomics
@jit
def block_sum(x, partial):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.shape[0] else 0.0
    cuda.syncthreads()
    step = TPB // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


@jit
def atomic_total(x, total):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(total, 0, x[i])


@jit
def histogram64(values, bins):
    h = cuda.shared.array(64, int32)
    t = cuda.threadIdx.x
    if t < 64:
        h[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < values.shape[0]:
        cuda.atomic.add(h, values[i] & 63, 1)
    cuda.syncthreads()
    if t < 64:
        cuda.atomic.add(bins, t, h[t])


@jit
def scatter_count(idx, counts):
    i = cuda.grid(1)
    if i < idx.shape[0]:
        cuda.atomic.add(counts, idx[i], 1.0)


@jit
def stencil3(x, out):
    s = cuda.shared.array(HALO, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.shape[0]
    s[t + 1] = x[i] if i < n else 0.0
    if t == 0:
        s[0] = x[i - 1] if i > 0 else 0.0
    if t == TPB - 1:
        s[TPB + 1] = x[i + 1] if i + 1 < n else 0.0
    cuda.syncthreads()
    if i < n:
        out[i] = 0.25 * s[t] + 0.5 * s[t + 1] + 0.25 * s[t + 2]


@jit
def reverse_block(x, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * TPB
    s[t] = x[base + t]
    cuda.syncthreads()
    out[base + t] = s[TPB - 1 - t]


@jit
def block_scan(x, out):
    s = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i]
    cuda.syncthreads()
    d = 1
    while d < TPB:
        v = s[t - d] if t >= d else 0.0
        cuda.syncthreads()
        s[t] += v
        cuda.syncthreads()
        d *= 2
    out[i] = s[t]


@jit
def transpose_tiled(a, out):
    tile = cuda.shared.array((TILE, PADDED), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    bx, by = cuda.blockIdx.x * TILE, cuda.blockIdx.y * TILE
    tile[ty, tx] = a[by + ty, bx + tx]
    cuda.syncthreads()
    out[bx + ty, by + tx] = tile[tx, ty]


@jit
def matvec(a, x, y):
    r = cuda.grid(1)
    if r < a.shape[0]:
        acc = 0.0
        for c in range(a.shape[1]):
            acc += a[r, c] * x[c]
        y[r] = acc


@jit
def sgemm_tiled(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for k0 in range(0, a.shape[1], TILE):
        sa[ty, tx] = a[row, k0 + tx]
        sb[ty, tx] = b[k0 + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()
    c[row, col] = acc


@jit
def softmax_rows(x, out):
    s = cuda.shared.array(W, float32)
    r = cuda.blockIdx.x
    t = cuda.threadIdx.x
    v = x[r, t]
    s[t] = v
    cuda.syncthreads()
    step = W // 2
    while step > 0:
        if t < step:
            s[t] = max(s[t], s[t + step])
        cuda.syncthreads()
        step //= 2
    m = s[0]
    cuda.syncthreads()
    e = math.exp(v - m)
    s[t] = e
    cuda.syncthreads()
    step = W // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    out[r, t] = e / s[0]


# ---------------------------------------------------------------------------------------- the program
def _blocks(n: int) -> int:
    return (n + TPB - 1) // TPB


COMPILE_S: dict[str, float] = {}  # ptxjit mode: Numba's compile to PTX, timed apart from translation + run


def launch(kernel, grid, block, args) -> None:
    if MODE == "ptxjit":
        t0 = time.perf_counter()
        kernel.specialize(*args)
        COMPILE_S[kernel.py_func.__name__] = time.perf_counter() - t0
    kernel[grid, block](*args)


def cases(rng: np.random.Generator) -> list[tuple[str, object]]:
    """(name, run) pairs; run() launches the kernel once and returns (got, expected, rtol)."""
    f32 = np.float32
    x = rng.random(N, dtype=f32) + f32(0.1)
    y = rng.random(N, dtype=f32)
    xi = rng.integers(0, 1 << 20, N, dtype=np.int32)
    yi = rng.integers(0, 1 << 20, N, dtype=np.int32)
    xd, yd, zd = (rng.random(N) for _ in range(3))
    idx = rng.integers(0, N, N, dtype=np.int32)
    a2 = rng.random((W, W), dtype=f32)
    b2 = rng.random((W, W), dtype=f32)
    g1, g2 = _blocks(N), ((W + TILE - 1) // TILE, (W + TILE - 1) // TILE)

    def ew(kernel, args, expected, out_dtype=f32, rtol=1e-5):
        def run():
            out = np.zeros(N, out_dtype)
            launch(kernel, g1, TPB, (*args, out))
            return out, expected, rtol
        return run

    def one(kernel, grid, block, args, out, expected, rtol=1e-5):
        def run():
            launch(kernel, grid, block, (*args, out))
            return out, expected, rtol
        return run

    blocks_expected = x.reshape(-1, TPB).astype(np.float64).sum(axis=1)
    pad = np.concatenate([[0.0], x.astype(np.float64), [0.0]])
    ex = np.exp(a2 - a2.max(axis=1, keepdims=True))
    return [
        ("saxpy", ew(saxpy, (f32(2.5), x, y), 2.5 * x + y)),
        ("exp_mul", ew(exp_mul, (x, y), np.exp(x) * y, rtol=1e-5)),
        ("sin_cos", ew(sin_cos, (x, y), np.sin(x) + np.cos(y), rtol=1e-5)),
        ("clamp", ew(clamp, (x, f32(0.3), f32(0.7)), np.clip(x, 0.3, 0.7))),
        ("select_max", ew(select_max, (x, y), np.maximum(x, y))),
        ("horner", ew(horner, (x,), ((0.5 * x - 1.25) * x + 2.0) * x - 0.75, rtol=1e-4)),
        ("sqrt_log", ew(sqrt_log, (x,), np.sqrt(x) + np.log(x + 1.0), rtol=1e-5)),
        ("int_bits", ew(int_bits, (xi, yi), ((xi ^ yi) & 0xFF) + (xi >> 3) - (yi << 1), np.int32, 0)),
        ("f64_fma", ew(f64_fma, (xd, yd, zd), xd * yd + zd, np.float64, 1e-12)),
        ("floor_cast", ew(floor_cast, (x,), np.floor(x * f32(10.0)).astype(np.int32), np.int32, 0)),
        ("gather", ew(gather, (x, idx), x[idx])),
        ("broadcast_2d", one(broadcast_2d, g2, (TILE, TILE), (a2, b2[0]), np.zeros((W, W), f32),
                             2.0 * a2 + b2[0])),
        ("block_sum", one(block_sum, g1, TPB, (x,), np.zeros(g1, f32), blocks_expected, 1e-5)),
        ("atomic_total", one(atomic_total, g1, TPB, (x,), np.zeros(1, f32), np.array([x.sum(dtype=np.float64)]),
                             1e-4)),
        ("histogram64", one(histogram64, g1, TPB, (xi,), np.zeros(64, np.int32),
                            np.bincount(xi & 63, minlength=64), 0)),
        ("scatter_count", one(scatter_count, g1, TPB, (idx,), np.zeros(N, f32),
                              np.bincount(idx, minlength=N).astype(f32), 0)),
        ("stencil3", ew(stencil3, (x,), 0.25 * pad[:-2] + 0.5 * pad[1:-1] + 0.25 * pad[2:])),
        ("reverse_block", ew(reverse_block, (x,), x.reshape(-1, TPB)[:, ::-1].ravel())),
        ("block_scan", ew(block_scan, (x,), np.cumsum(x.reshape(-1, TPB).astype(np.float64), axis=1).ravel(),
                          rtol=1e-5)),
        ("transpose_tiled", one(transpose_tiled, g2, (TILE, TILE), (a2,), np.zeros((W, W), f32), a2.T)),
        ("matvec", one(matvec, _blocks(W), TPB, (a2, b2[0]), np.zeros(W, f32),
                       a2.astype(np.float64) @ b2[0], 1e-5)),
        ("sgemm_tiled", one(sgemm_tiled, g2, (TILE, TILE), (a2, b2), np.zeros((W, W), f32),
                            a2.astype(np.float64) @ b2, 1e-5)),
        ("softmax_rows", one(softmax_rows, W, W, (a2,), np.zeros((W, W), f32),
                             ex / ex.sum(axis=1, keepdims=True), 1e-5)),
    ]


def main() -> None:
    rng = np.random.default_rng(7)
    per_kernel: dict[str, float] = {}
    bad: list[str] = []
    t_program = time.perf_counter()
    for name, run in cases(rng):
        t0 = time.perf_counter()
        got, expected, rtol = run()
        if MODE == "cuda":
            cuda.synchronize()
        per_kernel[name] = time.perf_counter() - t0
        if not np.allclose(got, expected, rtol=rtol, atol=1e-6 if rtol else 0):
            bad.append(name)
    program_s = time.perf_counter() - t_program
    print("RESULT" + json.dumps({"mode": MODE, "import_s": T_IMPORT, "program_s": program_s,
                                 "total_s": time.perf_counter() - T_START, "kernels": len(per_kernel),
                                 "per_kernel_s": per_kernel, "numba_compile_s": COMPILE_S,
                                 "mismatches": bad}), flush=True)


if __name__ == "__main__":
    main()
