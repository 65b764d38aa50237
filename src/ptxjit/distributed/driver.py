"""The driver side: actors, splitting a launch, shipping arguments, merging results, statistics."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import ray

from ptxjit import config
from ptxjit import errors as _errors
from ptxjit.api import Kernel, Module
from ptxjit.distributed import changes as _changes
from ptxjit.distributed.analysis import DistributionRefused, Plan, plan_kernel
from ptxjit.distributed.node import Job, Node, Result
from ptxjit.runtime import watchdog
from ptxjit.runtime.args import check_launch_shape, check_shared_memory, dims, resolve_checked
from ptxjit.runtime.memory import DeviceArray, Pointer

_NodeActor = ray.remote(Node)


@dataclass
class LaunchStats:
    """One distributed launch."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    actors: int
    ctas: list[int]  # CTAs given to each actor
    completed: list[int]  # CTAs each actor reported completed (per node: the sum of its threads')
    per_thread: list[list[int]]
    bytes_in: int  # argument bytes the actors fetched from the object store (each actor its copy)
    bytes_out: int  # bytes the actors returned (changes and deltas)
    t_total: float  # seconds, driver: submit to merged
    t_actor: list[float]  # seconds inside each actor
    t_run: list[float]  # seconds of native code in each actor
    t_merge: float
    translated: list[bool] = field(default_factory=list)  # per actor: this launch translated the kernel

    @property
    def total_completed(self) -> int:
        return sum(self.completed)


class _Cluster:
    def __init__(self, actors: list, threads: list[int], started_ray: bool) -> None:
        self.actors = actors
        self.threads = threads
        self.started_ray = started_ray
        self.ptx_refs: dict[str, object] = {}  # module digest -> ObjectRef of its PTX text


_lock = threading.Lock()
_cluster: _Cluster | None = None
_stats: list[LaunchStats] = []
_MAX_STATS = 1000


