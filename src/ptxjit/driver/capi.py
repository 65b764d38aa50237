"""The driver API's entry points as the C ABI calls them (libcuda.so.1, driver/build.py).

Each function takes what C passes (cffi pointers, ints), does its work on the driver's objects and writes
its outputs through the caller's pointers.  `install(ffi, lib)` registers them with cffi; the wrapper turns
a CudaError into its CUresult (with the explanation in the driver log) and anything unexpected into
CUDA_ERROR_UNKNOWN with a traceback in the log: a bug in ptxjit never takes the program down.
"""

from __future__ import annotations

import ctypes
import os
import traceback

from ptxjit import accounting, config
from ptxjit.driver import capture as _capture
from ptxjit.driver import errors as E
from ptxjit.driver import launch as _launch
from ptxjit.driver import memory as M
from ptxjit.driver import modules as _modules
from ptxjit.driver import pools as _pools
from ptxjit.driver import streams as _streams
from ptxjit.driver.abi_tables import CUDA_VERSION, LIMIT, POINTER_ATTRIBUTE
from ptxjit.driver.context import DRIVER
from ptxjit.driver.errors import CudaError
from ptxjit.errors import KernelError

ffi = None
_IMPLS: dict[str, object] = {}
_cstrings: dict[int, object] = {}  # names handed out as const char * (cuFuncGetName), kept alive


def entry(fn):
    _IMPLS[fn.__name__] = fn
    return fn


# A process forked after the driver was initialized has none of its state that the parent's threads and
# handles stand for: as on CUDA, every call in the child returns CUDA_ERROR_NOT_INITIALIZED (numba reports
# "CUDA initialized before forking" on it), except the version query, which needs no initialization.
_forked_after_init = False
_fork_explained = False
_FORK_SAFE = ("cuDriverGetVersion",)


def _after_fork_in_child() -> None:
    global _forked_after_init
    if DRIVER.initialized:
        _forked_after_init = True


def _refuse_in_forked_child(name: str) -> int:
    global _fork_explained
    if not _fork_explained:
        _fork_explained = True
        E.log(f"ptxjit driver: {name}: this process was forked after cuInit in process {os.getppid()}; the driver "
              "cannot be used in a forked child (as on CUDA). It returns CUDA_ERROR_NOT_INITIALIZED")
    return E.NOT_INITIALIZED


def _wrap(name: str, fn):
    quiet = name in ("cuStreamQuery", "cuEventQuery")  # CUDA_ERROR_NOT_READY is their normal answer
    fork_safe = name in _FORK_SAFE

    def call(*args):
        if _forked_after_init and not fork_safe:
            return _refuse_in_forked_child(name)
        try:
            fn(*args)
            return 0
        except CudaError as exc:
            if not (quiet and exc.code == E.NOT_READY):
                E.log(f"ptxjit driver: {name}: {exc}")
            return exc.code
        except KernelError as exc:
            return _streams.make_sticky(DRIVER.top(), exc).code
        except BaseException as exc:  # noqa: BLE001 - nothing may escape into C
            E.log(f"ptxjit driver: internal error in {name} ({type(exc).__name__}: {exc}); it returns "
                  f"CUDA_ERROR_UNKNOWN\n" + traceback.format_exc())
            return E.UNKNOWN

    call.__name__ = name
    return call


def install_exit_handler(ffi_, lib) -> None:
    """The C prologue's exit handler (driver/build.py C_PROLOGUE): a C program's exit runs Python's exit
    handlers first, which stop ptxjit's threads before LLVM's static destructors run."""

    @ffi_.def_extern(name="ptxjit_shutdown")
    def _shutdown():
        import atexit

        try:
            atexit._run_exitfuncs()
        except BaseException:  # noqa: BLE001
            pass

    lib.ptxjit_register_atexit()


def install(ffi_, lib) -> None:
    """Register every entry point with cffi (called by the library's init code)."""
    global ffi
    ffi = ffi_
    for name, fn in _IMPLS.items():
        ffi.def_extern(name=name)(_wrap(name, fn))
    os.register_at_fork(after_in_child=_after_fork_in_child)
    install_exit_handler(ffi, lib)
    accounting.install_exit_report()

    @ffi.def_extern(name="ptxjit_unsupported")
    def _unsupported(cname):
        try:
            name = ffi.string(cname).decode()
            if name == "cuGetExportTable":
                return _export_table_refused()
            return E.log_unsupported(name)
        except BaseException:  # noqa: BLE001
            return E.NOT_SUPPORTED


_export_table_named = False


def _export_table_refused() -> int:
    """cuGetExportTable: the CUDA runtime's private tables, which only NVIDIA's runtime asks for; a program
    asking links that runtime statically (nvcc's default), and runs on ptxjit rebuilt against the shared one,
    which ptxjit provides (libcudart.so.13)."""
    global _export_table_named
    if not _export_table_named:
        _export_table_named = True
        E.log("ptxjit driver: cuGetExportTable: the program links the CUDA runtime statically (nvcc's default "
              "-cudart static); rebuild it with `nvcc -cudart shared` to run it on ptxjit (its libcudart.so.13). "
              "It returns CUDA_ERROR_NOT_SUPPORTED")
    return E.NOT_SUPPORTED


# ---------------------------------------------------------------------------- helpers
def _out(ptr, what: str):
    if ptr == ffi.NULL:
        raise CudaError(E.INVALID_VALUE, f"{what} is NULL")
    return ptr


def _h(p) -> int:
    return int(ffi.cast("uintptr_t", p))


def _ptr(v: int):
    return ffi.cast("void *", v)


def _str(p, what: str) -> str:
    if p == ffi.NULL:
        raise CudaError(E.INVALID_VALUE, f"{what} is NULL")
    return ffi.string(p).decode("utf-8", errors="replace")


def _ctx():
    return DRIVER.current()


def _cstr(text: str):
    key = hash(text)
    s = _cstrings.get(key)
    if s is None:
        s = _cstrings[key] = ffi.new("char[]", text.encode())
    return s


def _write_str(buf, length: int, text: str, what: str) -> None:
    if buf == ffi.NULL or length <= 0:
        raise CudaError(E.INVALID_VALUE, f"{what}: NULL buffer or length {length}")
    data = text.encode()[: length - 1] + b"\0"
    ffi.memmove(buf, data, len(data))


def _bytes_at(p, size: int) -> bytes:
    return bytes(ffi.buffer(ffi.cast("char *", p), size))


# ---------------------------------------------------------------------------- init, errors, device
@entry
def cuInit(flags):
    DRIVER.init(flags)


@entry
def cuDriverGetVersion(out):
    _out(out, "driverVersion")[0] = CUDA_VERSION


@entry
def cuDeviceGet(out, ordinal):
    _out(out, "device")
    DRIVER.device(ordinal)
    out[0] = 0


@entry
def cuDeviceGetCount(out):
    DRIVER.require_init()
    _out(out, "count")[0] = 1


@entry
def cuDeviceGetName(buf, length, dev):
    _write_str(buf, length, DRIVER.device(dev).name, "cuDeviceGetName")


@entry
def cuDeviceGetUuid(uuid, dev):
    DRIVER.device(dev)
    data = b"ptxjit-virt-gpu0"
    ffi.memmove(_out(uuid, "uuid"), data, 16)


@entry
def cuDeviceGetUuid_v2(uuid, dev):
    cuDeviceGetUuid(uuid, dev)


@entry
def cuDeviceTotalMem_v2(out, dev):
    _out(out, "bytes")[0] = DRIVER.device(dev).total_mem


@entry
def cuDeviceGetAttribute(out, attrib, dev):
    _out(out, "pi")
    v = DRIVER.device(dev).attribute(attrib)
    if v is None:
        raise CudaError(E.INVALID_VALUE, f"cuDeviceGetAttribute: {attrib} is not a CUdevice_attribute")
    out[0] = v


@entry
def cuDeviceComputeCapability(major, minor, dev):
    m = DRIVER.device(dev)
    _out(major, "major")[0] = m.major
    _out(minor, "minor")[0] = m.minor


@entry
def cuDeviceGetPCIBusId(buf, length, dev):
    DRIVER.device(dev)
    _write_str(buf, length, "0000:00:00.0", "cuDeviceGetPCIBusId")


@entry
def cuDeviceGetByPCIBusId(out, bus):
    DRIVER.require_init()
    text = _str(bus, "pciBusId").lower()
    if text not in ("0000:00:00.0", "00:00.0"):
        raise CudaError(E.INVALID_DEVICE, f"no device at PCI bus id {text!r} (ptxjit's is 0000:00:00.0)")
    _out(out, "dev")[0] = 0


@entry
def cuDeviceCanAccessPeer(out, dev, peer):
    DRIVER.device(dev)
    DRIVER.device(peer)
    _out(out, "canAccessPeer")[0] = 0


# ---------------------------------------------------------------------------- contexts
@entry
def cuDevicePrimaryCtxRetain(out, dev):
    _out(out, "pctx")[0] = _ptr(DRIVER.retain_primary(dev).handle)


@entry
def cuDevicePrimaryCtxRelease_v2(dev):
    DRIVER.release_primary(dev)


@entry
def cuDevicePrimaryCtxReset_v2(dev):
    DRIVER.reset_primary(dev)


