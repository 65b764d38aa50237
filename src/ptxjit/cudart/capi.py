"""The CUDA runtime API's entry points as the C ABI calls them (libcudart.so.13, cudart/build.py).

Implemented on the driver's Python layer (ptxjit.driver): the primary context of device 0 is made current
on a thread at its first call that needs one, as cudart does; memory comes from the driver's allocation
registry, launches take the driver's raw parameter-buffer path, streams and events are the driver's.

cudart/entries.py registers these with cffi and turns what they raise into cudaError_t; the plumbing they share
(handles, output pointers, the calling thread's context) is cudart/base.py's.
"""

from __future__ import annotations

import ctypes

from ptxjit.cudart import base as B
from ptxjit.cudart import errors as RE
from ptxjit.cudart import registry as R
from ptxjit.cudart.abi_tables import CUDART_VERSION
from ptxjit.cudart.errors import RuntimeError_
from ptxjit.driver import capture as _capture
from ptxjit.driver import errors as DE
from ptxjit.driver import graphs as G
from ptxjit.driver import launch as _launch
from ptxjit.driver import memory as M
from ptxjit.driver import modules as _modules
from ptxjit.driver import streams as _streams
from ptxjit.driver.abi_tables import CUDA_VERSION, DEVICE_ATTRIBUTE
from ptxjit.driver.context import DRIVER
from ptxjit.driver.errors import CudaError

# the shared plumbing (cudart/base.py) under the short names this module's entry points use
entry, raw, _set_last, _tls = B.entry, B.raw, B.set_last, B.tls
_h, _out, _ctx, _kind, _sync_legacy = B.h, B.out, B.ctx, B.kind, B.sync_legacy
check_dynamic_shared, params_of = B.check_dynamic_shared, B.params_of


# ---------------------------------------------------------------------------- registration (nvcc's host code)
@raw
def __cudaRegisterFatBinary(fat_cubin):
    handle = B.ffi.new("void *[1]", [fat_cubin])
    R.register_fatbin(_h(fat_cubin), handle)
    return handle


@raw
def __cudaRegisterFatBinaryEnd(handle):
    return None


@raw
def __cudaUnregisterFatBinary(handle):
    R.unregister(_h(handle))


@raw
def __cudaRegisterFunction(handle, host_fun, device_fun, device_name, thread_limit, tid, bid, bdim, gdim, wsize):
    fb = R.fatbin_of(_h(handle))
    name = B.ffi.string(device_name).decode()
    R.KERNELS[_h(host_fun)] = R.Kernel(_h(host_fun), fb, name)
    fb.names.append(name)


@raw
def __cudaRegisterVar(handle, host_var, device_address, device_name, ext, size, constant, global_):
    fb = R.fatbin_of(_h(handle))
    name = B.ffi.string(device_name).decode()
    R.VARIABLES[_h(host_var)] = R.Variable(_h(host_var), fb, name, size, bool(constant))


@raw
def __cudaRegisterManagedVar(handle, host_var_ptr, device_address, device_name, ext, size, constant, global_):
    # a __managed__ variable: host code reaches it through the pointer at host_var_ptr, which
    # __cudaInitModule sets to the variable's address in the loaded module
    fb = R.fatbin_of(_h(handle))
    name = B.ffi.string(device_name).decode()
    R.VARIABLES[_h(host_var_ptr)] = R.Variable(_h(host_var_ptr), fb, name, size, bool(constant), managed=True)


@entry
def ptxjit_rt_init_module(handle):
    """__cudaInitModule (the first host access of a __managed__ variable): load the module, point the
    program's pointers at its managed variables."""
    fb = R.fatbin_of(_h(handle))
    ctx = _ctx()
    for v in list(R.VARIABLES.values()):
        if v.fatbin is fb and v.managed:
            addr, _size = R.symbol_address(v.host, ctx)
            B.ffi.cast("void **", v.host)[0] = B.ffi.cast("void *", addr)


# ---------------------------------------------------------------------------- launches
def _launch_raw(ctx, f, grid, block, shmem: int, stream: int, raw: bytes, as_configuration: bool = True,
                **kw) -> None:
    from ptxjit.cudart import textures

    check_dynamic_shared(f, shmem)
    textures.before_launch(f, raw, stream)
    try:
        _launch.launch(DRIVER, ctx, f, grid, block, shmem, stream, raw, **kw)
    except CudaError as exc:
        if exc.code == DE.INVALID_VALUE and as_configuration:  # a grid or block the device cannot run
            raise RuntimeError_(RE.INVALID_CONFIGURATION, exc.args[0]) from None
        raise


