"""The deterministic tiers both tier test files run under (tests/test_tiers.py, tests/test_tiers_counters.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

from ptxjit import tiers


def deterministic_tiers(monkeypatch, counted_launches: int) -> Iterator[None]:
    """Tiers on, tier 1 built in the launching thread, no race of specialized against plain code
    (timing-dependent), tier 1 from the first launch's profile (the default waits for a second launch
    unless the first is long), `counted_launches` launches on the counting code (0: no rebuild with
    branch weights); the hooks restored afterwards.  A generator for a pytest fixture to yield from."""
    monkeypatch.setenv("PTXJIT_TIERS", "1")
    saved = dict(tiers.HOOKS)
    tiers.HOOKS["synchronous"] = True
    monkeypatch.setattr(tiers.POLICY, "trial_launches", 0)
    monkeypatch.setattr(tiers.POLICY, "warmup", 1)
    monkeypatch.setattr(tiers.POLICY, "hot_run_ratio", 0.0)  # hot from the first launch, however short
    monkeypatch.setattr(tiers.POLICY, "counted_launches", counted_launches)
    gc.collect()  # the kernels of earlier tests (and their tiers' statistics) go
    yield
    tiers.HOOKS.clear()
    tiers.HOOKS.update(saved)
