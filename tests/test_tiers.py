"""Tiered, profile-guided re-optimization (ptxjit/tiers): guarded specializations, the mid-launch swap,
the re-optimization threshold, profile merging and the disk cache of tier-1 versions.  Every result is
checked against NumPy; a swapped launch is also compared bit for bit with a single-tier launch."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit import tiers
from ptxjit.tiers.policy import Policy
from ptxjit.tiers.profile import Candidate, Profile
from ptxjit.tiers.specialize import from_profile
from tests.tierutil import deterministic_tiers

ROOT = Path(__file__).resolve().parents[1]
PTX = ROOT / "bench" / "kernels" / "ptx"


@pytest.fixture(autouse=True)
def tiered(monkeypatch):
    """Deterministic tiers (a race only where a test asks for one; test_kernel_launched_once_builds_no_tier1
    for the default warm-up), without counted launches and their rebuild with branch weights
    (tests/test_tiers_counters.py): the builds and re-optimizations counted here are those of the constants."""
    yield from deterministic_tiers(monkeypatch, counted_launches=0)


def _kernel(name: str):
    return ptxjit.Module.from_file(PTX / f"{name}.ptx").get_function(name)


def _saxpy(k, a: float, x, y) -> np.ndarray:
    yy = y.copy()
    k((x.size + 255) // 256, 256, (x.size, a, x, yy), unchecked=True)
    return yy


def _stats(name: str) -> dict:
    return ptxjit.stats()[name]


def test_guard_failure_runs_generic_and_is_counted():
    k = _kernel("saxpy")
    rng = np.random.default_rng(1)
    x, y = rng.random(5000, dtype=np.float32), rng.random(5000, dtype=np.float32)
    for _ in range(2):  # the first launch's profile builds tier 1 for a = 2.5
        np.testing.assert_allclose(_saxpy(k, 2.5, x, y), np.float32(2.5) * x + y, rtol=1e-6)
    st = k.tier_states[((256, 1, 1), False)]
    assert st.t1 is not None and any(name.endswith("param_1") for name, _ in st.t1.spec.names)
    before = st.stats.guard_failures
    got = _saxpy(k, -7.0, x, y)  # breaks the a == 2.5 assumption: runs the generic version
    np.testing.assert_allclose(got, np.float32(-7.0) * x + y, rtol=1e-6)
    assert st.stats.guard_failures == before + 1
    assert st.stats.launches[0] >= 2  # the first launch and the refused one ran tier 0
    # a new size breaks the n and grid assumptions as well: still correct
    x2, y2 = x[:1234].copy(), y[:1234].copy()
    np.testing.assert_allclose(_saxpy(k, 2.5, x2, y2), np.float32(2.5) * x2 + y2, rtol=1e-6)


def _bitonic_args(n: int, seed: int = 2):
    src = np.random.default_rng(seed).integers(0, 2 ** 32, n, dtype=np.uint32)
    return src, np.zeros(n, np.uint32)


def test_mid_launch_swap_is_bit_identical(monkeypatch):
    n = 1 << 15  # 32 CTAs of 512 threads: batches of one CTA on two workers
    monkeypatch.setenv("PTXJIT_WORKERS", "2")
    # the single-tier reference: the untiered path
    src, ref = _bitonic_args(n)
    monkeypatch.setenv("PTXJIT_TIERS", "0")
    _kernel("bitonic")(n // 1024, 512, (src, ref), unchecked=True)
    np.testing.assert_array_equal(ref, np.sort(src.reshape(-1, 1024), axis=1).ravel())
    monkeypatch.setenv("PTXJIT_TIERS", "1")
    timeline: list = []
    tiers.HOOKS["timeline"] = timeline
    tiers.HOOKS["ready_after_batches"] = 1  # tier 1 becomes "ready" after the first batch
    k = _kernel("bitonic")
    dst = np.zeros_like(ref)
    k(n // 1024, 512, (src, dst), unchecked=True)
    np.testing.assert_array_equal(dst, ref)
    log = timeline[-1]
    used = [tier for _, tier, _, _ in sorted(log.batches, key=lambda r: r[2])]
    assert used[0] == 0 and used[-1] == 1 and log.swaps >= 1
    assert _stats(k.name)["swaps"] >= 1


def test_kernel_launched_once_builds_no_tier1(monkeypatch):
    """The default warm-up: no tier-1 build before a kernel's second launch (a short launch made once
    costs no O3 build, only tier 0's); a first launch long enough to run batched starts the build at once."""
    monkeypatch.setattr(tiers.POLICY, "warmup", tiers.Policy().warmup)
    monkeypatch.setenv("PTXJIT_WORKERS", "2")
    rng = np.random.default_rng(3)
    x, y = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
    k = _kernel("saxpy")
    np.testing.assert_allclose(_saxpy(k, 1.5, x, y), np.float32(1.5) * x + y, rtol=1e-6)  # 4 CTAs
    st = k.tier_states[((256, 1, 1), False)]
    assert st.t1 is None and st.building is None and st.plain is None
    assert [b["level"] for b in st.stats.builds] == [0]
    np.testing.assert_allclose(_saxpy(k, 1.5, x, y), np.float32(1.5) * x + y, rtol=1e-6)
    assert st.t1 is not None and 1 in [b["level"] for b in st.stats.builds]  # built at the second launch
    # a long first launch (2 workers x 16 batches: 32 CTAs and more) builds at once
    n = 256 * 64
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    k2 = _kernel("saxpy")
    np.testing.assert_allclose(_saxpy(k2, 0.5, x, y), np.float32(0.5) * x + y, rtol=1e-6)
    assert 1 in [b["level"] for b in k2.tier_states[((256, 1, 1), False)].stats.builds]


