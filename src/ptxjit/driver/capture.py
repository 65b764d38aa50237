"""Stream capture: work enqueued on capturing streams becomes the nodes of a graph instead of running.

One model serves the driver API (cuStream*Capture*) and the runtime API (cudaStream*Capture*), which share
stream, event and graph handles:

- **a capture sequence** begins on an origin stream (`begin`), into a new graph or an existing one with
  given dependencies (cuStreamBeginCaptureToGraph).  Each capturing stream keeps its dependency set: the
  nodes its next captured node depends on (`DriverStream.capture_tail`).
- **across streams**: an event recorded in a capturing stream stands for that stream's dependency set (no
  node); a stream that waits for it joins the capture (a fork) or, if it captures already, adds those nodes
  to its set (a join).  Ending the capture on the origin ends it on every joined stream, and fails with
  STREAM_CAPTURE_UNJOINED when captured work of another stream is not an ancestor of the origin's set
  (the rule CUDA states: each fork must be joined back into the origin stream).
- **what breaks a capture**: synchronizing or querying a capturing stream or a captured event
  (STREAM_CAPTURE_UNSUPPORTED), using the legacy stream while a blocking stream captures
  (STREAM_CAPTURE_IMPLICIT), a potentially unsafe call (a synchronous copy, cuMemAlloc, a context
  synchronization) from a thread whose capture mode forbids it, waiting for an event of another capture
  (STREAM_CAPTURE_ISOLATION/MERGE).  Each invalidates the capture: later captured calls fail with
  STREAM_CAPTURE_INVALIDATED and so does its end, which returns no graph.
- **capture modes**: a thread's mode (cuThreadExchangeStreamCaptureMode, global by default) decides which
  captures forbid its unsafe calls: global, its own non-relaxed captures and every other thread's global
  ones; thread-local, its own non-relaxed captures; relaxed, none.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field

from ptxjit.driver import errors as E
from ptxjit.driver.errors import CudaError

UNSUPPORTED = E.CODES["CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"]
INVALIDATED = E.CODES["CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"]
MERGE = E.CODES["CUDA_ERROR_STREAM_CAPTURE_MERGE"]
UNMATCHED = E.CODES["CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"]
UNJOINED = E.CODES["CUDA_ERROR_STREAM_CAPTURE_UNJOINED"]
ISOLATION = E.CODES["CUDA_ERROR_STREAM_CAPTURE_ISOLATION"]
IMPLICIT = E.CODES["CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"]
ILLEGAL_STATE = E.CODES["CUDA_ERROR_ILLEGAL_STATE"]

# CUstreamCaptureMode / cudaStreamCaptureMode
MODE_GLOBAL, MODE_THREAD_LOCAL, MODE_RELAXED = 0, 1, 2
# CUstreamCaptureStatus / cudaStreamCaptureStatus
STATUS_NONE, STATUS_ACTIVE, STATUS_INVALIDATED = 0, 1, 2
# cuStreamUpdateCaptureDependencies' flags
ADD_DEPENDENCIES, SET_DEPENDENCIES = 0, 1
# cuStreamWaitEvent's flag: the wait becomes an external-event node (not modelled here)
EVENT_WAIT_EXTERNAL = 1

LEGACY_HANDLES = (0, 1, 2)  # NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD


@dataclass(eq=False)
class Capture:
    """One capture sequence: its graph, the origin stream, the streams that joined, what broke it."""

    graph: object  # driver/graphs.py Graph
    origin: int
    ident: int
    mode: int
    thread: int  # the ident of the thread that began it
    owns_graph: bool  # made by the capture (dropped when the capture fails) or the caller's
    streams: set[int] = field(default_factory=set)
    invalidated: str = ""

    def invalidate(self, why: str) -> None:
        self.invalidated = self.invalidated or why


_lock = threading.RLock()
_by_stream: dict[int, Capture] = {}
_events: dict[int, tuple[Capture, list]] = {}  # event handle -> (capture, the nodes recorded before it)
_ids = itertools.count(1)
_tls = threading.local()


def of(stream: int) -> Capture | None:
    return _by_stream.get(stream) if isinstance(stream, int) else None


def active() -> bool:
    return bool(_by_stream)


def status(stream: int) -> int:
    cap = of(stream)
    if cap is None:
        return STATUS_NONE
    return STATUS_INVALIDATED if cap.invalidated else STATUS_ACTIVE


def begin(driver, stream: int, mode: int, what: str, graph=None, deps: list | None = None):
    """Begin capturing `stream` into a new graph, or into `graph` after `deps` (its nodes)."""
    from ptxjit.driver.graphs import Graph

    if stream in LEGACY_HANDLES:
        raise CudaError(UNSUPPORTED, f"{what}: the legacy default stream cannot be captured; capture a stream "
                                     "made with cuStreamCreate/cudaStreamCreate")
    if mode not in (MODE_GLOBAL, MODE_THREAD_LOCAL, MODE_RELAXED):
        raise CudaError(E.INVALID_VALUE, f"{what}: {mode} is not a stream capture mode")
    ds = driver.streams.get(stream)
    with _lock:
        if stream in _by_stream:
            raise CudaError(ILLEGAL_STATE, f"{what}: the stream is capturing already")
        owns = graph is None
        if owns:
            graph = Graph()
            graph.handle = driver.graphs.new(graph)
        cap = Capture(graph, stream, next(_ids), mode, threading.get_ident(), owns, {stream})
        ds.capture, ds.capture_tail, ds.capture_id = graph, list(deps or []), cap.ident
        _by_stream[stream] = cap
    return cap


def _ancestors(nodes: list) -> set[int]:
    seen: set[int] = set()
    todo = list(nodes)
    while todo:
        n = todo.pop()
        if n.handle not in seen:
            seen.add(n.handle)
            todo.extend(n.deps)
    return seen


def _leave(driver, cap: Capture) -> None:
    for s in cap.streams:
        _by_stream.pop(s, None)
        ds = driver.streams._objects.get(s)
        if ds is not None:
            ds.capture, ds.capture_tail = None, []
    for e in [e for e, (c, _n) in _events.items() if c is cap]:
        del _events[e]


def end(driver, stream: int, what: str):
    """End the capture begun on `stream`: its graph, or a CudaError when it failed (the graph is gone then,
    unless it was the caller's)."""
    with _lock:
        cap = _by_stream.get(stream)
        if cap is None:
            raise CudaError(ILLEGAL_STATE, f"{what}: the stream is not capturing")
        if cap.origin != stream:
            raise CudaError(UNMATCHED, f"{what}: the stream joined a capture begun on another stream; end it on "
                                       "that one")
        if cap.mode != MODE_RELAXED and cap.thread != threading.get_ident():
            cap.invalidate(f"{what} from another thread than the one that began the capture")
            err = CudaError(E.CODES["CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"],
                            f"{what}: a capture in global or thread-local mode must end on the thread that began "
                            "it")
        else:
            err = None
        covered = _ancestors(driver.streams.get(stream).capture_tail)
        joined = [n for s in cap.streams if s != stream
                  for n in getattr(driver.streams._objects.get(s), "capture_tail", [])]
        unjoined = [n for n in joined if n.handle not in covered]
        _leave(driver, cap)
    if err is None and cap.invalidated:
        err = CudaError(INVALIDATED, f"{what}: the capture was invalidated by {cap.invalidated}")
    if err is None and unjoined:
        err = CudaError(UNJOINED, f"{what}: {len(unjoined)} captured operation(s) of a forked stream were not "
                                  "joined back into the origin stream (record an event there and wait for it on "
                                  "the origin stream)")
    if err is not None:
        if cap.owns_graph:
            drop_graph(driver, cap.graph)
        raise err
    return cap.graph


def drop_graph(driver, graph) -> None:
    driver.graphs._objects.pop(graph.handle, None)
    for node in graph.nodes:
        driver.graph_nodes._objects.pop(node.handle, None)


def record(driver, stream: int, work):
    """Record `work` as a node after the stream's dependency set; None when the stream does not capture."""
    cap = of(stream)
    if cap is None:
        return None
    with _lock:
        if cap.invalidated:
            raise CudaError(INVALIDATED, f"the stream's capture was invalidated by {cap.invalidated}")
        ds = driver.streams.get(stream)
        node = ds.capture.add(driver, work, [n.handle for n in ds.capture_tail])
        ds.capture_tail = [node]
    return node


def refuse(stream: int, what: str) -> None:
    """A call that may not run on a capturing stream (a synchronization, a query): it fails and
    invalidates the capture."""
    cap = of(stream)
    if cap is not None:
        cap.invalidate(what)
        raise CudaError(UNSUPPORTED, f"{what} on a stream that is capturing; the capture is invalidated (its end "
                                     "will fail)")


def refuse_event(event: int, what: str) -> None:
    """Synchronizing or querying an event recorded in an active capture: it stands for no work that runs."""
    got = _events.get(event)
    if got is not None and got[0].origin in _by_stream and _by_stream[got[0].origin] is got[0]:
        got[0].invalidate(what)
        raise CudaError(UNSUPPORTED, f"{what} on an event recorded during a stream capture; the capture is "
                                     "invalidated")


def refuse_all(what: str) -> None:
    """Synchronizing a context or device while any of its streams captures: refused, and every active
    capture is invalidated."""
    if _by_stream:
        for cap in set(_by_stream.values()):
            cap.invalidate(what)
        raise CudaError(UNSUPPORTED, f"{what} while a stream capture is active; the capture is invalidated")


def _forbidding() -> list[Capture]:
    """The captures that forbid this thread's potentially unsafe calls, by the thread's capture mode."""
    mine = threading.get_ident()
    mode = getattr(_tls, "mode", MODE_GLOBAL)
    if mode == MODE_RELAXED:
        return []
    out = []
    for cap in set(_by_stream.values()):
        if cap.thread == mine and cap.mode != MODE_RELAXED:
            out.append(cap)
        elif mode == MODE_GLOBAL and cap.mode == MODE_GLOBAL:
            out.append(cap)
    return out


def refuse_unsafe(what: str) -> None:
    """A potentially unsafe call (one that may synchronize implicitly: a synchronous copy or memset,
    cuMemAlloc, cuMemFree, a context synchronization) while a capture forbids it: it fails and invalidates
    those captures."""
    if not _by_stream:
        return
    caps = _forbidding()
    if caps:
        for cap in caps:
            cap.invalidate(what)
        raise CudaError(UNSUPPORTED, f"{what} is not permitted while a stream capture is active (capture mode "
                                     f"{'global' if caps[0].mode == MODE_GLOBAL else 'thread-local'}); the capture "
                                     "is invalidated. Use the asynchronous form on the capturing stream, or begin "
                                     "the capture in relaxed mode")


def refuse_legacy(driver, what: str) -> None:
    """The legacy stream used while a blocking stream (one made without CU_STREAM_NON_BLOCKING) captures:
    the legacy stream would depend on captured work, which never runs as such."""
    if not _by_stream:
        return
    for s, cap in list(_by_stream.items()):
        ds = driver.streams._objects.get(s)
        if ds is not None and not ds.stream.non_blocking:
            cap.invalidate(what)
            raise CudaError(IMPLICIT, f"{what} uses the legacy stream while a blocking stream captures; the "
                                      "capture is invalidated. Capture a stream made with CU_STREAM_NON_BLOCKING, "
                                      "or use that stream instead of the default one")


def event_recorded(driver, event: int, stream: int) -> bool:
    """An event recorded in a capturing stream stands for the stream's dependency set (no node is added);
    False when the stream does not capture (the event then records real work)."""
    cap = of(stream)
    with _lock:
        if cap is None:
            _events.pop(event, None)
            return False
        if cap.invalidated:
            raise CudaError(INVALIDATED, f"the stream's capture was invalidated by {cap.invalidated}")
        _events[event] = (cap, list(driver.streams.get(stream).capture_tail))
    return True


def stream_waits(driver, stream: int, event: int, flags: int, what: str) -> bool:
    """A wait for an event: a fork or a join when the event was recorded in an active capture (True);
    False for an ordinary wait, which a capturing stream may not make on uncaptured work."""
    with _lock:
        got = _events.get(event)
        if got is not None and _by_stream.get(got[0].origin) is not got[0]:
            del _events[event]  # its capture has ended: an event that recorded nothing that runs
            got = None
        mine = of(stream)
        if got is None:
            if mine is not None:
                if flags & EVENT_WAIT_EXTERNAL:
                    raise CudaError(E.NOT_SUPPORTED, f"{what}: external event waits in a capture are not supported")
                mine.invalidate(what)
                raise CudaError(ISOLATION, f"{what}: a capturing stream waits for an event of work that was not "
                                           "captured; the capture is invalidated")
            return False
        cap, nodes = got
        if stream in LEGACY_HANDLES:
            cap.invalidate(what)
            raise CudaError(IMPLICIT, f"{what}: the legacy stream cannot join a stream capture")
        ds = driver.streams.get(stream)
        if mine is None:  # a fork: the stream captures into the same graph from the event's point on
            ds.capture, ds.capture_tail, ds.capture_id = cap.graph, list(nodes), cap.ident
            cap.streams.add(stream)
            _by_stream[stream] = cap
        elif mine is not cap:
            mine.invalidate(what)
            cap.invalidate(what)
            raise CudaError(MERGE, f"{what}: the event belongs to another stream capture (captures cannot be "
                                   "merged)")
        else:
            ds.capture_tail = ds.capture_tail + [n for n in nodes if n not in ds.capture_tail]
        return True


def dependencies(driver, stream: int) -> list:
    return list(driver.streams.get(stream).capture_tail) if of(stream) is not None else []


def update_dependencies(driver, stream: int, nodes: list, flags: int, what: str) -> None:
    cap = of(stream)
    if cap is None:
        raise CudaError(ILLEGAL_STATE, f"{what}: the stream is not capturing")
    if flags not in (ADD_DEPENDENCIES, SET_DEPENDENCIES):
        raise CudaError(E.INVALID_VALUE, f"{what}: flags {flags} (0: add, 1: set)")
    for n in nodes:
        if n.graph is not cap.graph:
            raise CudaError(E.INVALID_VALUE, f"{what}: node {n.handle:#x} is not a node of the capture's graph")
    ds = driver.streams.get(stream)
    with _lock:
        if flags == SET_DEPENDENCIES:
            ds.capture_tail = list(nodes)
        else:
            ds.capture_tail = ds.capture_tail + [n for n in nodes if n not in ds.capture_tail]


def exchange_mode(mode: int, what: str) -> int:
    """Set this thread's capture mode; the previous one."""
    if mode not in (MODE_GLOBAL, MODE_THREAD_LOCAL, MODE_RELAXED):
        raise CudaError(E.INVALID_VALUE, f"{what}: {mode} is not a stream capture mode")
    old = getattr(_tls, "mode", MODE_GLOBAL)
    _tls.mode = mode
    return old


def stream_destroyed(driver, stream: int) -> None:
    """A capturing stream destroyed: its capture is invalidated (CUDA's rule)."""
    cap = _by_stream.get(stream)
    if cap is not None:
        cap.invalidate("destroying a capturing stream")
        if cap.origin == stream:
            with _lock:
                _leave(driver, cap)
                if cap.owns_graph:
                    drop_graph(driver, cap.graph)
        else:
            cap.streams.discard(stream)
            _by_stream.pop(stream, None)
