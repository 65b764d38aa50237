#!/usr/bin/env bash
# Long fuzz run of the load/launch path: 10,000 corpus mutants (python -m tools.fuzz), each in a forked
# child with a memory and a wall-clock limit, compared with ptxas when it is on PATH.
# Usage: scripts/fuzz.sh [extra tools.fuzz options, e.g. -n 20000 --seed 3 -j 4 --budget 7200]
# Results (summary.txt, results.jsonl, cases/, minimized reproducers/) go to fuzz-results/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
exec "$PY" -m tools.fuzz -n 10000 --seed 1 -j 2 --out fuzz-results -q "$@"