def test_tier1_waits_until_the_kernel_is_hot(monkeypatch):
    """The default policy (policy.py first_build): a kernel whose launches are short next to tier 0's
    build stays on tier 0 until its `hot_launches`th launch; one whose launches on tier 0 ran for
    `hot_run_ratio` times tier 0's build gets tier 1 at its next launch."""
    default = tiers.Policy()
    monkeypatch.setattr(tiers.POLICY, "warmup", default.warmup)
    monkeypatch.setattr(tiers.POLICY, "hot_run_ratio", default.hot_run_ratio)
    monkeypatch.setattr(tiers.POLICY, "hot_launches", 6)
    rng = np.random.default_rng(5)
    x, y = rng.random(512, dtype=np.float32), rng.random(512, dtype=np.float32)
    want = np.float32(2.5) * x + y
    k = _kernel("saxpy")
    for _ in range(5):
        np.testing.assert_allclose(_saxpy(k, 2.5, x, y), want, rtol=1e-6)
        st = k.tier_states[((256, 1, 1), False)]
        assert st.t1 is None and [b["level"] for b in st.stats.builds] == [0]
    assert st.t0_run_seconds < default.hot_run_ratio * st.t0.seconds  # (2 CTAs of 256 threads: short)
    np.testing.assert_allclose(_saxpy(k, 2.5, x, y), want, rtol=1e-6)
    assert st.t1 is not None  # the 6th launch
    k2 = _kernel("saxpy")
    np.testing.assert_allclose(_saxpy(k2, 2.5, x, y), want, rtol=1e-6)
    st2 = k2.tier_states[((256, 1, 1), False)]
    assert st2.t1 is None and st2.t0_run_seconds > 0
    # as hot as a kernel whose launch ran for half its build: the second launch builds
    monkeypatch.setattr(tiers.POLICY, "hot_run_ratio", 0.5 * st2.t0_run_seconds / st2.t0.seconds)
    np.testing.assert_allclose(_saxpy(k2, 2.5, x, y), want, rtol=1e-6)
    assert st2.t1 is not None


