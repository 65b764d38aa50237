"""`ptxjit exec --stats`: where a program's time went (translations, kernel runs, copies), reported at exit.

Checked against what the program's source does: tests/cudart/vector_add.cu copies two 4 MiB inputs in, launches
one kernel and copies the 4 MiB result out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent / "cudart"
N_BYTES = (1 << 20) * 4  # vector_add's n floats


def _exec(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("ptxjit", path=str(Path(sys.executable).parent)) or "ptxjit"
    env = dict(os.environ, PTXJIT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("PTXJIT_DRIVER_LOG", None)
    return subprocess.run([exe, "exec", *args], capture_output=True, text=True, timeout=600, env=env)


def test_stats_as_json_count_what_the_program_does(tmp_path):
    out = tmp_path / "stats.json"
    cold = _exec(tmp_path, f"--stats={out}", "--", str(HERE / "vector_add"))
    assert cold.returncode == 0, cold.stderr
    warm = _exec(tmp_path, f"--stats={out}", "--", str(HERE / "vector_add"))
    assert warm.returncode == 0, warm.stderr
    first, second = (json.loads(line) for line in out.read_text().splitlines())
    for rec in (first, second):
        assert rec["program"].startswith("vector_add")
        assert rec["launches"] == 1
        assert rec["copies"] == 3 and rec["copy_bytes"] == 3 * N_BYTES
        parts = rec["translate_s"] + rec["kernel_s"] + rec["copy_s"]
        assert 0 < parts <= rec["wall_s"]
    # the first run translated the kernel; the second found it in the disk cache
    assert (first["translations"], first["disk_loads"]) == (1, 0)
    assert (second["translations"], second["disk_loads"]) == (0, 1)


def test_stats_line_in_the_log(tmp_path):
    r = _exec(tmp_path, "--stats", "--", str(HERE / "vector_add"))
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stderr.splitlines() if ln.startswith("ptxjit stats: vector_add"))
    assert "1 launches" in line and "3 copies and fills" in line and "(12.6 MB)" in line
