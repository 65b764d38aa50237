"""Unrolled lockstep loops (passes/unroll.py), tier 1's use of tier 0's trip counts: the unrolled code
runs each thread's instructions in the same order, so results equal NumPy's (bit for bit where the
order of float operations matters) for threads that run different numbers of iterations, skip
iterations and leave early, checked and unchecked; and tier 1 unrolls the loops its counters saw
iterate (tests/data/unroll.cu)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.frontend import ir
from ptxjit.instrument.trace import lowered_kernel
from ptxjit.passes.unroll import lockstep_heads, unroll_lockstep
from ptxjit.tiers.specialize import Specialization
from tests.tierutil import deterministic_tiers

PTX = Path(__file__).resolve().parent / "data" / "unroll.ptx"
# the loop tier 1 unrolls in the benchmark: a shared-memory histogram's grid-stride loop
HISTOGRAM = Path(__file__).resolve().parent.parent / "bench" / "kernels" / "ptx" / "histogram.ptx"


def _unrolled_kernel(name: str, block: int, factor: int, checked: bool, monkeypatch):
    """The kernel with every lockstep loop unrolled `factor` times: tier 1's code for that
    specialization, put where an untiered launch finds its translation."""
    monkeypatch.setenv("PTXJIT_TIERS", "0")
    k = ptxjit.Module.from_file(HISTOGRAM if name == "histogram" else PTX).get_function(name)
    b = (block, 1, 1)
    heads = lockstep_heads(lowered_kernel(k, b))
    assert heads, f"{name} has no lockstep loop"
    spec = Specialization((), None, unroll=tuple((h, factor) for h in sorted(heads)))
    k._tcache[(b, checked)] = k.module.translation(k.fn, b, checked, spec=spec)
    return k


@pytest.mark.parametrize("factor", [2, 3, 4])
@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("n, grid", [(100_003, 7), (256 * 7 * 8, 7), (300, 7), (0, 2), (5000, 1)])
def test_histogram_unrolled(monkeypatch, factor, checked, n, grid):
    k = _unrolled_kernel("histogram", 256, factor, checked, monkeypatch)
    data = np.random.default_rng(n).integers(0, 256, max(n, 1)).astype(np.uint8)
    hist = np.zeros(256, np.uint32)
    k(grid, 256, (data, hist, n), checked=checked)
    np.testing.assert_array_equal(hist, np.bincount(data[:n], minlength=256))


@pytest.mark.parametrize("factor", [2, 4])
@pytest.mark.parametrize("checked", [False, True])
@pytest.mark.parametrize("n, grid, key", [(20_000, 5, 3), (20_000, 5, 1000), (999, 3, 6), (100, 1, 2)])
def test_early_exit_and_skipped_iterations(monkeypatch, factor, checked, n, grid, key):
    k = _unrolled_kernel("find_first", 128, factor, checked, monkeypatch)
    rng = np.random.default_rng(n + key)
    x = rng.integers(-4, 12, n).astype(np.int32)
    threads = grid * 128
    first = np.full(threads, 77, np.int32)
    total = np.full(threads, 77, np.int32)
    k(grid, 128, (x, first, total, n, key), checked=checked)
    for t in range(threads):
        f, s = -1, 0
        for i in range(t, n, threads):
            v = int(x[i])
            if v < 0:
                continue
            s += v & 7
            if v == key:
                f = i
                break
        assert (first[t], total[t]) == (f, s), f"thread {t}"


@pytest.mark.parametrize("factor", [2, 4])
@pytest.mark.parametrize("cols", [1000, 128 * 6, 77, 3])
def test_float_order_is_kept(monkeypatch, factor, cols):
    """acc = acc * 0.5 + x: any change of the per-thread order would change the bits."""
    k = _unrolled_kernel("row_sums", 128, factor, True, monkeypatch)
    rows = 6
    a = np.random.default_rng(cols).standard_normal((rows, cols)).astype(np.float32)
    out = np.zeros(rows, np.float32)
    k(rows, 128, (a, out, cols))
    want = np.zeros(rows, np.float32)
    for r in range(rows):
        acc = np.zeros(128, np.float32)
        for c0 in range(0, cols, 128):
            seg = a[r, c0:c0 + 128]
            acc[:seg.size] = acc[:seg.size] * np.float32(0.5) + seg
        s = acc.copy()
        k2 = 64
        while k2 > 0:
            s[:k2] += s[k2:2 * k2]
            k2 //= 2
        want[r] = s[0]
    np.testing.assert_array_equal(out, want)


def test_unrolled_body_has_the_copies_and_one_lockstep_point():
    k = ptxjit.Module.from_file(PTX).get_function("find_first")
    fn = lowered_kernel(k, (128, 1, 1))
    (head,) = lockstep_heads(fn)
    new, origin = unroll_lockstep(fn, {head: 4})
    labels = [s.name for s in new.body if isinstance(s, ir.Label)]
    assert {f"{head}$u1", f"{head}$u2", f"{head}$u3"} <= set(labels)
    assert sum(getattr(s, "opcode", "") == "lockstep" for s in new.body) == 1
    n_loop = sum(1 for s in fn.body if getattr(s, "opcode", "") == "ld")
    assert sum(1 for s in new.body if getattr(s, "opcode", "") == "ld") == n_loop + 3  # the loop has one load
    assert origin and all(id(o) != i for i, o in origin.items())
    assert unroll_lockstep(fn, {"no_such_label": 4})[0] is fn


@pytest.fixture
def tiered(monkeypatch):
    yield from deterministic_tiers(monkeypatch, counted_launches=1)


def test_tier1_unrolls_the_loops_its_counters_saw_iterate(tiered):
    k = ptxjit.Module.from_file(HISTOGRAM).get_function("histogram")
    n, grid = 256 * 4 * 40, 4  # 40 iterations per thread
    data = np.random.default_rng(5).integers(0, 256, n).astype(np.uint8)
    want = np.bincount(data, minlength=256)
    for _ in range(4):
        hist = np.zeros(256, np.uint32)
        k(grid, 256, (data, hist, n))
        np.testing.assert_array_equal(hist, want)
    st = k.tier_states[((256, 1, 1), True)]
    assert st.t1.spec.unroll == tuple((h, 4) for h in sorted(lockstep_heads(lowered_kernel(k, (256, 1, 1)))))
    builds = [b for b in ptxjit.stats()["histogram"]["builds"] if "unrolled_loops" in b.get("spec", {})]
    assert builds and "unrolled lockstep loops" in builds[0]["reason"]


def test_tier1_leaves_short_loops_alone(tiered):
    k = ptxjit.Module.from_file(HISTOGRAM).get_function("histogram")
    n, grid = 256 * 4 * 3, 4  # 3 iterations per thread: fewer than Policy.unroll_min_trips
    data = np.random.default_rng(6).integers(0, 256, n).astype(np.uint8)
    for _ in range(4):
        hist = np.zeros(256, np.uint32)
        k(grid, 256, (data, hist, n))
        np.testing.assert_array_equal(hist, np.bincount(data, minlength=256))
    st = k.tier_states[((256, 1, 1), True)]
    assert st.t1.spec.weights and not st.t1.spec.unroll


def test_a_lost_race_retries_without_the_unrolled_loops(tiered):
    """When the version with unrolled loops loses its race against the plain code (dot's unrolled
    copies are slower), the same version without them is built and raced next."""
    k = ptxjit.Module.from_file(HISTOGRAM).get_function("histogram")
    n, grid = 256 * 4 * 40, 4
    data = np.random.default_rng(7).integers(0, 256, n).astype(np.uint8)
    for _ in range(4):
        hist = np.zeros(256, np.uint32)
        k(grid, 256, (data, hist, n))
    st = k.tier_states[((256, 1, 1), True)]
    lost = st.t1
    assert lost.spec.unroll and st.plain is not None
    st._end_trial(lost, ([2.0], [1.0]))  # the unrolled version twice as slow as the plain code
    assert lost.spec.key in st.rejected
    assert st.t1.spec.unroll == () and st.t1.spec.weights == lost.spec.weights
    assert "without unrolled loops" in st.stats.builds[-1]["reason"]
    hist = np.zeros(256, np.uint32)
    k(grid, 256, (data, hist, n))
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=256))
