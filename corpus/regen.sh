#!/bin/sh
# Regenerate corpus/ptx/*.ptx (nvcc) and corpus/ptx_nvrtc/*.ptx (NVRTC pip wheels), then check with ptxas.
# Needs: nvcc/ptxas (CUDA 13) on PATH, and `pip install nvidia-cuda-nvrtc nvidia-cuda-nvrtc-cu12`.
set -e
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
exec "$PY" scripts/gen_corpus.py "$@"
