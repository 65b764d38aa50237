#!/usr/bin/env bash
# Regenerates the PTX of the linker's test inputs (needs nvcc; the tests do not).
set -euo pipefail
cd "$(dirname "$0")"
for f in caller callee; do
    nvcc -std=c++17 -rdc=true -ptx -arch=sm_90 -O3 "$f.cu" -o "$f.ptx"
done
