#!/bin/sh
# Regenerate the PTX of the tensor-core test kernels (tests/test_tensor_core.py) from their CUDA source.
set -e
cd "$(dirname "$0")"
nvcc -arch=sm_80 -ptx -lineinfo mma_gemm.cu -o mma_gemm.ptx
nvcc -arch=sm_90a -ptx -lineinfo wgmma_gemm.cu -o wgmma_gemm.ptx
