"""Bad input through cuda-python: each call must return the CUresult the CUDA driver API documentation gives
for it, and the process must go on.  Prints one JSON object: check name -> [returned name, expected name]."""
import ctypes
import json
import sys
from pathlib import Path

import numpy as np
from cuda.bindings import driver as cu

R = cu.CUresult
results: dict[str, list[str]] = {}


def expect(name, res, want):
    err = res[0] if isinstance(res, tuple) else res
    results[name] = [err.name, want.name]
    return res[1] if isinstance(res, tuple) and len(res) > 1 else None


here = Path(__file__).resolve().parent
expect("cuCtxGetCurrent before cuInit", cu.cuCtxGetCurrent(), R.CUDA_ERROR_NOT_INITIALIZED)
expect("cuInit with flags", cu.cuInit(1), R.CUDA_ERROR_INVALID_VALUE)
expect("cuInit", cu.cuInit(0), R.CUDA_SUCCESS)
expect("cuDeviceGet of ordinal 3", cu.cuDeviceGet(3), R.CUDA_ERROR_INVALID_DEVICE)
expect("cuMemAlloc without a context", cu.cuMemAlloc(64), R.CUDA_ERROR_INVALID_CONTEXT)
dev = expect("cuDeviceGet", cu.cuDeviceGet(0), R.CUDA_SUCCESS)
expect("cuDeviceGetAttribute of an unknown attribute", cu.cuDeviceGetAttribute(9999, dev), R.CUDA_ERROR_INVALID_VALUE)
ctx = expect("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(dev), R.CUDA_SUCCESS)
expect("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx), R.CUDA_SUCCESS)
p = expect("cuMemAlloc", cu.cuMemAlloc(1024), R.CUDA_SUCCESS)
expect("cuMemFree of a pointer never allocated", cu.cuMemFree(0x1234560), R.CUDA_ERROR_INVALID_VALUE)
expect("cuMemFree", cu.cuMemFree(p), R.CUDA_SUCCESS)
expect("cuMemFree twice", cu.cuMemFree(p), R.CUDA_ERROR_INVALID_VALUE)
host = np.zeros(256, np.uint8)
expect("cuMemHostUnregister of memory never registered", cu.cuMemHostUnregister(host.ctypes.data),
       R.CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
expect("cuMemHostRegister", cu.cuMemHostRegister(host.ctypes.data, host.nbytes, 0), R.CUDA_SUCCESS)
expect("cuMemHostRegister twice", cu.cuMemHostRegister(host.ctypes.data, host.nbytes, 0),
       R.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
expect("cuPointerGetAttribute of registered host memory",
       cu.cuPointerGetAttribute(cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, host.ctypes.data),
       R.CUDA_SUCCESS)
expect("cuModuleLoadData of garbage", cu.cuModuleLoadData(b"\x01\x02\x03\x04garbage\0"), R.CUDA_ERROR_INVALID_IMAGE)
bad_ptx = b".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() { bogus.op %r1; }\n\0"
expect("cuModuleLoadData of invalid PTX", cu.cuModuleLoadData(bad_ptx), R.CUDA_ERROR_INVALID_PTX)
cubin = (here.parent / "data" / "fatbin" / "kernels.sm_90.cubin").read_bytes()
expect("cuModuleLoadData of a SASS-only cubin", cu.cuModuleLoadData(cubin), R.CUDA_ERROR_NO_BINARY_FOR_GPU)
sass_fat = (here.parent / "data" / "fatbin" / "kernels.sass_only.fatbin").read_bytes()
expect("cuModuleLoadData of a fatbin without PTX", cu.cuModuleLoadData(sass_fat), R.CUDA_ERROR_NO_BINARY_FOR_GPU)
mod = expect("cuModuleLoad", cu.cuModuleLoad(str(here / "kernels.ptx").encode()), R.CUDA_SUCCESS)
expect("cuModuleLoad of a missing file", cu.cuModuleLoad(b"/nonexistent/k.ptx"), R.CUDA_ERROR_FILE_NOT_FOUND)
fn = expect("cuModuleGetFunction", cu.cuModuleGetFunction(mod, b"vec_add"), R.CUDA_SUCCESS)
expect("cuModuleGetFunction of a missing name", cu.cuModuleGetFunction(mod, b"nope"), R.CUDA_ERROR_NOT_FOUND)
expect("cuModuleGetGlobal of a missing name", cu.cuModuleGetGlobal(mod, b"nope"), R.CUDA_ERROR_NOT_FOUND)
buf = np.zeros(8, np.uint64)
size = ctypes.c_size_t(8)
extra = (ctypes.c_void_p * 5)(1, buf.ctypes.data, 2, ctypes.addressof(size), 0)
expect("cuLaunchKernel with a parameter buffer smaller than the parameters",
       cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, 0, 0, ctypes.addressof(extra)), R.CUDA_ERROR_INVALID_VALUE)
expect("cuLaunchKernel without parameters", cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0),
       R.CUDA_ERROR_INVALID_VALUE)
expect("cuLaunchKernel with a zero grid", cu.cuLaunchKernel(fn, 0, 1, 1, 32, 1, 1, 0, 0, 0, 0),
       R.CUDA_ERROR_INVALID_VALUE)
# a packed buffer that ends at the last parameter (28 bytes), without the layout's trailing padding (32): accepted
da_ = expect("cuMemAlloc for vec_add", cu.cuMemAlloc(4096), R.CUDA_SUCCESS)
packed = np.zeros(4, np.uint64)
packed[:3] = int(da_)
packed.view(np.int32)[6] = 1024
size28 = ctypes.c_size_t(28)
extra28 = (ctypes.c_void_p * 5)(1, packed.ctypes.data, 2, ctypes.addressof(size28), 0)
expect("cuLaunchKernel with a buffer ending at the last parameter",
       cu.cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, 0, 0, ctypes.addressof(extra28)), R.CUDA_SUCCESS)
expect("cuCtxSynchronize after it", cu.cuCtxSynchronize(), R.CUDA_SUCCESS)
s = expect("cuStreamCreate", cu.cuStreamCreate(0), R.CUDA_SUCCESS)
expect("cuStreamDestroy", cu.cuStreamDestroy(s), R.CUDA_SUCCESS)
expect("cuStreamSynchronize of a destroyed stream", cu.cuStreamSynchronize(s), R.CUDA_ERROR_INVALID_HANDLE)
e = expect("cuEventCreate", cu.cuEventCreate(0), R.CUDA_SUCCESS)
expect("cuEventElapsedTime of an unrecorded event", cu.cuEventElapsedTime(e, e), R.CUDA_ERROR_INVALID_HANDLE)
expect("cuEventQuery of an unrecorded event", cu.cuEventQuery(e), R.CUDA_SUCCESS)
expect("cuGetErrorName of an unknown code", cu.cuGetErrorName(123456), R.CUDA_ERROR_INVALID_VALUE)

# a kernel through a freed allocation: CUDA_ERROR_ILLEGAL_ADDRESS, then sticky
a = expect("cuMemAlloc a", cu.cuMemAlloc(4096), R.CUDA_SUCCESS)
b = expect("cuMemAlloc b", cu.cuMemAlloc(4096), R.CUDA_SUCCESS)
c = expect("cuMemAlloc c", cu.cuMemAlloc(4096), R.CUDA_SUCCESS)
expect("cuMemFree c", cu.cuMemFree(c), R.CUDA_SUCCESS)
vals = [np.array([int(a)], np.uint64), np.array([int(b)], np.uint64), np.array([int(c)], np.uint64),
        np.array([1024], np.int32)]
params = np.array([v.ctypes.data for v in vals], np.uint64)
r = cu.cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, 0, params.ctypes.data, 0)
if r[0] == R.CUDA_SUCCESS:
    r = cu.cuCtxSynchronize()
expect("a kernel storing through a freed pointer", r, R.CUDA_ERROR_ILLEGAL_ADDRESS)
expect("the context after the fault", cu.cuMemAlloc(64), R.CUDA_ERROR_ILLEGAL_ADDRESS)
json.dump(results, sys.stdout)