def init(address: str | None = None, actors: int | None = None, threads: int | None = None,
         **ray_kwargs) -> list[dict]:
    """Connect to Ray (`ray.init(address, ...)` unless it is already initialized; no address: a local
    cluster) and start the actors: `actors` of them spread over the nodes, or one per alive node when
    None, each running `threads` native threads (default: its node's CPUs divided among the actors on
    it).  Returns each actor's host, process and threads."""
    global _cluster
    with _lock:
        if _cluster is not None:
            _shutdown_locked()
        started = False
        if not ray.is_initialized():
            kw = dict(ray_kwargs)
            if address is None:
                kw.setdefault("num_cpus", os.cpu_count() or 1)
                kw.setdefault("include_dashboard", False)
            ray.init(address=address, **kw)
            started = True
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        if actors is None:
            opts = [dict(scheduling_strategy=ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
                n["NodeID"], soft=False)) for n in nodes]
            per_node = [threads or max(1, int(n.get("Resources", {}).get("CPU", 1))) for n in nodes]
        else:
            if actors < 1:
                raise ValueError(f"actors must be >= 1, got {actors}")
            cpus = sum(int(n.get("Resources", {}).get("CPU", 1)) for n in nodes) or 1
            opts = [dict(scheduling_strategy="SPREAD") for _ in range(actors)]
            per_node = [threads or max(1, cpus // actors)] * actors
        # num_cpus=0: the actors must start even where they outnumber the cluster's CPUs (a test's
        # local cluster); their native threads are what uses the cores
        handles = [_NodeActor.options(num_cpus=0, **o).remote(t) for o, t in zip(opts, per_node, strict=True)]
        infos = ray.get([h.info.remote() for h in handles])
        _cluster = _Cluster(handles, per_node, started)
        return infos


def shutdown() -> None:
    """Stop the actors (and Ray, if init started it)."""
    with _lock:
        _shutdown_locked()


def _shutdown_locked() -> None:
    global _cluster
    c = _cluster
    _cluster = None
    if c is None:
        return
    for a in c.actors:
        ray.kill(a)
    if c.started_ray:
        ray.shutdown()


def stats() -> list[LaunchStats]:
    """The recent distributed launches, oldest first (at most 1000)."""
    return list(_stats)


def clear_stats() -> None:
    _stats.clear()


def _get_cluster() -> _Cluster:
    c = _cluster
    if c is None:
        init(actors=config.ray_actors(), address=config.RAY_ADDRESS.raw() or None)
        c = _cluster
        assert c is not None
    return c


class DistributedKernel:
    """A kernel whose launches are spread over the actors: `k(grid, block, args)`, synchronous."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.name = kernel.name
        self.plan: Plan = plan_kernel(kernel.module.ir, kernel.fn, kernel._access)

    def __call__(self, grid, block, args=(), shared_mem: int = 0, timeout: float | None = None,
                 checked: bool | None = None, unchecked: bool = False) -> None:
        launch(self.kernel, grid, block, args, shared_mem, timeout, checked, unchecked, self.plan)


def kernel(module_or_ptx: Module | str | bytes, name: str) -> DistributedKernel:
    """Kernel `name` of a Module (or PTX text), launched across the cluster.  Raises
    DistributionRefused at once when its CTAs communicate in a way that cannot be split."""
    m = module_or_ptx if isinstance(module_or_ptx, Module) else Module(module_or_ptx)
    dk = DistributedKernel(m.get_function(name))
    dk.plan.check()
    return dk


_plans: dict[int, tuple[Kernel, Plan]] = {}


def plan_for(k: Kernel) -> Plan:
    got = _plans.get(id(k))
    if got is None or got[0] is not k:
        got = _plans[id(k)] = (k, plan_kernel(k.module.ir, k.fn, k._access))
    return got[1]


def launch(k: Kernel, grid, block, args=(), shared_mem: int = 0, timeout: float | None = None,
           checked: bool | None = None, unchecked: bool = False, plan: Plan | None = None) -> None:
    """Run one launch of k across the actors and merge the results into `args`' arrays."""
    plan = plan or plan_for(k)
    plan.check()
    g, b = dims(grid, "grid"), dims(block, "block")
    check_launch_shape(k.name, g, b)
    if k._ntid_limits:
        k._check_ntid(b)
    if not isinstance(shared_mem, int | np.integer) or shared_mem < 0:
        raise ValueError(f"shared_mem must be a non-negative int, got {shared_mem!r}")
    shared_mem = int(shared_mem)
    check_shared_memory(k.name, k._static_shared, shared_mem, k._access)
    checked = resolve_checked(checked, unchecked)
    limit = watchdog.timeout_seconds(timeout)
    args = tuple(args)
    k._packer.pack(args, checked)  # the argument checks of a local launch, here rather than on every node
    c = _get_cluster()
    t0 = time.perf_counter()
    specs, arrays, bytes_each = _ship_args(k, plan, args)
    gref: list = []
    module = k.module
    if module.globals.nbytes:
        gref = _ref(module.globals)
        bytes_each += module.globals.nbytes
    ptx_ref = c.ptx_refs.get(module.ptx_digest)
    if ptx_ref is None:
        ptx_ref = c.ptx_refs[module.ptx_digest] = ray.put(module.source_text)
    nctas = g[0] * g[1] * g[2]
    nact = min(len(c.actors), nctas)
    # an even split in proportion to each actor's threads: consecutive CTAs stay together (locality)
    weights = np.array(c.threads[:nact], dtype=np.float64)
    bounds = np.round(np.concatenate(([0], np.cumsum(weights))) / weights.sum() * nctas).astype(int)
    jobs = [Job(module.ptx_digest, [ptx_ref], module.fmad, module.name, k.name, g, b, int(bounds[i]),
                int(bounds[i + 1]), specs, gref, int(shared_mem), limit, checked) for i in range(nact)]
    try:
        results: list[Result] = ray.get([a.run.remote(j) for a, j in zip(c.actors, jobs, strict=False)])
    except ray.exceptions.RayError as e:  # an actor died (its node went away, out of memory...)
        raise RuntimeError(f"kernel '{k.name}': a Ray actor failed during the launch ({type(e).__name__}: "
                           f"{str(e)[:300]}); pd.init() starts fresh actors") from e
    t1 = time.perf_counter()
    for i, r in enumerate(results):
        if r.error is not None:
            raise _rebuild(r.error, k.name, i, r.node)
    bytes_out = 0
    for r in results:  # actor order = CTA order: a later CTA's write wins, as in one process
        for i, ch in r.changes.items():
            _changes.apply(arrays[i], ch)
            bytes_out += ch.size
        if r.globals_changes is not None:
            _changes.apply(module.globals, r.globals_changes)
            bytes_out += r.globals_changes.size
    for i, dt in plan.delta.items():
        if i not in arrays:
            continue
        target = arrays[i].reshape(-1, order="A").view(np.uint8).view(dt)
        for r in results:
            d = r.deltas[i]
            target += d  # integers wrap as the GPU's do; floats: input + node 0's sum + node 1's ...
            bytes_out += d.nbytes
    t2 = time.perf_counter()
    done = [r.ctas for r in results]
    if sum(done) != nctas:
        raise RuntimeError(f"kernel '{k.name}': the actors completed {sum(done)} CTAs of {nctas}")
    _stats.append(LaunchStats(k.name, g, b, nact, [j.end - j.start for j in jobs], done,
                              [r.per_thread for r in results], bytes_each * nact, bytes_out, t2 - t0,
                              [r.t_total for r in results], [r.t_run for r in results], t2 - t1,
                              [r.translated for r in results]))
    if len(_stats) > _MAX_STATS:
        del _stats[: len(_stats) - _MAX_STATS]


def _ship_args(k: Kernel, plan: Plan, args: tuple) -> tuple[list, dict[int, np.ndarray], int]:
    """Per argument what the actors get; the arrays merged into (by index); bytes each actor fetches."""
    specs: list = []
    arrays: dict[int, np.ndarray] = {}
    nbytes = 0
    seen: list[tuple[int, np.ndarray]] = []
    for i, v in enumerate(args):
        p = k.fn.params[i]
        where = f"kernel '{k.name}' argument {i} ('{p.name}')"
        if isinstance(v, Pointer):
            if v.address:
                raise DistributionRefused(f"{where}: a raw address (ptxjit.Pointer) cannot travel to another "
                                          "machine; pass the NumPy array")
            specs.append(("val", v))
            continue
        if isinstance(v, DeviceArray):
            v = v.array
        if not isinstance(v, np.ndarray):
            specs.append(("val", v))
            continue
        fl = v.flags
        if not (fl.c_contiguous or fl.f_contiguous):
            raise TypeError(f"{where}: array must be contiguous (use np.ascontiguousarray)")
        for j, other in seen:
            if (i in plan.written or i in plan.delta or j in plan.written or j in plan.delta) \
                    and np.shares_memory(v, other):
                raise DistributionRefused(f"{where} overlaps argument {j}: each would be merged apart")
        seen.append((i, v))
        if i in plan.delta:
            dt = plan.delta[i]
            if v.nbytes % dt.itemsize:
                raise TypeError(f"{where}: takes atomic adds of {dt} but its {v.nbytes} bytes are not a "
                                f"multiple of {dt.itemsize}")
            if not fl.writeable:
                raise TypeError(f"{where}: the array is read-only, and the kernel adds into it")
            specs.append(("delta", v.shape, v.dtype.str, bool(fl.f_contiguous and not fl.c_contiguous), dt.str))
            arrays[i] = v
        elif i in plan.written:
            if not fl.writeable:
                raise TypeError(f"{where}: the array is read-only, and the kernel may write through it")
            specs.append(("out", _ref(v)))
            arrays[i] = v
            nbytes += v.nbytes
        else:
            specs.append(("in", _ref(v)))
            nbytes += v.nbytes
    return specs, arrays, nbytes


INLINE_BYTES = 64 * 1024  # smaller arrays travel inside the job: a ray.put costs about a millisecond


def _ref(a: np.ndarray) -> list:
    """[ObjectRef] of a large array, put once for every actor; [a copy] of a small one, pickled with each
    job.  (Nested in a list: Ray then does not fetch it before the actor asks for it.)"""
    return [ray.put(a)] if a.nbytes > INLINE_BYTES else [a.copy(order="A")]


def _rebuild(error: tuple[str, str, dict], kernel: str, actor: int, node: str) -> BaseException:
    """The actor's exception as the driver raises it: the same ptxjit class where there is one."""
    name, msg, attrs = error
    cls = getattr(_errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        cls = {"ValueError": ValueError, "TypeError": TypeError, "KeyError": KeyError}.get(name, RuntimeError)
    text = f"{msg} [kernel '{kernel}', actor {actor} on {node}]"
    e = cls.__new__(cls)
    BaseException.__init__(e, text)
    e.__dict__.update(attrs)  # kernel, cta, thread, where...: as the exception had them on the node
    return e
