"""libcuda.so.1's stream-ordered memory pools, async copies with pageable host memory, kernel cache preferences and
stream capture status, through the C ABI (tests/driver/ctypes_pools_copies.py in a child process: the dynamic
loader reads LD_LIBRARY_PATH only at process start).  The script checks each answer against the value the CUDA
Driver API reference documents; numba-cuda's device-array assignment (a scalar staged from a temporary) and
cuda.core's Device.allocate depend on them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "driver"


@pytest.fixture(scope="module")
def libdir() -> str:
    from ptxjit.driver.build import ensure_built

    return str(ensure_built().parent)


def test_pools_async_copies_cache_config(libdir, tmp_path):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = libdir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["PTXJIT_DRIVER_LOG"] = str(tmp_path / "driver.log")
    r = subprocess.run([sys.executable, str(HERE / "ctypes_pools_copies.py"), str(HERE / "kernels.ptx")], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    results = json.loads(r.stdout)
    assert len(results) >= 25
    assert {k: v for k, v in results.items() if v[0] != v[1]} == {}
    log = (tmp_path / "driver.log").read_text()
    assert "7 is not a CUfunc_cache" in log and "not a live memory pool handle" in log