@entry
def ptxjit_rt_launch(func, gx, gy, gz, bx, by, bz, args, shmem, stream):
    ctx = _ctx()
    f = R.launch_function_of(_h(func), ctx)
    raw_params = params_of(f, args, B.ffi.NULL, "cudaLaunchKernel")
    _launch_raw(ctx, f, (gx, gy, gz), (bx, by, bz), shmem, _h(stream), raw_params)


_ATTR_COOPERATIVE, _ATTR_CLUSTER_DIMENSION = 2, 4  # cudaLaunchAttributeID (CUlaunchAttributeID's numbers)


@entry
def cudaLaunchKernelExC(config, func, args):
    c = _out(config, "config")
    ctx = _ctx()
    f = R.launch_function_of(_h(func), ctx)
    cooperative, cluster = False, None
    if c.numAttrs and c.attrs == B.ffi.NULL:
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaLaunchKernelExC: {c.numAttrs} attributes but attrs is NULL")
    attrs = B.ffi.cast("unsigned char *", c.attrs)
    for i in range(c.numAttrs):
        rec = attrs + 72 * i  # cudaLaunchAttribute: id (int), 4 bytes padding, a 64-byte value union
        ident = B.ffi.cast("int *", rec)[0]
        value = B.ffi.cast("unsigned int *", rec + 8)
        if ident == _ATTR_COOPERATIVE:
            cooperative = bool(value[0])
        elif ident == _ATTR_CLUSTER_DIMENSION:
            cluster = (value[0], value[1], value[2])
    raw_params = params_of(f, args, B.ffi.NULL, "cudaLaunchKernelExC")
    grid, block = (c.gridDimX, c.gridDimY, c.gridDimZ), (c.blockDimX, c.blockDimY, c.blockDimZ)
    _launch_raw(ctx, f, grid, block, c.dynamicSmemBytes, _h(c.stream), raw_params, cooperative=cooperative,
                cluster=cluster)


@entry
def ptxjit_rt_launch_cooperative(func, gx, gy, gz, bx, by, bz, args, shmem, stream):
    ctx = _ctx()
    f = R.launch_function_of(_h(func), ctx)
    raw_params = params_of(f, args, B.ffi.NULL, "cudaLaunchCooperativeKernel")
    _launch_raw(ctx, f, (gx, gy, gz), (bx, by, bz), shmem, _h(stream), raw_params, as_configuration=False,
                cooperative=True)


@entry
def ptxjit_rt_missing_configuration():
    raise RuntimeError_(RE.MISSING_CONFIGURATION, "__cudaPopCallConfiguration without a matching push")


@entry
def cudaFuncGetAttributes(attr, func):
    from ptxjit.driver.abi_tables import FUNCTION_ATTRIBUTE as A

    out = _out(attr, "attr")
    f = R.function_of(_h(func), _ctx())
    fa = _modules.function_attribute

    def get(name: str) -> int:
        return fa(DRIVER, f, A["CU_FUNC_ATTRIBUTE_" + name])

    B.ffi.memmove(out, b"\0" * B.ffi.sizeof("struct cudaFuncAttributes"), B.ffi.sizeof("struct cudaFuncAttributes"))
    out.sharedSizeBytes = get("SHARED_SIZE_BYTES")
    out.constSizeBytes = get("CONST_SIZE_BYTES")
    out.localSizeBytes = get("LOCAL_SIZE_BYTES")
    out.maxThreadsPerBlock = get("MAX_THREADS_PER_BLOCK")
    out.numRegs = get("NUM_REGS")
    out.ptxVersion = get("PTX_VERSION")
    out.binaryVersion = get("BINARY_VERSION")
    out.cacheModeCA = get("CACHE_MODE_CA")
    out.maxDynamicSharedSizeBytes = get("MAX_DYNAMIC_SHARED_SIZE_BYTES")
    out.preferredShmemCarveout = get("PREFERRED_SHARED_MEMORY_CARVEOUT")


# ---------------------------------------------------------------------------- memory
def _alloc(out, size: int, kind: str, flags: int = 0) -> None:
    ctx = _ctx()
    _out(out, "devPtr")
    if size == 0:  # cudaMalloc(&p, 0) succeeds with a NULL pointer
        out[0] = B.ffi.NULL
        return
    if size > DRIVER.model.total_mem:
        raise CudaError(DE.OUT_OF_MEMORY, f"{size} bytes exceed the device's {DRIVER.model.total_mem}")
    a = M.REGISTRY.allocate(size, kind, ctx, flags)
    out[0] = B.ffi.cast("void *", a.base)


