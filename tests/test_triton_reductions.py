"""Triton reductions and scans through ptxjit, against NumPy: warp shuffles (bfly, up, idx) in region mode.

Region mode runs each stretch between suspension points as a vectorized loop over the CTA's threads; a
shuffle's exchange buffer is double-buffered per suspension point (lower/rules/sync.py).  These kernels
re-execute the same shuffles in a loop (both buffer rows of a point in turn, and a shuffle's read and the
next one's write in one loop), with 1 to 8 warps per CTA.  Integer-valued data: every sum is exact in
any order, so the comparisons are exact.  Skipped when Triton is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install 'ptxjit[triton]')")
tl = pytest.importorskip("triton.language")

import ptxjit.triton as pt  # noqa: E402


@triton.jit
def _loop_sums(x_ptr, sum_ptr, max_ptr, iters, BLOCK: tl.constexpr):
    """Per program, `iters` rows of BLOCK: the sum and max of each (reductions inside a runtime loop)."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    for i in range(iters):
        row = pid * iters + i
        x = tl.load(x_ptr + row * BLOCK + cols)
        tl.store(sum_ptr + row, tl.sum(x, axis=0))
        tl.store(max_ptr + row, tl.max(x, axis=0))


@triton.jit
def _row_cumsum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Inclusive prefix sums of each row (tl.cumsum: shuffles up and across warps), masked tail."""
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * n + cols, mask=cols < n, other=0)
    tl.store(out_ptr + pid * n + cols, tl.cumsum(x, axis=0), mask=cols < n)


@pytest.mark.parametrize("num_warps", [1, 2, 4, 8])
def test_reductions_in_a_loop(num_warps: int) -> None:
    rng = np.random.default_rng(num_warps)
    programs, iters, block = 19, 5, 256
    x = rng.integers(-1000, 1000, (programs * iters, block)).astype(np.float32)
    sums = np.full(programs * iters, np.nan, np.float32)
    maxs = np.full(programs * iters, np.nan, np.float32)
    pt.jit(_loop_sums)[(programs,)](x, sums, maxs, iters, BLOCK=block, num_warps=num_warps)
    np.testing.assert_array_equal(sums, x.astype(np.float64).sum(axis=1).astype(np.float32))
    np.testing.assert_array_equal(maxs, x.max(axis=1))


@pytest.mark.parametrize("num_warps", [1, 4])
def test_cumsum_rows(num_warps: int) -> None:
    rng = np.random.default_rng(7 + num_warps)
    rows, n = 23, 200
    x = rng.integers(-50, 50, (rows, n)).astype(np.int32)
    out = np.zeros_like(x)
    pt.jit(_row_cumsum)[(rows,)](x, out, n, BLOCK=256, num_warps=num_warps)
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1, dtype=np.int32))
