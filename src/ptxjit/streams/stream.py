"""Streams and events with CUDA's ordering rules, on the scheduler's launch completions.

A stream runs its operations one after the other: kernel launches (batches on the scheduler's
workers), host functions and copies (on one host thread), event records and event waits (at once,
when the stream reaches them).  The legacy default stream (Stream.null) waits for the work already
in every blocking stream, and a blocking stream's work waits for the null stream's; a
`non_blocking=True` stream does neither.  A failed kernel's exception is kept on its stream (sticky:
the stream skips its later launches, copies and host functions) until a synchronization point of that
stream raises it once.
"""

from __future__ import annotations

import atexit
import itertools
import os
import queue
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ptxjit.runtime.memory import DeviceArray
from ptxjit.streams.launches import LaunchSpec, make_work
from ptxjit.streams.scheduler import DRAIN_SECONDS, Work, get_scheduler

KERNEL, HOST, RECORD, WAIT = range(4)
_NEVER = 1 << 62

_lock = threading.Lock()
_cv = threading.Condition(_lock)
# streams with operations not yet completed (this also keeps them alive); Kernel.__call__ without
# a stream reads it: a synchronous launch on the legacy stream first waits for the blocking streams
BUSY: set[Stream] = set()
_blocked: set[Stream] = set()  # streams whose next operation waits for another stream


@dataclass(eq=False)
class _Op:
    kind: int
    payload: Any = None
    deps: list[tuple[Stream, int]] = field(default_factory=list)
    seq: int = 0


class Stream:
    """An in-order queue of work.  `priority`: lower numbers are more urgent (as in CUDA): their
    batches are taken first.  `non_blocking`: no implicit ordering with the legacy default stream."""

    null: Stream  # the legacy default stream (set below)

    def __init__(self, priority: int = 0, non_blocking: bool = False, *, _null: bool = False) -> None:
        """A new stream (cupy.cuda.Stream / torch.cuda.Stream); `Stream.null` is the legacy default one."""
        if isinstance(priority, bool) or not isinstance(priority, int | np.integer):
            raise TypeError(f"Stream priority must be an int, got {priority!r}")
        self.priority = int(priority)
        self.non_blocking = bool(non_blocking)
        self.is_null = _null
        self._pending: deque[_Op] = deque()  # appended by enqueuers (under _elock), taken under _lock
        self._elock = threading.Lock()  # orders the enqueuing threads only: workers never take it
        self._active: _Op | None = None
        self._seq = itertools.count(1)
        self._enqueued = 0  # sequence number of the last operation enqueued / completed
        self._completed = 0
        self._cancel_upto = 0  # operations up to this one are skipped (Ctrl-C in synchronize)
        self._error: BaseException | None = None
        self._graph = None  # the graph being captured (streams/graph.py)
        self._wake_at = _NEVER  # a waiter wants to hear when this operation has completed

    def __repr__(self) -> str:
        kind = "null" if self.is_null else f"priority={self.priority}, non_blocking={self.non_blocking}"
        return f"<ptxjit.Stream {kind}>"

    # ---------------------------------------------------------------- public API
    def synchronize(self) -> None:
        """Wait for every operation enqueued so far; raise a kernel's error kept on this stream.  (The
        legacy stream also waits for the blocking streams' work, as its next operation would.)"""
        targets = [(self, self._enqueued)]
        if self.is_null:
            targets += [(s, s._enqueued) for s in list(BUSY) if not s.non_blocking and s is not self]
        _wait(targets)
        _raise_errors([self])

    def query(self) -> bool:
        """Whether every operation enqueued so far has completed."""
        return self._completed >= self._enqueued

    def wait_event(self, event: Event) -> None:
        """Later work of this stream waits until the event's last record has completed."""
        if self._graph is not None:
            self._graph.add(lambda s, e=event: s.wait_event(e))
            return
        rec = event._rec
        if rec is not None:
            _enqueue(self, _Op(WAIT, deps=[rec]))

    def launch_host_func(self, fn: Callable[[Any], Any], arg: Any = None) -> None:
        """Run fn(arg) on the host thread once the work enqueued before has completed; later work waits
        for it.  An exception it raises is kept like a kernel's."""
        if not callable(fn):
            raise TypeError(f"launch_host_func needs a callable, got {fn!r}")
        if self._graph is not None:
            self._graph.add(lambda s, f=fn, a=arg: s.launch_host_func(f, a))
            return
        _enqueue(self, _Op(HOST, (fn, arg)))

    def record(self, event: Event | None = None) -> Event:
        """Record an event (a new one unless given) on this stream."""
        event = event if event is not None else Event()
        event.record(self)
        return event

    def capture(self):
        """`with s.capture() as g:` records the work enqueued on s into graph g instead of running it;
        `g.launch(stream)` replays it."""
        from ptxjit.streams.graph import capture

        return capture(self)

    @property
    def done(self) -> bool:
        """Whether all work enqueued so far has completed (CuPy's Stream.done)."""
        return self.query()


