#!/usr/bin/env bash
# Regenerate the committed PTX of the benchmark kernels (needs nvcc; everything else runs without it).
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
mkdir -p ptx
for cu in *.cu; do
    "$NVCC" -ptx -arch=sm_80 -O3 "$cu" -o "ptx/${cu%.cu}.ptx"
done