def test_swap_spare_worker_joins_with_tier1(monkeypatch):
    """While tier 1 builds a worker is left out; it joins (on tier 1's code and memory) at the swap."""
    n = 1 << 21  # 128 batches of 16 CTAs: the spare worker's thread starts long before the grid is done
    # (with 1 << 18 the rest of the grid took ~15 ms on tier 1: a loaded CI machine ran it before the
    # spare thread got a core)
    monkeypatch.setenv("PTXJIT_WORKERS", "2")
    timeline: list = []
    tiers.HOOKS.update(timeline=timeline, ready_after_batches=2, spare=True)
    k = _kernel("bitonic")
    src, dst = _bitonic_args(n, seed=7)
    k(n // 1024, 512, (src, dst), unchecked=True)
    np.testing.assert_array_equal(dst, np.sort(src.reshape(-1, 1024), axis=1).ravel())
    rows = timeline[-1].batches
    assert {w for w, tier, _, _ in rows if tier == 0} == {0}  # one worker until the swap
    assert any(w == 1 and tier == 1 for w, tier, _, _ in rows)  # the spare one joined on tier 1


def test_background_build_long_launch_correct(monkeypatch):
    """A real background build during a long first launch: right whatever the moment of the swap."""
    tiers.HOOKS["synchronous"] = False
    monkeypatch.setattr(tiers.POLICY, "min_batches_for_swap", 1)
    k = _kernel("scan")
    n = 1 << 18
    inp = np.random.default_rng(8).integers(0, 10, n, dtype=np.int32)
    out = np.zeros(n, np.int32)
    k(n // 512, 512, (inp, out), unchecked=True)
    np.testing.assert_array_equal(out, np.cumsum(inp.reshape(-1, 512), axis=1, dtype=np.int32).ravel())
    st = k.tier_states[((512, 1, 1), False)]
    th = st.building
    if th is not None:
        th.join(timeout=300)
    assert st.t1 is not None and not st.stats.errors
    out2 = np.zeros(n, np.int32)
    k(n // 512, 512, (inp, out2), unchecked=True)  # tier 1 now
    np.testing.assert_array_equal(out2, out)
    assert st.stats.launches[1] >= 1


def test_mid_launch_swap_floats_bit_identical(monkeypatch):
    """Transcendentals and constants folded in (r, v): still the same bits as one tier."""
    k_ref = _kernel("blackscholes")
    rng = np.random.default_rng(3)
    n = 128 * 24
    S, X, T = (rng.uniform(lo, hi, n).astype(np.float32) for lo, hi in ((5, 30), (1, 100), (0.25, 10)))
    outs = []
    for tiered_on in ("0", "1"):
        monkeypatch.setenv("PTXJIT_TIERS", tiered_on)
        tiers.HOOKS["ready_after_batches"] = 2 if tiered_on == "1" else None
        k = k_ref if tiered_on == "0" else _kernel("blackscholes")
        call, put = np.zeros(n, np.float32), np.zeros(n, np.float32)
        k(n // 128, 128, (call, put, S, X, T, 0.02, 0.30, n), unchecked=True)
        outs.append((call, put))
    np.testing.assert_array_equal(outs[0][0].view(np.uint32), outs[1][0].view(np.uint32))
    np.testing.assert_array_equal(outs[0][1].view(np.uint32), outs[1][1].view(np.uint32))
    # and right: the Black-Scholes call price from NumPy
    erf = np.vectorize(math.erf)

    def ndtr(v):
        return 0.5 * (1.0 + erf(v / math.sqrt(2.0)))

    s, x, t = (a.astype(np.float64) for a in (S, X, T))
    d1 = (np.log(s / x) + (0.02 + 0.045) * t) / (0.3 * np.sqrt(t))
    ref = s * ndtr(d1) - x * np.exp(-0.02 * t) * ndtr(d1 - 0.3 * np.sqrt(t))
    np.testing.assert_allclose(outs[1][0], ref, rtol=1e-3, atol=1e-3 * ref.max())


def test_no_reoptimization_while_stable_then_one_when_moved():
    k = _kernel("saxpy")
    rng = np.random.default_rng(4)
    x, y = rng.random(3000, dtype=np.float32), rng.random(3000, dtype=np.float32)
    for _ in range(30):
        np.testing.assert_allclose(_saxpy(k, 1.5, x, y), np.float32(1.5) * x + y, rtol=1e-6)
    s = _stats(k.name)
    assert s["reoptimizations"] == 0 and s["guard_failures"] == 0
    assert s["launches"][1] == 29
    for i in range(6):  # a now changes at every launch: guards keep failing, tier 1 is rebuilt without it
        a = 2.0 + i
        np.testing.assert_allclose(_saxpy(k, a, x, y), np.float32(a) * x + y, rtol=1e-6)
    s = _stats(k.name)
    assert s["reoptimizations"] == 1
    assert s["specializations"][-1] and not any(n.endswith("param_1") for n in s["specializations"][-1])
    for i in range(5):  # varying a no longer fails a guard
        a = 10.0 + i
        np.testing.assert_allclose(_saxpy(k, a, x, y), np.float32(a) * x + y, rtol=1e-6)
    assert _stats(k.name)["reoptimizations"] == 1
    for _ in range(140):  # a settles on one value: once a sampled window saw only it, tier 1 takes it again
        np.testing.assert_allclose(_saxpy(k, 9.0, x, y), np.float32(9.0) * x + y, rtol=1e-6)
    s = _stats(k.name)
    assert s["reoptimizations"] == 2 and s["guard_failures"] == 2
    assert any(n.endswith("param_1") and v == 9.0 for n, v in s["specializations"][-1].items())


def test_trial_keeps_the_faster_code_and_never_rebuilds_the_loser(monkeypatch):
    monkeypatch.setattr(tiers.POLICY, "trial_launches", 2)
    monkeypatch.setattr(tiers.POLICY, "trial_margin", 0.0)  # the specialized code always "loses"
    k = _kernel("saxpy")
    rng = np.random.default_rng(6)
    x, y = rng.random(4096, dtype=np.float32), rng.random(4096, dtype=np.float32)
    for _ in range(30):  # tier 0, then the race (alternating), then the plain code; each one right
        np.testing.assert_allclose(_saxpy(k, 4.5, x, y), np.float32(4.5) * x + y, rtol=1e-6)
    s = _stats(k.name)
    assert len(s["trials"]) == 1 and s["trials"][0]["kept"] == "plain"
    st = k.tier_states[((256, 1, 1), False)]
    assert st.t1.spec.params == () and st.t1.spec.grid is None and st.t1.tr is st.plain
    assert s["reoptimizations"] == 0  # the settled parameters' specialization lost: not built again
    assert s["launches"][1] == 29


def test_trial_keeps_the_specialized_code_when_it_wins(monkeypatch):
    monkeypatch.setattr(tiers.POLICY, "trial_launches", 2)
    monkeypatch.setattr(tiers.POLICY, "trial_margin", 1e9)  # the specialized code always "wins"
    k = _kernel("saxpy")
    rng = np.random.default_rng(9)
    x, y = rng.random(4096, dtype=np.float32), rng.random(4096, dtype=np.float32)
    for _ in range(10):
        np.testing.assert_allclose(_saxpy(k, 3.25, x, y), np.float32(3.25) * x + y, rtol=1e-6)
    s = _stats(k.name)
    assert len(s["trials"]) == 1 and s["trials"][0]["kept"] == "specialized"
    st = k.tier_states[((256, 1, 1), False)]
    assert st.t1.spec.params and st.t1.tr is not st.plain


def test_policy_threshold_unit():
    cands = (Candidate(0, "n", 0, 4, "u32"), Candidate(1, "a", 4, 4, "f32"))
    p = Profile()
    buf = np.array([100], np.uint32).tobytes() + np.array([2.5], np.float32).tobytes()
    for _ in range(10):
        p.record(cands, buf, ((4, 1, 1), (256, 1, 1), 0))
    spec = from_profile(p, cands)
    assert dict(spec.params) == {0: buf[:4], 4: buf[4:]} and spec.grid == (4, 1, 1)
    pol = Policy()
    assert pol.reoptimize(p, spec, 0, cands, 1) is None  # stable: nothing to do
    assert pol.reoptimize(p, spec, 1, cands, 1) is None  # one failure: below the threshold
    assert pol.reoptimize(p, spec, 2, cands, 1) is not None  # a guard keeps failing
    assert pol.reoptimize(p, spec, 5, cands, pol.max_versions) is None  # enough versions built
    # a parameter left out settles: the profile moved
    narrow = from_profile(p, cands, exclude=frozenset({4}))
    assert pol.reoptimize(p, narrow, 0, cands, 1) is not None


def test_profile_merge_from_several_threads():
    cands = (Candidate(0, "n", 0, 4, "u32"),)
    profs = [Profile() for _ in range(3)]

    def rec(p: Profile, v: int) -> None:
        for _ in range(5):
            p.record(cands, np.array([v], np.uint32).tobytes(), ((1, 1, 1), (32, 1, 1), 0))

    ths = [threading.Thread(target=rec, args=(p, v)) for p, v in zip(profs, (7, 7, 9), strict=True)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    m = profs[0].merge(profs[1])
    assert m.launches == 10 and m.invariant() == {0: np.array([7], np.uint32).tobytes()}
    m3 = m.merge(profs[2])
    assert m3.launches == 15 and m3.invariant() == {}  # 7 and 9: varying
    assert m3.values[0] == {np.array([7], np.uint32).tobytes(): 10, np.array([9], np.uint32).tobytes(): 5}
    assert m3.invariant_shape() == ((1, 1, 1), (32, 1, 1), 0)


def test_launching_threads_profiles_merge():
    k = _kernel("saxpy")
    rng = np.random.default_rng(5)
    x, y = rng.random(2048, dtype=np.float32), rng.random(2048, dtype=np.float32)
    _saxpy(k, 0.5, x, y)  # tier 0, tier 1 built from this thread's profile
    errors: list = []
    both = threading.Barrier(2, timeout=120)

    def launcher() -> None:
        try:
            for _ in range(3):
                np.testing.assert_allclose(_saxpy(k, 0.5, x, y), np.float32(0.5) * x + y, rtol=1e-6)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
        both.wait()  # alive until both launched: a finished thread's ident can be reused (flaked under load)

    ths = [threading.Thread(target=launcher) for _ in range(2)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert not errors
    st = k.tier_states[((256, 1, 1), False)]
    assert len(st.profiles) == 3  # one profile per launching thread
    merged = st.merged(st.profiles)
    assert merged.launches == 7 and any(v for v in merged.invariant().values())


_CHILD = """
import json, sys, numpy as np, ptxjit
from ptxjit import tiers
tiers.HOOKS["synchronous"] = True
tiers.POLICY.hot_run_ratio = 0.0  # hot at once: tier 1 at the second launch
k = ptxjit.Module.from_file(sys.argv[1]).get_function("saxpy")
x = np.arange(1000, dtype=np.float32); y = np.ones(1000, np.float32)
for _ in range(2):
    yy = y.copy()
    k(4, 256, (1000, 3.0, x, yy), unchecked=True)
    assert np.allclose(yy, 3.0 * x + 1.0)
print(json.dumps([b["from_disk"] for b in ptxjit.stats()["saxpy"]["builds"] if b["level"] == 1]))
"""


def test_disk_cache_gives_tier1_to_a_new_process(tmp_path):
    env = dict(os.environ, PTXJIT_CACHE_DIR=str(tmp_path / "cache"), PTXJIT_TIERS="1")
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", _CHILD, str(PTX / "saxpy.ptx")], env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert runs[0] == [False] and runs[1] == [True]


def test_tiers_off_leaves_launches_untouched(monkeypatch):
    k = _kernel("saxpy")
    x, y = np.arange(512, dtype=np.float32), np.ones(512, np.float32)
    monkeypatch.setenv("PTXJIT_TIERS", "0")
    for unchecked in (False, True):
        yy = y.copy()
        k(2, 256, (512, 2.0, x, yy), unchecked=unchecked)
        np.testing.assert_array_equal(yy, 2.0 * x + 1.0)
    assert not k.tier_states


def test_tiers_default_and_off(monkeypatch):
    monkeypatch.delenv("PTXJIT_TIERS", raising=False)
    assert tiers.enabled() is tiers.DEFAULT_ON
    monkeypatch.setenv("PTXJIT_TIERS", "0")
    assert not tiers.enabled()


def test_checked_launches_are_tiered_with_their_checks():
    """A bounds-checked launch (the default) runs tier 0 then tier 1, both with the bounds checks."""
    k = _kernel("saxpy")
    x, y = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    for _ in range(3):
        yy = y.copy()
        k(4, 256, (1000, 2.0, x, yy))
        np.testing.assert_array_equal(yy, 2.0 * x + 1.0)
    st = k.tier_states[((256, 1, 1), True)]
    assert st.t0.tr.checked and st.t1.tr.checked and st.plain.checked
    assert st.stats.launches == [1, 2]
    assert ((256, 1, 1), False) not in k.tier_states


def _global_access_lines(ptx: Path) -> set[int]:
    """The PTX lines that load or store global memory (where a fault in saxpy can be reported)."""
    lines = ptx.read_text().splitlines()
    return {i + 1 for i, t in enumerate(lines) if t.strip().startswith(("ld.global", "st.global"))}


def _saxpy_fault(k, n: int, grid: int, a: float = 2.0) -> ptxjit.KernelFault:
    """saxpy on x of n elements and y of n - 1: only thread n - 1 (global index) reaches past y."""
    x = np.arange(n, dtype=np.float32)
    yy = np.ones(n - 1, np.float32)
    with pytest.raises(ptxjit.KernelFault) as ei:
        k(grid, 256, (n, a, x, yy))
    e = ei.value
    assert e.kernel == "saxpy"
    assert e.cta == ((n - 1) // 256, 0, 0) and e.thread == ((n - 1) % 256, 0, 0)
    assert e.address == yy.ctypes.data + 4 * yy.size  # one element past y's end
    line = int(e.where.split("saxpy.ptx:")[1].split(":")[0])
    assert line in _global_access_lines(PTX / "saxpy.ptx")
    assert "saxpy_param_3" in str(e) and f"element [{n - 1}]" in str(e)
    return e


def test_out_of_bounds_faults_from_tier0_tier1_and_the_plain_code():
    k = _kernel("saxpy")
    st_key = ((256, 1, 1), True)
    _saxpy_fault(k, 1001, 4)  # the first launch: tier 0 (tier 1 is built from its profile)
    st = k.tier_states[st_key]
    assert st.stats.launches == [1, 0] and st.t1 is not None
    _saxpy_fault(k, 1001, 4)  # the same values: tier 1's specialized code
    assert st.stats.launches == [1, 1]
    _saxpy_fault(k, 1001, 4, a=3.0)  # a guard fails: the plain (unspecialized) O3 code
    assert st.stats.guard_failures == 1 and st.stats.launches == [2, 1]
    x, y = np.arange(1001, dtype=np.float32), np.ones(1001, np.float32)
    k(4, 256, (1001, 2.0, x, y))  # the kernel keeps working after its faults
    np.testing.assert_array_equal(y, 2.0 * x + 1.0)


@pytest.mark.parametrize("late", [False, True])
def test_out_of_bounds_fault_during_a_mid_launch_swap(monkeypatch, late):
    """A checked launch run in batches that moves from tier 0 to tier 1: a fault in an early CTA
    (tier 0's batch) or in the last CTA (after the swap) names the same block, thread, line, address."""
    monkeypatch.setenv("PTXJIT_WORKERS", "2")
    tiers.HOOKS["ready_after_batches"] = 1
    timeline: list = []
    tiers.HOOKS["timeline"] = timeline
    k = _kernel("saxpy")
    n = 64 * 256 if late else 100
    e = _saxpy_fault(k, n, 64)
    log = timeline[-1]
    ran = {tier for _, tier, _, _ in log.batches}
    # CTA 0 is in the first batch, which always runs tier 0; the last CTA's batch starts after the
    # first batch ended (many batches before it), when tier 1 is no longer hidden
    assert (1 in ran and log.swaps >= 1) if late else 0 in ran
    monkeypatch.setenv("PTXJIT_TIERS", "0")  # untiered checked code reports the same fault
    untiered = _saxpy_fault(_kernel("saxpy"), n, 64)
    assert re.sub("0x[0-9a-f]+", "ADDR", str(untiered)) == re.sub("0x[0-9a-f]+", "ADDR", str(e))


def test_cli_info_and_run_show_tiers(tmp_path):
    from click.testing import CliRunner

    from ptxjit.cli import main

    r = CliRunner().invoke(main, ["info", str(PTX / "saxpy.ptx")])
    assert r.exit_code == 0, r.output
    assert "tiers: on" in r.output and "saxpy_param_1 (.f32)" in r.output
    assert "saxpy_param_2" not in r.output.split("tiers:")[1]  # a pointer: never specialized
    xo, yo = tmp_path / "x.npy", tmp_path / "y.npy"
    r = CliRunner(env={"PTXJIT_UNCHECKED": "1"}).invoke(main, [
        "run", str(PTX / "saxpy.ptx"), "saxpy", "--grid", "4", "--block", "256", "--arg", "1000", "--arg", "2.0",
        "--arg", "rand:float32:1000", "--arg", "zeros:float32:1000", "--repeat", "3", "--out", f"2:{xo}",
        "--out", f"3:{yo}"])
    assert r.exit_code == 0, r.output
    assert "tiers saxpy: tier" in r.output and "launches per tier" in r.output
    x = np.load(xo)
    np.testing.assert_allclose(np.load(yo), 6 * x.astype(np.float64), rtol=1e-6)  # y += 2x, three times


@pytest.mark.parametrize("swap", [False, True])
def test_trap_in_tiered_launch_names_block_thread_and_line(monkeypatch, swap):
    """A trap in tier-0 or tier-1 code (a plain or a batched, swapping launch) raises KernelTrap with
    the right CTA, thread and source line, and the kernel keeps working."""
    if swap:
        monkeypatch.setenv("PTXJIT_WORKERS", "2")
        tiers.HOOKS["ready_after_batches"] = 1
    k = ptxjit.Module.from_file(ROOT / "tests" / "data" / "errors.ptx").get_function("trap_at")
    out = np.zeros(64 * 64, np.int32)
    k(64, 64, (out, 99, 0), unchecked=True)  # no trap: tier 0, and tier 1 built for (99, 0)
    assert (out == 1).all()
    for cta, tid in ((40, 17), (1, 3), (63, 63)):  # guards fail (new values): generic code traps
        with pytest.raises(ptxjit.KernelTrap) as ei:
            k(64, 64, (out, cta, tid), unchecked=True)
        e = ei.value
        assert e.kernel == "trap_at" and e.cta == (cta, 0, 0) and e.thread == (tid, 0, 0)
        assert "errors.cu:7:" in str(e)
    out[:] = 0
    k(64, 64, (out, 99, 0), unchecked=True)
    np.testing.assert_array_equal(out, np.ones_like(out))


def test_tier1_build_releases_the_module_lock_for_llvm(monkeypatch, tmp_path):
    """A background tier-1 build holds the module lock only while lowering reads the IR: through
    LLVM's optimization and code generation (seconds for big kernels) other launches need not wait."""
    from ptxjit.tiers import llvmproc

    monkeypatch.setenv("PTXJIT_CACHE_DIR", str(tmp_path / "cache"))  # built, not found on disk
    k = _kernel("saxpy")
    seen: list[tuple[int, bool]] = []
    real = llvmproc.optimize_to_object

    def spy(ir_text: str, opt_level: int = 3, name: str = "kernel") -> bytes:
        seen.append((opt_level, k.module._lock.locked()))
        return real(ir_text, opt_level, name)

    monkeypatch.setattr(llvmproc, "optimize_to_object", spy)
    x, y = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    k(4, 256, (1000, 2.0, x, y))
    np.testing.assert_array_equal(y, 2.0 * x + 1.0)
    assert seen == [(3, False), (3, False)]  # the specialized and the plain code, both unlocked


def test_child_process_llvm_gives_the_same_object_code():
    """Tier-1 builds optimize in a child process (llvmproc.py): the same bytes as in this process."""
    from ptxjit.jit import engine
    from ptxjit.lower.module import ModuleCodegen
    from ptxjit.tiers import llvmproc

    m = ptxjit.Module.from_file(PTX / "saxpy.ptx")
    f = m.get_function("saxpy").fn
    ir_text = str(ModuleCodegen(m.ir, f, m._glay, (256, 1, 1), checked=True).build())
    assert llvmproc.optimize_to_object(ir_text, 3, "saxpy") == engine.optimize_to_object(ir_text, 3, "saxpy")


_EXITING_CHILD = r"""
import sys, time
import numpy as np
import ptxjit
from ptxjit.tiers import state
state.POLICY.hot_run_ratio = 0.0  # hot at once: the second launch builds tier 1
k = ptxjit.Module.from_file(sys.argv[1]).get_function("bitonic")
src = np.arange(4096, dtype=np.uint32)[::-1].copy()
dst = np.zeros_like(src)
for _ in range(2):  # the second launch starts the tier-1 build (policy.py warmup, hot_run_ratio 0)
    k(4, 512, (src, dst))
assert (dst == np.sort(src.reshape(-1, 1024), axis=1).ravel()).all()
for _ in range(3000):  # until the background tier-1 build is inside LLVM, then exit at once
    if state._in_llvm:
        break
    time.sleep(0.005)
print("in-llvm" if state._in_llvm else "not-in-llvm", time.monotonic(), flush=True)
"""


def test_exit_while_tier1_builds_is_clean(tmp_path):
    """Exiting while a tier-1 build runs inside LLVM: no abort (LLVM torn down under a running build
    aborted the process: 'An asserting value handle still pointed to this value!'), and no build
    step starts after the exit began."""
    import time

    env = dict(os.environ, PTXJIT_CACHE_DIR=str(tmp_path / "cache"), PTXJIT_TIERS="1")
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", _EXITING_CHILD, str(PTX / "bitonic.ptx")], env=env,
                       capture_output=True, text=True, timeout=300)
    end = time.monotonic()
    assert r.returncode == 0, r.stderr
    state, t_exit = r.stdout.split()
    assert state == "in-llvm"
    assert end - float(t_exit) < 30  # one LLVM step (the specialized code's), not the plain code's too


def test_wgmma_kernels_get_block_specialized_tier0():
    """A wgmma kernel's generic code did not finish a launch (tests/test_breadth.py's wgmma forms hung
    for 300 s with tiers on): tier 0 is the block-specialized code for it, generic for plain kernels."""
    from ptxjit.tiers.state import _generic_ok

    wg = ptxjit.Module.from_file(ROOT / "tests" / "data" / "breadth" / "wgmma.mma_async.f16.ss.ptx")
    assert not _generic_ok(wg.get_function("k").fn)
    assert _generic_ok(_kernel("saxpy").fn)


def test_tier0_keeps_deadlock_and_spin_behaviour():
    """Kernels the generic code would run differently get block-specialized tier-0 code: a barrier
    waiting for more threads than the block has still raises KernelDeadlock at the first launch, and
    a thread spinning on a flag a later thread of its CTA sets still finishes."""
    mod = ptxjit.Module.from_file(ROOT / "tests" / "data" / "interrupts.ptx")
    out = np.zeros(64, np.int32)
    with pytest.raises(ptxjit.KernelDeadlock, match="128 threads but the block has only 64"):
        mod.get_function("bar_too_many")(1, 64, (out,))
    assert (out == 1).all()  # every thread reached the barrier; none went past it
    out = np.zeros(65, np.int32)
    flag, data = np.zeros(1, np.int32), np.zeros(1, np.int32)
    mod.get_function("intra_spin")(1, 64, (out, flag, data), timeout=30)
    assert out[0] == 43 and flag[0] == 1 and data[0] == 42
    np.testing.assert_array_equal(out[1:], np.arange(64) * 2)
    for name in ("bar_too_many", "intra_spin"):
        assert ptxjit.stats()[name]["builds"][0]["level"] == 0  # they ran tier 0


def test_stream_launches_run_tier1_once_built_and_fall_back_when_its_guard_fails():
    """A kernel launched only on a stream is profiled and gets tier 1; a stream launch that breaks tier
    1's assumptions runs the plain (untiered) code (results checked against NumPy after synchronizing)."""
    k = _kernel("saxpy")
    rng = np.random.default_rng(3)
    x, y = rng.random(5000, dtype=np.float32), rng.random(5000, dtype=np.float32)
    s = ptxjit.Stream()
    outs = [y.copy() for _ in range(6)]
    for yy in outs:
        k((x.size + 255) // 256, 256, (x.size, 2.5, x, yy), stream=s)
    s.synchronize()
    for yy in outs:
        np.testing.assert_allclose(yy, np.float32(2.5) * x + y, rtol=1e-6)
    st = k.tier_states[((256, 1, 1), True)]
    assert st.t1 is not None and st.t1.spec.params  # built from the stream launches' profile
    assert st.stats.launches[1] == 6 and st.stats.launches[0] == 0  # never tier 0's generic code
    t1_code = st.t1.tr
    assert st.for_stream((20, 1, 1), (256, 1, 1), *k._packer.pack((x.size, 2.5, x, y), True)[::2], 0) is t1_code
    before = st.stats.guard_failures
    y3 = y.copy()
    k((x.size + 255) // 256, 256, (x.size, -1.5, x, y3), stream=s)  # a = -1.5: the guard fails
    s.synchronize()
    np.testing.assert_allclose(y3, np.float32(-1.5) * x + y, rtol=1e-6, atol=1e-6)  # fma: one rounding
    assert st.stats.guard_failures == before + 1