Stream.null = Stream(_null=True)


class Event:
    """A point in a stream: `record(stream)` places it after the work enqueued there so far."""

    def __init__(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False) -> None:
        """An event (cupy.cuda.Event); `interprocess=True` is refused (one process owns all memory here)."""
        if interprocess:
            raise ValueError("ptxjit events cannot be shared between processes")
        self.disable_timing = bool(disable_timing)
        self._rec: tuple[Stream, int] | None = None
        self._gen = 0
        self._t: int | None = None  # time.perf_counter_ns() when the stream reached the record

    def record(self, stream: Stream | None = None) -> None:
        """Place the event after the work enqueued on `stream` so far (default: the legacy stream)."""
        s = stream if stream is not None else Stream.null
        if not isinstance(s, Stream):
            raise TypeError(f"Event.record needs a ptxjit.Stream, got {s!r}")
        if s._graph is not None:
            s._graph.add(lambda st, e=self: e.record(st))
            return
        self._gen += 1
        self._t = None
        self._rec = (s, _enqueue(s, _Op(RECORD, (self, self._gen))))

    def query(self) -> bool:
        """Whether the work before the last record has completed (True if never recorded)."""
        rec = self._rec
        return rec is None or rec[0]._completed >= rec[1]

    @property
    def done(self) -> bool:
        """Whether the work before the last record has completed (CuPy's Event.done)."""
        return self.query()

    def synchronize(self) -> None:
        """Wait for the last record; raise a kernel error kept on its stream."""
        rec = self._rec
        if rec is None:
            return
        _wait([rec])
        _raise_errors([rec[0]])


def get_elapsed_time(start: Event, end: Event) -> float:
    """Milliseconds between two completed event records (like cupy.cuda.get_elapsed_time)."""
    for e in (start, end):
        if e.disable_timing:
            raise ValueError("an event made with disable_timing=True has no time")
        if e._rec is None:
            raise ValueError("get_elapsed_time: the event was never recorded")
        if not e.query() or e._t is None:
            raise RuntimeError("get_elapsed_time: the event has not completed yet (synchronize it first)")
    return (end._t - start._t) / 1e6  # type: ignore[operator]


def synchronize() -> None:
    """Wait for the work of every stream; raise the first kernel error kept on one."""
    with _lock:
        streams = list(BUSY) + list(_errored)
    targets = [(s, s._enqueued) for s in streams]
    _wait(targets)
    _raise_errors([s for s, _ in targets])


def copy_async(dst, src, stream: Stream | None = None) -> None:
    """Copy array src into dst (NumPy arrays or DeviceArrays of equal size) in stream order."""
    d = dst.array if isinstance(dst, DeviceArray) else dst
    s_ = src.array if isinstance(src, DeviceArray) else src
    if not isinstance(d, np.ndarray) or not isinstance(s_, np.ndarray):
        raise TypeError(f"copy_async copies between arrays, got {type(dst).__name__} <- {type(src).__name__}")
    if d.nbytes != s_.nbytes:
        raise ValueError(f"copy_async: destination has {d.nbytes} bytes, source {s_.nbytes}")
    st = stream if stream is not None else Stream.null
    if st._graph is not None:
        st._graph.add(lambda s, a=dst, b=src: copy_async(a, b, s))
        return
    _enqueue(st, _Op(HOST, (_copy, (d, s_))))


