"""`ptxjit exec --check`: compute-sanitizer's tools on an unmodified CUDA program.

tests/driver/driver_sanitize.c (a C program linked with -lcuda) launches the kernels of
tests/driver/sanitize.cu through cuLaunchKernel: five bugs, each one a tool exists for, and correct launches
that look alike (a read behind a pointer into the middle of its allocation; copies of memory a kernel, a
memset or a host copy wrote).  The program checks its own results;
the expected reports come from the CUDA source (the line of each bug's statement, the thread that makes
the out-of-bounds write) and compute-sanitizer's report layout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "driver"
SOURCE = (HERE / "sanitize.cu").read_text().splitlines()
N, BLOCK = 1000, 256  # driver_sanitize.c's array size and block size


def _line(statement: str) -> int:
    """The sanitize.cu line holding `statement` (1-based)."""
    (hit,) = [i + 1 for i, text in enumerate(SOURCE) if statement in text]
    return hit


def _exec(tmp_path: Path, *options: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PTXJIT_DRIVER_LOG=str(tmp_path / "driver.log"))
    env.pop("PTXJIT_CHECK", None)
    return subprocess.run([sys.executable, "-m", "ptxjit.cli", "exec", *options, "--", str(HERE / "driver_sanitize"),
                           str(HERE / "sanitize.ptx")], env=env, capture_output=True, text=True, timeout=600)


def _reports(stderr: str) -> list[str]:
    """compute-sanitizer's report blocks: the lines between two bare '=========' lines."""
    blocks, cur = [], []
    for line in stderr.splitlines():
        if not line.startswith("========="):
            continue
        if line.strip() == "=========":
            if cur:
                blocks.append("\n".join(cur))
            cur = []
        elif "ERROR SUMMARY" not in line:
            cur.append(line)
    return blocks


def test_every_tool_on_an_unmodified_program(tmp_path):
    r = _exec(tmp_path, "--check", "memcheck,racecheck,initcheck,synccheck")
    assert r.returncode == 0 and "0 checks failed" in r.stdout, r.stdout + r.stderr
    reports = _reports(r.stderr)
    by_kernel = {name: [b for b in reports if f" at {name} in " in b]
                 for name in ("write_past_end", "read_behind", "shared_race", "read_uninitialized_shared",
                              "divergent_barrier", "copy_ints")}
    assert len(reports) == 5, r.stderr
    assert by_kernel["read_behind"] == []  # a pointer into the middle of an allocation: every byte of it is legal

    (oob,) = by_kernel["write_past_end"]
    assert "Invalid __global__ write of size 4 bytes" in oob
    assert f"sanitize.cu:{_line('if (i <= n) out[i] = 1.0f;')} " in oob
    # the thread with i == n: block n // BLOCK, thread n % BLOCK
    assert f"by thread ({N % BLOCK},0,0) in block ({N // BLOCK},0,0)" in oob
    assert "0 bytes past the end of the memory argument 0 ('write_past_end_param_0') points into (4000 bytes)" in oob

    (race,) = by_kernel["shared_race"]
    assert "Race reported between Write access" in race and "__shared__ memory" in race
    assert f"sanitize.cu:{_line('slot = threadIdx.x;')} " in race

    (uninit,) = by_kernel["read_uninitialized_shared"]
    assert "Uninitialized __shared__ memory read of size 4 bytes" in uninit
    assert f"sanitize.cu:{_line('= never_written[threadIdx.x];')} " in uninit

    (barrier,) = by_kernel["divergent_barrier"]
    assert "Barrier error detected. Divergent thread(s) in block" in barrier
    assert f"sanitize.cu:{_line('if (threadIdx.x % 32 < 16) __syncthreads();')} " in barrier

    # of four copies only the one of the allocation nothing wrote (each launch reports apart)
    (fresh,) = by_kernel["copy_ints"]
    assert "Uninitialized __global__ memory read of size 4 bytes" in fresh
    assert f"sanitize.cu:{_line('out[i] = in[i];')} " in fresh

    assert re.search(r"^========= ERROR SUMMARY: 5 errors$", r.stderr, re.M), r.stderr
    # the fault still ends the launch as it does unchecked: CUDA_ERROR_ILLEGAL_ADDRESS, named in the log
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in (tmp_path / "driver.log").read_text()


