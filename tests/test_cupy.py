"""CuPy (cupy-cuda13x, unmodified) on ptxjit's runtime and driver: `ptxjit exec -- python`.

tests/cupy_programs/api_probe.py runs CuPy's public API area by area and checks each result against NumPy;
here every check that CuPy can run on PTX must pass, and each one that needs NVIDIA's SASS-only kernels or
libraries must fail with an error that names the missing piece, never a wrong value or a crash.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="cupy-cuda13x is not installed")

PROBE = Path(__file__).parent / "cupy_programs" / "api_probe.py"

# what cannot run here, and the words its error must contain
UNAVAILABLE = {
    "sort": "cudaErrorNoKernelImageForDevice",  # CUB's radix sort: SASS + compute_120 PTX only
    "argsort": "cudaErrorNoKernelImageForDevice",
    "unique": "cudaErrorNoKernelImageForDevice",
    "partition_median": "cudaErrorNoKernelImageForDevice",
    "matmul": "libcublas",
    "dot_vectors": "libcublas",
    "fft": "libcufft",
    "legacy_random": "libcurand",
    "random_uniform": "cudaErrorNoKernelImageForDevice",  # cupy.random's generator API: SASS-only kernels
}


@pytest.fixture(scope="module")
def probe():
    env = dict(os.environ)
    env.pop("CUPY_ACCELERATORS", None)  # ptxjit exec's defaults, as a user gets them
    env.pop("CUPY_COMPILE_WITH_PTX", None)
    env["CUPY_CACHE_DIR"] = str(Path(env.get("TMPDIR", "/tmp")) / f"ptxjit-cupy-cache-{os.getpid()}")
    exe = shutil.which("ptxjit", path=str(Path(sys.executable).parent)) or "ptxjit"
    proc = subprocess.run([exe, "exec", "--", sys.executable, str(PROBE)],
                          capture_output=True, text=True, timeout=900, env=env)
    results = {r["name"]: r for r in map(json.loads, (ln for ln in proc.stdout.splitlines() if ln.startswith("{")))}
    return proc, results


def test_probe_exits_cleanly(probe):
    proc, results = probe
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(results) >= 50, proc.stdout[-2000:] + proc.stderr[-2000:]
    # nothing raised at interpreter shutdown (CuPy releasing its modules and memory)
    for text in ("Exception ignored", "Error in sys.excepthook", "Traceback"):
        assert text not in proc.stderr, proc.stderr[-3000:]


def test_everything_cupy_runs_on_ptx_matches_numpy(probe):
    _proc, results = probe
    wrong = {n: r["error"] or "result differs from NumPy" for n, r in results.items()
             if n not in UNAVAILABLE and not r["ok"]}
    assert not wrong, wrong
    areas = {r["area"] for n, r in results.items() if r["ok"]}
    assert {"creation", "elementwise", "reductions", "kernels", "indexing", "sorting", "runtime"} <= areas


@pytest.mark.parametrize("name", sorted(UNAVAILABLE))
def test_what_needs_sass_or_nvidia_libraries_fails_by_name(probe, name):
    _proc, results = probe
    r = results[name]
    assert not r["ok"]
    assert UNAVAILABLE[name] in r["error"], r


def test_sass_only_kernel_names_are_logged(probe):
    proc, _results = probe
    assert "no PTX for sm_90 in the image" in proc.stderr
    assert "DeviceRadixSort" in proc.stderr or "radix_sort" in proc.stderr
