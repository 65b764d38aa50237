"""Tier 0's execution counters (ptxjit/tiers/counters.py) and tier 1's use of them: block counts, edge and
trip counts against hand-computed ones (tests/data/tiers_branchy.cu: every count follows from x and n),
the rebuild with branch weights (once, then stable), guard failures of a weighted version, and counters
merged from several launching threads.  Results are checked against NumPy."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit import tiers
from ptxjit.tiers import counters
from ptxjit.tiers.profile import Profile
from ptxjit.tiers.specialize import Specialization
from tests.tierutil import deterministic_tiers

PTX = Path(__file__).resolve().parent / "data" / "tiers_branchy.ptx"
N, GRID, BLOCK = 1000, 4, 256  # 1024 threads, 24 of them past n
THREADS = GRID * BLOCK


@pytest.fixture(autouse=True)
def tiered(monkeypatch):
    yield from deterministic_tiers(monkeypatch, counted_launches=1)


def _kernel():
    return ptxjit.Module.from_file(PTX).get_function("branchy")


def _inputs(seed: int = 0, n: int = N) -> np.ndarray:
    return np.random.default_rng(seed).integers(-3, 9, n).astype(np.int32)


def _reference(x: np.ndarray) -> np.ndarray:
    """y[:n] as branchy computes it (acc = v*v + 7 when v > 3, then acc += k ^ v for k < v)."""
    out = np.where(x > 3, x * x + 7, 0).astype(np.int64)
    for i, v in enumerate(x):
        out[i] += sum(k ^ int(v) for k in range(int(v)))
    return out.astype(np.int32)


def _launch(k, x: np.ndarray, grid: int = GRID) -> np.ndarray:
    n = x.size
    y = np.zeros(2 * n, np.int32)
    k(grid, BLOCK, (x, y, n))
    np.testing.assert_array_equal(y[:n], _reference(x))
    np.testing.assert_array_equal(y[n:], np.where(x > 3, 1, 2))
    return y


def _state(k):
    return k.tier_states[((BLOCK, 1, 1), True)]


def _line_of(text: str) -> int:
    """The PTX line of the first instruction containing `text` (1-based, as sites report)."""
    for i, line in enumerate(PTX.read_text().splitlines(), 1):
        if text in line and not line.lstrip().startswith("//"):
            return i
    raise AssertionError(text)


def _expected(x: np.ndarray) -> dict[str, int]:
    pos = np.maximum(x, 0)
    return {"threads": THREADS, "in_bounds": x.size, "loop_entries": int((x >= 1).sum()),
            "loop_skips": int((x < 1).sum()), "iterations": int(pos.sum())}


def test_block_and_edge_counts_are_hand_computed():
    k = _kernel()
    x = _inputs()
    for _ in range(3):  # tier 0 (profile), tier 1 built, then a counted launch
        _launch(k, x)
    st = _state(k)
    assert st.stats.counted == 1
    e = _expected(x)
    prof = st.merged(st.profiles)
    assert prof.counted == 1 and prof.threads == THREADS
    got = {site.line: n for site, n in zip(st.count_spec.plan.blocks, prof.blocks, strict=True)}
    assert got == {
        _line_of("ld.param.u64"): e["threads"],  # the entry block: every thread
        _line_of("cvta.to.global.u64 \t%rd5"): e["in_bounds"],  # past the bounds guard
        _line_of("mov.u32 \t%r18, 0"): e["loop_entries"],  # the loop's preheader
        _line_of("xor.b32"): e["iterations"],  # the loop body, once per iteration
        _line_of("shl.b64"): e["in_bounds"],  # after the loop
        _line_of("ret;"): e["threads"],
    }
    s = ptxjit.stats()["branchy"]
    assert s["counted_launches"] == 1
    branches = {b["line"]: (b["taken"], b["fallthrough"], b["back_edge"]) for b in s["branches"]}
    assert branches == {
        _line_of("@%p1 bra"): (e["threads"] - e["in_bounds"], e["in_bounds"], False),
        _line_of("@%p3 bra"): (e["loop_skips"], e["loop_entries"], False),
        _line_of("@%p4 bra"): (e["iterations"] - e["loop_entries"], e["loop_entries"], True),
    }
    assert s["loops"] == [{"line": _line_of("xor.b32"), "entries": e["loop_entries"],
                           "iterations": e["iterations"], "trips": round(e["iterations"] / e["loop_entries"], 3),
                           "block": (BLOCK, 1, 1)}]


def test_weighted_rebuild_once_then_stable():
    """The counted launch triggers one rebuild with branch weights; a stable profile rebuilds no more."""
    k = _kernel()
    x = _inputs(1)
    for _ in range(40):
        _launch(k, x)
    st = _state(k)
    reasons = [b.get("reason") for b in st.stats.builds if b.get("level") == 1]
    assert reasons == ["first profile", "branch weights from the block counters"]
    assert st.t1 is not None and len(st.t1.spec.weights) == 3
    # the weights are the edge counts' parts per thousand (the bounds guard: 24 of 1024 taken)
    w = {stmt: (t, f) for _, stmt, t, f in st.t1.spec.weights}
    assert (round(1000 * 24 / 1024), round(1000 * 1000 / 1024)) in w.values()
    assert st.stats.counted == 1 and st.stats.guard_failures == 0


def test_weighted_version_guard_failure_is_correct_and_counted():
    k = _kernel()
    x = _inputs(2)
    for _ in range(3):
        _launch(k, x)
    st = _state(k)
    assert st.t1.spec.weights and st.t1.spec.params  # n = 1000 folded in, with the weights
    before = st.stats.guard_failures
    x2 = _inputs(3, 700)  # another n and grid: the weighted version's constants do not hold
    _launch(k, x2, grid=3)
    assert st.stats.guard_failures == before + 1
    _launch(k, x)  # and the weighted version again, still right
    assert st.stats.guard_failures == before + 1


def test_weights_reach_the_ir():
    """A branch weight in the specialization becomes `!prof` metadata on that branch's LLVM branch."""
    from ptxjit.instrument.trace import lowered_kernel
    from ptxjit.lower.module import ModuleCodegen

    k = _kernel()
    fn = lowered_kernel(k, (BLOCK, 1, 1))
    stmt = next(i for i, s in enumerate(fn.body) if getattr(s, "opcode", "") == "bra" and s.guard is not None)
    spec = Specialization((), None, (), (("branchy", stmt, 3, 997),))
    m = k.module
    text = str(ModuleCodegen(m.ir, k.fn, m._glay, (BLOCK, 1, 1), spec=spec).build())
    assert '!"branch_weights", i32 3, i32 997' in text
    plain = str(ModuleCodegen(m.ir, k.fn, m._glay, (BLOCK, 1, 1)).build())
    assert "branch_weights\", i32 3" not in plain


