"""ptxjit demo: load nvcc-generated PTX, run its kernels on the CPU, check against NumPy."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import ptxjit

HERE = Path(__file__).parent


def main() -> None:
    mod = ptxjit.Module.from_file(HERE / "demo_kernels.ptx")
    print(f"kernels: {', '.join(mod.kernels)}  (workers: {ptxjit.worker_count()})")
    rng = np.random.default_rng(1)

    n = 1_000_003
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    # nvcc contracts a*x+y into one fma (a single rounding): the reference rounds once too
    expect = (2.5 * x.astype(np.float64) + y).astype(np.float32)
    mod.get_function("saxpy")((n + 255) // 256, 256, (n, 2.5, x, y))
    mismatches = int(np.count_nonzero(y != expect))
    assert mismatches <= n // 10**5, f"saxpy: {mismatches} mismatches"
    print(f"saxpy      n={n}: equal to the single-rounding (fma) reference")

    out = np.zeros(1, np.float32)
    mod.get_function("sum_reduce")(128, 256, (x, out, n))
    ref = x.astype(np.float64).sum()
    assert abs(out[0] - ref) / ref < 1e-5, (out[0], ref)
    print(f"sum_reduce n={n}: {out[0]:.6g} (NumPy float64: {ref:.6g})")

    m = 256
    A = rng.random((m, m), dtype=np.float32)
    B = rng.random((m, m), dtype=np.float32)
    C = np.zeros((m, m), np.float32)
    k = mod.get_function("matmul")
    k((m // 16, m // 16), (16, 16), (A, B, C, m))  # first launch includes translation
    t0 = time.perf_counter()
    k((m // 16, m // 16), (16, 16), (A, B, C, m))
    dt = time.perf_counter() - t0
    np.testing.assert_allclose(C, A @ B, rtol=1e-4)
    print(f"matmul     {m}x{m}: matches NumPy (rtol 1e-4), {2 * m**3 / dt / 1e9:.2f} GFLOP/s")

    mod.get_function("hello")(2, 32, (42,))
    print("demo OK")


if __name__ == "__main__":
    main()
