"""Tiered, profile-guided re-optimization.

Tier 0 is fast to produce and records a profile (scalar parameter values, launch shapes); tier 1 is
built from it in a background thread (the profile's invariants folded into the code as constants,
each one guarded) and replaces tier 0 between batches of a running launch or between launches;
the runtime keeps sampling the profile and rebuilds tier 1 only when it has moved.  See state.py
(versions and dispatch), profile.py, policy.py, specialize.py and runner.py (the mid-launch swap).

On by default (DEFAULT_ON; `PTXJIT_TIERS=0` turns it off, `PTXJIT_TIERS=1` on) for bounds-checked and
unchecked launches: every tier's code of a checked launch carries the same checks (lower/safety/bounds.py).
Stream launches run tier 1 once it exists (profiled and guarded, not raced or counted: for_stream);
instrumented (trace/check), cooperative and cluster launches are not tiered.
`ptxjit.stats()` reports per kernel its tier, swaps, specializations, guard failures and compile times.
"""

from __future__ import annotations

from ptxjit import config
from ptxjit.tiers import counters
from ptxjit.tiers.policy import Policy
from ptxjit.tiers.state import HOOKS, POLICY, KernelTiers, tiers_registry, tiers_registry_lock

DEFAULT_ON = config.TIERS_DEFAULT_ON  # tiering when PTXJIT_TIERS is not set (README "Tiers")

__all__ = ["DEFAULT_ON", "HOOKS", "POLICY", "KernelTiers", "Policy", "enabled", "launch", "reset", "stats",
           "stream_translation"]


# PTXJIT_TIERS, read at every launch (about 50 ns when it is not set): on unless 0/false/no/off
enabled = config.tiers_enabled


def _state(kernel, b, checked: bool) -> KernelTiers:
    states = kernel.tier_states  # the kernel's own: a KernelTiers refers to its kernel
    st = states.get((b, checked))
    if st is None:
        st = states.setdefault((b, checked), KernelTiers(kernel, b, checked))
    return st


def launch(kernel, g, b, values: list, patches: list | None, shared_mem: int, timeout, args,
           checked: bool = False, ranges: list | None = None) -> None:
    """Run a launch of `kernel` through its tiers (Kernel.__call__ calls this); `checked`: bounds-checked
    (`ranges`: its range entries, ArgPacker.pack's), every tier's code then carries the checks."""
    _state(kernel, b, checked).launch(g, b, values, patches, shared_mem, timeout, args, ranges)


def stream_translation(kernel, g, b, values: list, patches: list | None, shared_mem: int, checked: bool):
    """The translation a stream launch of `kernel` runs (KernelTiers.for_stream)."""
    return _state(kernel, b, checked).for_stream(g, b, values, patches, shared_mem)


def stats() -> dict[str, dict]:
    """Per kernel name: its tier now (the highest over its block shapes), launches per tier, mid-launch
    swaps, the specializations of its tier-1 versions, guard failures, re-optimizations, per version
    built its level, compile seconds and whether the disk cache gave it, and tier 0's counters: the
    launches run on the counting code (and the recounts that found the profile moved) and from their
    block counts per conditional branch (PTX line) its taken / fall-through thread executions and per
    loop its entries, iterations and mean trips; from their sampled CTAs (instrument/patterns.py) per
    branch the fraction of warps and of CTAs in which all threads went the same way, and per memory
    access ("memory") its alignment, the most common stride between neighbouring threads (x), warps per
    stride class (uniform, contiguous, strided, irregular) and 32-byte sectors per warp request."""
    out: dict[str, dict] = {}
    with tiers_registry_lock:
        items = [(n, r()) for n, r in tiers_registry]
    for name, st in items:
        if st is None:
            continue
        s = st.stats
        d = out.setdefault(name, {"tier": 0, "launches": [0, 0], "swaps": 0, "guard_failures": 0,
                                  "reoptimizations": 0, "specializations": [], "builds": [], "errors": [],
                                  "trials": [],
                                  "blocks": [], "counted_launches": 0, "recounts_moved": 0, "branches": [],
                                  "loops": [], "memory": []})
        d["blocks"].append(st.block)
        if st.t1 is not None:
            d["tier"] = 1
            d["specializations"].append(st.t1.spec.describe())
        d["launches"] = [a + c for a, c in zip(d["launches"], s.launches, strict=True)]
        d["swaps"] += s.swaps
        d["guard_failures"] += s.guard_failures
        d["reoptimizations"] += s.reoptimizations
        d["builds"] += [dict(x, block=st.block) for x in s.builds]
        d["errors"] += s.errors
        d["trials"] += s.trials
        d["counted_launches"] += s.counted
        d["recounts_moved"] += s.recounts_moved
        if s.counted:
            branches, loops = st.counted()
            pc, plan = st.merged(st.profiles).patterns, st.count_spec.plan  # (counted: the counting code exists)
            uni = counters.branch_uniformity(plan, pc)
            d["branches"] += [{"line": x.line, "taken": x.taken, "fallthrough": x.fallthrough, "back_edge": x.back,
                               "block": st.block, **_uniformity(uni.get((x.function, x.stmt)))} for x in branches]
            d["loops"] += [{"line": x.line, "entries": x.entries, "iterations": x.iterations,
                            "trips": round(x.trips, 3), "block": st.block} for x in loops]
            d["memory"] += [{"line": m.line, "source": m.source, "instruction": m.instruction, "space": m.space,
                             "accesses": m.accesses,
                             "alignment": m.alignment, "stride": m.stride, "warps": dict(m.classes),
                             "sectors_per_request": m.sectors_per_request, "block": st.block}
                            for m in counters.memory_patterns(plan, pc)]
    return out


def _uniformity(u) -> dict:
    """A branch's uniformity in the sampled CTAs, as stats() shows it: the fraction of warps (CTAs) that
    executed it in which every thread went the same way, with the numbers it comes from."""
    if u is None or not u.warps or not u.ctas:  # (branch_uniformity leaves out the branches no warp ran)
        return {}
    return {"warp_uniform": round(u.warps_uniform / u.warps, 4), "cta_uniform": round(u.ctas_uniform / u.ctas, 4),
            "sampled_warps": u.warps, "sampled_ctas": u.ctas}


def reset() -> None:
    """Forget the statistics of every kernel (versions already built stay)."""
    from ptxjit.tiers.state import TierStats

    with tiers_registry_lock:
        for _, r in tiers_registry:
            st = r()
            if st is not None:
                st.stats = TierStats()