@entry
def cuDevicePrimaryCtxGetState(dev, flags, active):
    DRIVER.device(dev)
    _out(flags, "flags")[0] = DRIVER.primary_flags
    _out(active, "active")[0] = 1 if DRIVER.primary is not None and DRIVER.primary.alive and DRIVER.primary_refs else 0


@entry
def cuDevicePrimaryCtxSetFlags_v2(dev, flags):
    DRIVER.device(dev)
    DRIVER.primary_flags = flags


@entry
def cuCtxCreate_v2(out, flags, dev):
    _out(out, "pctx")[0] = _ptr(DRIVER.create(flags, dev).handle)


@entry
def cuCtxCreate_v4(out, params, flags, dev):
    _out(out, "pctx")[0] = _ptr(DRIVER.create(flags, dev).handle)


@entry
def cuCtxDestroy_v2(ctx):
    DRIVER.require_init()
    DRIVER.destroy(DRIVER.context(_h(ctx)))


@entry
def cuCtxGetCurrent(out):
    DRIVER.require_init()
    top = DRIVER.top()
    _out(out, "pctx")[0] = _ptr(top.handle if top is not None and top.alive else 0)


@entry
def cuCtxSetCurrent(ctx):
    DRIVER.require_init()
    h = _h(ctx)
    DRIVER.set_current(DRIVER.context(h) if h else None)


@entry
def cuCtxPushCurrent_v2(ctx):
    DRIVER.require_init()
    DRIVER.push(DRIVER.context(_h(ctx)))


@entry
def cuCtxPopCurrent_v2(out):
    DRIVER.require_init()
    ctx = DRIVER.pop()
    if out != ffi.NULL:
        out[0] = _ptr(ctx.handle)


@entry
def cuCtxGetDevice(out):
    _ctx()
    _out(out, "device")[0] = 0


@entry
def cuCtxGetFlags(out):
    _out(out, "flags")[0] = _ctx().flags


@entry
def cuCtxGetApiVersion(ctx, out):
    DRIVER.require_init()
    h = _h(ctx)
    if h:
        DRIVER.context(h)
    else:
        _ctx()
    _out(out, "version")[0] = 12010  # the context API version CUDA 12 and 13 report


@entry
def cuCtxGetId(ctx, out):
    h = _h(ctx)
    c = DRIVER.context(h) if h else _ctx()
    _out(out, "ctxId")[0] = c.handle


@entry
def cuCtxSynchronize():
    ctx = _ctx()
    _capture.refuse_all("cuCtxSynchronize")
    _streams.synchronize_all(ctx)


@entry
def cuCtxSynchronize_v2(ctx):
    h = _h(ctx)
    c = DRIVER.context(h) if h else _ctx()
    _capture.refuse_all("cuCtxSynchronize")
    _streams.synchronize_all(c)


_LIMIT_DEFAULTS = {LIMIT["CU_LIMIT_STACK_SIZE"]: 1024, LIMIT["CU_LIMIT_PRINTF_FIFO_SIZE"]: 1 << 20,
                   LIMIT["CU_LIMIT_MALLOC_HEAP_SIZE"]: 8 << 20, LIMIT["CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH"]: 2,
                   LIMIT["CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT"]: 2048,
                   LIMIT["CU_LIMIT_MAX_L2_FETCH_GRANULARITY"]: 64, LIMIT["CU_LIMIT_PERSISTING_L2_CACHE_SIZE"]: 0}


@entry
def cuCtxSetLimit(limit, value):
    ctx = _ctx()
    if limit not in _LIMIT_DEFAULTS:
        raise CudaError(E.UNSUPPORTED_LIMIT if hasattr(E, "UNSUPPORTED_LIMIT") else E.INVALID_VALUE,
                        f"cuCtxSetLimit: limit {limit} is not supported")
    if limit == LIMIT["CU_LIMIT_MALLOC_HEAP_SIZE"]:
        from ptxjit.runtime import heap

        heap.set_heap_size(int(value))
    ctx.limits[limit] = int(value)


@entry
def cuCtxGetLimit(out, limit):
    ctx = _ctx()
    if limit not in _LIMIT_DEFAULTS:
        raise CudaError(E.INVALID_VALUE, f"cuCtxGetLimit: limit {limit} is not supported")
    _out(out, "pvalue")[0] = ctx.limits.get(limit, _LIMIT_DEFAULTS[limit])


@entry
def cuCtxGetCacheConfig(out):
    _out(out, "pconfig")[0] = _ctx().cache_config


@entry
def cuCtxSetCacheConfig(config):
    _ctx().cache_config = config


@entry
def cuCtxGetStreamPriorityRange(least, greatest):
    _ctx()
    if least != ffi.NULL:
        least[0] = 0
    if greatest != ffi.NULL:
        greatest[0] = -5


# ---------------------------------------------------------------------------- memory
@entry
def cuMemGetInfo_v2(free, total):
    _ctx()
    model = DRIVER.model
    used = M.REGISTRY.bytes_in_use
    _out(free, "free")[0] = max(0, model.total_mem - used)
    _out(total, "total")[0] = model.total_mem


def _alloc(out, size: int, kind: str, flags: int = 0) -> M.Allocation:
    ctx = _ctx()
    _out(out, "dptr")
    if size == 0:
        raise CudaError(E.INVALID_VALUE, "allocation of 0 bytes")
    if size > DRIVER.model.total_mem:
        raise CudaError(E.OUT_OF_MEMORY, f"{size} bytes exceed the device's {DRIVER.model.total_mem}")
    a = M.REGISTRY.allocate(size, kind, ctx, flags)
    out[0] = a.base
    return a


@entry
def cuMemAlloc_v2(out, size):
    _alloc(out, size, M.DEVICE)


@entry
def cuMemAllocManaged(out, size, flags):
    _alloc(out, size, M.MANAGED, flags)


# In a stream capture an allocation is made when it is captured, and the graph's allocation and free nodes
# keep their place in the order as empty nodes: the address is the same in every launch of the graph, as CUDA
# promises, and never dangles between launches.  The price: memory a graph frees stays allocated (until a
# cuMemFree outside the graph, or the process's end).
@entry
def cuMemAllocAsync(out, size, stream):
    _streams.resolve(DRIVER, _h(stream))
    pool = _pools.current_pool(DRIVER, 0)
    pool.allocated(_alloc(out, size, M.POOL).base)
    _capture.record(DRIVER, _h(stream), None)


@entry
def cuMemAllocFromPoolAsync(out, size, pool, stream):
    p = DRIVER.pools.get(_h(pool))
    _streams.resolve(DRIVER, _h(stream))
    p.allocated(_alloc(out, size, M.POOL).base)
    _capture.record(DRIVER, _h(stream), None)


