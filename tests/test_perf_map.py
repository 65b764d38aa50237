"""PTXJIT_PERF_MAP=1: every translation's code range goes to /tmp/perf-<pid>.map as `ptxjit:<kernel>`,
the file `perf report` reads to name JIT code (checked in a child process: its own pid and map)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import os, numpy as np, ptxjit
m = ptxjit.Module.from_file(os.environ["PTX"])
k = m.get_function("saxpy")
n = 1000
x = np.arange(n, dtype=np.float32); y = np.ones(n, np.float32)
k(4, 256, (n, np.float32(2.0), x, y))
assert np.array_equal(y, 2 * np.arange(n, dtype=np.float32) + 1), y[:4]
t = k._tcache[((256, 1, 1), True)]
print(os.getpid(), hex(t.native.address))
"""


def test_perf_map_names_each_kernels_code(tmp_path):
    ptx = Path(__file__).resolve().parent.parent / "bench" / "kernels" / "ptx" / "saxpy.ptx"
    env = dict(os.environ, PTXJIT_PERF_MAP="1", PTXJIT_TIERS="0", PTXJIT_CACHE_DIR=str(tmp_path), PTX=str(ptx))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    pid, addr = out.stdout.split()[-2:]
    path = Path(f"/tmp/perf-{pid}.map")
    try:
        lines = path.read_text().splitlines()
    finally:
        path.unlink(missing_ok=True)
    starts = [(int(a, 16), int(s, 16), name) for a, s, name in (ln.split(" ", 2) for ln in lines)]
    assert any(name == "ptxjit:saxpy" and start <= int(addr, 16) < start + size and size > 100
               for start, size, name in starts), lines
