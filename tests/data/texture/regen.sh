#!/usr/bin/env bash
# Regenerate the PTX of the texture/surface tests (tests/test_texture.py); needs nvcc.
set -euo pipefail
cd "$(dirname "$0")"
nvcc -arch=sm_80 -ptx -lineinfo -O3 texture.cu -o texture.ptx
