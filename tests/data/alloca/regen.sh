#!/usr/bin/env bash
# Regenerate the PTX of the alloca tests (needs nvcc with device-side alloca: CUDA 12.x+).
set -euo pipefail
cd "$(dirname "$0")"
nvcc -ptx -arch=sm_90 -O3 -lineinfo alloca.cu -o alloca.ptx