@entry
def cudaMalloc(out, size):
    _alloc(out, size, M.DEVICE)


@entry
def cudaMallocManaged(out, size, flags):
    _alloc(out, size, M.MANAGED, flags)


@entry
def cudaMallocHost(out, size):
    _alloc(out, size, M.PINNED)


@entry
def cudaHostAlloc(out, size, flags):
    _alloc(out, size, M.PINNED, flags)


@entry
def cudaFree(p):
    _ctx()
    if p != B.ffi.NULL:
        _streams.synchronize_all(DRIVER.current())  # cudaFree synchronizes the device
        M.REGISTRY.remove(_h(p), (M.DEVICE, M.MANAGED, M.POOL), "cudaFree")


@entry
def cudaFreeHost(p):
    _ctx()
    if p != B.ffi.NULL:
        M.REGISTRY.remove(_h(p), (M.PINNED,), "cudaFreeHost")


@entry
def cudaMemGetInfo(free, total):
    _ctx()
    model = DRIVER.model
    _out(free, "free")[0] = max(0, model.total_mem - M.REGISTRY.bytes_in_use)
    _out(total, "total")[0] = model.total_mem


@entry
def cudaMemcpy(dst, src, count, kind):
    ctx = _ctx()
    _kind(kind, "cudaMemcpy")
    _sync_legacy(ctx)
    M.copy(_h(dst), _h(src), count, "cudaMemcpy")


@entry
def cudaMemcpyAsync(dst, src, count, kind, stream):
    ctx = _ctx()
    _kind(kind, "cudaMemcpyAsync")
    s = _streams.resolve(DRIVER, _h(stream))
    d, sr = _h(dst), _h(src)
    if count == 0:
        return
    if _capture.of(_h(stream)) is not None:  # a copy node, reading its source when the graph runs
        M.REGISTRY.check_range(d, count, "cudaMemcpyAsync destination")
        M.REGISTRY.check_range(sr, count, "cudaMemcpyAsync source")
        _capture.record(DRIVER, _h(stream), G.Copy3D(d, count, 1, sr, count, 1, count, 1, 1))
        return
    pageable_dst = M.REGISTRY.check_range(d, count, "cudaMemcpyAsync destination") is None
    pageable_src = M.REGISTRY.check_range(sr, count, "cudaMemcpyAsync source") is None
    if pageable_src:  # the caller may reuse pageable memory at once: the copy reads it now
        staged = ctypes.create_string_buffer(ctypes.string_at(sr, count), count)
        _streams.enqueue_host(s, lambda _: (M.move(d, ctypes.addressof(staged), count), staged))
    else:
        _streams.enqueue_host(s, lambda _: M.move(d, sr, count))
    if pageable_dst:  # a copy into pageable memory has completed when the call returns
        _streams.synchronized(ctx, s.synchronize)


@entry
def cudaMemset(p, value, count):
    ctx = _ctx()
    _sync_legacy(ctx)
    M.fill(_h(p), value, 1, count, "cudaMemset")


@entry
def cudaMemsetAsync(p, value, count, stream):
    _ctx()
    s = _streams.resolve(DRIVER, _h(stream))
    d = _h(p)
    M.REGISTRY.check_range(d, count, "cudaMemsetAsync")
    if _capture.record(DRIVER, _h(stream), G.MemsetWork(d, count, value & 0xFF, 1, count, 1)) is not None:
        return
    _streams.enqueue_host(s, lambda _: M.fill(d, value, 1, count, "cudaMemsetAsync"))


def _symbol_range(symbol, count: int, offset: int, what: str) -> int:
    ctx = _ctx()
    addr, size = R.symbol_address(_h(symbol), ctx)
    if offset + count > size:
        raise RuntimeError_(RE.INVALID_VALUE, f"{what}: {count} bytes at offset {offset} run past the end of the "
                                              f"{size}-byte variable '{R.variable(_h(symbol)).name}'")
    _sync_legacy(ctx)
    return addr + offset


@entry
def cudaMemcpyToSymbol(symbol, src, count, offset, kind):
    _kind(kind, "cudaMemcpyToSymbol")
    addr = _symbol_range(symbol, count, offset, "cudaMemcpyToSymbol")
    M.copy(addr, _h(src), count, "cudaMemcpyToSymbol")


