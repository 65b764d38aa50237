"""The node side: one Ray actor per node runs its share of a launch's CTAs with ptxjit's native code.

Each actor keeps its own ptxjit Modules (keyed by the PTX text's digest; the text comes once, through
the object store), so each node translates a kernel once and reuses the translation.  A share of the
grid runs as one launch record in ranged mode (abi.L_RANGED, as stream batches do): the actor's
threads pull sub-ranges [W_BSTART, W_BEND) of its CTAs from a shared cursor and run each in one native
call without the GIL.  What comes back: per thread the CTAs it completed (the actor's completion count
is their sum), the byte changes of the buffers the kernel may write (changes.py), the delta buffers of
result-unused atomic adds, and the kernel's error if it raised one.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ptxjit.distributed.changes import Changes, diff
from ptxjit.lower import abi
from ptxjit.runtime import launch as _launch
from ptxjit.runtime import printf, watchdog
from ptxjit.streams.launches import LaunchSpec, pack_ranged

_MEMORY_SETS = 16  # worker memory sets an actor keeps (one per translation / block / shared size)


@dataclass
class Job:
    """One actor's share of a launch (pickled to the actor; arrays travel as object-store refs)."""

    digest: str
    ptx: list  # [ObjectRef of the PTX text]: nested, so that Ray does not fetch it unless needed
    fmad: bool
    module_name: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    start: int  # the CTAs [start, end) of the grid, linear index
    end: int
    # per argument: ("val", value) | ("in", [ref or array]) | ("out", [ref or array])
    # | ("delta", shape, dtype, fortran order, dtype of the adds)
    args: list
    globals_ref: list  # [ref or array] of the module's globals buffer, or []
    shared_mem: int
    timeout: float | None
    checked: bool


@dataclass
class Result:
    ctas: int  # CTAs completed (sum of per_thread)
    per_thread: list[int]
    changes: dict[int, Changes] = field(default_factory=dict)  # argument index -> written bytes
    deltas: dict[int, np.ndarray] = field(default_factory=dict)  # argument index -> sum of its adds
    globals_changes: Changes | None = None
    error: tuple[str, str, dict] | None = None  # (exception class name, message, its simple attributes)
    node: str = ""
    t_run: float = 0.0  # seconds in native code (wall, the actor's threads together)
    t_total: float = 0.0  # seconds in the actor: fetching, translating, running, diffing
    translated: bool = False  # this job translated the kernel (a cold cache on this node)