def _copy(pair: tuple[np.ndarray, np.ndarray]) -> None:
    d, s = pair
    if d.dtype == s.dtype and d.shape == s.shape:
        np.copyto(d, s)
    else:  # same bytes, another view (CUDA copies bytes)
        d.reshape(-1).view(np.uint8)[:] = s.reshape(-1).view(np.uint8)


def launch(stream: Stream, spec: LaunchSpec) -> None:
    """Enqueue a kernel launch (Kernel.__call__ with stream=)."""
    if not isinstance(stream, Stream):
        raise TypeError(f"stream= must be a ptxjit.Stream, got {stream!r}")
    if stream._graph is not None:
        stream._graph.add(lambda s, sp=spec: launch(s, sp))
        return
    sched = get_scheduler()
    op = _Op(KERNEL)
    op.payload = make_work(spec, sched.nworkers, stream.priority, lambda w, exc: _kernel_done(stream, op, exc))
    _enqueue(stream, op)


def wait_legacy() -> None:
    """A synchronous launch runs on the legacy default stream: it waits for the blocking streams.
    Not from a host function (it would wait for its own stream: CUDA forbids the call there)."""
    if getattr(_host_tls, "host", False):
        return
    _wait([(s, s._enqueued) for s in list(BUSY) if not s.non_blocking])


# -------------------------------------------------------------------- the state machine (lock held)
_errored: set[Stream] = set()  # streams that keep an error not raised yet


def _enqueue(s: Stream, op: _Op) -> int:
    """Append op to s; start it if s is idle.  The scheduler lock is taken only then: a thread that
    enqueues onto busy streams never waits for a worker (nor a worker for it), which would cost each
    side GIL round trips.  (A worker finishing an operation sets _active to None before it looks at
    _pending, this thread appends before it looks at _active: one of them sees the other.)"""
    with s._elock:
        if s.is_null:  # the legacy stream waits for the work in every blocking stream
            op.deps.extend((o, o._enqueued) for o in list(BUSY) if o is not s and not o.non_blocking)
        elif not s.non_blocking:
            null = Stream.null
            if null._completed < null._enqueued:
                op.deps.append((null, null._enqueued))
        # seq from a counter, published after the append: a KeyboardInterrupt between two of these
        # steps leaves a gap or a late count, never a count that no operation will reach (a hang)
        seq = op.seq = next(s._seq)
        s._pending.append(op)
        s._enqueued = seq
    BUSY.add(s)
    if s._active is None:
        with _lock:
            _advance(s)
    return seq


def _advance(s: Stream) -> None:
    """Start s's next operations while they may start; record and wait operations complete at once."""
    while s._active is None and s._pending:
        op = s._pending[0]
        cancelled = op.seq <= s._cancel_upto
        if op.deps and not cancelled and any(o._completed < seq for o, seq in op.deps):
            _blocked.add(s)
            return
        s._pending.popleft()
        s._active = op
        BUSY.add(s)  # (a worker may have taken s out as this op was being appended)
        if op.kind == KERNEL and not cancelled and s._error is None:
            get_scheduler().submit(op.payload)
        elif op.kind == HOST and not cancelled and s._error is None:
            _host_queue().put((s, op))
        else:  # record, wait, or skipped
            if op.kind == RECORD:
                ev, gen = op.payload
                if ev._gen == gen:
                    ev._t = time.perf_counter_ns()
            _complete_locked(s, op)


def _complete_locked(s: Stream, op: _Op) -> None:
    s._active = None
    s._completed = op.seq
    op.payload = None  # the launch's arguments may go now
    if s._pending:
        _advance(s)
    elif s._completed >= s._enqueued:
        BUSY.discard(s)
    if _blocked:
        for o in list(_blocked):
            _blocked.discard(o)
            _advance(o)
    if s._completed >= s._wake_at:  # waking the waiters at every operation would cost each a GIL round trip
        s._wake_at = _NEVER
        _cv.notify_all()


def _kernel_done(s: Stream, op: _Op, exc: BaseException | None) -> None:
    with _lock:
        if exc is not None and op.seq > s._cancel_upto and s._error is None:
            s._error = exc
            _errored.add(s)
        _complete_locked(s, op)