@entry
def cudaMemcpyFromSymbol(dst, symbol, count, offset, kind):
    _kind(kind, "cudaMemcpyFromSymbol")
    addr = _symbol_range(symbol, count, offset, "cudaMemcpyFromSymbol")
    M.copy(_h(dst), addr, count, "cudaMemcpyFromSymbol")


@entry
def cudaGetSymbolAddress(out, symbol):
    _out(out, "devPtr")
    addr, _size = R.symbol_address(_h(symbol), _ctx())
    out[0] = B.ffi.cast("void *", addr)


@entry
def cudaGetSymbolSize(out, symbol):
    _out(out, "size")
    _addr, size = R.symbol_address(_h(symbol), _ctx())
    out[0] = size


# ---------------------------------------------------------------------------- device
@entry
def cudaDeviceSynchronize():
    ctx = _ctx()
    _capture.refuse_all("cudaDeviceSynchronize")
    _streams.synchronize_all(ctx)


@entry
def cudaDeviceReset():
    if not DRIVER.initialized:
        return
    DRIVER.reset_primary(0)  # its streams drain, modules unload, allocations go; the next call starts afresh
    for fb in R.FATBINS.values():
        fb.module = None


@raw
def cudaGetLastError():
    code = getattr(_tls, "last", 0)
    _tls.last = 0
    ctx = DRIVER.top()
    if ctx is not None and ctx.sticky:  # a sticky error is not cleared: the context stays unusable
        return RE.from_curesult(ctx.sticky)
    return code


@raw
def cudaPeekAtLastError():
    code = getattr(_tls, "last", 0)
    ctx = DRIVER.top()
    if ctx is not None and ctx.sticky:
        return RE.from_curesult(ctx.sticky)
    return code


@entry
def cudaGetDeviceCount(out):
    _out(out, "count")
    DRIVER.init(0)
    out[0] = 1


@entry
def cudaSetDevice(device):
    DRIVER.init(0)
    DRIVER.device(device)
    _ctx()


@entry
def cudaGetDevice(out):
    _out(out, "device")[0] = 0


@entry
def cudaInitDevice(device, device_flags, flags):
    DRIVER.init(0)
    DRIVER.device(device)
    _ctx()


def _attr(model, name: str) -> int:
    return model.attribute(DEVICE_ATTRIBUTE["CU_DEVICE_ATTRIBUTE_" + name]) or 0