def test_counters_merge_across_launching_threads(monkeypatch):
    """Two threads each run a counted launch: the kernel's profile holds both threads' counts summed."""
    monkeypatch.setattr(tiers.POLICY, "counted_launches", 3)
    k = _kernel()
    x = _inputs(4)
    _launch(k, x)
    _launch(k, x)  # tier 1 and the counting code are built
    st = _state(k)
    errors: list[BaseException] = []

    release = threading.Event()

    def worker(done: threading.Event) -> None:
        try:
            _launch(k, x)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
        done.set()
        release.wait(60)  # alive until both launched: a finished thread's ident can be reused

    threads = []
    for _ in range(2):  # one after the other: each launching thread records into its own profile
        done = threading.Event()
        threads.append(threading.Thread(target=worker, args=(done,)))
        threads[-1].start()
        assert done.wait(120)
    release.set()
    for th in threads:
        th.join()
    assert not errors
    assert st.stats.counted == 3
    per_thread = [p for p in st.profiles.values() if p.counted]
    assert len(per_thread) == 3 and all(p.counted == 1 for p in per_thread)
    e = _expected(x)
    merged = st.merged(st.profiles)
    assert merged.counted == 3 and merged.threads == 3 * THREADS
    loop_body = next(i for i, s in enumerate(st.count_spec.plan.blocks) if s.line == _line_of("xor.b32"))
    assert merged.blocks[loop_body] == 3 * e["iterations"]


