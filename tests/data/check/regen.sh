#!/bin/sh
# Regenerate the PTX of the checking corpus (tests/test_check.py; the tests never run nvcc).
# The .file directive names the .cu by its base name so that the PTX does not depend on the checkout's path.
set -e
cd "$(dirname "$0")"
for cu in *.cu; do
    base="${cu%.cu}"
    nvcc -ptx -arch=sm_80 -O3 -lineinfo "$cu" -o "$base.ptx"
    sed -i -E "s|^(\s*\.file\s+[0-9]+\s+)\"[^\"]*/([^/\"]+)\"|\1\"\2\"|" "$base.ptx"
done
