"""Framework-style layer kernels (bench/kernels/{batchnorm,maxpool,im2col,nchw_to_nhwc}.cu, nvcc) under
tier 1: their tensor sizes are launch arguments, which tier 1 folds into constants; its bounds checks
then bound `(i / plane) % channels` by its value range (passes/ranges.py, lower/safety/ranges.py offset_range)
instead of checking every thread.  Results against NumPy, bit for bit; out-of-bounds accesses still
fault from every tier; a launch with other sizes fails the guard and is still right."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.passes.ranges import value_ranges

try:
    from numba import cuda
except ImportError:  # pragma: no cover - numba-cuda is an optional extra (the test command installs it)
    cuda = None
from tests.launch_modes import CORPUS_TESTS, run_suite
from tests.tierutil import deterministic_tiers

PTX = Path(__file__).resolve().parents[1] / "bench" / "kernels" / "ptx"


@pytest.fixture(autouse=True)
def tiered(monkeypatch):
    yield from deterministic_tiers(monkeypatch, counted_launches=0)


def _kernel(name: str):
    return ptxjit.Module.from_file(PTX / f"{name}.ptx").get_function(name)


def _tier1_runs(k, block=(256, 1, 1)) -> bool:
    st = k.tier_states[(block, True)]
    return st.t1 is not None and bool(st.t1.spec.params)


def _batchnorm(k, x, scale, shift):
    y = np.full_like(x, np.nan)
    n, c, h, w = x.shape
    k((x.size + 255) // 256, 256, (x, scale, shift, y, x.size, c, h * w))
    return y


def _batchnorm_ref(x, scale, shift):
    """fma in float64 (exact for float32 operands), rounded once: nvcc contracts x * s + b into an fma."""
    x64 = x.astype(np.float64)
    return np.maximum((x64 * scale[:, None, None] + shift[:, None, None]).astype(np.float32), 0)


def test_batchnorm_tier1_specializes_the_sizes_and_matches_numpy():
    k = _kernel("batchnorm")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 40, 7, 9), dtype=np.float32)
    scale, shift = rng.uniform(0.5, 2, 40).astype(np.float32), rng.uniform(-1, 1, 40).astype(np.float32)
    want = _batchnorm_ref(x, scale, shift)
    for _ in range(3):  # tier 0, then tier 1 with channels = 40, plane = 63 as constants
        np.testing.assert_array_equal(_batchnorm(k, x, scale, shift), want)
    assert _tier1_runs(k)
    names = dict(k.tier_states[((256, 1, 1), True)].t1.spec.names)
    assert names["batchnorm_param_5"] == 40 and names["batchnorm_param_6"] == 63
    # other sizes: the guard fails, the plain code runs them, right
    x2 = rng.standard_normal((2, 24, 5, 5), dtype=np.float32)
    np.testing.assert_array_equal(_batchnorm(k, x2, scale[:24], shift[:24]), _batchnorm_ref(x2, scale[:24],
                                                                                             shift[:24]))
    assert k.tier_states[((256, 1, 1), True)].stats.guard_failures >= 1


def test_batchnorm_short_scale_faults_from_tier0_and_tier1():
    """scale holds 32 of the 64 channels: channel 32's first element is i = 32 * plane.  The ranged
    precheck of tier 1 ([scale, scale + 4 * 63]) fails, the checked copy faults where it happens."""
    k = _kernel("batchnorm")
    rng = np.random.default_rng(4)
    plane = 16
    x = rng.standard_normal((2, 64, 4, 4), dtype=np.float32)
    scale, shift = np.ones(32, np.float32), np.zeros(64, np.float32)
    for launch in range(3):
        y = np.zeros_like(x)
        with pytest.raises(ptxjit.KernelFault) as ei:
            k((x.size + 255) // 256, 256, (x, scale, shift, y, x.size, 64, plane))
        e = ei.value
        assert "batchnorm_param_1" in str(e)
        assert scale.ctypes.data + scale.nbytes <= e.address < scale.ctypes.data + 2 * scale.nbytes
        i = e.cta[0] * 256 + e.thread[0]
        assert (i // plane) % 64 >= 32, (launch, i)  # a thread whose channel is past scale's end
    assert _tier1_runs(k)


def test_maxpool_im2col_and_layout_change_under_tier1():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 10, 14), dtype=np.float32)
    k = _kernel("maxpool")
    want = x.reshape(2, 6, 5, 2, 7, 2).max(axis=(3, 5))
    for _ in range(3):
        y = np.zeros((2, 6, 5, 7), np.float32)
        k((y.size + 255) // 256, 256, (x, y, y.size, 10, 14))
        np.testing.assert_array_equal(y, want)
    assert _tier1_runs(k)

    k = _kernel("nchw_to_nhwc")
    for _ in range(3):
        y = np.zeros((2, 10, 14, 6), np.float32)
        k((x.size + 255) // 256, 256, (x, y, x.size, 6, 140))
        np.testing.assert_array_equal(y, x.transpose(0, 2, 3, 1))
    assert _tier1_runs(k)

    k = _kernel("im2col")
    img = x[0]
    padded = np.pad(img, ((0, 0), (1, 1), (1, 1)))
    want = np.stack([padded[:, ky:ky + 10, kx:kx + 14] for ky in range(3) for kx in range(3)], axis=1)
    for _ in range(3):
        col = np.zeros((6 * 9, 140), np.float32)
        k((6 * 140 + 255) // 256, 256, (img, col, 6, 10, 14, 3, 1, 1, 10, 14))
        np.testing.assert_array_equal(col, want.reshape(54, 140))
    assert _tier1_runs(k)


def test_ranges_of_divisions_by_tier1_constants():
    """batchnorm's `c = (i / plane) % channels` with tier 1's constants (grid, channels, plane): the
    channel's range is [0, channels - 1]; without them, no range (the sizes could be anything)."""
    fn = _kernel("batchnorm").fn
    consts = {"batchnorm_param_4": 40 * 63 * 3, "batchnorm_param_5": 40, "batchnorm_param_6": 63}
    grid = ((40 * 63 * 3 + 255) // 256, 1, 1)
    r = value_ranges(fn, lambda n: None, (256, 1, 1), grid, lambda name, off, size: consts.get(name))
    assert r["%r2"] == (40, 40) and r["%r3"] == (63, 63)  # ld.param: written before read, no initial 0
    assert r["%r1"] == (0, grid[0] * 256 - 1)  # ctaid * ntid + tid over the grid
    assert r["%r8"] == (0, (grid[0] * 256 - 1) // 63)  # i / plane
    assert r["%r9"] == (0, 39)  # (i / plane) % channels
    assert r["%rd9"] == (0, 4 * 39)  # the byte offset into scale and shift
    plain = value_ranges(fn, lambda n: None, (256, 1, 1))
    assert "%r9" not in plain and "%r1" not in plain


def test_ranges_of_a_remainder_computed_as_a_minus_its_floor_multiple():
    """nvcc's `i % c` after `i / c`: i - (i / c) * c is in [0, c - 1] (nchw_to_nhwc's channel)."""
    fn = _kernel("nchw_to_nhwc").fn
    consts = {"nchw_to_nhwc_param_2": 6 * 140 * 2, "nchw_to_nhwc_param_3": 6, "nchw_to_nhwc_param_4": 140}
    r = value_ranges(fn, lambda n: None, (256, 1, 1), (7, 1, 1), lambda name, off, size: consts.get(name))
    assert r["%r13"] == (0, 5)
    # with the grid unknown, i = ctaid * ntid + tid may pass the sign bit: nothing below it has a range
    r = value_ranges(fn, lambda n: None, (256, 1, 1), None, lambda name, off, size: consts.get(name))
    assert "%r13" not in r and "%r9" not in r


def _numba_batchnorm(x, scale, shift, y, channels, plane):
    """The batchnorm layer as a Numba user writes it (int64 indices, Python's floor division)."""
    i = cuda.grid(1)
    if i < x.size:
        c = (i // plane) % channels
        y[i] = max(x[i] * scale[c] + shift[c], np.float32(0.0))


def test_numba_batchnorm_under_tier1():
    """Numba's PTX of the same layer (the sizes are int64 launch arguments, the array shapes and strides
    too): right under tier 1 for the sizes it specialized and, after a guard failure, for others."""
    if cuda is None:
        pytest.skip("numba-cuda not installed")
    import ptxjit.numba as pn

    k = pn.jit(_numba_batchnorm)
    rng = np.random.default_rng(6)
    for n, c, plane in ((3, 40, 63), (3, 40, 63), (3, 40, 63), (2, 24, 25)):
        x = rng.standard_normal(n * c * plane, dtype=np.float32)
        scale, shift = rng.uniform(0.5, 2, c).astype(np.float32), rng.uniform(-1, 1, c).astype(np.float32)
        y = np.full_like(x, np.nan)
        k[(x.size + 255) // 256, 256](x, scale, shift, y, c, plane)
        want = _batchnorm_ref(x.reshape(n, c, plane, 1), scale, shift).ravel()
        np.testing.assert_array_equal(y, want)
    st = next(s for name, s in ptxjit.stats().items() if "_numba_batchnorm" in name)
    assert st["tier"] == 1 and st["guard_failures"] >= 1


def test_batchnorm_with_alternating_batch_sizes_keeps_the_layer_sizes():
    """A framework alternating two batch sizes: the total and the grid keep changing, channels and plane
    do not.  The guard failures make tier 1 drop the moving values (policy.py) and keep the constant
    sizes, whose divisions stay multiplications; every launch right."""
    k = _kernel("batchnorm")
    rng = np.random.default_rng(7)
    scale, shift = rng.uniform(0.5, 2, 24).astype(np.float32), rng.uniform(-1, 1, 24).astype(np.float32)
    xs = [rng.standard_normal((n, 24, 5, 7), dtype=np.float32) for n in (3, 5)]
    wants = [_batchnorm_ref(x, scale, shift) for x in xs]
    for launch in range(24):
        np.testing.assert_array_equal(_batchnorm(k, xs[launch % 2], scale, shift), wants[launch % 2])
    st = k.tier_states[((256, 1, 1), True)]
    names = dict(st.t1.spec.names)
    assert names == {"batchnorm_param_5": 24, "batchnorm_param_6": 35}, names
    assert st.t1.spec.grid is None and st.stats.guard_failures >= 2


@pytest.mark.mode_matrix
def test_corpus_and_fault_tests_pass_with_every_launch_specialized(tmp_path):
    """The real-kernel corpus, the memory-safety and the range tests with every launch on a tier-1 version
    specialized on its own scalar parameters and grid (the `tier1` launch mode, tests/launch_modes.py):
    their NumPy checks and expected faults show that the constants, and the bounds checks that rely on
    them, change no result and miss no fault (nvcc kernels with device functions, atomics, barriers,
    shuffles)."""
    log = tmp_path / "specialized.txt"
    run_suite("tier1", [*CORPUS_TESTS, "tests/test_memory_safety.py", "tests/test_ranges.py"],
              env={"PTXJIT_TIERS": "1", "PTXJIT_TEST_TIER1_LOG": str(log)})
    runs = [line.split(" ", 2) for line in log.read_text().splitlines()]
    assert len(runs) > 200 and len({name for name, *_ in runs}) > 80  # (launches, kernels) specialized
    assert sum(int(n) > 0 for _, n, _ in runs) > 100  # with scalar parameters folded in
