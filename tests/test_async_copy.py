"""cp.async, cp.async.bulk, cp.reduce.async.bulk and mbarrier: the H100's recorded launches byte for
byte, and kernels of our own (tests/data/async) against NumPy."""

from __future__ import annotations

from tests.unit.tcgolden import tc_test

test_async_copy_golden = tc_test(r"^(cp_async|mbarrier)_", "cp.async/cp.async.bulk/mbarrier")
