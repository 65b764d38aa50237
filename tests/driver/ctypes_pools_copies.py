"""Stream-ordered pools, async copies with pageable host memory and cache preferences through libcuda.so.1's C ABI
(ctypes, as a C program would call it).  Prints a JSON object {check: [got, expected]}.

The expected values are the CUDA Driver API reference's:
* "API synchronization behavior": an async copy from pageable host memory stages the source before it returns
  (the buffer may be changed at once); one into pageable host memory has completed when it returns;
* cuMemPool*: CU_MEMPOOL_ATTR_USED_MEM_CURRENT/HIGH are cuuint64_t byte counts, the REUSE_* switches are ints
  enabled by default, RELEASE_THRESHOLD starts at 0, a high watermark is reset by setting it to 0; the pool's
  own device has CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
* cuKernelSetCacheConfig: a CUfunc_cache preference (0..3), anything else CUDA_ERROR_INVALID_VALUE;
* cuStreamIsCapturing: CU_STREAM_CAPTURE_STATUS_NONE for a stream that is not capturing;
* CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: the bytes of user __constant__ data (kernels.cu has one float);
* cuProfilerStart/cuProfilerStop (cudaProfiler.h): CUDA_SUCCESS in a context;
* CU_JIT_MAX_REGISTERS given to cuLinkCreate bounds CU_FUNC_ATTRIBUTE_NUM_REGS of the linked kernels.
"""

from __future__ import annotations

import ctypes as C
import json
import sys
import threading
from pathlib import Path

import numpy as np

cu = C.CDLL("libcuda.so.1")
results: dict[str, list] = {}


def check(name: str, got, expected) -> None:
    results[name] = [got, expected]


def ok(call: int) -> None:
    if call != 0:
        raise SystemExit(f"driver call failed with CUresult {call}")


u64 = C.c_uint64
ok(cu.cuInit(0))
ctx = C.c_void_p()
ok(cu.cuDevicePrimaryCtxRetain(C.byref(ctx), 0))
ok(cu.cuCtxSetCurrent(ctx))
stream = C.c_void_p()
ok(cu.cuStreamCreate(C.byref(stream), 0))

# a gate at the head of the stream: the work behind it runs only once the main thread opens it
HOSTFN = C.CFUNCTYPE(None, C.c_void_p)
gate = threading.Event()
gate_fn = HOSTFN(lambda _: gate.wait(30))


def closed_gate() -> None:
    gate.clear()
    ok(cu.cuLaunchHostFunc(stream, gate_fn, None))


# --- host -> device from pageable memory: the source is read at the call, not when the stream gets there
n = 1024
want = np.arange(n, dtype=np.int64) * 3 + 1
dptr = u64()
ok(cu.cuMemAlloc_v2(C.byref(dptr), want.nbytes))
closed_gate()
src = want.copy()
ok(cu.cuMemcpyHtoDAsync_v2(dptr, C.c_void_p(src.ctypes.data), C.c_size_t(src.nbytes), stream))
src[:] = -7  # the caller reuses its buffer before the copy has run
gate.set()
ok(cu.cuStreamSynchronize(stream))
back = np.zeros(n, dtype=np.int64)
ok(cu.cuMemcpyDtoH_v2(C.c_void_p(back.ctypes.data), dptr, C.c_size_t(back.nbytes)))
check("htod_async_pageable_staged", bool(np.array_equal(back, want)), True)

# --- device -> pageable host: complete when the call returns (the gate opens from another thread meanwhile)
closed_gate()
threading.Timer(0.3, gate.set).start()
dst = np.zeros(n, dtype=np.int64)
ok(cu.cuMemcpyDtoHAsync_v2(C.c_void_p(dst.ctypes.data), dptr, C.c_size_t(dst.nbytes), stream))
check("dtoh_async_pageable_complete_on_return", bool(np.array_equal(dst, want)), True)

# --- pinned host memory stays asynchronous: the copy runs when the stream gets to it
pinned = C.c_void_p()
ok(cu.cuMemAllocHost_v2(C.byref(pinned), C.c_size_t(want.nbytes)))
pin = np.ctypeslib.as_array(C.cast(pinned, C.POINTER(C.c_int64)), shape=(n,))
pin[:] = 5
closed_gate()
ok(cu.cuMemcpyHtoDAsync_v2(dptr, pinned, C.c_size_t(want.nbytes), stream))
pin[:] = 9  # written before the stream reaches the copy: the copy sees 9
gate.set()
ok(cu.cuStreamSynchronize(stream))
ok(cu.cuMemcpyDtoH_v2(C.c_void_p(back.ctypes.data), dptr, C.c_size_t(back.nbytes)))
check("htod_async_pinned_in_stream_order", int(back[0]), 9)

