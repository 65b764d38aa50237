"""Scheduling optimizations that must not change results: lockstep stride loops, registers rebuilt
from the thread index (affine restore, with its run-time check), and the hoisted entry guard.
Each runs nvcc's PTX (tests/data/lockstep.cu) against NumPy, on inputs that take both the fast
and the fallback paths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.frontend.parser import parse
from ptxjit.lower.module import ModuleCodegen
from ptxjit.passes.affine import tid_affine
from ptxjit.passes.lockstep import LOCKSTEP, lockstep_loops

DATA = Path(__file__).parent / "data" / "lockstep.ptx"


@pytest.fixture(scope="module")
def mod():
    return ptxjit.Module.from_file(DATA)


def _fn(name):
    return parse(DATA.read_text(), str(DATA)).functions[name]


def _yields(ins):
    return ModuleCodegen.yields(None, ins)


def test_lockstep_points_only_in_stride_loops():
    two = lockstep_loops(_fn("two_loops"), _yields)
    assert sum(i.opcode == LOCKSTEP for i in two.instructions) >= 2  # the loops (the outer one too)
    rows = _fn("rows")  # a data-dependent loop is not a stride loop
    assert lockstep_loops(rows, _yields) is rows


def test_affine_analysis_finds_thread_indices():
    fn = _fn("rows")
    aff = tid_affine(fn, {p.name for p in fn.params})
    # idx = (ctaid.y*16 + tid.y) * width + ctaid.x*16 + tid.x: tid.x coefficient 1, tid.y unknown
    # (times a parameter), so only registers built without the width are affine in both
    coeffs = set(aff.values())
    assert (1, 0, 0) in coeffs and (0, 1, 0) in coeffs
    assert all(len(k) == 3 for k in coeffs)


@pytest.mark.parametrize("n,m,grid", [(4096, 4096, 8), (5000, 700, 8), (37, 4099, 3), (0, 3000, 4),
                                      (3000, 5000, 2), (700, 9000, 4)])
def test_two_stride_loops_with_different_trip_counts(mod, n, m, grid):
    rng = np.random.default_rng(n + m)
    x = rng.standard_normal(max(n, 1)).astype(np.float32)
    w = rng.integers(-50, 50, max(m, 1)).astype(np.int32)
    partial = np.zeros(grid, np.float32)
    mod.get_function("two_loops")(grid, 256, (x, w, partial, n, m))
    stride = grid * 256
    expect = np.zeros(grid)
    for b in range(grid):
        for t in range(256):
            g = b * 256 + t
            expect[b] += 2 * x[g:n:stride].astype(np.float64).sum() + 3 * w[g:m:stride].astype(np.float64).sum()
    np.testing.assert_allclose(partial, expect, rtol=1e-4, atol=1e-3)


def test_data_dependent_loop_before_barrier_2d_block(mod):
    width, height = 64, 32
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 9, (height, width)).astype(np.int32)
    counts[:16, :16] = 3  # one CTA where every thread loops the same number of times
    out = np.zeros((height, width), np.int32)
    mod.get_function("rows")((width // 16, height // 16), (16, 16), (counts, out, width))
    idx = np.arange(width * height).reshape(height, width)
    v = np.zeros_like(idx)
    for k in range(int(counts.max())):
        v += np.where(k < counts, k ^ idx, 0)
    expect = np.empty_like(v)
    for by in range(height // 16):
        for bx in range(width // 16):
            tile = v[by * 16:(by + 1) * 16, bx * 16:(bx + 1) * 16]
            expect[by * 16:(by + 1) * 16, bx * 16:(bx + 1) * 16] = tile.T
    np.testing.assert_array_equal(out, expect + idx)


@pytest.mark.parametrize("n", [1024, 1000, 1, 255, 257])
def test_entry_guard_full_and_partial_ctas(mod, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(1024).astype(np.float32)
    y = rng.standard_normal(1024).astype(np.float32)
    y0 = y.copy()
    mod.get_function("guarded_axpy")(4, 256, (np.float32(1.5), x, y, n))
    expect = y0.copy()
    expect[:n] = np.float32(1.5) * x[:n] + y0[:n]
    np.testing.assert_allclose(y, expect, rtol=1e-6, atol=1e-6)
    assert np.array_equal(y[n:], y0[n:])  # past the guard nothing is written


def test_guard_after_a_load_is_not_hoisted(mod):
    fn = _fn("load_then_guard")
    flags = np.array([1, 0, 3, -1] * 64, np.int32)
    out = np.full(256, 7, np.int32)
    mod.get_function("load_then_guard")(1, 256, (flags, out, 200))
    expect = np.where((flags > 0) & (np.arange(256) < 200), flags * 2, 7)
    np.testing.assert_array_equal(out, expect)
    assert any(i.opcode == "ld" and not i.has("param") for i in fn.instructions)


def test_translation_prints_nothing_on_stderr(mod, capfd):
    x = np.ones(512, np.float32)
    w = np.ones(512, np.int32)
    partial = np.zeros(2, np.float32)
    mod.get_function("two_loops")(2, 256, (x, w, partial, 512, 512))
    assert "vectoriz" not in capfd.readouterr().err
    np.testing.assert_allclose(partial, [1280.0, 1280.0])


TRITON_ROW_SUM = Path(__file__).parent / "data" / "triton" / "row_sum.sm80.ptx"


def _row_sum():
    return parse(TRITON_ROW_SUM.read_text(), str(TRITON_ROW_SUM)).functions["row_sum"]


@pytest.mark.parametrize("block, identity", [((128, 1, 1), True), ((64, 1, 1), True), ((256, 1, 1), False)])
def test_thread_index_mask_is_identity_only_below_the_mask(block, identity):
    """Triton's `and.b32 %r3, %r2, 127` (%r2 = %tid.x) is %tid.x itself when no thread index of the block
    has a bit above 127's (128 or 64 threads), and not with 256 threads (index 200 & 127 = 72)."""
    fn = _row_sum()
    aff = tid_affine(fn, {p.name for p in fn.params}, block)
    assert (aff.get("%r3") == (1, 0, 0)) is identity
    assert "%r3" not in tid_affine(fn, {p.name for p in fn.params})  # block unknown: not affine


def test_triton_block_loop_runs_in_lockstep_with_the_block_known():
    """row_sum's column loop steps a uniform counter by 128 (`add.s32 %r161, %r161, 128`), not by %ntid:
    with the block shape known it gets a lockstep point (its kernel suspends anyway: shuffles), without
    it none."""
    fn = _row_sum()
    assert lockstep_loops(fn, _yields) is fn
    marked = lockstep_loops(fn, _yields, (128, 1, 1))
    assert sum(i.opcode == LOCKSTEP for i in marked.instructions) == 1
