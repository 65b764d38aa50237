"""The stream scheduler: worker threads pull batches of CTAs of the kernel launches in flight, count
what they completed in per-worker FIFOs, and an aggregator turns those counts into launch completions.

* Distribution: a launch's grid is cut into batches of consecutive CTAs, sized from the measured cost
  of a CTA of that translation (a moving average of ns per CTA), aiming at ~0.5 ms per batch, but at
  least one batch per worker.  There is one queue of launches per stream priority; workers take the
  next batch from the most urgent non-empty queue and rotate it, so that batches of the launches in
  flight interleave.  Taking a batch is one lock round trip in Python; the CTAs of a batch run in
  one native call (the launch record's L_RANGED mode: the worker record names the batch).
* Completion: a worker adds the CTAs and batches it completed to its own counters per launch and
  appends the running totals to its FIFO (a deque: appending needs no lock).  Whichever worker gets
  the aggregator's lock drains every FIFO, subtracts what it had already seen from that worker for
  that launch, and adds the difference to the launch's totals; a launch whose batches have all come
  back is finished: its error (if any) becomes an exception and its `on_done` callback runs (the
  stream then starts its next operation).  A worker that finds the aggregator busy leaves its counts
  in its FIFO: the holder looks at the FIFOs again after releasing the lock.
* Errors and cancels: a launch's error word (L_ERROR) stops its running batches (the native code
  polls it); its batches not yet taken are claimed at once without running.
"""

from __future__ import annotations

import atexit
import itertools
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ptxjit import accounting
from ptxjit.jit.translate import Translation
from ptxjit.lower import abi
from ptxjit.runtime import launch as _launch
from ptxjit.runtime import watchdog

TARGET_BATCH_NS = 500_000  # aim: a batch of CTAs takes ~0.5 ms (long enough to amortize the Python step)
_COST_WEIGHT = 0.25  # weight of a new measurement in the moving average of ns per CTA
_MEMORY_SETS = 32  # worker memories a worker keeps (one per translation / block / shared size)
DRAIN_SECONDS = 5.0


@dataclass(eq=False, slots=True)
class Work:
    """One kernel launch on a stream."""

    tr: Translation
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    L: Any  # the launch record (ctypes int64 array) and its address
    lp: int
    keep: Any  # what the kernel's native code reads besides L: alive until the launch is done
    fault_info: tuple
    shared_bytes: int
    limit: float | None
    priority: int
    on_done: Callable[[Work, BaseException | None], None]
    context: Any = None  # entered when the launch starts, left when it ends (printf's known memory)
    nctas: int = 0
    nthreads: int = 0
    batch: int = 1
    nbatches: int = 0
    cursor: Any = None
    done_ctas: int = 0
    done_batches: int = 0
    finished: bool = False
    t_start: int = 0  # perf_counter_ns: submitted, first batch began, last batch ended
    t_first: int = 0
    t_end: int = 0
    token: int | None = None
    exc: BaseException | None = None  # raised in a worker outside the kernel (e.g. MemoryError)
    seq: int = field(default_factory=itertools.count().__next__)

    def cancel(self) -> None:
        watchdog.cancel(self.L, abi.ERR_CANCEL)


