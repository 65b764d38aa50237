"""A cuda-python program as its users write it: NVRTC compiles CUDA C++, cuda.bindings.driver loads the PTX,
allocates, copies and launches with kernelParams on a stream.  Checks its result against NumPy; prints OK."""
import numpy as np
from cuda.bindings import driver as cu
from cuda.bindings import nvrtc

SRC = r'''
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''
def check(res):
    err, *rest = res if isinstance(res, tuple) else (res,)
    if isinstance(err, cu.CUresult) and err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{err}: {cu.cuGetErrorName(err)[1]}")
    if isinstance(err, nvrtc.nvrtcResult) and err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(str(err))
    return rest[0] if len(rest) == 1 else rest

check(cu.cuInit(0))
dev = check(cu.cuDeviceGet(0))
major = check(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
minor = check(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
prog = check(nvrtc.nvrtcCreateProgram(SRC.encode(), b"saxpy.cu", 0, [], []))
check(nvrtc.nvrtcCompileProgram(prog, 1, [f"--gpu-architecture=compute_{major}{minor}".encode()]))
size = check(nvrtc.nvrtcGetPTXSize(prog))
ptx = b" " * size
check(nvrtc.nvrtcGetPTX(prog, ptx))
ctx = check(cu.cuCtxCreate(None, 0, dev))
mod = check(cu.cuModuleLoadData(ptx))
fn = check(cu.cuModuleGetFunction(mod, b"saxpy"))
n = 4096
x = np.random.rand(n).astype(np.float32)
y = np.random.rand(n).astype(np.float32)
dx = check(cu.cuMemAlloc(x.nbytes))
dy = check(cu.cuMemAlloc(y.nbytes))
stream = check(cu.cuStreamCreate(0))
check(cu.cuMemcpyHtoDAsync(dx, x.ctypes.data, x.nbytes, stream))
check(cu.cuMemcpyHtoDAsync(dy, y.ctypes.data, y.nbytes, stream))
a = np.array([2.5], np.float32)
nn = np.array([n], np.int32)
adx = np.array([int(dx)], np.uint64)
ady = np.array([int(dy)], np.uint64)
args = np.array([a.ctypes.data, adx.ctypes.data, ady.ctypes.data, nn.ctypes.data], np.uint64)
check(cu.cuLaunchKernel(fn, n // 128, 1, 1, 128, 1, 1, 0, stream, args.ctypes.data, 0))
out = np.empty_like(y)
check(cu.cuMemcpyDtoHAsync(out.ctypes.data, dy, out.nbytes, stream))
check(cu.cuStreamSynchronize(stream))
assert np.allclose(out, 2.5 * x + y), "mismatch"
print("cuda-python saxpy OK", major, minor)
