#!/usr/bin/env bash
# Regenerate probes.ptx and expected.json (needs ptxas on PATH and nvdisasm: the nvidia-cuda-nvdisasm
# wheel, or NVDISASM=/path/to/nvdisasm).  Tests only read the committed files.
set -euo pipefail
cd "$(dirname "$0")"
python3 make_probes.py
python3 count_sass.py probes.ptx > expected.json
