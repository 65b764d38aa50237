"""util.PerObject: what a subsystem keeps per kernel goes with the kernel (no subsystem keeps it alive)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import numpy as np

import ptxjit
from ptxjit.util import PerObject

DATA = Path(__file__).resolve().parents[1] / "data"


class _Thing:
    pass


def test_entries_are_per_object_and_leave_with_it():
    cache = PerObject()
    a, b = _Thing(), _Thing()
    cache.of(a)["x"] = 1
    assert cache.of(a) == {"x": 1} and cache.of(b) == {}
    gone = weakref.ref(a)
    del a
    gc.collect()
    assert gone() is None and len(cache._maps) == 1


def test_a_checked_and_traced_kernel_is_freed():
    """The checking tools' and the trace's per-kernel caches (probe plans, lowered functions, alignment proofs,
    private-array shapes) and the tiers' state do not outlive the kernel."""
    mod = ptxjit.Module.from_file(DATA / "memory_safety.ptx")
    k = mod.get_function("shifted_copy")
    a = np.arange(256, dtype=np.float32)
    out = np.zeros(256, np.float32)
    assert ptxjit.check(k, 2, 128, (a, out, 256, 0), tools=("memcheck", "racecheck", "initcheck")) == []
    ptxjit.trace(k, 2, 128, (a, out, 256, 0))
    k(2, 128, (a, out, 256, 0))
    np.testing.assert_array_equal(out, a)
    gone = weakref.ref(k)
    del k, mod
    gc.collect()
    assert gone() is None
