"""When to build (and rebuild) tier 1, from the profile and the guards' record.

* First build: once the kernel is hot, as a baseline compiler's counters decide: from its second
  launch (`warmup` 2) on, when its launches on tier 0 have run for as long as `hot_run_ratio` times
  tier 0's build took (the past predicts the future: a kernel that ran that long will run that long
  again, and tier 1's code is several times faster than the baseline build's), or at its
  `hot_launches`th launch.  A kernel launched a few times for little work (test suites, the breadth
  corpus, scripts, a framework's one-off kernels) never pays tier 1's two O3 builds in the background,
  each several times tier 0's build.  A first launch long enough to run batched
  (`min_batches_for_swap`) starts the build at once instead: it moves to tier 1 while it runs
  (runner.py).
* Sampling: after the first `dense` launches, one launch in `sample_every` is recorded into the
  profile (recording costs about a microsecond; guards still check every launch).
* Re-optimization, only when the profile has moved past a threshold since the last build:
  - a guard keeps failing: at least `fail_threshold` of the last `window` launches broke the current
    version's assumptions (a specialized value changed): rebuild without the parameters that moved
    (they are excluded from then on);
  - a parameter the current version does not specialize has been invariant for `stable_launches`
    sampled launches (a value settled): rebuild with it.
  A stable profile never triggers a rebuild, and at most `max_versions` tier-1 versions are built per
  kernel and block shape (a kernel whose values never settle keeps its least specialized version).
* Counters: once tier 1 exists (and the counting code is built in the background), the next
  `counted_launches` sampled launches run on the counting code; tier 1 is then rebuilt with the
  branch weights their block counts give (tiers/counters.py), and that version races the plain code
  as any specialization does.
* Trial: constants can also steer LLVM into worse code (another unrolling, another vectorization), so
  a specialized version first races the plain O3 code (the untiered translation) over `trial_launches`
  launches each, alternating, and is kept only when its fastest launch beats the plain code's fastest
  by `trial_margin` (3%); else the plain code runs from then on and the specialization is not built
  again.  The fastest, not the median: on a shared machine the noise only ever adds time (±25% between
  launches of one code measured at load 7 on 2 cores).  A tie goes to the plain code: the measured
  gain of the constants is within that noise (README "Tiers"), and the plain code guards nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxjit.tiers.profile import Candidate, Profile
from ptxjit.tiers.specialize import Specialization


@dataclass
class Policy:
    warmup: int = 2  # launches profiled before tier 1 is built (a long first launch: at once)
    hot_run_ratio: float = 1.0  # ... and tier 0's run time over its build time that makes a kernel hot
    hot_launches: int = 32  # ... or this many launches
    dense: int = 16
    sample_every: int = 8
    window: int = 8
    fail_threshold: int = 2
    stable_launches: int = 8
    max_versions: int = 4
    min_batches_for_swap: int = 4  # a launch of at least this many batches per worker runs batched
    # a new specialized version races the plain O3 code for this many launches each (alternating);
    # it is kept only if its fastest launch took at most trial_margin times the plain code's fastest
    # without guard failures, the policy looks for settled values every this many launches only
    settle_every: int = 64
    trial_launches: int = 5
    trial_margin: float = 0.97
    # sampled launches run on the counting code (block counters, tiers/counters.py) once tier 1 exists:
    # their counts give tier 1 its branch weights; 0 turns the counters off
    counted_launches: int = 1
    # ... and the lockstep loops they saw run at least unroll_min_trips iterations per entry are
    # unrolled unroll_factor times in that build (passes/unroll.py; 1 turns it off).  4: histogram's
    # loop measured 38 -> 24 ms at 4, 26 ms at 8, 61 ms at 16 (code size), 27 ms at 2
    unroll_factor: int = 4
    unroll_min_trips: float = 16.0
    # every recount_every launches one more launch is counted (0: never); tier 1 is rebuilt when a
    # branch's taken fraction moved by more than bias_moved, or the loops to unroll changed
    recount_every: int = 512
    bias_moved: float = 0.25

    def recount(self, launch_index: int) -> bool:
        """Is launch number `launch_index` (a sampled one) a recount of the block counters?"""
        return self.recount_every > 0 and launch_index > 0 and launch_index % self.recount_every == 0

    def sampled(self, launch_index: int) -> bool:
        """Is launch number `launch_index` (0-based) recorded into the profile?"""
        return launch_index < self.dense or launch_index % self.sample_every == 0

    def first_build(self, prof: Profile, run_seconds: float = 0.0, build_seconds: float = 0.0) -> bool:
        """Build tier 1 now?  `run_seconds`: the kernel's launches on tier 0 so far; `build_seconds`:
        tier 0's build (milliseconds when it came from the disk cache, where tier 1's usually is too)."""
        if prof.launches < self.warmup:
            return False
        return prof.launches >= self.hot_launches or run_seconds >= self.hot_run_ratio * build_seconds

    def reoptimize(self, since_build: Profile, current: Specialization, recent_failures: int,
                   cands: tuple[Candidate, ...], versions: int) -> str | None:
        """Why tier 1 should be rebuilt now (None: the profile has not moved enough).
        `since_build`: the merged profile of the launches sampled since the current version was
        chosen; `recent_failures`: guard failures among the last `window` launches."""
        if versions >= self.max_versions:
            return None
        if recent_failures >= self.fail_threshold:
            return f"guard failed in {recent_failures} of the last {self.window} launches"
        if since_build.launches < self.stable_launches:
            return None
        have = {off for off, _ in current.params}
        inv = since_build.invariant()
        settled = [c.name for c in cands if c.offset in inv and c.offset not in have]
        if settled:
            return f"parameter(s) {', '.join(settled)} settled on one value"
        if current.grid is None and since_build.invariant_shape() is not None:
            return "the launch shape settled"
        return None


def moved_params(current: Specialization, pbytes_history: list[bytes]) -> frozenset[int]:
    """Offsets of the current version's parameters whose value differed in any of these launches."""
    out = set()
    for off, v in current.params:
        if any(pb[off:off + len(v)] != v for pb in pbytes_history):
            out.add(off)
    return frozenset(out)
