"""What every module of the runtime API's C ABI shares: the cffi handle, the registries of entry points, and the
small helpers each entry point uses (handles, output pointers, the calling thread's context, the parameter
buffer of a launch).  The modules that implement entry points (capi, capi_pools, graphs, textures) import this
one; cudart/entries.py registers what they define with cffi."""

from __future__ import annotations

import threading

from ptxjit.cudart import errors as RE
from ptxjit.cudart.errors import RuntimeError_
from ptxjit.driver import capture as _capture
from ptxjit.driver import launch as _launch
from ptxjit.driver import streams as _streams
from ptxjit.driver.context import DRIVER

ffi = None
IMPLS: dict[str, object] = {}
RAW: dict[str, object] = {}
tls = threading.local()


def entry(fn):
    """A function returning cudaError_t."""
    IMPLS[fn.__name__] = fn
    return fn


def raw(fn):
    """A function returning something else (void, a pointer): its own result, never an exception."""
    RAW[fn.__name__] = fn
    return fn


def set_last(code: int) -> None:
    tls.last = code


QUIET = ("cudaStreamQuery", "cudaEventQuery")  # cudaErrorNotReady is their normal answer, not an error


# the entry point a helper C hands work to is named in the log by the function the program called
SHOWN_AS = {"ptxjit_rt_launch": "cudaLaunchKernel", "ptxjit_rt_missing_configuration": "__cudaPopCallConfiguration",
             "ptxjit_rt_init_module": "__cudaInitModule", "ptxjit_rt_launch_cooperative": "cudaLaunchCooperativeKernel"}


def h(p) -> int:
    return int(ffi.cast("uintptr_t", p))


def out(ptr, what: str):
    if ptr == ffi.NULL:
        raise RuntimeError_(RE.INVALID_VALUE, f"{what} is NULL")
    return ptr


def ctx():
    """The calling thread's context: the primary context of device 0, retained and made current at the first
    call that needs one (cudart's lazy initialization); a sticky error of it is raised here."""
    if not DRIVER.initialized:
        DRIVER.init(0)
    top = DRIVER.top()
    if top is None or not top.alive:
        with DRIVER.lock:
            primary = DRIVER.primary
            if primary is None or not primary.alive:
                primary = DRIVER.retain_primary(0)
        if top is not None:
            DRIVER.set_current(primary)
        else:
            DRIVER.push(primary)
    return DRIVER.current()


KINDS = range(5)  # cudaMemcpyHostToHost .. cudaMemcpyDefault


def kind(kind: int, what: str) -> None:
    if kind not in KINDS:
        raise RuntimeError_(RE.INVALID_MEMCPY_DIRECTION, f"{what}: {kind} is not a cudaMemcpyKind")


_MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


def check_dynamic_shared(f, shmem: int) -> None:
    """A GPU gives a kernel at most 48 KB of shared memory unless it opted in to more with
    cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize): the launch is cudaErrorInvalidValue."""
    static = f.kernel.static_shared_size
    if shmem + static <= 48 * 1024:
        return
    limit = f.attributes.get(_MAX_DYNAMIC_SHARED, 48 * 1024 - static)
    if shmem > limit:
        raise RuntimeError_(RE.INVALID_VALUE, f"'{f.name}': {shmem} bytes of dynamic shared memory exceed the "
                                              f"kernel's maximum of {limit} (48 KB less its {static} static); "
                                              "opt in to more with cudaFuncSetAttribute(func, "
                                              "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)")


def params_of(f, args, extra, what: str) -> bytes:
    """The kernel's parameter buffer from `kernelParams` or from `extra` (the driver's rules and errors)."""
    return _launch.parameter_buffer(ffi, f, args, extra, what)


def sync_legacy(ctx, what: str = "a synchronous copy or memset") -> None:
    """A synchronous call waits for the legacy stream: refused while a capture forbids it."""
    if _capture.active():
        _capture.refuse_unsafe(what)
        _capture.refuse_legacy(DRIVER, what)
    _streams.synchronized(ctx, _streams.Stream.null.synchronize)
