#!/usr/bin/env bash
# Rebuild the driver-API test programs and their kernels (needs nvcc and a C compiler; tests never run this).
# The programs link against ptxjit's libcuda.so.1 (python -m ptxjit.driver.build); like any -lcuda program
# they need only a libcuda.so.1 on the library path at run time.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)
LIB=$("$ROOT/.venv/bin/python" -c "from ptxjit.driver.build import ensure_built; print(ensure_built().parent)")
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include
nvcc -ptx -arch=sm_80 -lineinfo -O3 kernels.cu -o kernels.ptx
nvcc -fatbin -gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=sm_90 -O3 kernels.cu -o kernels.fatbin
gcc -O2 -std=c11 -I"$CUDA_INC" driver_vecadd.c -o driver_vecadd -L"$LIB" -lcuda -lm
gcc -O2 -std=c11 -I"$CUDA_INC" driver_capture.c -o driver_capture -L"$LIB" -lcuda
nvcc -ptx -arch=sm_80 -lineinfo -O3 sanitize.cu -o sanitize.ptx
gcc -O2 -std=c11 -I"$CUDA_INC" driver_sanitize.c -o driver_sanitize -L"$LIB" -lcuda
