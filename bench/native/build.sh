#!/usr/bin/env bash
# Rebuild the benchmark's CUDA C++ program (needs nvcc; the benchmark runs the committed binary): against
# the shared CUDA runtime with PTX embedded, as any program built for ptxjit.
set -euo pipefail
cd "$(dirname "$0")"
nvcc -O2 -cudart shared -gencode arch=compute_90,code=compute_90 -gencode arch=compute_90,code=sm_90 \
    runtime_launch.cu -o runtime_launch