def test_one_tool_reports_only_its_own(tmp_path):
    r = _exec(tmp_path, "--check", "memcheck")
    assert r.returncode == 0 and "0 checks failed" in r.stdout, r.stdout + r.stderr
    reports = _reports(r.stderr)
    assert len(reports) == 1 and "Invalid __global__ write" in reports[0], r.stderr
    assert "ERROR SUMMARY: 1 error" in r.stderr


def test_without_check_nothing_is_reported(tmp_path):
    r = _exec(tmp_path)
    assert r.returncode == 0 and "0 checks failed" in r.stdout, r.stdout + r.stderr
    assert "=========" not in r.stderr


def test_unknown_tool_is_refused(tmp_path):
    r = _exec(tmp_path, "--check", "memcheck,leakcheck")
    assert r.returncode == 2
    assert "--check" in r.stderr and "memcheck, racecheck, synccheck, initcheck" in r.stderr
    assert "checks failed" not in r.stdout  # the program did not run



def test_numba_cuda_program(tmp_path):
    """numba-cuda's real target (its kernels' mangled names demangled, as compute-sanitizer prints them)."""
    pytest.importorskip("numba.cuda")
    script = HERE / "numba_cuda_bugs.py"
    env = dict(os.environ, PTXJIT_DRIVER_LOG=str(tmp_path / "driver.log"), NUMBA_BOUNDSCHECK="0")
    r = subprocess.run([sys.executable, "-m", "ptxjit.cli", "exec", "--check", "memcheck,racecheck", "--",
                        sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "shared_race done" in r.stdout, r.stdout + r.stderr
    assert "shift_right failed" in r.stdout and "CUDA_ERROR_ILLEGAL_ADDRESS" in r.stdout, r.stdout
    reports = _reports(r.stderr)
    assert len(reports) == 2, r.stderr
    race, oob = reports
    assert "Race reported between Write access at __main__::shared_race" in race and "__shared__" in race
    assert "Invalid __global__ write of size 4 bytes" in oob and "at __main__::shift_right" in oob
    assert "by thread (99,0,0) in block (0,0,0)" in oob  # i == a.size - 1 writes out[a.size]
    assert "0 bytes past the end" in oob and "(400 bytes)" in oob
    assert "ERROR SUMMARY: 2 errors" in r.stderr


def test_bad_tools_fail_cuinit_with_the_reason(tmp_path):
    """PTXJIT_CHECK naming no tool, set without `ptxjit exec --check`'s own validation: the driver cannot start
    ptxjit, so cuInit fails (CUDA_ERROR_NOT_INITIALIZED) instead of every call answering CUDA_SUCCESS with
    nothing done, and the reason is printed."""
    from ptxjit.driver.build import ensure_built

    env = dict(os.environ, PTXJIT_CHECK="memchek", LD_LIBRARY_PATH=str(ensure_built().parent),
               PTXJIT_DRIVER_LOG=str(tmp_path / "driver.log"))
    r = subprocess.run([str(HERE / "driver_sanitize"), str(HERE / "sanitize.ptx")], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL cuInit(0) -> CUDA_ERROR_NOT_INITIALIZED" in r.stdout
    assert "PTXJIT_CHECK='memchek': tools must be" in r.stderr


def test_error_exitcode_and_print_limit(tmp_path):
    """compute-sanitizer's --error-exitcode (a CI job fails on any finding; the program's own output is kept)
    and --print-limit (the summary still counts every report)."""
    r = _exec(tmp_path, "--check", "memcheck,racecheck,initcheck,synccheck", "--error-exitcode", "7",
              "--print-limit", "2")
    assert r.returncode == 7, r.stdout + r.stderr
    assert "0 checks failed" in r.stdout  # the C program's buffered stdout, written before the exit
    assert len(_reports(r.stderr)) == 2
    assert "Printing limit reached: 3 more reports not printed" in r.stderr
    assert "ERROR SUMMARY: 5 errors" in r.stderr
    # synccheck alone: its divergent barrier, and the fault (a launch that faults is every tool's report)
    sync = _exec(tmp_path, "--check", "synccheck", "--error-exitcode", "7")
    assert sync.returncode == 7 and "ERROR SUMMARY: 2 errors" in sync.stderr, sync.stderr
    bad = _exec(tmp_path, "--error-exitcode", "7")
    assert bad.returncode == 2 and "go with --check" in bad.stderr
