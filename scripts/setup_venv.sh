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
# tinygrad folds constants on its CPU device, which compiles with clang (Debian's package; root installs it)
if ! command -v clang >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq clang) >/dev/null 2>&1 || echo "note: clang could not be installed"
fi
# tinygrad's own test/test_tiny.py ships only in its source distribution: kept for tests/test_driver.py
if [ ! -f .venv/sdist/.done ] && .venv/bin/python -c "import tinygrad" 2>/dev/null; then
    v=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('tinygrad'))")
    .venv/bin/python -m pip download -q --no-binary :all: --no-deps "tinygrad==$v" -d .venv/sdist >/dev/null 2>&1 \
        && touch .venv/sdist/.done || echo "note: tinygrad's source distribution could not be downloaded"
fi
# ptxjit's libcuda.so.1 (the CUDA driver API for unmodified programs): rebuilt when its sources change
.venv/bin/python -c "from ptxjit.driver.build import ensure_built; ensure_built()"
.venv/bin/python -c "from ptxjit.cudart.build import ensure_built; ensure_built()"  # and libcudart.so.13 beside it
# bytecode for ptxjit's own modules (an editable install compiles none): every process that imports ptxjit,
# each program under `ptxjit exec` included, then skips compiling them, also where PYTHONDONTWRITEBYTECODE is set
.venv/bin/python -m compileall -q src/ptxjit >/dev/null || echo "note: ptxjit's bytecode could not be written"
