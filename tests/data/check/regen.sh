#!/bin/sh
# Regenerate the PTX of the checking corpus (tests/test_check.py; the tests never run nvcc).
# The .file directive names the .cu by its base name so that the PTX does not depend on the checkout's path.
set -e
cd "$(dirname "$0")"
for cu in *.cu; do
    base="${cu%.cu}"
    # a first line `// nvcc-arch: sm_90` picks the target (stmatrix, cp.async.bulk); else sm_80
    arch=$(sed -n '1s|^// nvcc-arch: \(sm_[0-9a-z]*\)$|\1|p' "$cu")
    nvcc -ptx -arch="${arch:-sm_80}" -O3 -lineinfo "$cu" -o "$base.ptx"
    sed -i -E "s|^(\s*\.file\s+[0-9]+\s+)\"[^\"]*/([^/\"]+)\"|\1\"\2\"|" "$base.ptx"
done
