"""Per kernel and block shape: the tier versions, the profile, the guards, and the launch dispatch.

* Tier 0 (`level` 0): the generic translation (no block shape: much smaller code for barrier-heavy
  kernels, whose block-specialized region code is unrolled per barrier) at LLVM level 2: fast to
  produce.
* Tier 1 (`level` 1): the block-specialized translation at LLVM level 3 (the code an untiered launch runs) with the
  profile's invariant scalar parameters and grid folded in as constants (specialize.py), built in a
  background thread, then the same code without constants ("plain": the untiered translation), which runs
  the launches whose guard fails (tier 0 does until it exists) and which a new specialization races
  (policy.py, trial).  A version is only ever replaced by another tier-1 version, never by tier 0.
* A launch long enough (policy.min_batches_for_swap batches per worker) that starts while tier 1 is
  being built runs in batches (runner.py) and moves to tier 1 between batches once it is ready.
* Counters (counters.py): after tier 1's first build the background thread also translates the
  counting code (block counters, instrument layer); the next sampled launches (policy.counted_launches)
  run on it, and their block counts give tier 1 its branch weights and unrolled loops (a rebuild,
  raced against the plain code like any specialization); every policy.recount_every launches one more
  is counted, and tier 1 is rebuilt when a branch's bias or a loop's trip count moved (counters.moved).
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import functools
import os
import struct
import threading
import time
import weakref
from dataclasses import dataclass, field

from ptxjit.jit import priority
from ptxjit.jit import translate as _tr
from ptxjit.jit.engine import BASELINE
from ptxjit.jit.translate import Translation
from ptxjit.runtime import launch as _launch
from ptxjit.streams import stream as _streams
from ptxjit.tiers import counters, llvmproc
from ptxjit.tiers.policy import Policy, moved_params
from ptxjit.tiers.profile import Profile, candidates
from ptxjit.tiers.runner import BatchLog, launch_context, run_batched
from ptxjit.tiers.specialize import Specialization, from_profile
from ptxjit.util import gc_paused

POLICY = Policy()
# test hooks: `synchronous` builds tier 1 in the launching thread; `ready_after_batches` (an int)
# keeps a ready tier 1 hidden from a batched launch until that many batches have finished, and makes
# every launch of at least two batches run batched (forces a mid-launch swap); `spare` leaves a worker
# out until tier 1 runs (as while a build is in flight); `timeline` (a list) collects the runs' logs
HOOKS: dict[str, object] = {"synchronous": False, "ready_after_batches": None, "timeline": None, "spare": False}


@dataclass
class Version:
    level: int
    tr: Translation
    spec: Specialization | None
    seconds: float
    from_disk: bool
    reason: str = ""


@dataclass
class TierStats:
    launches: list[int] = field(default_factory=lambda: [0, 0])  # per tier
    swaps: int = 0  # launches that moved from tier 0 to tier 1 while running
    guard_failures: int = 0
    reoptimizations: int = 0
    counted: int = 0  # launches run on the counting code (counters.py)
    recounts_moved: int = 0  # recounts that found a branch's bias or a loop's trips moved
    trials: list[dict] = field(default_factory=list)  # specialized vs plain code: medians, the one kept
    builds: list[dict] = field(default_factory=list)  # per version built: level, seconds, disk, spec
    errors: list[str] = field(default_factory=list)


# weak: a kernel's tiers live as long as the kernel (its Module) does
tiers_registry: list[tuple[str, weakref.ref[KernelTiers]]] = []
tiers_registry_lock = threading.Lock()
_builders: set[threading.Thread] = set()


def _generic_ok(fn) -> bool:
    """May tier 0 be the generic (no block shape) code?  Only where it behaves as the block-specialized
    code does.  Not for a kernel with a spin loop: only the block-specialized code suspends a thread
    spinning on a flag that a later thread of its CTA sets (lower/progress.py spin_points; generic:
    the launch hangs, tests/test_interrupts.py intra_spin), nor where a barrier names a thread count
    (bar.sync id, count; bar.red; bar.arrive): the generic code lets the threads pass a barrier whose
    count exceeds the block's threads (tests/data/interrupts.ptx bar_too_many completes where the
    block-specialized code raises KernelDeadlock), nor for wgmma (below), nor for warp-synchronous
    volatile code (passes/warpsync.py: only region mode runs its steps in lockstep rounds).  Such
    kernels get the block-specialized code at the low level: the same behaviour and errors as the
    untiered translation."""
    from ptxjit.lower.module import ModuleCodegen
    from ptxjit.lower.progress import spin_points
    from ptxjit.passes.warpsync import warp_sync_points

    if any(i.opcode in ("bar", "barrier") and len(i.operands) >= 2 for i in fn.instructions):
        return False
    # wgmma (warpgroup MMA): a launch of the generic code did not finish (tests/test_breadth.py's wgmma
    # forms hung for 300 s, tests/test_tensor_core.py too); the block-specialized code runs them in seconds
    if any(i.opcode == "wgmma" for i in fn.instructions):
        return False
    # ModuleCodegen.yields reads no state of its codegen (the instruction's rule only)
    def yields(ins) -> bool:
        return ModuleCodegen.yields(None, ins)

    return spin_points(fn, yields) is fn and warp_sync_points(fn, yields) is fn


class KernelTiers:
    """The tiers of one kernel for one block shape, bounds-checked or not: every version of a checked
    launch carries the same memory-safety checks (lower/safety/bounds.py) as the untiered checked code."""

    def __init__(self, kernel, block: tuple[int, int, int], checked: bool = False) -> None:
        self.kernel = kernel
        self.block = block
        self.checked = checked
        fn = kernel.fn
        self.cands = candidates(fn.params, kernel._layout.offsets, kernel._access)
        self.pstruct = struct.Struct("<" + kernel._packer.format)
        self.psize = kernel._packer.size
        self.lock = threading.Lock()
        self.t0: Version | None = None
        self.t1: Version | None = None
        self.versions: dict[str, Version] = {}  # spec key -> tier-1 version built
        self.building: threading.Thread | None = None
        self.profiles: dict[int, Profile] = {}  # launching thread -> its profile (all launches sampled)
        self.window: dict[int, Profile] = {}  # launching thread -> its profile since the last build
        self.recent: collections.deque[bool] = collections.deque(maxlen=POLICY.window)  # guard failed?
        self.failed_bytes: collections.deque[bytes] = collections.deque(maxlen=POLICY.window)
        self.excluded: frozenset[int] = frozenset()
        self.plain: Translation | None = None  # the untiered block-specialized O3 code, without constants
        self.trial: tuple[list[float], list[float]] | None = None  # seconds: specialized, plain
        self.rejected: set[str] = set()  # specializations that lost their trial against the plain code
        self.nlaunches = 0
        self.t0_run_seconds = 0.0  # the launches' time on tier 0 (or on the generic code before tier 1)
        self.count_spec = None  # the counting code's probe set once its translation is built (counters.py)
        self.ncounted = 0
        # what the last count gave tier 1 (branch weights, unrolled loops): a recount compares against it
        self.counted_basis: tuple[tuple, tuple] | None = None
        self.stats = TierStats()
        # the steady state's short path applies (no printf memory to register, no test hook)
        self.fast = not kernel._access.uses_printf and HOOKS["ready_after_batches"] is None
        with tiers_registry_lock:
            tiers_registry[:] = [(n, r) for n, r in tiers_registry if r() is not None]
            tiers_registry.append((kernel.name, weakref.ref(self)))

    # ------------------------------------------------------------------ profile
    def param_bytes(self, values: list, patches: list | None) -> bytes:
        buf = bytearray(self.psize)
        self.pstruct.pack_into(buf, 0, *values)
        if patches:
            for off, data in patches:
                buf[off:off + len(data)] = data
        return bytes(buf)

    def merged(self, which: dict[int, Profile]) -> Profile:
        return functools.reduce(Profile.merge, list(which.values()), Profile())

    def _record(self, pb: bytes, shape: tuple) -> None:
        me = threading.get_ident()
        for d in (self.profiles, self.window):
            p = d.get(me)
            if p is None:
                p = d[me] = Profile()
            p.record(self.cands, pb, shape)

    # ------------------------------------------------------------------ versions
    def tier0(self) -> Version:
        v = self.t0
        if v is None:
            k = self.kernel
            before = _tr.cache_stats()["disk_hits"]
            # the baseline build (jit/engine.py): compile speed first, tier 1 takes over when the kernel is hot
            t = k.module.translation(k.fn, None if _generic_ok(k.fn) else self.block, self.checked,
                                     opt_level=BASELINE)
            v = self.t0 = Version(0, t, None, t.seconds, _tr.cache_stats()["disk_hits"] > before)
            self.stats.builds.append({"level": 0, "seconds": t.seconds, "from_disk": v.from_disk, "spec": {}})
        return v

    def _build(self, spec: Specialization, reason: str) -> None:
        """Build (or find) the tier-1 version for `spec` and make it current."""
        try:
            v = self.versions.get(spec.key)
            if v is None:
                if _exiting.is_set():
                    return
                t_start = time.perf_counter()
                t = self._translate(spec)
                v = Version(1, t, spec, time.perf_counter() - t_start, t.from_disk, reason)
                self.versions[spec.key] = v
                self.stats.builds.append({"level": 1, "seconds": v.seconds, "from_disk": t.from_disk,
                                          "spec": spec.describe(), "reason": reason})
            with self.lock:
                self.t1 = v
                self.trial = None
                self.window = {}
                self.recent.clear()
                self.failed_bytes.clear()
            if spec.params or spec.grid is not None or spec.weights or spec.unroll:
                # the unspecialized O3 code (the untiered translation): what runs a launch whose guard
                # fails once it exists (tier 0's generic code can be much slower), and what a new
                # specialization races against: constants can also make LLVM's choices worse, and
                # tier 1 must never be slower (built after tier 1 is in use)
                if self.plain is None and not _exiting.is_set():
                    self.plain = self._translate(None)
                with self.lock:
                    if self.t1 is v and POLICY.trial_launches:
                        self.trial = ([], [])
            if self.count_spec is None and POLICY.counted_launches and not _exiting.is_set():
                self._build_counting()
        except Exception as e:  # noqa: BLE001 - a failed build leaves the launches on tier 0
            self.stats.errors.append(f"{type(e).__name__}: {e}")
        finally:
            with self.lock:
                self.building = None

    def _build_counting(self) -> None:
        """Translate the counting code (counters.py) into the module's cache, where a probed launch finds
        it: the counted launches then pay no translation.  A kernel the counters cannot describe (more
        sites than records hold) simply gets none."""
        k = self.kernel
        m = k.module
        try:
            with m._lock:
                plan = counters.plan_of(k, self.block)
            counting = counters.Counting(plan)
            for spec in counting.specs:  # block counters; with the sampled CTAs' patterns
                m.keep(k.fn, _tr.CompileOptions(self.block, self.checked, spec), self._o3(spec, None))
            self.count_spec = counting
        except _BuildCancelled:
            pass
        except Exception as e:  # noqa: BLE001 - no counters: tier 1 keeps its constants only
            self.stats.builds.append({"level": "counters", "error": f"{type(e).__name__}: {e}"})
            self.ncounted = POLICY.counted_launches  # never asked again

    def counted(self) -> tuple[list[counters.Branch], list[counters.Loop]]:
        """Edge and trip counts from the counted launches so far (empty lists before any)."""
        prof = self.merged(self.profiles)
        if not prof.counted or self.count_spec is None:
            return [], []
        return counters.edges(self.kernel, self.block, self.count_spec.plan, prof.blocks, prof.threads)

    def _run_counted(self, g, b, shared_mem: int, timeout, args, fast: tuple) -> None:
        """A sampled launch run on the counting code: the same results, plus the block counts; once
        counted, tier 1 is rebuilt with the branch weights they give (its race decides if they pay)."""
        self.ncounted += 1
        blocks, patterns = counters.run_counted(self.kernel, self.count_spec, g, b, args, shared_mem, timeout,
                                                self.checked, fast)
        me = threading.get_ident()
        p = self.profiles.get(me)
        if p is None:
            p = self.profiles[me] = Profile()
        p.record_counts(blocks, g[0] * g[1] * g[2] * b[0] * b[1] * b[2], patterns)
        self.stats.counted += 1
        self.stats.launches[1] += 1
        v1 = self.t1
        if self.ncounted < POLICY.counted_launches or v1 is None:
            return
        if self.counted_basis is None:  # the first counts: all counted launches so far
            branches, loops = self.counted()
        else:  # a recount (policy.recount_every): this launch's counts against those tier 1 was built from
            branches, loops = counters.edges(self.kernel, self.block, self.count_spec.plan, blocks,
                                             g[0] * g[1] * g[2] * b[0] * b[1] * b[2])
        w = counters.weights(branches)
        u = counters.unroll_factors(self.kernel, self.block, loops, POLICY.unroll_min_trips, POLICY.unroll_factor)
        if self.counted_basis is None:
            why = "branch weights" + (" and unrolled lockstep loops" if u else "") + " from the block counters"
        else:
            why = counters.moved(self.counted_basis, (w, u), branches, loops, POLICY.bias_moved)
            if why is None:
                return  # a stable profile: nothing to rebuild
            self.stats.recounts_moved += 1
        self.counted_basis = (w, u)
        if not (w or u) or len(self.versions) >= POLICY.max_versions:
            return
        spec = dataclasses.replace(v1.spec, weights=w, unroll=u)
        if spec.key != v1.spec.key and spec.key not in self.rejected:
            self.start_build(spec, why)

    def _translate(self, spec: Specialization | None) -> Translation:
        """Tier-1 code (block-specialized, O3), with `spec`'s constants or without (None: the plain code,
        the untiered translation, shared with the module's cache).  The module lock is held only while
        lowering reads the module's IR, not through LLVM's seconds of optimization and code
        generation: another thread's launch (a first translation of another kernel) does not wait
        for a background build."""
        k = self.kernel
        plain = _tr.CompileOptions(self.block, self.checked)
        if spec is None:
            t = k.module.cached(k.fn, plain)
            if t is not None:
                return t
        t = self._o3(None, spec)
        if spec is None:  # one copy of the untiered translation per module, whoever built it first
            t = k.module.keep(k.fn, plain, t)
        return t

    def _o3(self, probes, spec: Specialization | None) -> Translation:
        """The kernel's block-specialized O3 code (with `probes`' counters and `spec`'s constants, either
        None), LLVM in the child process; the cyclic GC paused as Module.translation does (its scans of
        the IR make lowering 2-3x slower)."""
        k = self.kernel
        m = k.module
        with gc_paused():
            try:
                return _tr.translate(m.ir, k.fn, m._glay, _tr.CompileOptions(self.block, self.checked, probes, 3, spec),
                                     m.ptx_digest, lock=_Lowering(m._lock), optimizer=llvmproc.optimize_to_object)
            finally:
                with _exit_lock:
                    _in_llvm.discard(threading.current_thread())

    def _end_trial(self, v1: Version, trial: tuple[list[float], list[float]]) -> None:
        """Keep the specialized code only if it was faster than the plain code (fastest launches of the
        trial: policy.py)."""
        spec_s, plain_s = min(trial[0]), min(trial[1])
        keep = spec_s <= plain_s * POLICY.trial_margin
        self.stats.trials.append({"spec": v1.spec.describe(), "specialized_s": spec_s, "plain_s": plain_s,
                                  "kept": "specialized" if keep else "plain"})
        with self.lock:
            self.trial = None
            if not keep and self.t1 is v1 and self.plain is not None:
                self.rejected.add(v1.spec.key)
                self.versions.pop(v1.spec.key, None)  # never used again: its code can go
                self.t1 = Version(1, self.plain, Specialization((), None), 0.0, False, "won its trial")
        if not keep and v1.spec.unroll:
            # the unrolled loops may be what lost (dot's masked copies): the rest of that version alone
            rest = dataclasses.replace(v1.spec, unroll=())
            if (rest.params or rest.grid is not None or rest.weights) and rest.key not in self.rejected \
                    and len(self.versions) < POLICY.max_versions:
                self.start_build(rest, "the same without unrolled loops (they lost the race)")

    def start_build(self, spec: Specialization, reason: str) -> None:
        with self.lock:
            if self.building is not None:
                return
            if self.t1 is not None:
                self.stats.reoptimizations += 1
            th = threading.Thread(target=self._run_build, args=(spec, reason), daemon=True,
                                  name=f"ptxjit-tier1-{self.kernel.name[:24]}")
            self.building = th
        if HOOKS["synchronous"]:
            self._build(spec, reason)
        else:
            th.start()

    def _run_build(self, spec: Specialization, reason: str) -> None:
        _builders.add(threading.current_thread())
        try:
            self._build(spec, reason)
        finally:
            _builders.discard(threading.current_thread())

    def _maybe_rebuild(self, long_launch: bool = False) -> None:
        """After a launch: build tier 1 first, or again when the profile has moved (policy.py).
        `long_launch`: this launch runs batched if tier 1 builds (the first build starts at once)."""
        if self.building is not None or len(self.stats.errors) > 0:
            return
        if self.t1 is None:
            prof = self.merged(self.profiles)
            built = self.t0.seconds if self.t0 is not None else 0.0
            if POLICY.first_build(prof, self.t0_run_seconds, built) or (long_launch and prof.launches):
                self.start_build(from_profile(prof, self.cands, self.excluded), "first profile")
            return
        cur = self.t1.spec
        assert cur is not None
        n = self.nlaunches - 1  # this launch's index (a multiple of sample_every when sampled)
        if not any(self.recent) and n > POLICY.dense and n % POLICY.settle_every:
            return  # no guard failure: whether a value settled is looked at now and then (merging costs)
        window = self.merged(self.window)
        failures = sum(self.recent)
        why = POLICY.reoptimize(window, cur, failures, self.cands, len(self.versions))
        if why is None:
            if n > POLICY.dense and not failures:
                self.window = {}  # the next look judges the launches since this one: a fresh window
            return
        self.excluded |= moved_params(cur, list(self.failed_bytes))
        if not failures and window.launches >= POLICY.stable_launches:
            self.excluded -= set(window.invariant())  # parameters excluded once that have settled since
        if cur.grid is not None and failures:
            grid_ok = window.invariant_shape() is not None and window.invariant_shape()[0] == cur.grid
        else:
            grid_ok = True
        spec = from_profile(window, self.cands, self.excluded, shape=grid_ok, weights=cur.weights,
                            unroll=cur.unroll)
        if spec.key != cur.key and spec.key not in self.rejected:
            self.start_build(spec, why)
        else:  # the same assumptions again: nothing to gain; forget the failures counted
            self.recent.clear()
            if n > POLICY.dense:
                self.window = {}

    # ------------------------------------------------------------------ dispatch
    def _guarded(self, v1: Version | None, pb: bytes, g) -> bool:
        """Does tier 1's guard admit this launch?  A failure is counted and remembered for the policy."""
        ok = v1 is not None and v1.spec.guard(pb, g)
        if v1 is not None:
            self.recent.append(not ok)
            if not ok:
                self.stats.guard_failures += 1
                self.failed_bytes.append(pb)
        return ok

    def for_stream(self, g, b, values: list, patches: list | None, shared_mem: int) -> Translation:
        """The code a stream launch runs (later, on the stream's thread): tier 1 when its guard holds,
        else the plain code (the untiered translation; never tier 0's slower generic code).  Profiled and
        guarded like a synchronous launch, so that a kernel launched only on streams gets tier 1 too;
        not timed (no race arm) and not counted (the counters run synchronously)."""
        n = self.nlaunches
        self.nlaunches = n + 1
        pb = self.param_bytes(values, patches)
        sampled = POLICY.sampled(n)
        if sampled:
            self._record(pb, (g, b, shared_mem))
        v1 = self.t1
        ok = self._guarded(v1, pb, g)
        if v1 is None or sampled or not ok:
            self._maybe_rebuild()
        self.stats.launches[1] += 1
        if ok:
            return v1.tr
        # the untiered translation, from the module's cache (what an untiered stream launch runs)
        return self.plain or self.kernel.module.translation(self.kernel.fn, self.block, self.checked)

    def launch(self, g, b, values: list, patches: list | None, shared_mem: int, timeout, args,
               ranges: list | None = None) -> None:
        """`ranges`: the range table's entries of a checked launch (ArgPacker.pack), else None."""
        k = self.kernel
        n = self.nlaunches
        self.nlaunches = n + 1
        sampled = n < POLICY.dense or n % POLICY.sample_every == 0  # POLICY.sampled(n), inlined
        v1 = self.t1
        # the parameter bytes only where something reads them (a sampled launch, a guard on parameters, the
        # slow path below): the steady state of the plain code (no constants) or of a grid-only version
        # skips packing them (a few µs per launch)
        pb = self.param_bytes(values, patches) if sampled or v1 is None or v1.spec.params or not self.fast else b""
        if sampled:
            self._record(pb, (g, b, shared_mem))
            if self.count_spec is not None and self.trial is None and (
                    self.ncounted < POLICY.counted_launches
                    or (self.counted_basis is not None and POLICY.recount(n))) \
                    and self.building is None:
                self._run_counted(g, b, shared_mem, timeout, args, (values, patches, ranges))
                return
        if v1 is not None and self.fast and v1.spec.guard(pb, g):
            # the steady state: tier 1's assumptions hold; as few steps as Kernel.__call__'s own path
            self.recent.append(False)
            self.stats.launches[1] += 1
            _tr.note_memory_hit()  # served by a cached translation, as cache_stats() counts it
            gb, gaddr, gsize = k._globals
            if gb is not k.module.globals:
                gb = k.module.globals
                gaddr, gsize = gb.__array_interface__["data"][0], gb.nbytes
                k._globals = (gb, gaddr, gsize)
            if _streams.BUSY:
                _streams.wait_legacy()
            trial = self.trial
            if trial is None:
                _launch.run_packed(v1.tr, k.name, g, b, k._plans[self.checked], values, ranges, patches, gaddr,
                                   gsize, shared_mem, timeout, k._range_names, args, (args, gb))
            else:  # racing the specialized code against the plain code: launches alternate
                arm = 1 if len(trial[0]) > len(trial[1]) else 0
                t = v1.tr if arm == 0 else self.plain
                a = time.perf_counter()
                _launch.run_packed(t, k.name, g, b, k._plans[self.checked], values, ranges, patches, gaddr,
                                   gsize, shared_mem, timeout, k._range_names, args, (args, gb))
                trial[arm].append(time.perf_counter() - a)
                if len(trial[1]) >= POLICY.trial_launches:
                    self._end_trial(v1, trial)
            if sampled:
                self._maybe_rebuild()
            return
        if self.t0 is not None:
            _tr.note_memory_hit()
        if not pb:  # skipped above: the guard failures and a swapping launch's guards read them
            pb = self.param_bytes(values, patches)
        t0 = self.tier0()
        ok = self._guarded(v1, pb, g)
        nctas = g[0] * g[1] * g[2]
        hold = HOOKS["ready_after_batches"]
        nworkers = max(1, min(_launch.worker_count(), nctas))
        long_launch = nctas >= nworkers * 4 * POLICY.min_batches_for_swap or (hold is not None and nctas >= 2)
        if v1 is None:
            self._maybe_rebuild(long_launch)  # the first build starts before this launch runs
        gb = k.module.globals
        gaddr, gsize = gb.__array_interface__["data"][0], gb.nbytes
        plan = k._plans[self.checked]
        with launch_context(k, args, gb):
            if not ok and long_launch and (self.building is not None or hold is not None):
                self._run_swapping(t0, pb, g, b, plan, values, ranges, patches, gaddr, gsize, shared_mem, timeout,
                                   args, gb)
            else:
                t = v1.tr if ok else (self.plain or t0.tr)  # a guard failed: the generic code
                self.stats.launches[1 if ok else 0] += 1
                start = time.perf_counter()
                try:
                    _launch.run_packed(t, k.name, g, b, plan, values, ranges, patches, gaddr, gsize, shared_mem,
                                       timeout, k._range_names, args, (args, gb))
                finally:
                    if v1 is None:  # how hot the kernel is (policy.py first_build)
                        self.t0_run_seconds += time.perf_counter() - start
        if v1 is not None and (sampled or not ok):  # the policy looks at sampled launches and failures only
            self._maybe_rebuild()

    def _run_swapping(self, t0: Version, pb: bytes, g, b, plan, values, ranges, patches, gaddr, gsize, shared_mem,
                      timeout, args, gb) -> None:
        hold = HOOKS["ready_after_batches"]

        def current(done: int) -> tuple[int, Translation]:
            v = self.t1
            if v is not None and v.spec.guard(pb, g) and (hold is None or done >= hold):
                return 1, v.tr
            return 0, t0.tr

        log = BatchLog()
        # while tier 1 builds, one core is left to the build: tier 0's code can be many times slower
        # than tier 1's (generic barrier code), so the build is what the launch waits for
        spare = 1 if (self.building is not None and hold is None) or HOOKS.get("spare") else 0
        try:
            run_batched(t0.tr, current, self.kernel.name, g, b, plan, values, patches, gaddr, gsize, shared_mem,
                        timeout, (args, gb), log, spare, ranges, self.kernel._range_names, args)
        finally:  # a launch that faulted counts too
            tiers_run = {tier for _, tier, _, _ in log.batches}
            self.stats.launches[max(tiers_run) if tiers_run else 0] += 1
            self.stats.swaps += log.swaps
            tl = HOOKS["timeline"]
            if isinstance(tl, list):
                tl.append(log)


