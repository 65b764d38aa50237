#!/usr/bin/env bash
# Regenerate the PTX of the 128-bit tests (needs nvcc 12.4+: atomics on unsigned __int128 need sm_90).
set -euo pipefail
cd "$(dirname "$0")"
nvcc -ptx -arch=sm_90 -O3 -lineinfo int128.cu -o int128.ptx
