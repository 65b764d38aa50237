"""Long runs of tiered kernels: the counting launches (the first count and the periodic recounts,
Policy.recount_every) of kernels without a single counter site for the sampled CTAs' patterns
(tests/data/tiers_nomem.cu: no memory access outside the parameter space, no conditional branch),
checked and unchecked, synchronously, on a stream and from several threads.  The recount period is
shortened so that the recounts of thousands of launches come within a hundred."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import ptxjit
from ptxjit import tiers
from ptxjit.instrument import patterns
from ptxjit.tiers import counters
from tests.tierutil import deterministic_tiers

PTX = Path(__file__).resolve().parent / "data" / "tiers_nomem.ptx"
RECOUNT = 16
LAUNCHES = 100
BLOCK = 64
KERNELS = {"nothing": (), "params_only": (6, 7)}


@pytest.fixture(autouse=True)
def tiered(monkeypatch):
    monkeypatch.setattr(tiers.POLICY, "recount_every", RECOUNT)
    yield from deterministic_tiers(monkeypatch, counted_launches=1)


def _expected_counted(launches: int) -> int:
    """Counted launches by the policy's rules (policy.py): the first sampled launch once the counting
    code exists (launch 1: tier 1 and the counters are built at launch 0, synchronously), then every
    sampled launch whose index is a multiple of the recount period."""
    return 1 + sum(1 for n in range(2, launches) if n % RECOUNT == 0 and n % tiers.POLICY.sample_every == 0)


@pytest.mark.parametrize(("name", "checked"), [("nothing", True), ("params_only", False)])
def test_counted_and_recounted_without_sites(name, checked):
    k = ptxjit.Module.from_file(PTX).get_function(name)
    for _ in range(LAUNCHES):
        k(3, BLOCK, KERNELS[name], checked=checked)
    st = k.tier_states[((BLOCK, 1, 1), checked)]
    assert st.stats.errors == []
    assert st.stats.counted == _expected_counted(LAUNCHES) and st.stats.recounts_moved == 0
    assert sum(st.stats.launches) == LAUNCHES
    s = ptxjit.stats()[name]
    assert s["counted_launches"] >= _expected_counted(LAUNCHES) and s["memory"] == [] and s["branches"] == []


def test_stream_and_threads_without_sites():
    """Stream launches and launches from four threads at once: none counts on a stream, the synchronous
    ones count and recount as one launch sequence does."""
    k = ptxjit.Module.from_file(PTX).get_function("params_only")
    errors: list[BaseException] = []

    def run() -> None:
        try:
            s = ptxjit.Stream()
            for i in range(LAUNCHES // 2):
                k(2, BLOCK, (i, 3), stream=s if i % 2 else None)
            s.synchronize()
        except BaseException as e:  # noqa: BLE001 - collected for the assertion
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    st = k.tier_states[((BLOCK, 1, 1), True)]
    assert st.stats.errors == [] and st.stats.counted >= 1


def test_no_pattern_slots_for_a_plan_without_sites():
    """The pattern layout of a plan without branch or memory sites is empty: no CTA is sampled."""
    k = ptxjit.Module.from_file(PTX).get_function("nothing")
    plan = counters.plan_of(k, (BLOCK, 1, 1))
    assert not plan.branches and not plan.memory
    assert patterns.layout(plan, BLOCK).size == 0
    assert patterns.sampled_ctas(plan, 2, BLOCK) == 0
