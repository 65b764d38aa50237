"""The whole real-kernel corpus traced: the corpus tests run again with every launch going through
ptxjit.trace with all four record types (tests/conftest.py, PTXJIT_TEST_TRACE=1).  Their own checks
(NumPy references) then show that traced launches compute what plain ones do, and the hook asserts for
every launch that the counting run sized each record buffer exactly (records written == capacity,
none dropped) -- except for kernels whose threads communicate through atomics, where a CAS retry loop
may run a different number of times in the two runs (the trace then drops or lacks a few records)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parent.parent
CORPUS_TESTS = ["tests/test_corpus_basic.py", "tests/test_corpus_extra.py", "tests/test_corpus_numeric.py",
                "tests/test_corpus_parallel.py"]


def test_corpus_tests_pass_with_every_launch_traced():
    env = dict(os.environ, PTXJIT_TEST_TRACE="1")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *CORPUS_TESTS],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and "failed" not in r.stdout
