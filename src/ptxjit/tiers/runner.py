"""A launch run in batches of CTAs, so that it can move from tier 0 to tier 1 while it runs.

The launch record is packed in ranged mode (streams/launches.py pack_ranged, abi.L_RANGED): a native
call runs exactly the CTAs [W_BSTART, W_BEND) its worker record names and returns.  Every worker
takes the next batch from a shared counter and calls the native function of the *current* version:
tier 0 until tier 1 is ready, tier 1 after.  The swap happens between two batches of a worker, when
that worker is in no code at all (the bulk-synchronous barrier point of the design); CTAs are
independent, so a grid whose CTAs ran partly in one version and partly in the other gives the same
bits as a single-version run (both versions compute the same IEEE operations; only the schedule of
instructions differs).

The worker memory must fit both versions (their register-save, local, warp-exchange and tensor-core
scratch sizes may differ, and tier 1's are unknown until it is built): a worker that moves to tier 1
takes a second memory, sized for tier 1 (each worker's memory is private to it, so this needs no
coordination).
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field

from ptxjit.jit.translate import Translation
from ptxjit.lower import abi
from ptxjit.runtime import launch as _launch
from ptxjit.runtime import printf, watchdog
from ptxjit.runtime.supervise import supervised
from ptxjit.streams.launches import LaunchSpec, pack_ranged


@contextlib.contextmanager
def launch_context(kernel, args, gb) -> Iterator[None]:
    """Around a tiers launch (outside Kernel.__call__'s own path): wait for the legacy stream's work, and
    let printf's %s read the launch's arrays and the module's globals `gb`."""
    from ptxjit.streams import stream as streams

    if streams.BUSY:
        streams.wait_legacy()
    if not kernel._access.uses_printf:
        yield
        return
    with printf.known_memory([args[i] for i in kernel._range_params], gb):
        yield


def shared_bytes_of(t: Translation, dyn_smem: int) -> int:
    return t.shared.dynamic_offset + dyn_smem if dyn_smem else t.shared.static_size


@dataclass
class BatchLog:
    """What a batched run did: per batch (worker, tier, start ns, end ns), and the swap's moment."""

    batches: list[tuple[int, int, int, int]] = field(default_factory=list)
    swap_ns: int = 0
    swaps: int = 0


def run_batched(t0: Translation, current: Callable[[int], tuple[int, Translation]], kernel: str,
                grid: tuple[int, int, int], block: tuple[int, int, int], plan, values: list,
                patches: list | None, gaddr: int, gsize: int, dyn_smem: int, timeout: float | None,
                keep, log: BatchLog, spare: int = 0, ranges: list | None = None,
                range_names: list | None = None, args=None, probe_table=None,
                first: tuple[int, int, Translation] | None = None) -> None:
    """Run the launch in batches; `current(batches_done)` gives (tier, translation) for the next
    batch (it may change as the run goes; tier 0 gives t0).  `spare`: workers fewer than usual (a core
    left to tier 1's build, which is this launch's critical path).  A bounds-checked launch (`plan`
    checked, every version checked) gives `ranges` (ArgPacker.pack's range entries), `range_names`
    and `args`: a KernelFault names the argument an address lies in or near.  `probe_table`: the
    instrumented translations' (instrument/buffers.py); `first` (ctas, tier, translation): the first
    batch is CTAs [0, ctas) on that translation (tiers/counters.py: a counted launch's sampled CTAs)."""
    nctas = grid[0] * grid[1] * grid[2]
    nthreads = block[0] * block[1] * block[2]
    nworkers = max(1, min(_launch.worker_count() - spare, nctas))
    # finer than a plain launch's batches (16 per worker, not 4): the swap can only happen between two
    batch = max(1, min(64, nctas // (nworkers * 16) or 1))
    head = min(first[0], nctas) if first is not None else 0  # CTAs of the first batch, when it is special
    nbatches = (1 if head else 0) + -(-(nctas - head) // batch)
    spec = LaunchSpec(t0, kernel, grid, block, plan, values, ranges, patches, gaddr, gsize, dyn_smem, None,
                      range_names or [], args, keep, None)
    L, lp = pack_ranged(spec, nworkers + spare)  # %nsmid counts the spare worker that may join
    if probe_table is not None:
        L[abi.L_PROBE] = probe_table.__array_interface__["data"][0]
    shared_bytes = shared_bytes_of(t0, dyn_smem)
    key = _launch._MemoryPool.key(t0, nthreads, shared_bytes, nworkers)
    mems = _launch._pool_memory.take(t0, nthreads, shared_bytes, nworkers, key)
    # every memory of the launch: the pool's, then those workers took for tier 1 (kept alive here; all of
    # them are abandoned with the launch record should a worker still run after a cancel)
    held: list[_launch._WorkerMemory] = list(mems)
    cursor = itertools.count()
    done = itertools.count()  # batches finished (next() is atomic under the GIL)
    ndone = [0]  # the latest count taken from `done`
    failed: list[Translation] = []
    perf = time.perf_counter_ns
    last_tier = [-1]
    futures: list[Future] = []  # supervised's run.futures once the run starts (extended, never rebound)
    joined = [spare == 0]  # the spare worker joins once tier 1 runs (its build no longer needs the core)

    def join_spare(tr: Translation) -> None:
        joined[0] = True
        m = _launch._WorkerMemory(tr, nthreads, shared_bytes_of(tr, dyn_smem), nworkers)
        held.append(m)
        futures.append(_launch._get_pool(nworkers).submit(work, m, tr))

    def work(m0: _launch._WorkerMemory, sized_for: Translation = t0) -> None:
        m = m0
        mem_for: dict[int, _launch._WorkerMemory] = {id(sized_for): m0}
        while not L[abi.L_ERROR]:
            bi = next(cursor)
            if bi >= nbatches:
                return
            tier, tr = (first[1], first[2]) if head and bi == 0 else current(ndone[0])
            if tier != last_tier[0]:
                if last_tier[0] >= 0 and tier > last_tier[0]:
                    log.swaps += 1
                    log.swap_ns = perf()
                last_tier[0] = tier
            if tier > 0 and not joined[0]:
                join_spare(tr)
            m = mem_for.get(id(tr))
            if m is None:
                m = mem_for[id(tr)] = _launch._WorkerMemory(tr, nthreads, shared_bytes_of(tr, dyn_smem),
                                                             int(m0.record[abi.W_ID]))
                held.append(m)
            rec = m.record
            start = 0 if head and bi == 0 else head + (bi - (1 if head else 0)) * batch
            rec[abi.W_BSTART] = start
            rec[abi.W_BEND] = head if head and bi == 0 else min(start + batch, nctas)
            a = perf()
            tr.native.worker(lp, m.address)
            b = perf()
            if L[abi.L_ERROR] and not failed:
                failed.append(tr)
            log.batches.append((int(rec[abi.W_ID]), tier, a, b))
            ndone[0] = next(done) + 1

    limit = watchdog.timeout_seconds(timeout)

    def give_back() -> None:
        _launch._pool_memory.give(t0, nthreads, shared_bytes, mems, key)

    # the watchdog, Ctrl-C, cancel-and-drain, and the memory's return or abandonment: runtime/supervise.py
    with supervised(L, limit, held, keep, kernel, t0.checked, give_back) as run:
        futures = run.futures
        if nworkers > 1:
            pool = _launch._get_pool(nworkers - 1)
            futures += [pool.submit(work, m) for m in mems[1:]]
        work(mems[0])
        while any(not f.done() for f in futures):  # the spare worker may join while we wait
            _launch._wait_workers(futures)
        for f in futures:
            f.result()  # an exception outside the kernel (MemoryError...) is the launch's
        run.settled = True
    t_start = run.started
    if L[abi.L_ERROR]:
        tr = failed[0] if failed else t0
        info = ((_launch._packed_fault_info, L, plan, range_names, args) if plan.checked
                else (_launch._given_fault_info, None, None))
        raise _launch.launch_exception(tr, kernel, L, grid, block, time.monotonic() - t_start, limit, info,
                                       shared_bytes_of(tr, dyn_smem))
