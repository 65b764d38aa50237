"""Numba CUDA kernels, written once as plain Python: compiled for Numba's simulator (numba_sim.py)
and, unchanged, for ptxjit through ptxjit.numba (numba_ptxjit.py)."""

from __future__ import annotations

from numba import cuda, float32

TILE = 16


def saxpy(n, a, x, y):
    i = cuda.grid(1)
    if i < n:
        y[i] = a * x[i] + y[i]


def sgemm(A, B, C, n):
    As = cuda.shared.array((TILE, TILE), float32)
    Bs = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.blockIdx.y * TILE + ty, cuda.blockIdx.x * TILE + tx
    acc = float32(0.0)
    for t in range(0, n, TILE):
        As[ty, tx] = A[row, t + tx]
        Bs[ty, tx] = B[t + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += As[ty, k] * Bs[k, tx]
        cuda.syncthreads()
    C[row, col] = acc
