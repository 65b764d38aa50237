"""Running a child Python program against ptxjit's libcuda.so.1 (ctypes.CDLL("libcuda.so.1") in the child)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_on_driver(program: str, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    """Run `program` (python -c) with the driver library first on the library path and its log in
    `tmp_path`; returns the finished process and the driver log's text ("" when nothing was logged)."""
    from ptxjit.driver.build import ensure_built

    log = tmp_path / "driver.log"
    env = dict(os.environ, PTXJIT_DRIVER_LOG=str(log))
    env["LD_LIBRARY_PATH"] = str(ensure_built().parent) + (":" + env["LD_LIBRARY_PATH"]
                                                             if env.get("LD_LIBRARY_PATH") else "")
    r = subprocess.run([sys.executable, "-c", program, *args], env=env, capture_output=True, text=True,
                       timeout=600, check=False)
    return r, log.read_text() if log.exists() else ""