# cudaDeviceProp's scalar fields and the device attribute each one reports
_PROP_FIELDS = {
    "regsPerBlock": "MAX_REGISTERS_PER_BLOCK", "warpSize": "WARP_SIZE", "memPitch": "MAX_PITCH",
    "maxThreadsPerBlock": "MAX_THREADS_PER_BLOCK", "totalConstMem": "TOTAL_CONSTANT_MEMORY",
    "major": "COMPUTE_CAPABILITY_MAJOR", "minor": "COMPUTE_CAPABILITY_MINOR",
    "textureAlignment": "TEXTURE_ALIGNMENT", "texturePitchAlignment": "TEXTURE_PITCH_ALIGNMENT",
    "multiProcessorCount": "MULTIPROCESSOR_COUNT", "integrated": "INTEGRATED",
    "canMapHostMemory": "CAN_MAP_HOST_MEMORY", "maxTexture1D": "MAXIMUM_TEXTURE1D_WIDTH",
    "surfaceAlignment": "SURFACE_ALIGNMENT", "concurrentKernels": "CONCURRENT_KERNELS", "ECCEnabled": "ECC_ENABLED",
    "pciBusID": "PCI_BUS_ID", "pciDeviceID": "PCI_DEVICE_ID", "pciDomainID": "PCI_DOMAIN_ID",
    "tccDriver": "TCC_DRIVER", "asyncEngineCount": "ASYNC_ENGINE_COUNT", "unifiedAddressing": "UNIFIED_ADDRESSING",
    "memoryBusWidth": "GLOBAL_MEMORY_BUS_WIDTH", "l2CacheSize": "L2_CACHE_SIZE",
    "persistingL2CacheMaxSize": "MAX_PERSISTING_L2_CACHE_SIZE",
    "maxThreadsPerMultiProcessor": "MAX_THREADS_PER_MULTIPROCESSOR",
    "streamPrioritiesSupported": "STREAM_PRIORITIES_SUPPORTED", "globalL1CacheSupported": "GLOBAL_L1_CACHE_SUPPORTED",
    "localL1CacheSupported": "LOCAL_L1_CACHE_SUPPORTED",
    "sharedMemPerMultiprocessor": "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "regsPerMultiprocessor": "MAX_REGISTERS_PER_MULTIPROCESSOR", "managedMemory": "MANAGED_MEMORY",
    "isMultiGpuBoard": "MULTI_GPU_BOARD", "multiGpuBoardGroupID": "MULTI_GPU_BOARD_GROUP_ID",
    "hostNativeAtomicSupported": "HOST_NATIVE_ATOMIC_SUPPORTED", "pageableMemoryAccess": "PAGEABLE_MEMORY_ACCESS",
    "concurrentManagedAccess": "CONCURRENT_MANAGED_ACCESS",
    "computePreemptionSupported": "COMPUTE_PREEMPTION_SUPPORTED",
    "canUseHostPointerForRegisteredMem": "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM",
    "cooperativeLaunch": "COOPERATIVE_LAUNCH", "sharedMemPerBlockOptin": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "pageableMemoryAccessUsesHostPageTables": "PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES",
    "directManagedMemAccessFromHost": "DIRECT_MANAGED_MEM_ACCESS_FROM_HOST",
    "maxBlocksPerMultiProcessor": "MAX_BLOCKS_PER_MULTIPROCESSOR",
    "accessPolicyMaxWindowSize": "MAX_ACCESS_POLICY_WINDOW_SIZE",
    "reservedSharedMemPerBlock": "RESERVED_SHARED_MEMORY_PER_BLOCK", "hostRegisterSupported": "HOST_REGISTER_SUPPORTED",
    "sparseCudaArraySupported": "SPARSE_CUDA_ARRAY_SUPPORTED",
    "hostRegisterReadOnlySupported": "READ_ONLY_HOST_REGISTER_SUPPORTED",
    "timelineSemaphoreInteropSupported": "TIMELINE_SEMAPHORE_INTEROP_SUPPORTED",
    "memoryPoolsSupported": "MEMORY_POOLS_SUPPORTED", "gpuDirectRDMASupported": "GPU_DIRECT_RDMA_SUPPORTED",
    "clusterLaunch": "CLUSTER_LAUNCH", "unifiedFunctionPointers": "UNIFIED_FUNCTION_POINTERS",
    "sharedMemPerBlock": "MAX_SHARED_MEMORY_PER_BLOCK", "maxSurface1D": "MAXIMUM_SURFACE1D_WIDTH",
    "maxTextureCubemap": "MAXIMUM_TEXTURECUBEMAP_WIDTH", "maxSurfaceCubemap": "MAXIMUM_SURFACECUBEMAP_WIDTH",
}
_PROP_ARRAYS = {
    "maxThreadsDim": ("MAX_BLOCK_DIM_X", "MAX_BLOCK_DIM_Y", "MAX_BLOCK_DIM_Z"),
    "maxGridSize": ("MAX_GRID_DIM_X", "MAX_GRID_DIM_Y", "MAX_GRID_DIM_Z"),
    "maxTexture2D": ("MAXIMUM_TEXTURE2D_WIDTH", "MAXIMUM_TEXTURE2D_HEIGHT"),
    "maxTexture3D": ("MAXIMUM_TEXTURE3D_WIDTH", "MAXIMUM_TEXTURE3D_HEIGHT", "MAXIMUM_TEXTURE3D_DEPTH"),
}


@entry
def cudaGetDeviceProperties(prop, device):
    _out(prop, "prop")
    DRIVER.init(0)
    model = DRIVER.device(device)
    size = B.ffi.sizeof("cudaDeviceProp")
    B.ffi.memmove(prop, b"\0" * size, size)
    name = model.name.encode()[:255]
    B.ffi.memmove(prop.name, name, len(name))
    B.ffi.memmove(prop.uuid.bytes, b"ptxjit-virt-gpu0", 16)
    prop.totalGlobalMem = model.total_mem
    for fld, attr in _PROP_FIELDS.items():
        setattr(prop, fld, _attr(model, attr))
    for fld, attrs in _PROP_ARRAYS.items():
        arr = getattr(prop, fld)
        for i, a in enumerate(attrs):
            arr[i] = _attr(model, a)