# --- 2D async copy from pageable memory: staged like the 1D one
class Memcpy2D(C.Structure):
    _fields_ = [("srcXInBytes", C.c_size_t), ("srcY", C.c_size_t), ("srcMemoryType", C.c_int),
                ("srcHost", C.c_void_p), ("srcDevice", u64), ("srcArray", C.c_void_p), ("srcPitch", C.c_size_t),
                ("dstXInBytes", C.c_size_t), ("dstY", C.c_size_t), ("dstMemoryType", C.c_int),
                ("dstHost", C.c_void_p), ("dstDevice", u64), ("dstArray", C.c_void_p), ("dstPitch", C.c_size_t),
                ("WidthInBytes", C.c_size_t), ("Height", C.c_size_t)]


rows, cols = 8, 16
grid = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
host2d = grid.copy()
p = Memcpy2D(srcMemoryType=1, srcHost=host2d.ctypes.data, srcPitch=cols * 8, dstMemoryType=2, dstDevice=dptr.value,
             dstPitch=cols * 8, WidthInBytes=cols * 8, Height=rows)
closed_gate()
ok(cu.cuMemcpy2DAsync_v2(C.byref(p), stream))
host2d[:] = 0
gate.set()
ok(cu.cuStreamSynchronize(stream))
back2 = np.zeros_like(grid)
ok(cu.cuMemcpyDtoH_v2(C.c_void_p(back2.ctypes.data), dptr, C.c_size_t(back2.nbytes)))
check("memcpy2d_async_pageable_staged", bool(np.array_equal(back2, grid)), True)

# --- the device's memory pool
USED_CURRENT, USED_HIGH, RELEASE_THRESHOLD, REUSE_OPPORTUNISTIC = 7, 8, 4, 2
pool, default = C.c_void_p(), C.c_void_p()
ok(cu.cuDeviceGetMemPool(C.byref(pool), 0))
ok(cu.cuDeviceGetDefaultMemPool(C.byref(default), 0))
check("current_pool_is_default_pool", pool.value == default.value and pool.value is not None, True)


def attr64(a: int) -> int:
    v = u64()
    ok(cu.cuMemPoolGetAttribute(pool, a, C.byref(v)))
    return v.value


check("pool_used_before", attr64(USED_CURRENT), 0)
a1, a2 = u64(), u64()
ok(cu.cuMemAllocFromPoolAsync(C.byref(a1), C.c_size_t(1000), pool, stream))
ok(cu.cuMemAllocAsync(C.byref(a2), C.c_size_t(5000), stream))
check("pool_used_covers_allocations", attr64(USED_CURRENT) >= 6000, True)
ok(cu.cuMemsetD8Async(a1, 0x5A, C.c_size_t(1000), stream))
ok(cu.cuMemcpyDtoHAsync_v2(C.c_void_p(dst.ctypes.data), a1, C.c_size_t(8), stream))
check("pool_memory_usable_in_stream_order", int(dst.view(np.uint8)[0]), 0x5A)
ok(cu.cuMemFreeAsync(a1, stream))
ok(cu.cuMemFreeAsync(a2, stream))
ok(cu.cuStreamSynchronize(stream))
check("pool_used_after_frees", attr64(USED_CURRENT), 0)
check("pool_high_watermark_kept", attr64(USED_HIGH) >= 6000, True)
zero = u64(0)
ok(cu.cuMemPoolSetAttribute(pool, USED_HIGH, C.byref(zero)))
check("pool_high_watermark_reset", attr64(USED_HIGH), 0)
check("pool_release_threshold_default", attr64(RELEASE_THRESHOLD), 0)
big = u64(1 << 40)
ok(cu.cuMemPoolSetAttribute(pool, RELEASE_THRESHOLD, C.byref(big)))
check("pool_release_threshold_set", attr64(RELEASE_THRESHOLD), 1 << 40)
flag = C.c_int(-1)
ok(cu.cuMemPoolGetAttribute(pool, REUSE_OPPORTUNISTIC, C.byref(flag)))
check("pool_reuse_default_enabled", flag.value, 1)
check("pool_bad_attribute", cu.cuMemPoolGetAttribute(pool, 99, C.byref(big)), 1)  # CUDA_ERROR_INVALID_VALUE


