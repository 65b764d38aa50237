#!/usr/bin/env bash
# Run the whole test suite (and ruff) in .venv/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup_venv.sh
.venv/bin/ruff check src tests scripts examples bench 2>/dev/null || .venv/bin/ruff check src tests
.venv/bin/python -m pytest -q "$@"