@entry
def cudaDeviceGetAttribute(out, attr, device):
    _out(out, "value")
    DRIVER.init(0)
    v = DRIVER.device(device).attribute(attr)  # cudaDeviceAttr numbers are CUdevice_attribute's
    if v is None:
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaDeviceGetAttribute: {attr} is not a cudaDeviceAttr")
    out[0] = v


@entry
def cudaRuntimeGetVersion(out):
    _out(out, "runtimeVersion")[0] = CUDART_VERSION


@entry
def cudaDriverGetVersion(out):
    _out(out, "driverVersion")[0] = CUDA_VERSION


# ---------------------------------------------------------------------------- streams and events
@entry
def cudaStreamCreate(out):
    _out(out, "pStream")[0] = B.ffi.cast("void *", _streams.create(DRIVER, _ctx(), 0).handle)


@entry
def cudaStreamCreateWithFlags(out, flags):
    _out(out, "pStream")[0] = B.ffi.cast("void *", _streams.create(DRIVER, _ctx(), flags).handle)


@entry
def cudaStreamDestroy(stream):
    _ctx()
    DRIVER.streams.get(_h(stream))
    _capture.stream_destroyed(DRIVER, _h(stream))
    DRIVER.streams.drop(_h(stream))  # its outstanding work still completes


@entry
def cudaStreamSynchronize(stream):
    ctx = _ctx()
    _capture.refuse(_h(stream), "cudaStreamSynchronize")
    _streams.synchronized(ctx, _streams.resolve(DRIVER, _h(stream)).synchronize)


@entry
def cudaStreamQuery(stream):
    _ctx()
    _capture.refuse(_h(stream), "cudaStreamQuery")
    if not _streams.resolve(DRIVER, _h(stream)).query():
        raise CudaError(DE.NOT_READY, "work is outstanding")


@entry
def cudaStreamWaitEvent(stream, event, flags):
    _ctx()
    ev = DRIVER.events.get(_h(event)).event
    if _capture.stream_waits(DRIVER, _h(stream), _h(event), flags, "cudaStreamWaitEvent"):  # a fork or a join
        return
    _streams.resolve(DRIVER, _h(stream)).wait_event(ev)


