#!/usr/bin/env bash
# The whole H100 golden set (../shared/gpu-golden), bit for bit: every instruction variant through the
# shared checker (prints `gpu-exact: E/N exact ...`), then the test suite's golden replays in full.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_venv.sh
golden=../shared/gpu-golden
if [ ! -d "$golden/isa" ]; then
    echo "no $golden beside this checkout" >&2
    exit 2
fi
.venv/bin/python "$golden/tools/check.py" "$golden/isa" --details 40 "$@"
PTXJIT_GOLDEN=full .venv/bin/python -m pytest -q tests/test_golden.py tests/unit/test_approx.py \
    tests/unit/test_convert.py tests/unit/test_half.py tests/unit/test_compare.py tests/unit/test_int_arith.py \
    tests/unit/test_bits.py tests/unit/test_video.py tests/unit/test_atomics.py tests/unit/test_fp8.py
