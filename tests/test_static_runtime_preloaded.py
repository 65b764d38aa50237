"""The static CUDA runtime redirect (src/ptxjit/cudart/static_runtime.py) when NVIDIA's libcudart.so.13 is loaded
already: numba-cuda's import loads the one of the nvidia-cuda-runtime wheel (for cuda.bindings.runtime), after
which loading "libcudart.so.13" by its name returns NVIDIA's.  The redirect still finds ptxjit's (by its path on
the library path), so CuPy imported after numba runs on ptxjit's runtime instead of failing every call with
cudaErrorNotSupported."""

from __future__ import annotations

import importlib.util
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="the redirect is x86-64 only")


def _nvidia_cudart() -> Path | None:
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for p in sorted(Path(root).glob("cu*/lib/libcudart.so.13")) + sorted(Path(root).glob("*/lib/libcudart.so.13")):
            return p
    return None


PROGRAM = r"""
import ctypes, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)  # NVIDIA's runtime first, as numba-cuda's import does
rt = sys.modules["_ptxjit_static_runtime"]._runtime_library()
print("ptxjit-runtime", rt is not None and hasattr(rt, "PyInit__ptxjit_libcudart"))
if len(sys.argv) > 2:
    import cupy as cp
    print("cupy", int((cp.arange(10) * 2).sum()))
"""


def test_redirect_with_nvidia_runtime_loaded(tmp_path):
    nv = _nvidia_cudart()
    if nv is None:
        pytest.skip("no nvidia-cuda-runtime wheel (NVIDIA's libcudart.so.13)")
    args = [str(nv)] + (["cupy"] if importlib.util.find_spec("cupy") is not None else [])
    env = dict(os.environ, PTXJIT_DRIVER_LOG=str(tmp_path / "driver.log"))
    r = subprocess.run([sys.executable, "-m", "ptxjit.cli", "exec", "--", sys.executable, "-c", PROGRAM, *args],
                       env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.split("\n")
    assert "ptxjit-runtime True" in lines, r.stdout + r.stderr
    if len(args) > 1:
        assert "cupy 90" in lines, r.stdout + r.stderr
