"""The whole real-kernel corpus traced: the corpus tests run again with every launch going through
ptxjit.trace with all four record types (the `trace` launch mode, tests/launch_modes.py).  Their own checks
(NumPy references) then show that traced launches compute what plain ones do, and the mode asserts for
every launch that the counting run sized each record buffer exactly (records written == capacity,
none dropped) -- except for kernels whose threads communicate through atomics, where a CAS retry loop
may run a different number of times in the two runs (the trace then drops or lacks a few records)."""

from __future__ import annotations

import pytest

from tests.launch_modes import CORPUS_TESTS, run_suite

pytest.importorskip("pyarrow")


@pytest.mark.mode_matrix
def test_corpus_tests_pass_with_every_launch_traced():
    run_suite("trace", CORPUS_TESTS)
