#!/usr/bin/env bash
# Regenerate the PTX of the asynchronous-copy and matrix-move tests (needs nvcc 12.3+ for sm_90a).
set -euo pipefail
cd "$(dirname "$0")"
nvcc -arch=sm_90a -ptx -lineinfo -O3 async_ops.cu -o async_ops.ptx
nvcc -arch=sm_90a -ptx -lineinfo -O3 matrix_ops.cu -o matrix_ops.ptx
nvcc -arch=sm_90a -ptx -lineinfo -O3 tma_ops.cu -o tma_ops.ptx
