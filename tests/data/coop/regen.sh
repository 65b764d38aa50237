#!/usr/bin/env bash
# Regenerate the PTX of the cooperative-launch tests (CUDA 13's nvcc; grid.sync() needs no -rdc there).
set -euo pipefail
cd "$(dirname "$0")"
nvcc -arch=sm_90 -ptx -lineinfo -O3 coop.cu -o coop.ptx
nvcc -arch=sm_90 -ptx -lineinfo -O3 cluster.cu -o cluster.ptx
