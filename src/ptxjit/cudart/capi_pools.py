"""Runtime entry points array libraries call around their kernels (CuPy's memory pools, its driver entry
points): stream-ordered memory pools, managed-memory hints, peer copies on the one device, PCI bus ids and
`cudaGetDriverEntryPoint`.

Each is the driver's counterpart (ptxjit.driver), called with the runtime's lazy primary context; the numbers
the runtime and the driver share (cudaMemPoolAttr and CUmemPool_attribute, the entry-point query results and
flags) are the same in CUDA 13's headers.  Their C declarations are in cudart/build.py.
"""

from __future__ import annotations

import ctypes

from ptxjit.cudart import base as B
from ptxjit.cudart import capi as C
from ptxjit.cudart import errors as RE
from ptxjit.cudart.base import ctx as _ctx
from ptxjit.cudart.base import entry
from ptxjit.cudart.base import h as _h
from ptxjit.cudart.base import out as _out
from ptxjit.cudart.errors import RuntimeError_
from ptxjit.driver import errors as DE
from ptxjit.driver import memory as M
from ptxjit.driver import pools as _pools
from ptxjit.driver import streams as _streams
from ptxjit.driver.context import DRIVER
from ptxjit.driver.errors import CudaError

_PCI_BUS_ID = "0000:00:00.0"  # the driver's (cuDeviceGetPCIBusId)


def _device(ordinal: int) -> None:
    if ordinal != 0:
        raise RuntimeError_(RE.INVALID_DEVICE, f"device {ordinal}: ptxjit has one device, 0")


# ---------------------------------------------------------------------------- stream-ordered memory pools
def _pool(handle) -> _pools.MemoryPool:
    _ctx()
    try:
        return DRIVER.pools.get(_h(handle))
    except CudaError:
        raise RuntimeError_(RE.INVALID_VALUE, f"{_h(handle):#x} is not a memory pool") from None


@entry
def cudaDeviceGetDefaultMemPool(out, device):
    _ctx()
    _device(device)
    _out(out, "memPool")[0] = B.ffi.cast("void *", _pools.default_pool(DRIVER, device).handle)


@entry
def cudaDeviceGetMemPool(out, device):
    _ctx()
    _device(device)
    _out(out, "memPool")[0] = B.ffi.cast("void *", _pools.current_pool(DRIVER, device).handle)


@entry
def cudaDeviceSetMemPool(device, pool):
    _device(device)
    p = _pool(pool)
    _pools.default_pool(DRIVER, device)
    DRIVER.current_pool = p


def _attr_pointer(attr: int, value):
    if value == B.ffi.NULL:
        raise RuntimeError_(RE.INVALID_VALUE, "value is NULL")
    return B.ffi.cast("int *" if attr in _pools.INT_ATTRIBUTES else "uint64_t *", value)


@entry
def cudaMemPoolGetAttribute(pool, attr, value):
    p = _pool(pool)
    v = p.get(attr)  # an unknown attribute: CUDA_ERROR_INVALID_VALUE, cudaErrorInvalidValue
    _attr_pointer(attr, value)[0] = v


@entry
def cudaMemPoolSetAttribute(pool, attr, value):
    p = _pool(pool)
    p.set(attr, _attr_pointer(attr, value)[0])


@entry
def cudaMemPoolTrimTo(pool, keep):
    _pool(pool)  # freed memory goes back at once: nothing is kept to trim


@entry
def cudaMallocFromPoolAsync(out, size, pool, stream):
    p = _pool(pool)
    _streams.resolve(DRIVER, _h(stream))
    C._alloc(out, size, M.POOL)
    if out[0] != B.ffi.NULL:
        p.allocated(_h(out[0]))


# ---------------------------------------------------------------------------- managed memory
_ADVICE = range(1, 7)  # cudaMemAdviseSetReadMostly .. cudaMemAdviseUnsetAccessedBy
_LOCATION_DEVICE, _LOCATION_HOST, _LOCATION_HOST_NUMA, _LOCATION_HOST_NUMA_CURRENT = 1, 2, 3, 4


def _managed_range(p, count: int, what: str) -> None:
    a = M.REGISTRY.find(_h(p))
    if a is None or a.kind != M.MANAGED or _h(p) + count > a.base + a.size:
        raise RuntimeError_(RE.INVALID_VALUE, f"{what}: [{_h(p):#x}, +{count}) is not managed memory "
                                              "(cudaMallocManaged, __managed__)")


def _location(loc, what: str) -> None:
    if loc.type == _LOCATION_DEVICE:
        _device(loc.id)
    elif loc.type not in (_LOCATION_HOST, _LOCATION_HOST_NUMA, _LOCATION_HOST_NUMA_CURRENT):
        raise RuntimeError_(RE.INVALID_VALUE, f"{what}: location type {loc.type} is not a cudaMemLocationType")


