#!/usr/bin/env bash
# Regenerate the example PTX (needs nvcc; the committed .ptx lets everything else run without it).
set -euo pipefail
cd "$(dirname "$0")/../examples"
nvcc -ptx -arch=sm_80 -lineinfo -O3 demo_kernels.cu -o demo_kernels.ptx
