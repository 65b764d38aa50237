"""The benchmark harness's correctness check (bench/ptxbench) at tiny sizes: ptxjit vs C/OpenMP vs
NumPy.  No timings are asserted, and pocl is not used here."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from ptxbench import peers  # noqa: E402
from ptxbench.suite import CASES, check_case  # noqa: E402

pytestmark = pytest.mark.skipif(peers.gcc_path() is None, reason="gcc not found (needed for the C/OpenMP peer)")

KERNELS = ["saxpy", "sgemm", "histogram", "batchnorm", "maxpool", "im2col", "nchw_to_nhwc"]


@pytest.fixture(scope="module")
def bench_peers():
    return {"ptxjit": peers.PtxjitPeer(), "native_c": peers.NativePeer(KERNELS), "numpy": None}


@pytest.mark.parametrize("kernel", KERNELS)
def test_peers_agree(kernel, bench_peers):
    assert check_case(kernel, bench_peers, "tiny") == {"ptxjit": [], "native_c": [], "numpy": []}


def test_check_catches_a_wrong_result():
    case = CASES["sgemm"]
    d = case.make(32, np.random.default_rng(0))
    expected = case.reference(d)
    got = {"C": expected["C"].astype(np.float32)}
    assert case.check(got, expected) == []
    got["C"][3, 5] += 1.0
    problems = case.check(got, expected)
    assert len(problems) == 1 and "1 of 1024" in problems[0]
