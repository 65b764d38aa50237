#!/usr/bin/env bash
# Regenerate the PTX of the analysis tests (needs nvcc; the tests use the committed PTX).
set -euo pipefail
cd "$(dirname "$0")"
nvcc -ptx -arch=sm_80 -O3 analysis.cu -o analysis.ptx