class Node:
    """The actor's state (ray.remote wraps this class in driver.py)."""

    def __init__(self, threads: int | None = None) -> None:
        self.threads = max(1, threads or os.cpu_count() or 1)
        self.modules: dict[str, object] = {}
        self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="ptxjit-node") if self.threads > 1 else None
        self.host = socket.gethostname()
        self.memory: dict[tuple, list] = {}  # worker memory per translation shape, for this actor's threads

    def info(self) -> dict:
        return {"host": self.host, "pid": os.getpid(), "threads": self.threads}

    def _module(self, job: Job):
        import ray

        from ptxjit.api import Module

        m = self.modules.get(job.digest)
        if m is None:
            m = Module(ray.get(job.ptx[0]), job.module_name, fmad=job.fmad)
            self.modules[job.digest] = m
        return m

    def run(self, job: Job) -> Result:
        t0 = time.perf_counter()
        try:
            return self._run(job, t0)
        except Exception as e:  # noqa: BLE001 - reported to the driver, which raises it
            return Result(0, [], error=_error(e), node=self.host,
                          t_total=time.perf_counter() - t0)

    def _run(self, job: Job, t0: float) -> Result:
        import ray

        module = self._module(job)
        k = module.get_function(job.kernel)
        def fetch(box: list) -> np.ndarray:
            return box[0] if isinstance(box[0], np.ndarray) else ray.get(box[0])

        values: list = []
        inputs: dict[int, np.ndarray] = {}
        outs: dict[int, np.ndarray] = {}
        deltas: dict[int, tuple[np.ndarray, np.dtype]] = {}
        for i, a in enumerate(job.args):
            kind = a[0]
            if kind == "val":
                values.append(a[1])
            elif kind == "in":  # read-only: the object store's (read-only, zero-copy) array serves
                values.append(fetch(a[1]))
            elif kind == "out":
                src = fetch(a[1])
                inputs[i] = src
                outs[i] = src.copy(order="A")  # writable; the input stays to diff against
                values.append(outs[i])
            else:  # "delta": this node's adds start from zero; the driver adds them to the input
                arr = np.zeros(a[1], dtype=a[2], order="F" if a[3] else "C")
                deltas[i] = (arr, np.dtype(a[4]))
                values.append(arr)
        gin = None
        if job.globals_ref:
            gin = fetch(job.globals_ref)
            module.globals[:] = gin
        args = tuple(values)
        checked = job.checked
        vals, ranges, patches = k._packer.pack(args, checked)
        translated = (job.block, checked) not in k._tcache
        t = k._tcache.get((job.block, checked))
        if t is None:
            t = k._tcache[(job.block, checked)] = module.translation(k.fn, job.block, checked)
        g = module.globals
        spec = LaunchSpec(t, k.name, job.grid, job.block, k._plans[checked], vals, ranges, patches,
                          g.ctypes.data, g.nbytes, job.shared_mem, job.timeout, k._range_names, args, (args, g),
                          ([args[i] for i in k._range_params], g) if k._access.uses_printf else None)
        per_thread, error, t_run = self._execute(spec, job)
        res = Result(sum(per_thread), per_thread, node=self.host, t_run=t_run, translated=translated)
        if error is not None:
            res.error = _error(error)
        else:
            for i, out in outs.items():
                res.changes[i] = diff(inputs[i], out)
            for i, (arr, dt) in deltas.items():
                res.deltas[i] = arr.reshape(-1, order="A").view(np.uint8).view(dt)
            if gin is not None:
                res.globals_changes = diff(gin, module.globals)
        res.t_total = time.perf_counter() - t0
        return res

    def _execute(self, spec: LaunchSpec, job: Job) -> tuple[list[int], BaseException | None, float]:
        """Run CTAs [job.start, job.end) on this actor's threads; returns the CTAs each completed."""
        tr = spec.tr
        n = job.end - job.start
        nthreads = spec.block[0] * spec.block[1] * spec.block[2]
        nworkers = max(1, min(self.threads, n))
        L, lp = pack_ranged(spec, nworkers)
        shared_bytes = tr.shared.dynamic_offset + spec.dyn_smem if spec.dyn_smem else tr.shared.static_size
        # sub-ranges of about a quarter of a thread's share: the threads even out uneven CTAs
        step = max(1, n // (nworkers * 4))
        cursor = iter(range(job.start, job.end, step))
        lock = threading.Lock()
        counts = [0] * nworkers
        limit = spec.limit
        token = watchdog.get().add_deadline(time.monotonic() + limit, L) if limit is not None else None

        key = _launch._MemoryPool.key(tr, nthreads, shared_bytes, 1)
        mems = self.memory.get(key)
        if mems is None:
            if len(self.memory) >= _MEMORY_SETS:
                del self.memory[next(iter(self.memory))]
            mems = self.memory[key] = []
        while len(mems) < nworkers:  # an actor runs one job at a time: its threads' memory is reused
            mems.append(_launch._WorkerMemory(tr, nthreads, shared_bytes, len(mems)))

        def work(w: int) -> None:
            m = mems[w]
            rec = m.record
            while not L[abi.L_ERROR]:
                with lock:
                    s = next(cursor, None)
                if s is None:
                    return
                e = min(s + step, job.end)
                rec[abi.W_BSTART] = s
                rec[abi.W_BEND] = e
                tr.native.worker(lp, m.address)
                if not L[abi.L_ERROR]:
                    counts[w] += e - s

        t0 = time.perf_counter()
        ctx = printf.known_memory(*spec.printf_objs) if spec.printf_objs is not None else contextlib.nullcontext()
        try:
            ctx.__enter__()
            if self.pool is not None and nworkers > 1:
                futs = [self.pool.submit(work, w) for w in range(1, nworkers)]
                work(0)
                for f in futs:
                    f.result()
            else:
                work(0)
        finally:
            ctx.__exit__(None, None, None)
            if token is not None:
                watchdog.get().remove_deadline(token)
        t_run = time.perf_counter() - t0
        err = None
        if L[abi.L_ERROR]:
            if tr.checked:  # the faults its stopped CTAs recorded must not stop the next launch
                for m in mems:
                    m.fault[:] = 0
            err = _launch.launch_exception(tr, spec.kernel, L, spec.grid, spec.block, t_run, limit,
                                           (_launch._packed_fault_info, L, spec.plan, spec.range_names, spec.args),
                                           shared_bytes)
        return counts, err, t_run


def _error(e: BaseException) -> tuple[str, str, dict]:
    attrs = {k: v for k, v in vars(e).items() if isinstance(v, int | float | str | tuple | type(None))}
    return type(e).__name__, str(e), attrs