class MemLocation(C.Structure):
    _fields_ = [("type", C.c_int), ("id", C.c_int)]


class MemAccessDesc(C.Structure):
    _fields_ = [("location", MemLocation), ("flags", C.c_int)]


access = C.c_int(-1)
ok(cu.cuMemPoolGetAccess(C.byref(access), pool, C.byref(MemLocation(1, 0))))
check("pool_access_own_device", access.value, 3)  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
check("pool_set_access_own_device", cu.cuMemPoolSetAccess(pool, C.byref(MemAccessDesc(MemLocation(1, 0), 3)),
                                                        C.c_size_t(1)), 0)
check("pool_access_other_device", cu.cuMemPoolGetAccess(C.byref(access), pool, C.byref(MemLocation(1, 1))), 101)
check("pool_trim", cu.cuMemPoolTrimTo(pool, C.c_size_t(0)), 0)
check("pool_bad_handle", cu.cuMemAllocFromPoolAsync(C.byref(a1), C.c_size_t(8), C.c_void_p(0x10), stream), 400)

# --- cache preferences and capture status
ptx = (Path(sys.argv[1]).read_bytes() + b"\0")
lib, kern = C.c_void_p(), C.c_void_p()
ok(cu.cuLibraryLoadData(C.byref(lib), C.c_char_p(ptx), None, None, 0, None, None, 0))
ok(cu.cuLibraryGetKernel(C.byref(kern), lib, b"vec_add"))
check("kernel_cache_config_prefer_shared", cu.cuKernelSetCacheConfig(kern, 1, 0), 0)
check("kernel_cache_config_prefer_equal", cu.cuKernelSetCacheConfig(kern, 3, 0), 0)
check("kernel_cache_config_bad", cu.cuKernelSetCacheConfig(kern, 7, 0), 1)
check("kernel_cache_config_bad_device", cu.cuKernelSetCacheConfig(kern, 1, 3), 101)
mm, csize = C.c_void_p(), C.c_int(-1)
ok(cu.cuLibraryGetKernel(C.byref(mm), lib, b"matmul16"))
ok(cu.cuKernelGetAttribute(C.byref(csize), 2, mm, 0))  # CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES
check("const_size_bytes_of_constant_data", csize.value, 4)  # kernels.cu's `__constant__ float scale`
check("profiler_start", cu.cuProfilerStart(), 0)
check("profiler_stop", cu.cuProfilerStop(), 0)


def linked_num_regs(max_registers: int) -> int:
    """matmul16's CU_FUNC_ATTRIBUTE_NUM_REGS after cuLinkCreate with CU_JIT_MAX_REGISTERS (0: no option)."""
    st, img, size, lb, k, nregs = C.c_void_p(), C.c_void_p(), C.c_size_t(), C.c_void_p(), C.c_void_p(), C.c_int()
    opts, vals = (C.c_int * 1)(0), (C.c_void_p * 1)(max_registers)
    ok(cu.cuLinkCreate_v2(1 if max_registers else 0, opts, vals, C.byref(st)))
    ok(cu.cuLinkAddData_v2(st, 1, C.c_char_p(ptx), C.c_size_t(len(ptx)), b"kernels.ptx", 0, None, None))
    ok(cu.cuLinkComplete(st, C.byref(img), C.byref(size)))
    ok(cu.cuLibraryLoadData(C.byref(lb), img, None, None, 0, None, None, 0))
    ok(cu.cuLibraryGetKernel(C.byref(k), lb, b"matmul16"))
    ok(cu.cuKernelGetAttribute(C.byref(nregs), 4, k, 0))  # CU_FUNC_ATTRIBUTE_NUM_REGS
    ok(cu.cuLinkDestroy(st))
    return nregs.value


# ptxas -arch=sm_90 -v: matmul16 uses 32 registers, and 28 with --maxrregcount 28
check("num_regs_without_limit_above_28", linked_num_regs(0) > 28, True)
check("num_regs_within_jit_max_registers", linked_num_regs(28) <= 28, True)
status = C.c_int(-1)
ok(cu.cuStreamIsCapturing(stream, C.byref(status)))
check("stream_is_capturing", status.value, 0)

ok(cu.cuMemFree_v2(dptr))
ok(cu.cuMemFreeHost(pinned))
print(json.dumps(results))
