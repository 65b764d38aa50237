"""Launch modes: named ways of running every launch the tests make, each a ptxjit launch hook
(ptxjit.api.launch_hook).  A mode suite runs other test files again with every launch in one mode
(run_suite: a pytest child process with PTXJIT_TEST_LAUNCH_MODE set, which tests/conftest.py's
`launch_mode` fixture installs for the whole session); their own checks (NumPy references, expected
faults) then show that the mode's way of running a kernel computes what a plain launch does, and the
mode's hook adds its own assertions per launch.

  trace     every launch through ptxjit.trace with every record type; the counting run must have sized
            every record buffer exactly (tests/test_trace_corpus.py)
  patterns  every launch on tier 0's counting code with the pattern accumulators in every CTA
            (instrument/patterns.py; tests/test_tiers_patterns.py)
  tier1     every tiered launch on a tier-1 version specialized on that launch's own scalar parameters
            and grid (tiers/specialize.py, passes/ranges.py; tests/test_tiers_layers.py)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import ptxjit
from ptxjit import config, tiers
from ptxjit.api import Launch, LaunchHook
from ptxjit.runtime.args import check_launch_shape, check_shared_memory, dims, resolve_checked

ROOT = Path(__file__).resolve().parent.parent
ENV = config.TEST_LAUNCH_MODE.name  # the variable a mode suite's child process reads
CORPUS_TESTS = ("tests/test_corpus_basic.py", "tests/test_corpus_extra.py", "tests/test_corpus_numeric.py",
                "tests/test_corpus_parallel.py")


@dataclass
class LaunchMode:
    """A named launch hook, counting the launches it ran (the session's summary line reports them, so a
    mode suite sees that the mode was in force)."""

    name: str
    hook: LaunchHook
    doc: str
    launches: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __call__(self, launch: Launch, proceed: Callable[..., None]):
        with self._lock:
            self.launches += 1
        return self.hook(launch, proceed)


MODES: dict[str, LaunchMode] = {}


def mode(name: str) -> Callable[[LaunchHook], LaunchHook]:
    """Register a launch hook as the launch mode `name` (its docstring says what the mode checks)."""

    def register(hook: LaunchHook) -> LaunchHook:
        assert name not in MODES, name
        MODES[name] = LaunchMode(name, hook, (hook.__doc__ or "").strip())
        return hook

    return register


def summary_line(m: LaunchMode) -> str:
    return f"launch mode {m.name}: {m.launches} launches"


def run_suite(name: str, tests: tuple[str, ...] | list[str], env: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess:
    """Run the test files `tests` in a pytest child process with every launch in mode `name`; assert
    that they passed and that the mode ran launches, and return the finished process."""
    assert name in MODES, name
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests], cwd=ROOT,
                       env=dict(os.environ, **(env or {}), **{ENV: name}), capture_output=True, text=True,
                       timeout=3600)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and "failed" not in r.stdout
    m = re.search(rf"^launch mode {re.escape(name)}: (\d+) launches$", r.stdout, re.M)
    assert m and int(m.group(1)) > 0, f"mode {name} ran no launch:\n" + r.stdout[-3000:]
    return r


def _synchronous(launch: Launch) -> bool:
    """Can the launch run as an ordinary synchronous, non-cooperative one (what ptxjit.trace and the
    counting code run)?  The others launch as they are."""
    return launch.stream is None and not launch.cooperative and launch.cluster is None


# ------------------------------------------------------------------------------------------- the modes
@mode("trace")
def trace_every_launch(launch: Launch, proceed: Callable[..., None]) -> None:
    """Every launch through ptxjit.trace with every record type: traced launches compute what plain ones
    do, and each launch's counting run sized every record buffer exactly (records written == capacity,
    none dropped) -- except in kernels whose threads communicate through atomics, where a CAS retry loop
    may run a different number of times in the two runs."""
    if not _synchronous(launch):
        return proceed()
    k = launch.kernel
    t = ptxjit.trace(k, launch.grid, launch.block, launch.args, launch.shared_mem,
                     records=ptxjit.instrument.RECORD_TYPES, timeout=launch.timeout, checked=launch.checked,
                     unchecked=launch.unchecked, strict=False)
    if t.counts() != t.capacity() or any(t.dropped().values()):
        # only threads that communicate through atomics (a CAS retry loop, a flag another CTA sets)
        # may take other paths in the traced run than in the counting run
        assert any(i.opcode in ("atom", "red") for i in k.fn.instructions), \
            (k.name, t.counts(), t.capacity(), t.dropped())
    return None


@mode("patterns")
def count_patterns_of_every_launch(launch: Launch, proceed: Callable[..., None]) -> None:
    """Every launch on tier 0's counting code with the pattern accumulators in every CTA: it computes what
    plain code does, and each launch's pattern counts summarize consistently (every kernel's sites line
    up with the slots)."""
    if not _synchronous(launch):
        return proceed()
    from ptxjit.instrument.buffers import CountBuffers
    from ptxjit.instrument.patterns import summarize
    from ptxjit.instrument.probes import ProbeLaunch
    from ptxjit.runtime.launch import worker_count
    from ptxjit.tiers import counters

    k = launch.kernel
    g, b = launch.grid_dims, launch.block_dims
    counting = counters.Counting(counters.plan_of(k, b))
    cb = CountBuffers(counting.plan, worker_count(), g[0] * g[1] * g[2], b[0] * b[1] * b[2], patterns=True)
    # an instrumented launch: it does not go through the launch hooks again
    k(g, b, launch.args, launch.shared_mem, launch.timeout, launch.checked, launch.unchecked,
      ProbeLaunch(counting.patterns, cb.table))
    pc = summarize(cb.patterns, b)
    assert (pc.warps >= pc.warps_uniform).all() and (pc.ctas >= pc.ctas_uniform).all()
    assert (pc.classes.sum(axis=1) <= pc.requests).all(), k.name
    return None


def _tiered(launch: Launch) -> bool:
    """Does the launch reach the tiers (Kernel.launch_packed with tiers on)?  Not on a stream, not a
    cooperative or cluster launch (declared by the kernel or asked for), not under PTXJIT_CHECK or a
    distributed backend."""
    k = launch.kernel
    return (_synchronous(launch) and not k._declared_cluster and not k._auto_cooperative and tiers.enabled()
            and not config.CHECK.text() and not config.BACKEND.text())


def _checked_shape(launch: Launch) -> tuple[tuple[int, int, int], tuple[int, int, int], int] | None:
    """The launch's grid, block and dynamic shared memory where Kernel.__call__'s checks pass them; None
    where they raise (the launch then goes its own way and raises there)."""
    k = launch.kernel
    try:
        g, b = dims(launch.grid, "grid"), dims(launch.block, "block")
        check_launch_shape(k.name, g, b)
        if k._ntid_limits:
            k._check_ntid(b)
        sm = launch.shared_mem
        if not isinstance(sm, int | np.integer) or sm < 0:
            return None
        check_shared_memory(k.name, k.static_shared_size, int(sm), k._access)
    except (TypeError, ValueError):
        return None
    return g, b, int(sm)


def _tier_state(k, b: tuple[int, int, int], checked: bool) -> tiers.KernelTiers:
    """The kernel's tiers for this block shape, as a tiered launch finds or makes them."""
    states = k.tier_states
    st = states.get((b, checked))
    if st is None:
        st = states.setdefault((b, checked), tiers.KernelTiers(k, b, checked))
    return st


