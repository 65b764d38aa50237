#!/usr/bin/env bash
# Regenerate probes.ptx and expected.json (needs ptxas on PATH and nvdisasm: NVDISASM=/path/to/nvdisasm,
# e.g. Triton's copy in .venv/lib/python3.11/site-packages/triton/backends/nvidia/bin).  Tests read only
# the committed files.
set -euo pipefail
cd "$(dirname "$0")"
python3 make_probes.py
python3 make_probes.py --expect > expected.json