# Exiting while a background build runs: a thread inside LLVM when the process tears LLVM down aborts
# it (measured: "An asserting value handle still pointed to this value!", exit status 134), while a
# thread in Python code (lowering) is simply stopped by the interpreter's finalization.  So at exit
# no build starts LLVM any more (_Lowering raises), builds optimizing in a child process are killed
# (llvmproc.py), and only a build inside LLVM in this process (linking the object, milliseconds; or a
# whole build where the child could not run) is waited for.
_exiting = threading.Event()
_exit_lock = threading.Lock()
_in_llvm: set[threading.Thread] = set()  # build threads past their lowering, inside LLVM
EXIT_WAIT_S = 60.0  # a cap: waiting is better than an abort


class _BuildCancelled(Exception):
    pass


class _Lowering:
    """translate()'s `lock`: the module lock, held while lowering reads the module's IR; on leaving it,
    the build either stops (the process is exiting) or is marked as inside LLVM."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock

    def __enter__(self) -> None:
        if threading.current_thread() in _builders:  # a background build: after the program's first launches
            priority.wait_for_quiet()
        if _exiting.is_set():
            raise _BuildCancelled("exiting")
        self.lock.acquire()

    def __exit__(self, *exc) -> None:
        self.lock.release()
        if exc[0] is not None:
            return
        with _exit_lock:
            if _exiting.is_set():
                raise _BuildCancelled("exiting")
            _in_llvm.add(threading.current_thread())


def _join_builders() -> None:
    """At exit: wait for the builds inside LLVM only (see above)."""
    with _exit_lock:
        _exiting.set()
        busy = list(_in_llvm)
    llvmproc.kill_all()  # builds in a child process stop at once (llvmproc.py)
    deadline = time.monotonic() + EXIT_WAIT_S
    for th in busy:
        th.join(timeout=max(0.0, deadline - time.monotonic()))


def _after_fork_in_child() -> None:
    """Threads do not survive fork: a build in flight in the parent never finishes in the child, which
    builds again when its launches ask."""
    global _exit_lock
    _builders.clear()
    _in_llvm.clear()
    _exit_lock = threading.Lock()  # another thread may have held it at the fork
    llvmproc.after_fork_in_child()
    for _, r in list(tiers_registry):
        st = r()
        if st is not None:
            st.building = None
            st.lock = threading.Lock()


atexit.register(_join_builders)
os.register_at_fork(after_in_child=_after_fork_in_child)
