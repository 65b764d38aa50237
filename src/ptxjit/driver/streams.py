"""Streams and events of the driver API on ptxjit.streams, and how kernel errors become CUresults.

CUDA's stream handles: NULL and CU_STREAM_LEGACY are the legacy default stream (ptxjit's Stream.null);
CU_STREAM_PER_THREAD is served by the same stream (one device, ordering only ever stricter than CUDA's).
A kernel's error surfaces at the next synchronization point, as on a GPU, and then sticks to the context.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from ptxjit.driver import capture
from ptxjit.driver import errors as E
from ptxjit.driver.errors import CudaError
from ptxjit.errors import KernelDeadlock, KernelError, KernelFault, KernelTimeout, KernelTrap
from ptxjit.runtime import printf as _printf
from ptxjit.streams import stream as _st
from ptxjit.streams.stream import Event, Stream, get_elapsed_time

CU_STREAM_LEGACY, CU_STREAM_PER_THREAD = 1, 2
CU_STREAM_NON_BLOCKING = 1
CU_EVENT_DISABLE_TIMING, CU_EVENT_INTERPROCESS = 2, 4


@dataclass
class DriverStream:
    handle: int
    stream: Stream
    context: object
    flags: int
    priority: int
    capture: object = None  # the graph (driver/graphs.py) its work is recorded into, while capturing
    capture_id: int = 0
    capture_tail: list = field(default_factory=list)  # the nodes the next captured node depends on


def capturing(driver, handle) -> DriverStream | None:
    """The stream `handle` names if it is capturing (its work becomes graph nodes instead of running)."""
    if not isinstance(handle, int) or handle in (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD):
        return None
    ds = driver.streams.get(handle)
    return ds if ds.capture is not None else None


def record(driver, ds: DriverStream, work) -> None:
    """Add captured work as a node after the stream's dependency set (driver/capture.py)."""
    capture.record(driver, ds.handle, work)


@dataclass
class DriverEvent:
    handle: int
    event: Event
    context: object
    flags: int


def resolve(driver, handle: int) -> Stream:
    if handle in (0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD):
        return Stream.null
    s = driver.streams.get(handle)
    return s.stream


def create(driver, ctx, flags: int, priority: int = 0) -> DriverStream:
    if flags & ~CU_STREAM_NON_BLOCKING:
        raise CudaError(E.INVALID_VALUE, f"cuStreamCreate: unknown flags {flags:#x}")
    priority = max(-5, min(0, priority))  # the H100's range: cuCtxGetStreamPriorityRange
    ds = DriverStream(0, Stream(priority=priority, non_blocking=bool(flags & CU_STREAM_NON_BLOCKING)), ctx,
                      flags, priority)
    ds.handle = driver.streams.new(ds)
    return ds


def kernel_error_code(exc: BaseException) -> int:
    """The CUresult a GPU gives for a failed kernel."""
    if isinstance(exc, KernelFault):
        return E.ILLEGAL_ADDRESS
    if isinstance(exc, KernelTimeout):
        return E.LAUNCH_TIMEOUT
    if isinstance(exc, KernelTrap):
        return E.ASSERT if "assert" in str(exc) else E.LAUNCH_FAILED
    if isinstance(exc, KernelDeadlock):
        return E.LAUNCH_FAILED
    return E.LAUNCH_FAILED


def make_sticky(ctx, exc: BaseException) -> CudaError:
    """Record a kernel error on its context (it sticks) and log ptxjit's full report.  A failed device
    assert also prints CUDA's line for it on stderr, as the GPU's runtime does at the synchronization."""
    code = kernel_error_code(exc)
    report = str(exc)
    line = getattr(exc, "assertion", None)
    if line:
        exc.assertion = None  # printed once, however often the error is seen
        _printf.flush_held()
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    if ctx is not None and not ctx.sticky:
        ctx.sticky = code
        ctx.sticky_report = report
    E.log(f"ptxjit driver: kernel error ({E.NAMES.get(code)}): {report}")
    return CudaError(code, report)


def synchronized(ctx, fn) -> None:
    """Run a waiting call; a kernel error it raises becomes the context's sticky CUresult.  Device printf
    output held until now is written (a synchronization point)."""
    try:
        fn()
    except KernelError as exc:
        raise make_sticky(ctx, exc) from None
    except KeyboardInterrupt:
        raise CudaError(E.LAUNCH_FAILED, "interrupted while waiting (Ctrl-C): outstanding work was cancelled") \
            from None
    finally:
        _printf.flush_held()


def synchronize_all(ctx) -> None:
    synchronized(ctx, _st.synchronize)


def drain_context(driver, ctx) -> None:
    """Before a context goes: its streams finish (errors are dropped with it) and held device printf
    output is written."""
    try:
        _st.synchronize()
    except (KernelError, KeyboardInterrupt):
        pass
    _printf.flush_held()
    for h, ds in driver.streams.items():
        if ds.context is ctx:
            driver.streams.drop(h)
    for h, de in driver.events.items():
        if de.context is ctx:
            driver.events.drop(h)


__all__ = ["Event", "Stream", "get_elapsed_time"]


def enqueue_host(stream: Stream, fn, arg=None) -> None:
    """Host work (a copy, a memset, a callback) in stream order."""
    stream.launch_host_func(fn, arg)


def _started_by_c_program() -> bool:
    """Whether a C program started this interpreter by loading ptxjit's libcuda.so.1 or libcudart.so.13
    (their cffi modules, named by driver/build.py and cudart/build.py)."""
    for name in ("_ptxjit_libcuda", "_ptxjit_libcudart"):
        lib = getattr(sys.modules.get(name), "lib", None)
        if lib is not None and lib.ptxjit_started_interpreter():
            return True
    return False


if _started_by_c_program():  # device printf then goes to the program's C stdout at synchronizations
    _printf.hold_for_c_stdout()
