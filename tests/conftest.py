"""Test-session setup: keep ptxjit's on-disk caches inside a temporary directory."""

from __future__ import annotations

import os
import tempfile

# set before any test imports ptxjit's cache users; tests needing their own directory monkeypatch it
os.environ.setdefault("PTXJIT_CACHE_DIR", tempfile.mkdtemp(prefix="ptxjit-test-cache-"))


# PTXJIT_TEST_TRACE=1: every launch made by the tests runs through ptxjit.trace with every record type
# (tests/test_trace_corpus.py runs the corpus tests so): the tests' own checks then show that traced
# launches compute what plain ones do, and each launch checks that the counting run sized every buffer
# exactly.
if os.environ.get("PTXJIT_TEST_TRACE"):
    import ptxjit
    from ptxjit.api import Kernel

    _plain_call = Kernel.__call__

    def _traced_call(self, grid, block, args=(), shared_mem=0, timeout=None, checked=None, unchecked=False,
                     probes=None):
        if probes is not None:  # ptxjit.trace's own launches
            return _plain_call(self, grid, block, args, shared_mem, timeout, checked, unchecked, probes)
        t = ptxjit.trace(self, grid, block, args, shared_mem, records=ptxjit.instrument.RECORD_TYPES,
                         timeout=timeout, checked=checked, unchecked=unchecked, strict=False)
        if t.counts() != t.capacity() or any(t.dropped().values()):
            # only threads that communicate through atomics (a CAS retry loop, a flag another CTA sets)
            # may take other paths in the traced run than in the counting run
            assert any(i.opcode in ("atom", "red") for i in self.fn.instructions), \
                (self.name, t.counts(), t.capacity(), t.dropped())
        return None

    Kernel.__call__ = _traced_call

# PTXJIT_TEST_PATTERNS=1: every launch made by the tests runs on tier 0's counting code with the pattern
# accumulators in every CTA (instrument/patterns.py; tests/test_tiers_patterns.py runs the corpus tests so):
# the tests' own checks then show that it computes what plain code does, and each launch's pattern counts
# are summarized (so every kernel's sites line up with the slots).
if os.environ.get("PTXJIT_TEST_PATTERNS"):
    from ptxjit.api import Kernel

    _plain = Kernel.__call__

    def _patterns_call(self, grid, block, args=(), shared_mem=0, timeout=None, checked=None, unchecked=False,
                       probes=None):
        if probes is not None:
            return _plain(self, grid, block, args, shared_mem, timeout, checked, unchecked, probes)
        from ptxjit.api import dims
        from ptxjit.instrument.buffers import CountBuffers
        from ptxjit.instrument.patterns import summarize
        from ptxjit.instrument.probes import ProbeLaunch
        from ptxjit.runtime.launch import worker_count
        from ptxjit.tiers import counters

        g, b = dims(grid, "grid"), dims(block, "block")
        counting = counters.Counting(counters.plan_of(self, b))
        cb = CountBuffers(counting.plan, worker_count(), g[0] * g[1] * g[2], b[0] * b[1] * b[2], patterns=True)
        _plain(self, g, b, args, shared_mem, timeout, checked, unchecked, ProbeLaunch(counting.patterns, cb.table))
        pc = summarize(cb.patterns, b)
        assert (pc.warps >= pc.warps_uniform).all() and (pc.ctas >= pc.ctas_uniform).all()
        assert (pc.classes.sum(axis=1) <= pc.requests).all(), self.name
        return None

    Kernel.__call__ = _patterns_call

# PTXJIT_TEST_TIER1=1 (with tiers on): every tiered launch made by the tests runs on a tier-1 version
# specialized on that launch's own scalar parameters and grid (ptxjit/tiers/specialize.py: the constants
# folded in, and the bounds checks that rely on them, passes/ranges.py; tests/test_tiers_layers.py runs
# the corpus tests so): the tests' own checks then show that the specialized code computes what plain
# code does and faults where it does.
if os.environ.get("PTXJIT_TEST_TIER1"):
    from ptxjit.tiers import state as _tier_state

    def _tier1_launch(self, g, b, values, patches, shared_mem, timeout, args, ranges=None):
        from ptxjit.runtime import launch as _launch
        from ptxjit.tiers.profile import Profile
        from ptxjit.tiers.runner import launch_context
        from ptxjit.tiers.specialize import from_profile

        prof = Profile()
        prof.record(self.cands, self.param_bytes(values, patches), (g, b, shared_mem))
        spec = from_profile(prof, self.cands)
        log = os.environ.get("PTXJIT_TEST_TIER1_LOG")
        if log:  # what ran specialized: the test that sets this counts it
            with open(log, "a") as f:
                f.write(f"{self.kernel.name} {len(spec.params)} {spec.grid}\n")
        t = self.__dict__.setdefault("_test_versions", {}).get(spec.key)
        if t is None:
            t = self._test_versions[spec.key] = self._translate(spec)
        k = self.kernel
        gb = k.module.globals
        with launch_context(k, args, gb):
            _launch.run_packed(t, k.name, g, b, k._plans[self.checked], values, ranges, patches,
                               gb.__array_interface__["data"][0], gb.nbytes, shared_mem, timeout, k._range_names,
                               args, (args, gb))

    _tier_state.KernelTiers.launch = _tier1_launch
