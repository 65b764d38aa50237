#!/usr/bin/env bash
# Create .venv/ (if needed) and install ptxjit into it with its test dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
stamp=.venv/.ptxjit-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
    .venv/bin/python -m pip install -q -e ".[dev]"
    touch "$stamp"
fi
# ptxjit's libcuda.so.1 (the CUDA driver API for unmodified programs): rebuilt when its sources change
.venv/bin/python -c "from ptxjit.driver.build import ensure_built; ensure_built()"