@mode("tier1")
def specialize_every_tiered_launch(launch: Launch, proceed: Callable[..., None]) -> None:
    """Every tiered launch on a tier-1 version specialized on that launch's own scalar parameters and
    grid (the constants folded in, and the bounds checks that rely on them): it computes what plain code
    does and faults where it does.  PTXJIT_TEST_TIER1_LOG names a file that gets one line per launch
    specialized (kernel, parameters folded in, grid)."""
    from ptxjit.runtime import launch as _launch
    from ptxjit.tiers.profile import Profile
    from ptxjit.tiers.runner import launch_context
    from ptxjit.tiers.specialize import from_profile

    shape = _checked_shape(launch) if _tiered(launch) else None
    if shape is None:
        return proceed()
    g, b, shared_mem = shape
    k, args = launch.kernel, launch.args
    checked = resolve_checked(launch.checked, launch.unchecked)
    values, ranges, patches = k._packer.pack(args, checked)  # the launch's own packing (and its errors)
    st = _tier_state(k, b, checked)
    prof = Profile()
    prof.record(st.cands, st.param_bytes(values, patches), (g, b, shared_mem))
    spec = from_profile(prof, st.cands)
    log = config.TEST_TIER1_LOG.text()
    if log:  # what ran specialized: the test that sets this counts it
        with open(log, "a") as f:
            f.write(f"{k.name} {len(spec.params)} {spec.grid}\n")
    t = st.__dict__.setdefault("_test_versions", {}).get(spec.key)
    if t is None:
        t = st._test_versions[spec.key] = st._translate(spec)
    gb: np.ndarray = k.module.globals
    with launch_context(k, args, gb):
        _launch.run_packed(t, k.name, g, b, k._plans[checked], values, ranges, patches,
                           gb.__array_interface__["data"][0], gb.nbytes, shared_mem, launch.timeout, k._range_names,
                           args, (args, gb))
    return None