@entry
def cudaMemAdvise(p, count, advice, location):
    _ctx()
    if advice not in _ADVICE:
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaMemAdvise: {advice} is not a cudaMemoryAdvise")
    _managed_range(p, count, "cudaMemAdvise")
    _location(location, "cudaMemAdvise")
    # a hint about where pages should live: device memory is host memory here, every page lives in both


@entry
def cudaMemPrefetchAsync(p, count, location, flags, stream):
    _ctx()
    _streams.resolve(DRIVER, _h(stream))
    if flags != 0:
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaMemPrefetchAsync: flags must be 0, got {flags:#x}")
    _managed_range(p, count, "cudaMemPrefetchAsync")
    _location(location, "cudaMemPrefetchAsync")
    # the pages are resident for host and device alike: the prefetch is complete as it is enqueued


# ---------------------------------------------------------------------------- the one device as its own peer
@entry
def cudaMemcpyPeer(dst, dst_device, src, src_device, count):
    _device(dst_device)
    _device(src_device)
    C.cudaMemcpy(dst, src, count, 4)  # cudaMemcpyDefault: one address space


@entry
def cudaMemcpyPeerAsync(dst, dst_device, src, src_device, count, stream):
    _device(dst_device)
    _device(src_device)
    C.cudaMemcpyAsync(dst, src, count, 4, stream)


@entry
def cudaDeviceGetPCIBusId(buf, length, device):
    _device(device)
    if buf == B.ffi.NULL or length <= 0:
        raise RuntimeError_(RE.INVALID_VALUE, "cudaDeviceGetPCIBusId: pciBusId is NULL or len is not positive")
    data = _PCI_BUS_ID.encode()[:length - 1] + b"\0"
    B.ffi.memmove(buf, data, len(data))


@entry
def cudaDeviceGetByPCIBusId(out, bus):
    _out(out, "device")
    if bus == B.ffi.NULL:
        raise RuntimeError_(RE.INVALID_VALUE, "cudaDeviceGetByPCIBusId: pciBusId is NULL")
    text = B.ffi.string(bus).decode(errors="replace").lower()
    if text not in (_PCI_BUS_ID, _PCI_BUS_ID[5:]):
        raise RuntimeError_(RE.INVALID_DEVICE, f"no device at PCI bus id {text!r} (ptxjit's is {_PCI_BUS_ID})")
    out[0] = 0


# ---------------------------------------------------------------------------- driver entry points
_proc_address = None


def _driver_proc_address():
    """cuGetProcAddress_v2 of ptxjit's libcuda.so.1 (C, a table lookup): the driver this process runs on."""
    global _proc_address
    if _proc_address is None:
        from ptxjit.driver.build import library_path

        fn = ctypes.CDLL(str(library_path())).cuGetProcAddress_v2
        fn.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_uint64,
                       ctypes.POINTER(ctypes.c_int)]
        fn.restype = ctypes.c_int
        _proc_address = fn
    return _proc_address


def _entry_point(symbol, out, version: int, flags: int, status) -> None:
    ffi = B.ffi
    _out(out, "funcPtr")
    if symbol == ffi.NULL:
        raise RuntimeError_(RE.INVALID_VALUE, "cudaGetDriverEntryPoint: symbol is NULL")
    if flags & ~3:  # cudaEnableDefault, cudaEnableLegacyStream, cudaEnablePerThreadDefaultStream
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaGetDriverEntryPoint: unknown flags {flags:#x}")
    pfn, found = ctypes.c_void_p(), ctypes.c_int(0)
    rc = _driver_proc_address()(ffi.string(symbol), ctypes.byref(pfn), version, flags, ctypes.byref(found))
    if status != ffi.NULL:
        status[0] = found.value  # cudaDriverEntryPointQueryResult: the driver's CUdriverProcAddressQueryResult
    out[0] = ffi.cast("void *", pfn.value or 0)
    if rc == DE.NOT_FOUND:
        # the query answered (driverStatus says how); without driverStatus the caller learns it from the code
        if status == ffi.NULL:
            raise RuntimeError_(RE.CODES["cudaErrorSymbolNotFound"],
                                f"cudaGetDriverEntryPoint: {ffi.string(symbol).decode()!r} is not a driver "
                                f"entry point of CUDA {version // 1000}.{version % 1000 // 10}")
        return
    if rc != 0:
        raise CudaError(rc, f"cuGetProcAddress({ffi.string(symbol).decode()!r})")


@entry
def cudaGetDriverEntryPoint(symbol, out, flags, status):
    _ctx()
    _entry_point(symbol, out, C.CUDART_VERSION, flags, status)


@entry
def cudaGetDriverEntryPointByVersion(symbol, out, version, flags, status):
    _ctx()
    _entry_point(symbol, out, version, flags, status)
