"""Run in a subprocess by the harness: SAXPY and a small tiled SGEMM on Numba's CUDA simulator
(NUMBA_ENABLE_CUDASIM=1, each GPU thread a Python thread).  Prints one JSON object: seconds per
element (SAXPY) and per multiply-add (SGEMM), after a check against NumPy."""

from __future__ import annotations

import os

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numba_kernels as nk  # noqa: E402

TILE = nk.TILE
saxpy = cuda.jit(nk.saxpy)
sgemm = cuda.jit(nk.sgemm)


def main() -> None:
    n_saxpy = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
    n_sgemm = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    rng = np.random.default_rng(0)
    out = {"saxpy_n": n_saxpy, "sgemm_n": n_sgemm}

    x = rng.random(n_saxpy, dtype=np.float32)
    y = rng.random(n_saxpy, dtype=np.float32)
    expect = 2.5 * x + y
    saxpy[1, 256](256, np.float32(2.5), x[:256], y[:256].copy())  # warm-up (first-call setup)
    t0 = time.perf_counter()
    saxpy[(n_saxpy + 255) // 256, 256](n_saxpy, np.float32(2.5), x, y)
    dt = time.perf_counter() - t0
    assert np.allclose(y, expect, rtol=1e-6), "numba simulator saxpy gave a wrong result"
    out["saxpy_s"] = dt
    out["saxpy_s_per_element"] = dt / n_saxpy

    A = rng.random((n_sgemm, n_sgemm), dtype=np.float32)
    B = rng.random((n_sgemm, n_sgemm), dtype=np.float32)
    C = np.zeros((n_sgemm, n_sgemm), np.float32)
    g = n_sgemm // TILE
    t0 = time.perf_counter()
    sgemm[(g, g), (TILE, TILE)](A, B, C, n_sgemm)
    dt = time.perf_counter() - t0
    assert np.allclose(C, A.astype(np.float64) @ B, rtol=1e-4), "numba simulator sgemm gave a wrong result"
    out["sgemm_s"] = dt
    out["sgemm_s_per_fma"] = dt / n_sgemm ** 3
    print(json.dumps(out))


if __name__ == "__main__":
    main()
