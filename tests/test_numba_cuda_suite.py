"""A part of numba-cuda's own test suite on ptxjit's libcuda.so.1, through scripts/numba_cuda_suite.py.

numba-cuda's tests are the independent reference here: they check their results against NumPy and the CUDA
semantics numba-cuda expects of a driver.  The chosen modules (device arrays and their attributes, events,
pinned and mapped host memory, integer division and a shared-memory reduction in kernels) run on the real
CUDA target with ptxjit as the driver and must have no failure and no error; the same modules run under
numba's simulator too (NUMBA_ENABLE_CUDASIM=1), where they must pass as well, so a module that cannot pass
on a CPU at all is not what is measured.  The whole suite is a command of its own (hours on two cores):
`.venv/bin/python scripts/numba_cuda_suite.py`, see the script's docstring.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# about three minutes on two busy cores, both targets, one module at a time
CI_MODULES = r"cudadrv\.test_(array_attr|events|host_alloc)$|cudapy\.test_idiv$"


def test_numba_cuda_suite_subset(tmp_path):
    pytest.importorskip("numba.cuda")
    pytest.importorskip("filecheck")  # numba.cuda.testing imports it
    out = tmp_path / "suite.md"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "numba_cuda_suite.py"), "--modules", CI_MODULES,
                        "--timeout", "400", "--out", str(out), "--workdir", str(tmp_path / "work")],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    runs = json.loads(out.with_suffix(".json").read_text())["runs"]
    by = {(x["module"], x["target"]): x for x in runs}
    modules = {m for m, _ in by}
    assert len(modules) == 4 and len(by) == 8, sorted(by)
    for (module, target), run in sorted(by.items()):
        c = run["counts"]
        bad = [(t["test"], t["reason"]) for t in run["tests"] if t["outcome"] in ("failed", "errors")]
        assert run["status"] == "ok" and c["failed"] == 0 and c["errors"] == 0, (module, target, bad)
        assert c["passed"] > 0, (module, target, c)
    report = out.read_text()
    assert "| **total** |" in report and "## Failures on ptxjit (0)" in report
