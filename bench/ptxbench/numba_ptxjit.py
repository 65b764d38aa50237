"""Run in a subprocess by the harness: the same Numba kernels as numba_sim.py, compiled by numba-cuda
to PTX and run by ptxjit (ptxjit.numba) at full size.  Prints one JSON object: seconds per element
(SAXPY) and per multiply-add (SGEMM), after a check against NumPy."""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

import ptxjit.numba

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numba_kernels as nk  # noqa: E402


def best(f, reps: int = 5) -> float:
    f()  # first call compiles (Numba -> PTX -> native)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def main() -> None:
    n_saxpy = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 22
    n_sgemm = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    rng = np.random.default_rng(0)
    saxpy = ptxjit.numba.jit(nk.saxpy)
    sgemm = ptxjit.numba.jit(nk.sgemm)
    x = rng.random(n_saxpy, dtype=np.float32)
    y0 = rng.random(n_saxpy, dtype=np.float32)
    y = y0.copy()
    saxpy[(n_saxpy + 255) // 256, 256](n_saxpy, np.float32(2.5), x, y)
    assert np.allclose(y, 2.5 * x + y0, rtol=1e-6), "ptxjit-run Numba saxpy gave a wrong result"
    t = best(lambda: saxpy[(n_saxpy + 255) // 256, 256](n_saxpy, np.float32(2.5), x, y))
    out = {"saxpy_n": n_saxpy, "saxpy_s": t, "saxpy_s_per_element": t / n_saxpy}
    A = rng.random((n_sgemm, n_sgemm), dtype=np.float32)
    B = rng.random((n_sgemm, n_sgemm), dtype=np.float32)
    C = np.zeros((n_sgemm, n_sgemm), np.float32)
    g = n_sgemm // nk.TILE
    sgemm[(g, g), (nk.TILE, nk.TILE)](A, B, C, n_sgemm)
    assert np.allclose(C, A.astype(np.float64) @ B, rtol=1e-4), "ptxjit-run Numba sgemm gave a wrong result"
    t = best(lambda: sgemm[(g, g), (nk.TILE, nk.TILE)](A, B, C, n_sgemm))
    out.update(sgemm_n=n_sgemm, sgemm_s=t, sgemm_s_per_fma=t / n_sgemm ** 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