def _event(out, flags: int) -> None:
    ctx = _ctx()
    _out(out, "event")
    if flags & ~(1 | 2 | 4):
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaEventCreateWithFlags: unknown flags {flags:#x}")
    if flags & _streams.CU_EVENT_INTERPROCESS:
        raise CudaError(DE.NOT_SUPPORTED, "interprocess events are not supported")
    ev = _streams.DriverEvent(0, _streams.Event(disable_timing=bool(flags & _streams.CU_EVENT_DISABLE_TIMING)),
                              ctx, flags)
    ev.handle = DRIVER.events.new(ev)
    out[0] = B.ffi.cast("void *", ev.handle)


@entry
def cudaEventCreate(out):
    _event(out, 0)


@entry
def cudaEventCreateWithFlags(out, flags):
    _event(out, flags)


@entry
def cudaEventRecord(event, stream):
    _ctx()
    ev = DRIVER.events.get(_h(event)).event
    s = _streams.resolve(DRIVER, _h(stream))
    if _capture.event_recorded(DRIVER, _h(event), _h(stream)):  # in a capture: it marks the work captured so far
        return
    ev.record(s)


@entry
def cudaEventSynchronize(event):
    ctx = _ctx()
    _capture.refuse_event(_h(event), "cudaEventSynchronize")
    _streams.synchronized(ctx, DRIVER.events.get(_h(event)).event.synchronize)


@entry
def cudaEventQuery(event):
    _ctx()
    _capture.refuse_event(_h(event), "cudaEventQuery")
    if not DRIVER.events.get(_h(event)).event.query():
        raise CudaError(DE.NOT_READY, "the event has not completed")


@entry
def cudaEventElapsedTime(out, start, end):
    _ctx()
    _out(out, "ms")
    a, b = DRIVER.events.get(_h(start)).event, DRIVER.events.get(_h(end)).event
    try:
        ms = _streams.get_elapsed_time(a, b)
    except ValueError as exc:
        raise CudaError(DE.INVALID_HANDLE, f"cudaEventElapsedTime: {exc}") from None
    except RuntimeError as exc:
        raise CudaError(DE.NOT_READY, f"cudaEventElapsedTime: {exc}") from None
    out[0] = ms


@entry
def cudaEventDestroy(event):
    _ctx()
    DRIVER.events.drop(_h(event))


# ---------------------------------------------------------------------------- beyond the first set: the calls CUDA
# samples make around launches (occupancy, attributes, flags, priorities, callbacks, pitched and async memory)
def _dcapi():
    from ptxjit.driver import capi

    return capi


@entry
def cudaFuncSetAttribute(func, attr, value):
    # cudaFuncAttribute numbers are CUfunction_attribute's for every attribute that can be set
    _dcapi()._set_attribute(R.function_of(_h(func), _ctx()), attr, value)


@entry
def cudaFuncSetCacheConfig(func, config):
    R.function_of(_h(func), _ctx())
    if config not in range(4):
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaFuncSetCacheConfig: {config} is not a cudaFuncCache")


@entry
def cudaOccupancyMaxActiveBlocksPerMultiprocessor(out, func, block, smem):
    _out(out, "numBlocks")[0] = _dcapi()._occupancy(R.function_of(_h(func), _ctx()), block, smem)


@entry
def cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(out, func, block, smem, flags):
    _out(out, "numBlocks")[0] = _dcapi()._occupancy(R.function_of(_h(func), _ctx()), block, smem)


_device_flags = [0]


@entry
def cudaSetDeviceFlags(flags):
    if flags & ~0x1F:  # cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaSetDeviceFlags: unknown flags {flags:#x}")
    _device_flags[0] = flags


@entry
def cudaGetDeviceFlags(out):
    _out(out, "flags")[0] = _device_flags[0] | 0x8  # cudaDeviceMapHost: mapped memory is always there


@entry
def cudaStreamCreateWithPriority(out, flags, priority):
    _out(out, "pStream")[0] = B.ffi.cast("void *", _streams.create(DRIVER, _ctx(), flags, priority).handle)


@entry
def cudaDeviceGetStreamPriorityRange(least, greatest):
    _ctx()
    if least != B.ffi.NULL:
        least[0] = 0
    if greatest != B.ffi.NULL:
        greatest[0] = -5  # the H100's range, as the driver's cuCtxGetStreamPriorityRange


@entry
def cudaStreamGetPriority(stream, out):
    v = _h(stream)
    _out(out, "priority")[0] = 0 if v in (0, 1, 2) else DRIVER.streams.get(v).priority


@entry
def cudaStreamGetFlags(stream, out):
    v = _h(stream)
    _out(out, "flags")[0] = 0 if v in (0, 1, 2) else DRIVER.streams.get(v).flags


@entry
def cudaEventRecordWithFlags(event, stream, flags):
    cudaEventRecord(event, stream)


@entry
def cudaLaunchHostFunc(stream, fn, user):
    _ctx()
    if fn == B.ffi.NULL:
        raise RuntimeError_(RE.INVALID_VALUE, "cudaLaunchHostFunc: fn is NULL")
    if _capture.record(DRIVER, _h(stream), G.HostNode(lambda: fn(user))) is not None:
        return
    _streams.enqueue_host(_streams.resolve(DRIVER, _h(stream)), lambda _: fn(user))


@entry
def cudaStreamAddCallback(stream, callback, user, flags):
    _ctx()
    if callback == B.ffi.NULL or flags != 0:
        raise RuntimeError_(RE.INVALID_VALUE, "cudaStreamAddCallback: callback is NULL or flags are not 0")
    _streams.enqueue_host(_streams.resolve(DRIVER, _h(stream)), lambda _: callback(stream, 0, user))


@entry
def cudaMallocAsync(out, size, stream):
    from ptxjit.driver import pools

    _streams.resolve(DRIVER, _h(stream))
    _alloc(out, size, M.POOL)
    if out[0] != B.ffi.NULL:
        pools.current_pool(DRIVER, 0).allocated(_h(out[0]))


@entry
def cudaFreeAsync(p, stream):
    _ctx()
    s = _streams.resolve(DRIVER, _h(stream))
    d = _h(p)
    a = M.REGISTRY.find(d)
    if a is None or a.base != d:
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaFreeAsync({d:#x}): not a live allocation")
    _streams.enqueue_host(s, lambda _: M.REGISTRY.remove(d, (M.DEVICE, M.MANAGED, M.POOL), "cudaFreeAsync"))


@entry
def cudaHostRegister(p, size, flags):
    ctx = _ctx()
    if p == B.ffi.NULL or size == 0:
        raise RuntimeError_(RE.INVALID_VALUE, "cudaHostRegister: NULL pointer or size 0")
    M.REGISTRY.add(M.Allocation(_h(p), size, M.REGISTERED, ctx, None, flags))


@entry
def cudaHostUnregister(p):
    _ctx()
    try:
        M.REGISTRY.remove(_h(p), (M.REGISTERED,), "cudaHostUnregister")
    except CudaError:
        raise CudaError(DE.HOST_MEMORY_NOT_REGISTERED, f"cudaHostUnregister({_h(p):#x}): not registered") from None


@entry
def cudaHostGetDevicePointer(out, host, flags):
    _ctx()
    _out(out, "pDevice")
    a = M.REGISTRY.find(_h(host))
    if a is None or a.kind not in (M.PINNED, M.REGISTERED):
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaHostGetDevicePointer({_h(host):#x}): not page-locked host "
                                              "memory of cudaHostAlloc or cudaHostRegister")
    out[0] = host  # one address space: the device sees host memory where the host does


_MEMORY_TYPE = {M.DEVICE: 2, M.POOL: 2, M.MANAGED: 3, M.PINNED: 1, M.REGISTERED: 1}  # cudaMemoryType


@entry
def cudaPointerGetAttributes(attr, p):
    out = _out(attr, "attributes")
    _ctx()
    a = M.REGISTRY.find(_h(p))
    kind = _MEMORY_TYPE.get(a.kind, 2) if a is not None else 0  # cudaMemoryTypeUnregistered
    out.type = kind
    out.device = 0 if kind else -2
    out.devicePointer = p if kind else B.ffi.NULL
    out.hostPointer = p if kind in (0, 1, 3) else B.ffi.NULL


@entry
def cudaMallocPitch(out, pitch_out, width, height):
    _out(pitch_out, "pitch")
    if width == 0 or height == 0:
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaMallocPitch: {width} x {height} bytes")
    pitch = -(-width // 512) * 512  # the H100's texture pitch alignment, as cuMemAllocPitch
    _alloc(out, pitch * height, M.DEVICE)
    pitch_out[0] = pitch


@entry
def cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind):
    ctx = _ctx()
    _kind(kind, "cudaMemcpy2D")
    _sync_legacy(ctx)
    M.copy_2d(_h(dst), dpitch, _h(src), spitch, width, height, "cudaMemcpy2D")


@entry
def cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream):
    ctx = _ctx()
    _kind(kind, "cudaMemcpy2DAsync")
    s = _streams.resolve(DRIVER, _h(stream))
    d, sr = _h(dst), _h(src)
    M.REGISTRY.check_range(d, dpitch * (height - 1) + width if height else 0, "cudaMemcpy2DAsync destination")
    M.REGISTRY.check_range(sr, spitch * (height - 1) + width if height else 0, "cudaMemcpy2DAsync source")
    if height and _capture.record(DRIVER, _h(stream), G.Copy3D(d, dpitch, height, sr, spitch, height, width,
                                                                  height, 1)):
        return
    # pageable memory at either end: the copy is done when the call returns (CUDA's rule for such copies)
    _streams.enqueue_host(s, lambda _: M.copy_2d(d, dpitch, sr, spitch, width, height, "cudaMemcpy2DAsync"))
    if M.REGISTRY.find(d) is None or M.REGISTRY.find(sr) is None:
        _streams.synchronized(ctx, s.synchronize)


@entry
def cudaMemset2D(p, pitch, value, width, height):
    ctx = _ctx()
    _sync_legacy(ctx)
    M.fill(_h(p), value, 1, width, "cudaMemset2D", pitch, height)


@entry
def cudaDeviceSetLimit(limit, value):
    _ctx()
    _dcapi().cuCtxSetLimit(limit, value)  # cudaLimit numbers are CUlimit's


@entry
def cudaDeviceGetLimit(out, limit):
    ctx = _ctx()
    defaults = _dcapi()._LIMIT_DEFAULTS
    if limit not in defaults:
        raise RuntimeError_(RE.UNSUPPORTED_LIMIT, f"cudaDeviceGetLimit: limit {limit} is not supported")
    _out(out, "pValue")[0] = ctx.limits.get(limit, defaults[limit])


@entry
def cudaDeviceCanAccessPeer(out, device, peer):
    DRIVER.init(0)
    DRIVER.device(device)
    DRIVER.device(peer)
    _out(out, "canAccessPeer")[0] = 0  # one device: no peers


@entry
def cudaDeviceSetCacheConfig(config):
    _ctx().cache_config = config


@entry
def cudaDeviceGetCacheConfig(out):
    _out(out, "pCacheConfig")[0] = _ctx().cache_config