# -------------------------------------------------------------------- host thread
_host: queue.SimpleQueue | None = None
_host_tls = threading.local()
_host_lock = threading.Lock()


def _host_queue() -> queue.SimpleQueue:
    global _host
    if _host is None:
        with _host_lock:
            if _host is None:
                q: queue.SimpleQueue = queue.SimpleQueue()
                threading.Thread(target=_host_loop, args=(q,), name="ptxjit-host", daemon=True).start()
                _host = q
    return _host


def _host_loop(q: queue.SimpleQueue) -> None:
    _host_tls.host = True
    while True:
        s, op = q.get()
        fn, arg = op.payload
        exc: BaseException | None = None
        try:
            fn(arg)
        except BaseException as e:  # noqa: BLE001 - kept on the stream like a kernel's error
            exc = e
        with _lock:
            if exc is not None and s._error is None and op.seq > s._cancel_upto:
                s._error = exc
                _errored.add(s)
            _complete_locked(s, op)


# -------------------------------------------------------------------- waiting
def _wait(targets: list[tuple[Stream, int]]) -> None:
    """Wait until each (stream, seq) has completed, in short slices (Ctrl-C gets through).  Any
    exception meanwhile (KeyboardInterrupt) cancels the outstanding work of those streams cleanly."""
    try:
        with _cv:
            while _register(targets):
                _cv.wait(0.05)
    except BaseException:
        cancel([s for s, _ in targets])
        raise


def _register(targets: list[tuple[Stream, int]]) -> bool:
    """With the lock held: whether some (stream, seq) has not completed; if so, ask its stream to
    wake the waiters when it has (every waiter registers again after each wakeup)."""
    for s, seq in targets:
        if s._completed < seq:
            if s._active is None and s._pending:  # an enqueue interrupted before it started its op
                _advance(s)
                if s._completed >= seq:
                    continue
            if seq < s._wake_at:
                s._wake_at = seq
            return True
    return False


def cancel(streams: list[Stream]) -> None:
    """Skip what the streams have not started and stop their running kernels; wait (bounded, not
    interruptible) until their workers have let go of the launches' memory."""
    running: list[Work] = []
    with _lock:
        for s in streams:
            s._cancel_upto = s._enqueued
            if s._active is not None and s._active.kind == KERNEL and isinstance(s._active.payload, Work):
                running.append(s._active.payload)
        for w in running:
            w.cancel()
        for s in streams:
            _advance(s)
    end = time.monotonic() + DRAIN_SECONDS
    while True:
        try:
            with _cv:
                while _register([(s, s._cancel_upto) for s in streams]) and time.monotonic() < end:
                    _cv.wait(0.05)
            break
        except BaseException:  # noqa: S112 - a second Ctrl-C must not leave workers on freed memory
            continue
    if any(s._completed < s._cancel_upto for s in streams):
        warnings.warn("ptxjit: work of a cancelled stream did not stop; it keeps running in the background",
                      RuntimeWarning, stacklevel=3)


def _raise_errors(streams: list[Stream]) -> None:
    with _lock:
        for s in streams:
            exc = s._error
            if exc is not None:
                s._error = None
                _errored.discard(s)
                break
        else:
            return
    raise exc


def _at_exit() -> None:
    """Outstanding work at exit: skip what has not started, stop what runs (registered after the
    scheduler's handler, so it runs before it: atexit runs handlers last-in first-out)."""
    with _lock:
        busy = list(BUSY)
    if busy:
        cancel(busy)


def _after_fork_in_child() -> None:
    """The parent's workers and host thread do not exist in the child: its outstanding work never
    completes there.  The child's streams start empty (their operations are counted as done)."""
    global _lock, _cv, _host, _host_lock
    _lock = threading.Lock()
    _cv = threading.Condition(_lock)
    _host, _host_lock = None, threading.Lock()
    for s in list(BUSY) + list(_blocked):
        s._pending.clear()
        s._active = None
        s._completed = s._cancel_upto = s._enqueued
    BUSY.clear()
    _blocked.clear()


atexit.register(_at_exit)
os.register_at_fork(after_in_child=_after_fork_in_child)
