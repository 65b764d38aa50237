"""ldmatrix / stmatrix / movmatrix (.m8n8 .b16): the H100's recorded launches byte for byte, and kernels of our own
(tests/data/async/matrix_ops.cu) against NumPy's fragment layout (PTX ISA §9.7.14.5.15-17): lane l holds, in
register i, elements (row l / 4, columns 2(l % 4), 2(l % 4) + 1) of matrix i, the lower column in the low half."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from tests.unit.tcgolden import tc_test

DATA = Path(__file__).parent / "data" / "async" / "matrix_ops.ptx"

test_matrix_moves_golden = tc_test(r"^(ldmatrix|stmatrix|movmatrix)_", "ldmatrix/stmatrix/movmatrix")
test_matrix_moves_golden_unchecked = tc_test(r"^(ldmatrix|stmatrix|movmatrix)_", "ldmatrix/stmatrix/movmatrix",
                                             unchecked=True)

MODES = [pytest.param({"checked": True}, id="checked"), pytest.param({"unchecked": True}, id="unchecked")]


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA)


def fragment(m: np.ndarray) -> np.ndarray:
    """The 32 lanes' b32 register of 8x8 b16 matrix m."""
    lane = np.arange(32)
    lo = m[lane // 4, 2 * (lane % 4)].astype(np.uint32)
    hi = m[lane // 4, 2 * (lane % 4) + 1].astype(np.uint32)
    return lo | hi << 16


@pytest.mark.parametrize("mode", MODES)
def test_matrix_moves_against_numpy(mod, mode):
    rng = np.random.default_rng(3)
    img = rng.integers(0, 2**16, (128, 8), dtype=np.uint16)
    rows = rng.permutation(128)[:64].astype(np.uint32)  # each lane's row of img (loads)
    srows = rng.permutation(64).astype(np.uint32)  # each lane's row of the stored 64 rows
    ld, ldt = np.zeros((64, 4), np.uint32), np.zeros((64, 4), np.uint32)
    x1, x2, mv = np.zeros(64, np.uint32), np.zeros((64, 2), np.uint32), np.zeros(64, np.uint32)
    st, stt = np.zeros((64, 8), np.uint16), np.zeros((64, 8), np.uint16)
    mod.get_function("matrix_moves")(1, 64, (img, rows, srows, ld, ldt, x1, x2, mv, st, stt), **mode)
    want_st = np.zeros((64, 8), np.uint16)
    want_stt = np.full((64, 8), 0xFFFF, np.uint16)
    for w in range(2):
        lanes = slice(32 * w, 32 * w + 32)
        mats = [img[rows[32 * w + 8 * i:32 * w + 8 * i + 8]] for i in range(4)]  # matrix i row r: lane 8i + r
        for i, m in enumerate(mats):
            assert np.array_equal(ld[lanes, i], fragment(m)), f"ldmatrix.x4 warp {w} matrix {i}"
            assert np.array_equal(ldt[lanes, i], fragment(m.T)), f"ldmatrix.x4.trans warp {w} matrix {i}"
            want_st[srows[32 * w + 8 * i:32 * w + 8 * i + 8]] = m
            if i < 2:
                assert np.array_equal(x2[lanes, i], fragment(m.T)), f"ldmatrix.x2.trans warp {w} matrix {i}"
                want_stt[srows[32 * w + 8 * i:32 * w + 8 * i + 8]] = m  # the transposed fragment, transposed back
        assert np.array_equal(x1[lanes], fragment(mats[0])), f"ldmatrix.x1 warp {w}"
        assert np.array_equal(mv[lanes], fragment(mats[0].T)), f"movmatrix warp {w}"
    assert np.array_equal(st, want_st)
    assert np.array_equal(stt, want_stt)


def test_ldmatrix_row_out_of_bounds_faults(mod):
    """An ldmatrix row address outside shared memory is a memory fault (checked launches); in bounds it loads."""
    k = mod.get_function("ldmatrix_at")
    out = np.zeros(32, np.uint32)
    k(1, 32, (np.uint32(0), out), checked=True)
    assert np.array_equal(out, fragment(np.arange(64, dtype=np.uint16).reshape(8, 8)))
    with pytest.raises(ptxjit.KernelFault):
        k(1, 32, (np.uint32(1 << 20), out), checked=True)


@pytest.mark.parametrize("mode", MODES)
def test_partial_warp_is_contained(mod, mode):
    """A block of 48 threads: the second warp's ldmatrix.x4/stmatrix.x4 name rows of lanes that do not exist
    (undefined on a GPU).  ptxjit reads zeros for them and writes nowhere: nothing outside the kernel's memory
    is touched, and the full first warp computes what NumPy says."""
    rng = np.random.default_rng(9)
    img = rng.integers(0, 2**16, (128, 8), dtype=np.uint16)
    rows = rng.permutation(128)[:64].astype(np.uint32)
    srows = rng.permutation(64).astype(np.uint32)
    ld, ldt = np.zeros((64, 4), np.uint32), np.zeros((64, 4), np.uint32)
    x1, x2, mv = np.zeros(64, np.uint32), np.zeros((64, 2), np.uint32), np.zeros(64, np.uint32)
    st, stt = np.zeros((64, 8), np.uint16), np.zeros((64, 8), np.uint16)
    mod.get_function("matrix_moves")(1, 48, (img, rows, srows, ld, ldt, x1, x2, mv, st, stt), **mode)
    for i in range(4):
        assert np.array_equal(ld[:32, i], fragment(img[rows[8 * i:8 * i + 8]]))
    assert np.array_equal(ld[32:48, 2:], np.zeros((16, 2), np.uint32))  # warp 1's matrices 2, 3: no rows