@entry
def cuMemAllocPitch_v2(out, pitch_out, width, height, elem):
    if elem not in (4, 8, 16):
        raise CudaError(E.INVALID_VALUE, f"cuMemAllocPitch: ElementSizeBytes must be 4, 8 or 16, got {elem}")
    if width == 0 or height == 0:
        raise CudaError(E.INVALID_VALUE, f"cuMemAllocPitch: {width} x {height} bytes")
    pitch = -(-width // 512) * 512  # the H100's texture pitch alignment
    _out(pitch_out, "pPitch")
    _alloc(out, pitch * height, M.DEVICE)
    pitch_out[0] = pitch


@entry
def cuMemFree_v2(dptr):
    _ctx()
    if dptr == 0:
        return
    M.REGISTRY.remove(dptr, (M.DEVICE, M.MANAGED, M.POOL), "cuMemFree")


@entry
def cuMemFreeAsync(dptr, stream):
    s = _streams.resolve(DRIVER, _h(stream))
    _ctx()
    M.REGISTRY.check_range(dptr, 1, "cuMemFreeAsync")
    a = M.REGISTRY.find(dptr)
    if a is None or a.base != dptr:
        raise CudaError(E.INVALID_VALUE, f"cuMemFreeAsync({dptr:#x}): not a live allocation")
    if _capture.record(DRIVER, _h(stream), None) is not None:
        return
    _streams.enqueue_host(s, lambda _: M.REGISTRY.remove(dptr, (M.DEVICE, M.MANAGED, M.POOL), "cuMemFreeAsync"))


@entry
def cuDeviceGetDefaultMemPool(out, dev):
    _out(out, "pool_out")[0] = _ptr(_pools.default_pool(DRIVER, dev).handle)


@entry
def cuDeviceGetMemPool(out, dev):
    _out(out, "pool")[0] = _ptr(_pools.current_pool(DRIVER, dev).handle)


@entry
def cuDeviceSetMemPool(dev, pool):
    _pools.default_pool(DRIVER, dev)
    DRIVER.current_pool = DRIVER.pools.get(_h(pool))


@entry
def cuMemPoolGetAttribute(pool, attr, value):
    p = DRIVER.pools.get(_h(pool))
    _out(value, "value")
    v = p.get(attr)
    ffi.cast("int *" if attr in _pools.INT_ATTRIBUTES else "cuuint64_t *", value)[0] = v


@entry
def cuMemPoolSetAttribute(pool, attr, value):
    p = DRIVER.pools.get(_h(pool))
    _out(value, "value")
    p.set(attr, ffi.cast("int *" if attr in _pools.INT_ATTRIBUTES else "cuuint64_t *", value)[0])


@entry
def cuMemPoolGetAccess(out, pool, location):
    p = DRIVER.pools.get(_h(pool))
    _out(out, "flags")
    _out(location, "location")
    if location.type != _pools.LOCATION_DEVICE:
        raise CudaError(E.INVALID_VALUE, f"cuMemPoolGetAccess: location type {location.type} is not a device")
    DRIVER.device(location.id)
    out[0] = _pools.ACCESS_READWRITE if location.id == p.device else _pools.ACCESS_NONE


@entry
def cuMemPoolSetAccess(pool, desc, count):
    p = DRIVER.pools.get(_h(pool))
    if count and desc == ffi.NULL:
        raise CudaError(E.INVALID_VALUE, "cuMemPoolSetAccess: map is NULL")
    for i in range(count):
        loc = desc[i].location
        if loc.type != _pools.LOCATION_DEVICE:
            raise CudaError(E.INVALID_VALUE, f"cuMemPoolSetAccess: location type {loc.type} is not a device")
        DRIVER.device(loc.id)
        # the owning device always has read-write access; this driver has no other device to grant it to
        if loc.id == p.device and desc[i].flags != _pools.ACCESS_READWRITE:
            raise CudaError(E.INVALID_DEVICE, "cuMemPoolSetAccess: the pool's own device keeps read-write access")


@entry
def cuMemPoolTrimTo(pool, keep):
    DRIVER.pools.get(_h(pool))  # nothing to trim: freed memory goes back at once


@entry
def cuMemAllocHost_v2(out, size):
    _out(out, "pp")
    a = M.REGISTRY.allocate(size, M.PINNED, _ctx())
    out[0] = _ptr(a.base)


@entry
def cuMemHostAlloc(out, size, flags):
    _out(out, "pp")
    a = M.REGISTRY.allocate(size, M.PINNED, _ctx(), flags)
    out[0] = _ptr(a.base)


@entry
def cuMemFreeHost(p):
    _ctx()
    M.REGISTRY.remove(_h(p), (M.PINNED,), "cuMemFreeHost")


@entry
def cuMemHostGetDevicePointer_v2(out, p, flags):
    _ctx()
    if flags != 0:
        raise CudaError(E.INVALID_VALUE, f"cuMemHostGetDevicePointer: Flags must be 0, got {flags}")
    a = M.REGISTRY.find(_h(p))
    if a is None or a.kind not in (M.PINNED, M.REGISTERED):
        raise CudaError(E.INVALID_VALUE, f"cuMemHostGetDevicePointer({_h(p):#x}): not page-locked host memory")
    _out(out, "pdptr")[0] = _h(p)


@entry
def cuMemHostGetFlags(out, p):
    _ctx()
    a = M.REGISTRY.find(_h(p))
    if a is None or a.kind not in (M.PINNED, M.REGISTERED):
        raise CudaError(E.INVALID_VALUE, f"cuMemHostGetFlags({_h(p):#x}): not page-locked host memory")
    _out(out, "pFlags")[0] = a.flags


@entry
def cuMemHostRegister_v2(p, size, flags):
    ctx = _ctx()
    if p == ffi.NULL or size == 0:
        raise CudaError(E.INVALID_VALUE, "cuMemHostRegister: NULL pointer or size 0")
    M.REGISTRY.add(M.Allocation(_h(p), size, M.REGISTERED, ctx, None, flags))


@entry
def cuMemHostUnregister(p):
    _ctx()
    try:
        M.REGISTRY.remove(_h(p), (M.REGISTERED,), "cuMemHostUnregister")
    except CudaError:
        raise CudaError(E.HOST_MEMORY_NOT_REGISTERED, f"cuMemHostUnregister({_h(p):#x}): not registered") from None


@entry
def cuMemGetAddressRange_v2(base, size, dptr):
    _ctx()
    a = M.REGISTRY.find(dptr)
    if a is None:
        raise CudaError(E.NOT_FOUND, f"cuMemGetAddressRange({dptr:#x}): not inside a live allocation")
    if base != ffi.NULL:
        base[0] = a.base
    if size != ffi.NULL:
        size[0] = a.size


_PA = POINTER_ATTRIBUTE


def _pointer_attribute(data, attr: int, ptr: int) -> None:
    a = M.REGISTRY.find(ptr)
    if a is None:
        if attr == _PA["CU_POINTER_ATTRIBUTE_MEMORY_TYPE"] or attr == _PA["CU_POINTER_ATTRIBUTE_CONTEXT"]:
            raise CudaError(E.INVALID_VALUE, f"cuPointerGetAttribute({ptr:#x}): not memory the driver allocated "
                                             f"or registered")
        if attr == _PA["CU_POINTER_ATTRIBUTE_IS_MANAGED"]:
            ffi.cast("int *", data)[0] = 0
            return
        raise CudaError(E.INVALID_VALUE, f"cuPointerGetAttribute({ptr:#x}): not a device pointer")
    ints = {
        _PA["CU_POINTER_ATTRIBUTE_MEMORY_TYPE"]: a.memory_type,
        _PA["CU_POINTER_ATTRIBUTE_IS_MANAGED"]: 1 if a.kind == M.MANAGED else 0,
        _PA["CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL"]: 0,
        _PA["CU_POINTER_ATTRIBUTE_SYNC_MEMOPS"]: 1,
        _PA["CU_POINTER_ATTRIBUTE_MAPPED"]: 1,
        _PA["CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE"]: 0,
        _PA["CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE"]: 0,
        _PA["CU_POINTER_ATTRIBUTE_ACCESS_FLAGS"]: 3,
        _PA["CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES"]: 0,
    }
    wide = {
        _PA["CU_POINTER_ATTRIBUTE_DEVICE_POINTER"]: ptr,
        _PA["CU_POINTER_ATTRIBUTE_HOST_POINTER"]: ptr,
        _PA["CU_POINTER_ATTRIBUTE_BUFFER_ID"]: a.buffer_id,
        _PA["CU_POINTER_ATTRIBUTE_RANGE_START_ADDR"]: a.base,
        _PA["CU_POINTER_ATTRIBUTE_RANGE_SIZE"]: a.size,
        _PA["CU_POINTER_ATTRIBUTE_MAPPING_SIZE"]: a.size,
        _PA["CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR"]: a.base,
        _PA["CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID"]: a.buffer_id,
        _PA["CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE"]: 0,
    }
    if attr == _PA["CU_POINTER_ATTRIBUTE_CONTEXT"]:
        ffi.cast("uintptr_t *", data)[0] = getattr(a.context, "handle", 0)
    elif attr in ints:
        ffi.cast("int *", data)[0] = ints[attr]
    elif attr in wide:
        ffi.cast("unsigned long long *", data)[0] = wide[attr]
    else:
        raise CudaError(E.INVALID_VALUE, f"cuPointerGetAttribute: attribute {attr} is not supported")


@entry
def cuPointerGetAttribute(data, attr, ptr):
    DRIVER.require_init()
    _pointer_attribute(_out(data, "data"), attr, ptr)


@entry
def cuPointerGetAttributes(n, attrs, data, ptr):
    DRIVER.require_init()
    for i in range(n):
        if data[i] == ffi.NULL:
            continue
        try:
            _pointer_attribute(data[i], attrs[i], ptr)
        except CudaError:
            if attrs[i] == _PA["CU_POINTER_ATTRIBUTE_MEMORY_TYPE"]:
                ffi.cast("int *", data[i])[0] = 0
            elif attrs[i] == _PA["CU_POINTER_ATTRIBUTE_CONTEXT"]:
                ffi.cast("uintptr_t *", data[i])[0] = 0
            else:
                raise


@entry
def cuPointerSetAttribute(value, attr, ptr):
    DRIVER.require_init()
    if M.REGISTRY.find(ptr) is None:
        raise CudaError(E.INVALID_VALUE, f"cuPointerSetAttribute({ptr:#x}): not a device pointer")
    if attr != _PA["CU_POINTER_ATTRIBUTE_SYNC_MEMOPS"]:
        raise CudaError(E.INVALID_VALUE, f"cuPointerSetAttribute: attribute {attr} cannot be set")


# copies: synchronous ones wait for the legacy stream first (its kernels may write the source)
def _sync_copy(dst: int, src: int, size: int, what: str) -> None:
    ctx = _ctx()
    _capture.refuse_unsafe(what)
    _capture.refuse_legacy(DRIVER, what)
    _streams.synchronized(ctx, _streams.Stream.null.synchronize)
    M.copy(dst, src, size, what)


def _async(stream, what: str, fn) -> None:
    _ctx()
    cap = _streams.capturing(DRIVER, _h(stream))
    if cap is not None:  # stream capture: host work (a copy, a memset) becomes a host node
        from ptxjit.driver.graphs import HostNode

        _streams.record(DRIVER, cap, HostNode(fn))
        return
    if _capture.active() and _h(stream) in _capture.LEGACY_HANDLES:
        _capture.refuse_legacy(DRIVER, what)
    s = _streams.resolve(DRIVER, _h(stream))
    _streams.enqueue_host(s, lambda _: fn())


@entry
def cuMemcpy(dst, src, size):
    _sync_copy(dst, src, size, "cuMemcpy")


@entry
def cuMemcpyHtoD_v2(dst, src, size):
    _sync_copy(dst, _h(src), size, "cuMemcpyHtoD")


@entry
def cuMemcpyDtoH_v2(dst, src, size):
    _sync_copy(_h(dst), src, size, "cuMemcpyDtoH")


@entry
def cuMemcpyDtoD_v2(dst, src, size):
    _sync_copy(dst, src, size, "cuMemcpyDtoD")


def _ordered_copy(stream, what: str, dst: int, dst_extent: int, src: int, src_extent: int, copy,
                  node=None) -> None:
    """An async copy `copy(dst, src)` in stream order, with CUDA's rules for pageable host memory (memory the
    driver did not allocate or register): a pageable source is staged before the call returns (the caller may
    reuse or free it at once), and a copy into pageable memory has completed when the call returns."""
    ctx = _ctx()
    cap = _streams.capturing(DRIVER, _h(stream))
    if cap is not None:  # stream capture: a copy node, reading its source when the graph runs
        from ptxjit.driver.graphs import HostNode

        M.REGISTRY.check_range(dst, dst_extent, what + " destination")
        M.REGISTRY.check_range(src, src_extent, what + " source")
        _streams.record(DRIVER, cap, node or HostNode(lambda: copy(dst, src)))
        return
    s = _streams.resolve(DRIVER, _h(stream))
    pageable_dst = M.REGISTRY.check_range(dst, dst_extent, what + " destination") is None
    pageable_src = M.REGISTRY.check_range(src, src_extent, what + " source") is None
    if pageable_src and src_extent:
        staged = ctypes.create_string_buffer(ctypes.string_at(src, src_extent), src_extent)
        from_ = ctypes.addressof(staged)
        _streams.enqueue_host(s, lambda _: (copy(dst, from_), staged))  # the lambda keeps the staging alive
    else:
        _streams.enqueue_host(s, lambda _: copy(dst, src))
    if pageable_dst and dst_extent:
        _streams.synchronized(ctx, s.synchronize)


def _checked_async_copy(dst: int, src: int, size: int, stream, what: str) -> None:
    if size == 0:
        _streams.resolve(DRIVER, _h(stream))
        return
    from ptxjit.driver.graphs import Copy3D

    _ordered_copy(stream, what, dst, size, src, size, lambda d, s_: M.move(d, s_, size),
                  Copy3D(dst, size, 1, src, size, 1, size, 1, 1))


@entry
def cuMemcpyAsync(dst, src, size, stream):
    _checked_async_copy(dst, src, size, stream, "cuMemcpyAsync")


@entry
def cuMemcpyHtoDAsync_v2(dst, src, size, stream):
    _checked_async_copy(dst, _h(src), size, stream, "cuMemcpyHtoDAsync")


@entry
def cuMemcpyDtoHAsync_v2(dst, src, size, stream):
    _checked_async_copy(_h(dst), src, size, stream, "cuMemcpyDtoHAsync")


@entry
def cuMemcpyDtoDAsync_v2(dst, src, size, stream):
    _checked_async_copy(dst, src, size, stream, "cuMemcpyDtoDAsync")


def _memset(dst, value, elem, n, what, stream=None, pitch=0, height=1):
    ctx = _ctx()
    if stream is None:
        _capture.refuse_unsafe(what)
        _capture.refuse_legacy(DRIVER, what)
        _streams.synchronized(ctx, _streams.Stream.null.synchronize)
        M.fill(dst, value, elem, n, what, pitch, height)
    else:
        M.REGISTRY.check_range(dst, (pitch or elem * n) * (height - 1) + elem * n if n and height else 0, what)
        cap = _streams.capturing(DRIVER, _h(stream))
        if cap is not None:  # a memset node
            from ptxjit.driver.graphs import MemsetWork

            _ctx()
            _streams.record(DRIVER, cap, MemsetWork(dst, pitch or elem * n, value & ((1 << (8 * elem)) - 1), elem, n,
                                                    height))
            return
        _async(stream, what, lambda: M.fill(dst, value, elem, n, what, pitch, height))


@entry
def cuMemsetD8_v2(dst, v, n):
    _memset(dst, v, 1, n, "cuMemsetD8")


@entry
def cuMemsetD16_v2(dst, v, n):
    _check_aligned(dst, 2, "cuMemsetD16")
    _memset(dst, v, 2, n, "cuMemsetD16")


@entry
def cuMemsetD32_v2(dst, v, n):
    _check_aligned(dst, 4, "cuMemsetD32")
    _memset(dst, v, 4, n, "cuMemsetD32")


@entry
def cuMemsetD8Async(dst, v, n, stream):
    _memset(dst, v, 1, n, "cuMemsetD8Async", stream)


@entry
def cuMemsetD16Async(dst, v, n, stream):
    _check_aligned(dst, 2, "cuMemsetD16Async")
    _memset(dst, v, 2, n, "cuMemsetD16Async", stream)


@entry
def cuMemsetD32Async(dst, v, n, stream):
    _check_aligned(dst, 4, "cuMemsetD32Async")
    _memset(dst, v, 4, n, "cuMemsetD32Async", stream)


@entry
def cuMemsetD2D8_v2(dst, pitch, v, width, height):
    _memset(dst, v, 1, width, "cuMemsetD2D8", None, pitch, height)


@entry
def cuMemsetD2D16_v2(dst, pitch, v, width, height):
    _memset(dst, v, 2, width, "cuMemsetD2D16", None, pitch, height)


@entry
def cuMemsetD2D32_v2(dst, pitch, v, width, height):
    _memset(dst, v, 4, width, "cuMemsetD2D32", None, pitch, height)


def _check_aligned(dst: int, n: int, what: str) -> None:
    if dst % n:
        raise CudaError(E.INVALID_VALUE, f"{what}: {dst:#x} is not {n}-byte aligned")


def _memcpy2d(p, stream, what: str) -> None:
    c = ffi.cast("ptxjit_memcpy2d *", _out(p, "pCopy"))

    def end(kind: int, host, dev: int, x: int, y: int, pitch: int, side: str) -> int:
        if kind == M.MEMORYTYPE_HOST:
            base = _h(host)
        elif kind in (M.MEMORYTYPE_DEVICE, M.MEMORYTYPE_UNIFIED):
            base = dev
        else:
            raise CudaError(E.NOT_SUPPORTED if kind == M.MEMORYTYPE_ARRAY else E.INVALID_VALUE,
                            f"{what}: {side}MemoryType {kind} (CUDA arrays are not supported)")
        return base + y * pitch + x

    src = end(c.srcMemoryType, c.srcHost, c.srcDevice, c.srcXInBytes, c.srcY, c.srcPitch, "src")
    dst = end(c.dstMemoryType, c.dstHost, c.dstDevice, c.dstXInBytes, c.dstY, c.dstPitch, "dst")
    w, h, sp, dp = c.WidthInBytes, c.Height, c.srcPitch or c.WidthInBytes, c.dstPitch or c.WidthInBytes
    if stream is None:
        ctx = _ctx()
        _streams.synchronized(ctx, _streams.Stream.null.synchronize)
        M.copy_2d(dst, dp, src, sp, w, h, what)
    elif w and h:
        from ptxjit.driver.graphs import Copy3D

        _ordered_copy(stream, what, dst, dp * (h - 1) + w, src, sp * (h - 1) + w,
                      lambda d, s_: M.copy_2d(d, dp, s_, sp, w, h, what), Copy3D(dst, dp, h, src, sp, h, w, h, 1))
    else:
        _streams.resolve(DRIVER, _h(stream))


@entry
def cuMemcpy2D_v2(p):
    _memcpy2d(p, None, "cuMemcpy2D")


@entry
def cuMemcpy2DUnaligned_v2(p):
    _memcpy2d(p, None, "cuMemcpy2DUnaligned")


@entry
def cuMemcpy2DAsync_v2(p, stream):
    _memcpy2d(p, stream, "cuMemcpy2DAsync")


# ---------------------------------------------------------------------------- modules
def _image(p) -> bytes:
    """The bytes of an image given by pointer: PTX text up to its NUL, a fatbin (wrapper) by its header."""
    from ptxjit.driver import fatbin

    if p == ffi.NULL:
        raise CudaError(E.INVALID_VALUE, "image is NULL")
    head = _bytes_at(p, 4)  # a text image may be shorter than a header: read more only behind a magic
    if int.from_bytes(head, "little") in (fatbin.WRAPPER_MAGIC, fatbin.FATBIN_MAGIC) or head == b"\x7fELF":
        head = _bytes_at(p, 64)
    size = _modules.image_size(head)
    if size is None:  # text: read to the NUL
        return ffi.string(ffi.cast("char *", p))
    if size <= -2:  # ELF: its tables first, then as far as its sections reach
        return _bytes_at(p, _modules.elf_extent(_bytes_at(p, -2 - size)))
    if size < 0:  # a fatbin wrapper: the fatbin it points to
        try:
            return fatbin.read_wrapper(_h(p))
        except fatbin.FatbinError as exc:
            raise CudaError(E.INVALID_IMAGE, f"corrupt fatbin wrapper: {exc}") from None
    return _bytes_at(p, size)


def _load(out, data: bytes, name: str, library: bool = False):
    ctx = _ctx()
    _out(out, "module")
    dm = _modules.load(DRIVER, ctx, data, name, library)
    out[0] = _ptr(dm.handle)
    return dm


def _read_file(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise CudaError(E.FILE_NOT_FOUND, f"{what}: {path}: {exc.strerror}") from None


@entry
def cuModuleLoad(out, fname):
    path = _str(fname, "fname")
    _load(out, _read_file(path, "cuModuleLoad"), path)


@entry
def cuModuleLoadData(out, image):
    _load(out, _image(image), "<cuModuleLoadData image>")


@entry
def cuModuleLoadDataEx(out, image, n, options, values):
    _load(out, _image(image), "<cuModuleLoadDataEx image>")


@entry
def cuModuleLoadFatBinary(out, image):
    _load(out, _image(image), "<cuModuleLoadFatBinary image>")


@entry
def cuModuleUnload(h):
    DRIVER.require_init()
    _modules.unload(DRIVER, DRIVER.modules.get(_h(h)))


@entry
def cuModuleGetFunction(out, h, name):
    _ctx()
    dm = DRIVER.modules.get(_h(h))
    f = _modules.get_function(DRIVER, dm, _str(name, "name"))
    _out(out, "hfunc")[0] = _ptr(f.handle)


@entry
def cuModuleGetGlobal_v2(dptr, size, h, name):
    _ctx()
    addr, n = _modules.get_global(DRIVER.modules.get(_h(h)), _str(name, "name"))
    if dptr != ffi.NULL:
        dptr[0] = addr
    if size != ffi.NULL:
        size[0] = n


@entry
def cuModuleGetFunctionCount(out, h):
    _out(out, "count")[0] = len(DRIVER.modules.get(_h(h)).module.ir.entries)


@entry
def cuModuleEnumerateFunctions(out, n, h):
    dm = DRIVER.modules.get(_h(h))
    entries = dm.module.ir.entries
    if n < len(entries):
        raise CudaError(E.INVALID_VALUE, f"cuModuleEnumerateFunctions: {n} slots for {len(entries)} functions")
    for i, e in enumerate(entries):
        out[i] = _ptr(_modules.get_function(DRIVER, dm, e.name).handle)


@entry
def cuModuleGetLoadingMode(out):
    _out(out, "mode")[0] = 1  # CU_MODULE_EAGER_LOADING


def _library(out, data: bytes, name: str):
    ctx = _ctx()
    _out(out, "library")
    dm = _modules.load(DRIVER, ctx, data, name, library=True)
    out[0] = _ptr(dm.handle)


@entry
def cuLibraryLoadData(out, code, jo, jv, njo, lo, lv, nlo):
    _library(out, _image(code), "<cuLibraryLoadData image>")


@entry
def cuLibraryLoadFromFile(out, fname, jo, jv, njo, lo, lv, nlo):
    path = _str(fname, "fileName")
    _library(out, _read_file(path, "cuLibraryLoadFromFile"), path)


@entry
def cuLibraryUnload(h):
    DRIVER.require_init()
    _modules.unload(DRIVER, DRIVER.libraries.get(_h(h)))


@entry
def cuLibraryGetKernel(out, h, name):
    dm = DRIVER.libraries.get(_h(h))
    f = _modules.get_function(DRIVER, dm, _str(name, "name"))
    # a CUkernel may stand wherever a CUfunction does (cuLaunchKernel, cuFuncGetAttribute): one handle for both
    DRIVER.kernels.alias(f.handle, f)
    _out(out, "pKernel")[0] = _ptr(f.handle)


@entry
def cuLibraryGetModule(out, h):
    dm = DRIVER.libraries.get(_h(h))
    mh = getattr(dm, "module_handle", 0)
    if not mh:
        mh = dm.module_handle = DRIVER.modules.new(dm)
    _out(out, "pMod")[0] = _ptr(mh)


@entry
def cuLibraryGetGlobal(dptr, size, h, name):
    addr, n = _modules.get_global(DRIVER.libraries.get(_h(h)), _str(name, "name"))
    if dptr != ffi.NULL:
        dptr[0] = addr
    if size != ffi.NULL:
        size[0] = n


@entry
def cuKernelGetFunction(out, k):
    _ctx()
    _out(out, "pFunc")[0] = _ptr(DRIVER.kernels.get(_h(k)).handle)


@entry
def cuKernelGetAttribute(out, attrib, k, dev):
    DRIVER.device(dev)
    _out(out, "pi")[0] = _modules.function_attribute(DRIVER, DRIVER.kernels.get(_h(k)), attrib)


@entry
def cuKernelSetAttribute(attrib, value, k, dev):
    DRIVER.device(dev)
    _set_attribute(DRIVER.kernels.get(_h(k)), attrib, value)


@entry
def cuKernelGetName(out, k):
    f = DRIVER.kernels.get(_h(k))
    _out(out, "name")[0] = _cstr(f.name)


@entry
def cuFuncGetAttribute(out, attrib, h):
    _out(out, "pi")[0] = _modules.function_attribute(DRIVER, DRIVER.functions.get(_h(h)), attrib)


def _set_attribute(f, attrib: int, value: int) -> None:
    from ptxjit.driver.abi_tables import FUNCTION_ATTRIBUTE as A

    if attrib == A["CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"]:
        limit = DRIVER.model.attribute(97) - f.kernel.static_shared_size  # MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        if not 0 <= value <= limit:
            raise CudaError(E.INVALID_VALUE, f"cuFuncSetAttribute: {value} bytes of dynamic shared memory "
                                             f"(at most {limit} with {f.kernel.static_shared_size} static)")
    elif attrib not in (A["CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT"],
                        A["CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH"], A["CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT"],
                        A["CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH"],
                        A["CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED"],
                        A["CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE"]):
        raise CudaError(E.INVALID_VALUE, f"cuFuncSetAttribute: attribute {attrib} cannot be set")
    f.attributes[attrib] = value


@entry
def cuFuncSetAttribute(h, attrib, value):
    _set_attribute(DRIVER.functions.get(_h(h)), attrib, value)


_FUNC_CACHE_CONFIGS = range(4)  # CU_FUNC_CACHE_PREFER_NONE, _SHARED, _L1, _EQUAL: a preference, no effect on a CPU


def _cache_config(config: int, what: str) -> None:
    if config not in _FUNC_CACHE_CONFIGS:
        raise CudaError(E.INVALID_VALUE, f"{what}: {config} is not a CUfunc_cache")


@entry
def cuFuncSetCacheConfig(h, config):
    DRIVER.functions.get(_h(h))
    _cache_config(config, "cuFuncSetCacheConfig")


@entry
def cuKernelSetCacheConfig(k, config, dev):
    DRIVER.kernels.get(_h(k))
    DRIVER.device(dev)
    _cache_config(config, "cuKernelSetCacheConfig")


@entry
def cuFuncGetName(out, h):
    _out(out, "name")[0] = _cstr(DRIVER.functions.get(_h(h)).name)


@entry
def cuFuncGetModule(out, h):
    f = DRIVER.functions.get(_h(h))
    _out(out, "hmod")[0] = _ptr(f.module.handle)


@entry
def cuFuncGetParamInfo(h, index, offset, size):
    f = DRIVER.functions.get(_h(h))
    if index >= len(f.param_offsets):
        raise CudaError(E.INVALID_VALUE, f"cuFuncGetParamInfo: '{f.name}' has {len(f.param_offsets)} parameters")
    if offset != ffi.NULL:
        offset[0] = f.param_offsets[index]
    if size != ffi.NULL:
        size[0] = f.param_sizes[index]


# ---------------------------------------------------------------------------- the JIT linker (PTX inputs)
_JIT_MAX_REGISTERS = 0  # CUjit_option


@entry
def cuLinkCreate_v2(n, options, values, out):
    DRIVER.require_init()
    from ptxjit.driver.link import LinkState

    st = LinkState()
    for i in range(n):
        if options[i] == _JIT_MAX_REGISTERS:  # an unsigned int carried in the value pointer itself
            st.max_registers = _h(values[i]) & 0xFFFFFFFF
    st.handle = DRIVER.links.new(st)
    _out(out, "stateOut")[0] = _ptr(st.handle)


@entry
def cuLinkAddData_v2(h, kind, data, size, name, n, options, values):
    st = DRIVER.links.get(_h(h))
    if data == ffi.NULL or size == 0:
        raise CudaError(E.INVALID_VALUE, "cuLinkAddData: NULL data or size 0")
    st.add(kind, _bytes_at(data, size), ffi.string(name).decode() if name != ffi.NULL else "<data>")


@entry
def cuLinkAddFile_v2(h, kind, path, n, options, values):
    st = DRIVER.links.get(_h(h))
    p = _str(path, "path")
    try:
        with open(p, "rb") as f:
            st.add(kind, f.read(), p)
    except OSError as exc:
        raise CudaError(E.FILE_NOT_FOUND, f"cuLinkAddFile: {p}: {exc.strerror}") from None


@entry
def cuLinkComplete(h, out, size):
    st = DRIVER.links.get(_h(h))
    image = st.complete()
    st.buffer = ffi.new("char[]", image)
    _out(out, "cubinOut")[0] = st.buffer
    if size != ffi.NULL:
        size[0] = len(image)


@entry
def cuLinkDestroy(h):
    DRIVER.links.drop(_h(h))


# ---------------------------------------------------------------------------- launches
def _params(f, kernel_params, extra) -> bytes:
    return _launch.parameter_buffer(ffi, f, kernel_params, extra, "cuLaunchKernel")


@entry
def cuLaunchKernel(h, gx, gy, gz, bx, by, bz, shmem, stream, kernel_params, extra):
    ctx = _ctx()
    f = DRIVER.functions.get(_h(h))
    raw = _params(f, kernel_params, extra)
    _launch.launch(DRIVER, ctx, f, (gx, gy, gz), (bx, by, bz), shmem, _h(stream), raw)


@entry
def cuLaunchCooperativeKernel(h, gx, gy, gz, bx, by, bz, shmem, stream, kernel_params):
    ctx = _ctx()
    f = DRIVER.functions.get(_h(h))
    raw = _params(f, kernel_params, ffi.NULL)
    _launch.launch(DRIVER, ctx, f, (gx, gy, gz), (bx, by, bz), shmem, _h(stream), raw, cooperative=True)


_ATTR_COOPERATIVE, _ATTR_CLUSTER_DIMENSION = 2, 4


@entry
def cuLaunchKernelEx(config, h, kernel_params, extra):
    ctx = _ctx()
    c = ffi.cast("ptxjit_launch_config *", _out(config, "config"))
    f = DRIVER.functions.get(_h(h))
    raw = _params(f, kernel_params, extra)
    cooperative = False
    cluster = None
    attrs = ffi.cast("unsigned char *", c.attrs)
    for i in range(c.numAttrs):
        rec = attrs + 72 * i  # CUlaunchAttribute: id (int), 4 bytes padding, a 64-byte value union
        ident = ffi.cast("int *", rec)[0]
        value = ffi.cast("unsigned int *", rec + 8)
        if ident == _ATTR_COOPERATIVE:
            cooperative = bool(value[0])
        elif ident == _ATTR_CLUSTER_DIMENSION:
            cluster = (value[0], value[1], value[2])
    _launch.launch(DRIVER, ctx, f, (c.gridDimX, c.gridDimY, c.gridDimZ), (c.blockDimX, c.blockDimY, c.blockDimZ),
                   c.sharedMemBytes, _h(c.hStream), raw,
                   cooperative=cooperative, cluster=cluster)


@entry
def cuLaunchHostFunc(stream, fn, user):
    _ctx()
    if fn == ffi.NULL:
        raise CudaError(E.INVALID_VALUE, "cuLaunchHostFunc: fn is NULL")
    _async(stream, "cuLaunchHostFunc", lambda: fn(user))


@entry
def cuStreamAddCallback(stream, cb, user, flags):
    _ctx()
    s = _streams.resolve(DRIVER, _h(stream))
    if cb == ffi.NULL or flags != 0:
        raise CudaError(E.INVALID_VALUE, "cuStreamAddCallback: callback is NULL or flags are not 0")
    _streams.enqueue_host(s, lambda _: cb(stream, 0, user))


def _occupancy(f, block: int, smem: int) -> int:
    """Blocks per multiprocessor, by the cooperative launch's model (runtime/cooperative.py: CUDA's occupancy
    calculator for sm_90, registers aside).  A cooperative launch takes that many per worker thread, fewer than
    the device's 132 multiprocessors on most hosts: a grid sized occupancy x MULTIPROCESSOR_COUNT is refused with
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE and the limit in the log."""
    from ptxjit.runtime import cooperative

    if block <= 0:
        raise CudaError(E.INVALID_VALUE, f"occupancy: blockSize {block}")
    if block > 1024:
        return 0
    return cooperative.max_active_blocks_per_multiprocessor(f.kernel, (block, 1, 1), smem)


@entry
def cuOccupancyMaxActiveBlocksPerMultiprocessor(out, h, block, smem):
    _out(out, "numBlocks")[0] = _occupancy(DRIVER.functions.get(_h(h)), block, smem)


@entry
def cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(out, h, block, smem, flags):
    _out(out, "numBlocks")[0] = _occupancy(DRIVER.functions.get(_h(h)), block, smem)


def _potential(min_grid, block_out, h, fn, smem, limit) -> None:
    f = DRIVER.functions.get(_h(h))
    best, best_block = -1, 32
    top = min(1024, limit or 1024, _modules.function_attribute(DRIVER, f, 0))
    for b in range(32, top + 1, 32):
        s = fn(b) if fn != ffi.NULL else smem
        occ = _occupancy(f, b, s) * b
        if occ > best:
            best, best_block = occ, b
    sms = DRIVER.model.attribute(16)
    _out(block_out, "blockSize")[0] = best_block
    _out(min_grid, "minGridSize")[0] = sms * max(1, _occupancy(f, best_block, smem))


@entry
def cuOccupancyMaxPotentialBlockSize(min_grid, block, h, fn, smem, limit):
    _potential(min_grid, block, h, ffi.cast("size_t (*)(int)", fn), smem, limit)


@entry
def cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block, h, fn, smem, limit, flags):
    _potential(min_grid, block, h, ffi.cast("size_t (*)(int)", fn), smem, limit)


@entry
def cuOccupancyAvailableDynamicSMemPerBlock(out, h, nblocks, block):
    f = DRIVER.functions.get(_h(h))
    per_sm = DRIVER.model.attribute(81)
    avail = per_sm // max(1, nblocks) - f.kernel.static_shared_size
    _out(out, "dynamicSmemSize")[0] = max(0, min(avail, DRIVER.model.attribute(97) - f.kernel.static_shared_size))


# ---------------------------------------------------------------------------- graphs
def _deps(deps, n) -> list[int]:
    if n and deps == ffi.NULL:
        raise CudaError(E.INVALID_VALUE, f"{n} dependencies but the array is NULL")
    return [_h(deps[i]) for i in range(n)]


def _kernel_node(p) -> object:
    from ptxjit.driver.graphs import KernelNode

    p = _out(p, "nodeParams")
    h = _h(p.func)
    f = DRIVER.functions.get(h if h else _h(p.kern))
    raw = _params(f, p.kernelParams, p.extra)
    grid, block = (p.gridDimX, p.gridDimY, p.gridDimZ), (p.blockDimX, p.blockDimY, p.blockDimZ)
    if min(grid) < 1 or min(block) < 1:
        raise CudaError(E.INVALID_VALUE, f"kernel node '{f.name}': grid {grid} and block {block} must be >= 1")
    return KernelNode(f, grid, block, p.sharedMemBytes, raw)


def _add_node(out, graph, deps, n, work) -> None:
    _ctx()
    g = DRIVER.graphs.get(_h(graph))
    node = g.add(DRIVER, work, _deps(deps, n))
    _out(out, "phGraphNode")[0] = _ptr(node.handle)


@entry
def cuGraphCreate(out, flags):
    from ptxjit.driver.graphs import Graph

    _ctx()
    g = Graph()
    g.handle = DRIVER.graphs.new(g)
    _out(out, "phGraph")[0] = _ptr(g.handle)


@entry
def cuGraphDestroy(h):
    from ptxjit.driver.graphs import release_user_refs

    g = DRIVER.graphs.drop(_h(h))
    for node in g.nodes:
        DRIVER.graph_nodes.drop(node.handle)
    release_user_refs(DRIVER, g.user_refs)


@entry
def cuGraphAddKernelNode(out, graph, deps, n, params):
    _add_node(out, graph, deps, n, _kernel_node(params))


@entry
def cuGraphAddKernelNode_v2(out, graph, deps, n, params):
    _add_node(out, graph, deps, n, _kernel_node(params))


@entry
def cuGraphAddMemcpyNode(out, graph, deps, n, copy, ctx):
    from ptxjit.driver.graphs import copy_3d

    _add_node(out, graph, deps, n, copy_3d(_out(copy, "copyParams"), _h, "cuGraphAddMemcpyNode"))


@entry
def cuGraphAddHostNode(out, graph, deps, n, params):
    from ptxjit.driver.graphs import HostNode

    p = _out(params, "nodeParams")
    fn, user = p.fn, p.userData
    if fn == ffi.NULL:
        raise CudaError(E.INVALID_VALUE, "cuGraphAddHostNode: fn is NULL")
    _add_node(out, graph, deps, n, HostNode(lambda: fn(user)))


@entry
def cuGraphAddEmptyNode(out, graph, deps, n):
    _add_node(out, graph, deps, n, None)


def _instantiate(out, graph) -> None:
    from ptxjit.driver.graphs import instantiate

    _ctx()
    ex = instantiate(DRIVER, DRIVER.graphs.get(_h(graph)))
    _out(out, "phGraphExec")[0] = _ptr(ex.handle)


@entry
def cuGraphInstantiateWithFlags(out, graph, flags):
    _instantiate(out, graph)


@entry
def cuGraphInstantiateWithParams(out, graph, params):
    p = _out(params, "instantiateParams")  # the flags (upload, auto-free, priorities) change nothing here
    p.hErrNode_out = ffi.NULL
    p.result_out = 0  # CUDA_GRAPH_INSTANTIATE_SUCCESS
    _instantiate(out, graph)


@entry
def cuGraphInstantiate_v2(out, graph, error_node, log, size):
    if error_node != ffi.NULL:
        error_node[0] = ffi.NULL
    _instantiate(out, graph)


def _exec_set(ex_h, node_h, work) -> None:
    ex = DRIVER.graph_execs.get(_h(ex_h))
    h = _h(node_h)
    if h not in ex.work:
        raise CudaError(E.INVALID_VALUE, f"node {h:#x} is not in this executable graph")
    if type(ex.work[h]) is not type(work):
        raise CudaError(E.INVALID_VALUE, f"node {h:#x} is not a node of that kind")
    ex.work[h] = work


@entry
def cuGraphExecKernelNodeSetParams(ex, node, params):
    _exec_set(ex, node, _kernel_node(params))


@entry
def cuGraphExecKernelNodeSetParams_v2(ex, node, params):
    _exec_set(ex, node, _kernel_node(params))


@entry
def cuGraphExecMemcpyNodeSetParams(ex, node, copy, ctx):
    from ptxjit.driver.graphs import copy_3d

    _exec_set(ex, node, copy_3d(_out(copy, "copyParams"), _h, "cuGraphExecMemcpyNodeSetParams"))


@entry
def cuGraphLaunch(ex_h, stream):
    from ptxjit.driver.graphs import Copy3D, HostNode, KernelNode

    ctx = _ctx()
    ex = DRIVER.graph_execs.get(_h(ex_h))
    s = _streams.resolve(DRIVER, _h(stream))
    if _capture.of(_h(stream)) is not None:  # a graph launched into a capture becomes its nodes there
        for node in ex.order:
            if ex.work[node.handle] is not None:
                _capture.record(DRIVER, _h(stream), ex.work[node.handle])
        return
    if _capture.active() and _h(stream) in _capture.LEGACY_HANDLES:
        _capture.refuse_legacy(DRIVER, "cuGraphLaunch")
    for node in ex.order:
        work = ex.work[node.handle]
        if isinstance(work, KernelNode):
            _launch.launch(DRIVER, ctx, work.function, work.grid, work.block, work.shared_mem, s, work.params)
        elif isinstance(work, Copy3D):
            _streams.enqueue_host(s, lambda _, w=work: w.run())
        elif isinstance(work, HostNode):
            _streams.enqueue_host(s, lambda _, w=work: w.call())


@entry
def cuGraphExecDestroy(h):
    from ptxjit.driver.graphs import release_user_refs

    release_user_refs(DRIVER, DRIVER.graph_execs.drop(_h(h)).user_refs)


# ---------------------------------------------------------------------------- user objects
_USER_OBJECT_NO_DESTRUCTOR_SYNC = 1  # CU_USER_OBJECT_NO_DESTRUCTOR_SYNC, the one flag CUDA accepts
_GRAPH_USER_OBJECT_MOVE = 1  # CU_GRAPH_USER_OBJECT_MOVE: the graph takes over the caller's references


@entry
def cuUserObjectCreate(out, ptr, destroy, refcount, flags):
    from ptxjit.driver.graphs import UserObject

    if destroy == ffi.NULL:
        raise CudaError(E.INVALID_VALUE, "cuUserObjectCreate: destroy is NULL")
    if refcount == 0:
        raise CudaError(E.INVALID_VALUE, "cuUserObjectCreate: initialRefcount is 0")
    if flags != _USER_OBJECT_NO_DESTRUCTOR_SYNC:
        raise CudaError(E.INVALID_VALUE, f"cuUserObjectCreate: flags {flags} (CUDA requires "
                                         "CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)")
    _out(out, "object_out")
    obj = UserObject(0, lambda: destroy(ptr), refcount)
    obj.handle = DRIVER.user_objects.new(obj)
    out[0] = _ptr(obj.handle)


@entry
def cuUserObjectRetain(h, count):
    if count == 0:
        raise CudaError(E.INVALID_VALUE, "cuUserObjectRetain: count is 0")
    DRIVER.user_objects.get(_h(h)).refs += count


@entry
def cuUserObjectRelease(h, count):
    from ptxjit.driver.graphs import release_user_object

    release_user_object(DRIVER, _h(h), count)


@entry
def cuGraphRetainUserObject(graph, h, count, flags):
    g = DRIVER.graphs.get(_h(graph))
    obj = DRIVER.user_objects.get(_h(h))
    if count == 0 or flags not in (0, _GRAPH_USER_OBJECT_MOVE):
        raise CudaError(E.INVALID_VALUE, f"cuGraphRetainUserObject: count {count}, flags {flags}")
    if not flags & _GRAPH_USER_OBJECT_MOVE:  # new references; a move takes the caller's
        obj.refs += count
    g.user_refs[obj.handle] = g.user_refs.get(obj.handle, 0) + count


@entry
def cuGraphReleaseUserObject(graph, h, count):
    from ptxjit.driver.graphs import release_user_object

    g = DRIVER.graphs.get(_h(graph))
    handle = _h(h)
    DRIVER.user_objects.get(handle)
    held = g.user_refs.get(handle, 0)
    if count == 0 or count > held:
        raise CudaError(E.INVALID_VALUE, f"cuGraphReleaseUserObject: releasing {count} of the graph's {held} "
                                         "references")
    if held == count:
        del g.user_refs[handle]
    else:
        g.user_refs[handle] = held - count
    release_user_object(DRIVER, handle, count)


def _node_out(nodes: list, out, count, what: str) -> None:
    """CUDA's two-call listing: a NULL array asks for the count; otherwise up to *count handles are written
    and *count becomes the number written."""
    _out(count, what)
    if out != ffi.NULL:
        n = min(count[0], len(nodes))
        for i in range(n):
            out[i] = _ptr(nodes[i].handle)
        count[0] = n
    else:
        count[0] = len(nodes)


def _edges(graph) -> list[tuple]:
    g = DRIVER.graphs.get(_h(graph))
    return [(d, n) for n in g.nodes for d in n.deps]


@entry
def cuGraphGetEdges_v2(graph, from_, to, edge_data, count):
    edges = _edges(graph)
    _out(count, "numEdges")
    if from_ == ffi.NULL and to == ffi.NULL:
        count[0] = len(edges)
        return
    if from_ == ffi.NULL or to == ffi.NULL:
        raise CudaError(E.INVALID_VALUE, "cuGraphGetEdges: from and to must both be NULL or both arrays")
    n = min(count[0], len(edges))
    for i in range(n):
        from_[i], to[i] = _ptr(edges[i][0].handle), _ptr(edges[i][1].handle)
    if edge_data != ffi.NULL:
        ffi.memmove(edge_data, b"\0" * (8 * n), 8 * n)  # CUgraphEdgeData: every edge a default one
    count[0] = n


@entry
def cuGraphGetEdges(graph, from_, to, count):
    cuGraphGetEdges_v2(graph, from_, to, ffi.NULL, count)


@entry
def cuGraphGetRootNodes(graph, nodes, count):
    _node_out([n for n in DRIVER.graphs.get(_h(graph)).nodes if not n.deps], nodes, count, "numRootNodes")


@entry
def cuGraphNodeGetType(node, out):
    from ptxjit.driver.graphs import kind_of

    _out(out, "type")[0] = kind_of(DRIVER.graph_nodes.get(_h(node)).work)


@entry
def cuGraphNodeGetDependencies_v2(node, deps, edge_data, count):
    _node_out(DRIVER.graph_nodes.get(_h(node)).deps, deps, count, "numDependencies")


@entry
def cuGraphNodeGetDependencies(node, deps, count):
    cuGraphNodeGetDependencies_v2(node, deps, ffi.NULL, count)


@entry
def cuGraphNodeGetDependentNodes_v2(node, out, edge_data, count):
    from ptxjit.driver.graphs import dependents

    n = DRIVER.graph_nodes.get(_h(node))
    _node_out(dependents(n.graph, n), out, count, "numDependentNodes")


@entry
def cuGraphNodeGetDependentNodes(node, out, count):
    cuGraphNodeGetDependentNodes_v2(node, out, ffi.NULL, count)


@entry
def cuGraphAddDependencies_v2(graph, from_, to, edge_data, n):
    from ptxjit.driver.graphs import add_edges

    g = DRIVER.graphs.get(_h(graph))
    if n and (from_ == ffi.NULL or to == ffi.NULL):
        raise CudaError(E.INVALID_VALUE, "cuGraphAddDependencies: from or to is NULL")
    add_edges(DRIVER, g, [(_h(from_[i]), _h(to[i])) for i in range(n)], "cuGraphAddDependencies")


@entry
def cuGraphAddDependencies(graph, from_, to, n):
    cuGraphAddDependencies_v2(graph, from_, to, ffi.NULL, n)


@entry
def cuGraphDestroyNode(node):
    from ptxjit.driver.graphs import destroy_node

    destroy_node(DRIVER, DRIVER.graph_nodes.get(_h(node)))


@entry
def cuGraphUpload(ex, stream):
    _ctx()
    DRIVER.graph_execs.get(_h(ex))
    _streams.resolve(DRIVER, _h(stream))  # nothing to upload: device memory is host memory


@entry
def cuGraphGetNodes(graph, nodes, count):
    g = DRIVER.graphs.get(_h(graph))
    _out(count, "numNodes")
    if nodes != ffi.NULL:
        for i, node in enumerate(g.nodes[:count[0]]):
            nodes[i] = _ptr(node.handle)
    count[0] = len(g.nodes)


# ---------------------------------------------------------------------------- streams and events
@entry
def cuStreamCreate(out, flags):
    ctx = _ctx()
    _out(out, "phStream")[0] = _ptr(_streams.create(DRIVER, ctx, flags).handle)


@entry
def cuStreamCreateWithPriority(out, flags, priority):
    ctx = _ctx()
    _out(out, "phStream")[0] = _ptr(_streams.create(DRIVER, ctx, flags, priority).handle)


@entry
def cuStreamDestroy_v2(h):
    DRIVER.require_init()
    ds = DRIVER.streams.get(_h(h))
    _capture.stream_destroyed(DRIVER, _h(h))
    DRIVER.streams.drop(_h(h))
    del ds  # its outstanding work still completes (CUDA's rule), the stream object lives on with it


@entry
def cuStreamSynchronize(h):
    ctx = _ctx()
    _stream_use(_h(h), "cuStreamSynchronize")
    s = _streams.resolve(DRIVER, _h(h))
    _streams.synchronized(ctx, s.synchronize)


@entry
def cuStreamQuery(h):
    _ctx()
    _stream_use(_h(h), "cuStreamQuery")
    if not _streams.resolve(DRIVER, _h(h)).query():
        raise CudaError(E.NOT_READY, "work is outstanding")


@entry
def cuStreamWaitEvent(h, ev, flags):
    _ctx()
    event = DRIVER.events.get(_h(ev)).event
    s = _streams.resolve(DRIVER, _h(h))
    if _capture.stream_waits(DRIVER, _h(h), _h(ev), flags, "cuStreamWaitEvent"):  # a fork or join of a capture
        return
    if _h(h) in _capture.LEGACY_HANDLES:
        _capture.refuse_legacy(DRIVER, "cuStreamWaitEvent")
    s.wait_event(event)


def _stream_use(v: int, what: str) -> None:
    """Synchronizing or querying a stream: refused on a capturing stream, and on the legacy stream while a
    blocking stream captures."""
    if _capture.active():
        _capture.refuse(v, what)
        if v in _capture.LEGACY_HANDLES:
            _capture.refuse_legacy(DRIVER, what)


@entry
def cuStreamGetPriority(h, out):
    v = _h(h)
    _out(out, "priority")[0] = 0 if v in (0, 1, 2) else DRIVER.streams.get(v).priority


@entry
def cuStreamGetFlags(h, out):
    v = _h(h)
    _out(out, "flags")[0] = 0 if v in (0, 1, 2) else DRIVER.streams.get(v).flags


@entry
def cuStreamGetCtx(h, out):
    ctx = _ctx()
    v = _h(h)
    _out(out, "pctx")[0] = _ptr(ctx.handle if v in (0, 1, 2) else DRIVER.streams.get(v).context.handle)


@entry
def cuStreamGetId(h, out):
    _out(out, "streamId")[0] = _h(h)


@entry
def cuStreamIsCapturing(h, out):
    v = _h(h)
    _streams.resolve(DRIVER, v)
    _out(out, "captureStatus")[0] = _capture.status(v)


@entry
def cuStreamBeginCapture_v2(h, mode):
    _ctx()
    v = _h(h)
    if v not in _capture.LEGACY_HANDLES:
        _streams.synchronized(DRIVER.top(), DRIVER.streams.get(v).stream.synchronize)  # earlier work runs first
    _capture.begin(DRIVER, v, mode, "cuStreamBeginCapture")


@entry
def cuStreamBeginCapture(h):
    cuStreamBeginCapture_v2(h, _capture.MODE_GLOBAL)


def _node_list(deps, n: int, what: str) -> list:
    if n and deps == ffi.NULL:
        raise CudaError(E.INVALID_VALUE, f"{what}: {n} dependencies but the array is NULL")
    return [DRIVER.graph_nodes.get(_h(deps[i])) for i in range(n)]


@entry
def cuStreamBeginCaptureToGraph(h, graph, deps, edges, n, mode):
    _ctx()
    v = _h(h)
    g = DRIVER.graphs.get(_h(graph))
    nodes = _node_list(deps, n, "cuStreamBeginCaptureToGraph")
    if any(node.graph is not g for node in nodes):
        raise CudaError(E.INVALID_VALUE, "cuStreamBeginCaptureToGraph: a dependency is not a node of the graph")
    if v not in _capture.LEGACY_HANDLES:
        _streams.synchronized(DRIVER.top(), DRIVER.streams.get(v).stream.synchronize)
    _capture.begin(DRIVER, v, mode, "cuStreamBeginCaptureToGraph", graph=g, deps=nodes)


@entry
def cuStreamEndCapture(h, out):
    _ctx()
    _out(out, "phGraph")[0] = ffi.NULL
    g = _capture.end(DRIVER, _h(h), "cuStreamEndCapture")
    out[0] = _ptr(g.handle)


_capture_arrays: dict[int, object] = {}  # per stream: the dependency array cuStreamGetCaptureInfo returned


def _capture_info(h, status, ident, graph, deps, edges, ndeps) -> None:
    v = _h(h)
    _streams.resolve(DRIVER, v)
    _out(status, "captureStatus_out")[0] = _capture.status(v)
    cap = _capture.of(v)
    tail = _capture.dependencies(DRIVER, v)
    if ident != ffi.NULL:
        ident[0] = cap.ident if cap is not None else 0
    if graph != ffi.NULL:
        graph[0] = _ptr(cap.graph.handle) if cap is not None else ffi.NULL
    if deps != ffi.NULL:
        arr = ffi.new("CUhandle[]", [_ptr(n.handle) for n in tail] or [ffi.NULL])
        _capture_arrays[v] = arr  # valid until the next call for the stream, as CUDA's
        deps[0] = arr if tail else ffi.NULL
    if edges != ffi.NULL:
        edges[0] = ffi.NULL  # no edge data: every edge is a default one
    if ndeps != ffi.NULL:
        ndeps[0] = len(tail)


@entry
def cuStreamGetCaptureInfo_v3(h, status, ident, graph, deps, edges, ndeps):
    _capture_info(h, status, ident, graph, deps, edges, ndeps)


@entry
def cuStreamGetCaptureInfo_v2(h, status, ident, graph, deps, ndeps):
    _capture_info(h, status, ident, graph, deps, ffi.NULL, ndeps)


@entry
def cuStreamGetCaptureInfo(h, status, ident):
    _capture_info(h, status, ident, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL)


@entry
def cuStreamUpdateCaptureDependencies_v2(h, deps, edges, n, flags):
    _ctx()
    _capture.update_dependencies(DRIVER, _h(h), _node_list(deps, n, "cuStreamUpdateCaptureDependencies"), flags,
                                 "cuStreamUpdateCaptureDependencies")


@entry
def cuStreamUpdateCaptureDependencies(h, deps, n, flags):
    cuStreamUpdateCaptureDependencies_v2(h, deps, ffi.NULL, n, flags)


@entry
def cuThreadExchangeStreamCaptureMode(mode):
    p = _out(mode, "mode")
    p[0] = _capture.exchange_mode(p[0], "cuThreadExchangeStreamCaptureMode")


@entry
def cuProfilerStart():
    # cudaProfiler.h's hooks mark a region for an attached profiler; none attaches to this driver
    _ctx()


@entry
def cuProfilerStop():
    _ctx()


@entry
def cuEventCreate(out, flags):
    ctx = _ctx()
    if flags & ~(1 | 2 | 4):
        raise CudaError(E.INVALID_VALUE, f"cuEventCreate: unknown flags {flags:#x}")
    if flags & _streams.CU_EVENT_INTERPROCESS:
        raise CudaError(E.NOT_SUPPORTED, "cuEventCreate: interprocess events are not supported")
    ev = _streams.DriverEvent(0, _streams.Event(disable_timing=bool(flags & _streams.CU_EVENT_DISABLE_TIMING)), ctx,
                              flags)
    ev.handle = DRIVER.events.new(ev)
    _out(out, "phEvent")[0] = _ptr(ev.handle)


@entry
def cuEventDestroy_v2(h):
    DRIVER.require_init()
    DRIVER.events.drop(_h(h))


@entry
def cuEventRecord(h, stream):
    _ctx()
    event = DRIVER.events.get(_h(h)).event
    s = _streams.resolve(DRIVER, _h(stream))
    if _capture.event_recorded(DRIVER, _h(h), _h(stream)):  # in a capture: it marks the work captured so far
        return
    if _capture.active() and _h(stream) in _capture.LEGACY_HANDLES:
        _capture.refuse_legacy(DRIVER, "cuEventRecord")
    event.record(s)


@entry
def cuEventRecordWithFlags(h, stream, flags):
    cuEventRecord(h, stream)


@entry
def cuEventSynchronize(h):
    ctx = _ctx()
    _capture.refuse_event(_h(h), "cuEventSynchronize")
    _streams.synchronized(ctx, DRIVER.events.get(_h(h)).event.synchronize)


@entry
def cuEventQuery(h):
    _ctx()
    _capture.refuse_event(_h(h), "cuEventQuery")
    if not DRIVER.events.get(_h(h)).event.query():
        raise CudaError(E.NOT_READY, "the event has not completed")


@entry
def cuEventElapsedTime_v2(out, start, end):
    _ctx()
    a, b = DRIVER.events.get(_h(start)).event, DRIVER.events.get(_h(end)).event
    try:
        ms = _streams.get_elapsed_time(a, b)
    except ValueError as exc:
        raise CudaError(E.INVALID_HANDLE, f"cuEventElapsedTime: {exc}") from None
    except RuntimeError as exc:
        raise CudaError(E.NOT_READY, f"cuEventElapsedTime: {exc}") from None
    _out(out, "pMilliseconds")[0] = ms


if config.DRIVER_TRACE.raw():  # every call named in the log (debugging a client)
    def _traced(name, fn):
        def call(*args):
            E.log(f"ptxjit driver: {name}")
            return fn(*args)

        return call

    _IMPLS = {n: _traced(n, f) for n, f in _IMPLS.items()}