class Scheduler:
    def __init__(self) -> None:
        self.cv = threading.Condition(threading.Lock())
        self.queues: dict[int, deque[Work]] = {}
        self.order: list[int] = []  # priorities, most urgent (lowest) first
        self.fifos: list[deque] = []
        self.threads: list[threading.Thread] = []
        self.agg_lock = threading.Lock()
        self.seen: dict[tuple[int, int], tuple[int, int]] = {}
        self.cost: dict[tuple, float] = {}  # (translation, nthreads) -> ns per CTA
        self.inflight: set[Work] = set()
        self.closed = False
        self.trace: list | None = None  # (worker, kernel, launch seq, start ns, end ns) per batch, when a list
        self.nworkers = 0
        self.grow(_launch.worker_count())

    def grow(self, n: int) -> None:
        """Run at least n worker threads (never fewer: a launch in flight may count on them)."""
        with self.cv:
            while len(self.threads) < n:
                i = len(self.threads)
                self.fifos.append(deque())
                th = threading.Thread(target=self._worker, args=(i,), name=f"ptxjit-stream-{i}", daemon=True)
                self.threads.append(th)
                self.nworkers = len(self.threads)
                th.start()

    # ------------------------------------------------------------------ submitting
    def submit(self, w: Work) -> None:
        w.nctas = w.grid[0] * w.grid[1] * w.grid[2]
        w.nthreads = w.block[0] * w.block[1] * w.block[2]
        n = self.nworkers
        if w.nctas == 1:
            w.batch = w.nbatches = 1
        else:
            w.batch = batches_for(w.nctas, n, self.cost.get((id(w.tr), w.nthreads)))
            w.nbatches = -(-w.nctas // w.batch)
        w.cursor = itertools.count()
        w.t_start = time.perf_counter_ns()
        if w.context is not None:
            w.context.__enter__()
        if w.limit is not None:
            w.token = watchdog.get().add_deadline(time.monotonic() + w.limit, w.L)
        me = getattr(_tls, "worker", False) and _tls.next is None and not _tls.promised
        if w.nbatches == 1 and me and not self.closed and not any(self.queues.values()):
            # a worker submits (a stream's next launch, as the previous one finishes) a lone batch
            # while nothing else waits: it runs it next itself, without the queue's lock and wakeups
            self.inflight.add(w)
            next(w.cursor)
            _tls.next = w
            return
        with self.cv:
            if self.closed:  # the interpreter is exiting: claimed without running
                w.cancel()
            self.inflight.add(w)
            q = self.queues.get(w.priority)
            if q is None:
                q = self.queues[w.priority] = deque()
                self.order = sorted(self.queues)
            q.append(w)
            # a worker that submits (a stream's next launch, as the previous one finishes) takes a
            # batch itself next: waking another one for a lone batch would only move the GIL around
            # (once: a second launch it submits before it takes one gets its own wakeup)
            if me:
                _tls.promised = True
            wake = min(w.nbatches, n) - (1 if me else 0)
            if wake > 0:
                self.cv.notify(wake)

    def _take(self) -> tuple[Work, int, int] | None:
        """The next batch: (launch, first batch index, number of batches); with the lock held."""
        for p in self.order:
            q = self.queues[p]
            while q:
                w = q[0]
                bi = next(w.cursor)
                if bi >= w.nbatches:
                    q.popleft()
                    continue
                if w.L[abi.L_ERROR]:  # failed or cancelled: claim the rest without running it
                    q.popleft()
                    w.cursor = itertools.repeat(w.nbatches)
                    return w, bi, w.nbatches - bi
                if bi + 1 < w.nbatches:
                    q.rotate(-1)  # round robin over the launches in flight
                else:
                    q.popleft()
                return w, bi, 1
        return None

    # ------------------------------------------------------------------ workers
    def _worker(self, index: int) -> None:
        _tls.worker = True
        _tls.next = None
        _tls.promised = False  # this worker will take a batch from the queues next (submit counted on it)
        tls = _tls
        fifo = self.fifos[index]
        memories: dict[tuple, _launch._WorkerMemory] = {}
        counts: dict[Work, list[int]] = {}
        perf = time.perf_counter_ns
        cv = self.cv
        while True:
            tls.promised = False
            w = tls.next
            if w is not None:
                tls.next = None
                bi, nb = 0, 1
            else:
                with cv:
                    got = self._take()
                    while got is None:
                        if self.closed:
                            return
                        cv.wait()
                        got = self._take()
                w, bi, nb = got
            try:
                ctas = self._run_batch(w, bi, nb, index, memories, perf)
            except BaseException as e:  # noqa: BLE001 - the launch must still complete, with this error
                if w.exc is None:
                    w.exc = e
                w.cancel()
                ctas = 0
            c = counts.get(w)
            if c is None:
                if len(counts) > 16:  # forget finished launches
                    for old_w in [x for x in counts if x.finished]:
                        del counts[old_w]
                c = counts[w] = [0, 0]
            c[0] += ctas
            c[1] += nb
            fifo.append((w, c[0], c[1]))
            self.aggregate()

    def _run_batch(self, w: Work, bi: int, nb: int, index: int, memories: dict, perf) -> int:
        """Run batch bi of launch w on worker `index` (nb > 1: claim nb batches of a failed launch
        without running them); returns the CTAs completed."""
        ctas = 0
        if nb == 1 and not w.L[abi.L_ERROR]:
            start = bi * w.batch
            end = min(start + w.batch, w.nctas)
            tr = w.tr
            key = _launch._MemoryPool.key(tr, w.nthreads, w.shared_bytes, 1)  # what sizes the memory
            m = memories.get(key)
            if m is None:
                if len(memories) >= _MEMORY_SETS:
                    del memories[next(iter(memories))]
                m = memories[key] = _launch._WorkerMemory(tr, w.nthreads, w.shared_bytes, index)
            rec = m.record
            rec[abi.W_BSTART] = start
            rec[abi.W_BEND] = end
            t0 = perf()
            if not w.t_first:
                w.t_first = t0
            tr.native.worker(w.lp, m.address)
            t1 = perf()
            if w.L[abi.L_ERROR]:
                if tr.checked:  # the faults its stopped CTAs recorded must not stop the next batch
                    m.fault[:] = 0
            else:
                ctas = end - start
                ck = (id(tr), w.nthreads)
                per = (t1 - t0) / ctas
                old = self.cost.get(ck)
                self.cost[ck] = per if old is None else old + _COST_WEIGHT * (per - old)
            if self.trace is not None:
                self.trace.append((index, w.kernel, w.seq, t0, t1))
        return ctas

    # ------------------------------------------------------------------ aggregator
    def aggregate(self) -> None:
        """Drain the workers' FIFOs into the launches' totals; finish the launches that are done."""
        while True:
            if not self.agg_lock.acquire(blocking=False):
                return  # the holder looks at every FIFO again after it lets go
            finished: list[Work] = []
            try:
                seen = self.seen
                for i, fifo in enumerate(self.fifos):
                    while fifo:
                        w, ctas, batches = fifo.popleft()
                        k = (i, w.seq)
                        prev = seen.get(k, (0, 0))
                        seen[k] = (ctas, batches)
                        w.done_ctas += ctas - prev[0]
                        w.done_batches += batches - prev[1]
                        if w.done_batches == w.nbatches and not w.finished:
                            w.finished = True
                            for j in range(len(self.fifos)):
                                seen.pop((j, w.seq), None)
                            finished.append(w)
            finally:
                self.agg_lock.release()
            for w in finished:
                self._finish(w)
            if not any(self.fifos):
                return

    def _finish(self, w: Work) -> None:
        w.t_end = time.perf_counter_ns()
        accounting.ran((w.t_end - (w.t_first or w.t_start)) / 1e9)
        if w.token is not None:
            watchdog.get().remove_deadline(w.token)
        exc: BaseException | None = None
        try:
            if w.context is not None:
                w.context.__exit__(None, None, None)
            if w.exc is not None:
                exc = w.exc
            elif w.L[abi.L_ERROR]:
                exc = _launch.launch_exception(w.tr, w.kernel, w.L, w.grid, w.block, (w.t_end - w.t_start) / 1e9,
                                               w.limit, w.fault_info, w.shared_bytes)
        except Exception as e:  # noqa: BLE001 - reported at the stream's next synchronization
            exc = e
        self.inflight.discard(w)  # atomic (the GIL): no lock needed
        w.on_done(w, exc)

    # ------------------------------------------------------------------ shutdown
    def shutdown(self) -> None:
        """At exit: cancel what is in flight and wait (bounded) until no native code runs any more, so
        that the interpreter does not free memory a worker still uses."""
        with self.cv:
            works = list(self.inflight)
            self.closed = True
            self.cv.notify_all()
        for w in works:
            w.cancel()
        end = time.monotonic() + DRAIN_SECONDS
        while time.monotonic() < end and any(not w.finished for w in works):
            time.sleep(0.005)


_tls = threading.local()
_sched_lock = threading.Lock()
_scheduler: Scheduler | None = None


def get_scheduler() -> Scheduler:
    """The scheduler, started on first use with worker_count() threads; it grows when worker_count()
    grows (checked at most every 0.1 s: reading the setting costs a launch about a microsecond)."""
    global _scheduler, _checked_at
    s = _scheduler
    if s is None:
        with _sched_lock:
            if _scheduler is None:
                _scheduler = Scheduler()
            s = _scheduler
    now = time.monotonic()
    if now - _checked_at > 0.1:
        _checked_at = now
        n = _launch.worker_count()
        if n > s.nworkers:
            s.grow(n)
    return s


_checked_at = 0.0


def _at_exit() -> None:
    s = _scheduler
    if s is not None:
        s.shutdown()


def _after_fork_in_child() -> None:
    global _scheduler, _sched_lock
    _scheduler, _sched_lock = None, threading.Lock()  # threads do not survive fork


atexit.register(_at_exit)
os.register_at_fork(after_in_child=_after_fork_in_child)


def batches_for(nctas: int, nworkers: int, cost_ns: float | None) -> int:
    """Batch size for nctas CTAs over nworkers workers at cost_ns per CTA (None: unknown, the first
    launch of a translation: then as the synchronous path batches)."""
    if cost_ns:
        return max(1, min(math.ceil(nctas / nworkers), int(TARGET_BATCH_NS / cost_ns)))
    return max(1, min(64, nctas // (nworkers * 4) or 1))