def test_profile_merge_of_counts():
    a, b = Profile(), Profile()
    a.record_counts([5, 2, 0], 5)
    b.record_counts([7, 1, 3], 7)
    b.record_counts([1, 1, 1], 1)
    m = a.merge(b)
    assert (m.counted, m.threads, m.blocks) == (3, 13, (13, 4, 4))
    assert Profile().merge(a).blocks == (5, 2, 0) and a.merge(Profile()).blocks == (5, 2, 0)


def test_weights_quantized():
    br = [counters.Branch("f", 3, 1, 0, 50, False), counters.Branch("f", 9, 2, 1, 2, True),
          counters.Branch("f", 11, 3, 0, 0, False)]
    assert counters.weights(br) == (("f", 3, 1, 1000), ("f", 9, 333, 667))


def test_recount_rebuilds_only_when_a_branch_bias_moves(monkeypatch):
    """Every recount_every launches one launch is counted again: a stable profile rebuilds nothing; when
    the loop-skipping branch goes from a third of the values to none, tier 1 is rebuilt with the new
    weights (and the results stay right: _launch checks them against NumPy)."""
    monkeypatch.setattr(tiers.POLICY, "recount_every", 16)
    k = _kernel()
    x = _inputs(8)  # a third of the values skip the loop (v < 1)
    for _ in range(40):  # launch 1 counted (weights), 16 and 32 recounted: stable
        _launch(k, x)
    st = _state(k)
    assert st.stats.counted == 3 and st.stats.recounts_moved == 0
    first = st.t1.spec.weights
    assert first and [b.get("reason") for b in st.stats.builds if b.get("level") == 1] == [
        "first profile", "branch weights from the block counters"]
    x2 = np.random.default_rng(9).integers(4, 9, N).astype(np.int32)  # none skips the loop now
    for _ in range(9):  # launch 48 is the next recount
        _launch(k, x2)
    assert st.stats.counted == 4 and st.stats.recounts_moved == 1
    reason = st.stats.builds[-1]["reason"]
    assert f"line {_line_of('@%p3 bra')} moved from" in reason and "to 0% taken" in reason, reason
    assert st.t1.spec.weights != first
    assert ptxjit.stats()["branchy"]["recounts_moved"] == 1
    for _ in range(17):  # the next recount (64) sees the same profile again: no rebuild
        _launch(k, x2)
    assert st.stats.counted == 5 and st.stats.recounts_moved == 1


def test_moved_compares_fractions_and_unrolled_loops():
    w = (("k", 5, 300, 700), ("k", 9, 990, 10))
    br = [counters.Branch("k", 5, 12, 30, 70, False), counters.Branch("k", 9, 20, 99, 1, True)]
    assert counters.moved((w, ()), (w, ()), br, [], 0.25) is None
    near = (("k", 5, 500, 500), ("k", 9, 990, 10))  # 30% -> 50%: under the threshold
    assert counters.moved((w, ()), (near, ()), br, [], 0.25) is None
    far = (("k", 5, 600, 400), ("k", 9, 990, 10))
    assert "line 12 moved from 30% to 60% taken" in counters.moved((w, ()), (far, ()), br, [], 0.25)
    new_only = (("k", 7, 1, 999),)  # a branch that did not run before is no move
    assert counters.moved((w, ()), (new_only, ()), br, [], 0.25) is None
    loops = [counters.Loop("k", 20, 10, 400, "$L2")]
    why = counters.moved((w, ()), (w, (("$L2", 4),)), br, loops, 0.25)
    assert why.startswith("loops to unroll changed: $L2 (40.0 trips)")
