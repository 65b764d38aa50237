#!/usr/bin/env bash
# Run the bundled example end to end: Python API demo, then the CLI on the same PTX.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_venv.sh
.venv/bin/python examples/demo.py
.venv/bin/ptxjit info examples/demo_kernels.ptx
.venv/bin/ptxjit run examples/demo_kernels.ptx saxpy --grid 4 --block 256 \
    --arg 1000 --arg 2.0 --arg rand:float32:1000 --arg ones:float32:1000 --show
