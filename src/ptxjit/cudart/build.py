"""Build ptxjit's libcudart.so.13: the CUDA runtime API's C ABI over cudart/capi.py, with cffi's embedding mode.

It lands next to libcuda.so.1 (ptxjit.driver.build.libdir()), so `ptxjit exec` puts both on the library path.
Like libcuda.so.1 it starts Python when a plain C++ program loads it and joins the running interpreter
otherwise (both libraries in one process share one interpreter and one DRIVER); the C prologue and the
Python start-up code are the driver library's (driver/build.py).

What is C here: nvcc's call configuration (`<<<...>>>` pushes it, the stub pops it: a thread-local stack),
the entry points taking dim3 by value (they hand plain integers to Python), `__cudaGetKernel` and
`__cudaInitModule`.  Every other name of CUDA 13's runtime API (cuda_runtime_api.h) is a function returning
cudaErrorNotSupported and naming itself once in the log.  Only the runtime's names are exported (a version
script, node libcudart.so.13 as nvcc-built programs ask for); ptxjit's helpers stay local, so they never
bind to libcuda.so.1's namesakes.

`python -m ptxjit.cudart.build` (run by the install, scripts/setup_venv.sh) writes it.
"""

from __future__ import annotations

import hashlib
import re
import sys
import sysconfig
import tempfile
from pathlib import Path

from ptxjit.cudart import errors as RE
from ptxjit.cudart.abi_tables import (
    DEVICE_PROP_FIELDS,
    FUNC_ATTRIBUTES_FIELDS,
    PER_THREAD,
    POINTER_ATTRIBUTES_FIELDS,
    RUNTIME_FUNCTIONS,
)
from ptxjit.driver import build as _driver_build

HERE = Path(__file__).resolve().parent
MODULE = "_ptxjit_libcudart"
SONAME = "libcudart.so.13"

TYPES = f"""
typedef int cudaError_t;
typedef struct {{ char bytes[16]; }} ptxjit_cuda_uuid;
typedef struct cudaDeviceProp {{
{DEVICE_PROP_FIELDS}
}} cudaDeviceProp;
struct cudaFuncAttributes {{
{FUNC_ATTRIBUTES_FIELDS}
}};
/* cudaLaunchConfig_t with its dim3s spelled out (the layout test checks it against the header) */
typedef struct {{
    unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
    size_t dynamicSmemBytes;
    void *stream;
    void *attrs;
    unsigned int numAttrs;
}} ptxjit_rt_launch_config;
struct cudaPointerAttributes {{
{POINTER_ATTRIBUTES_FIELDS}
}};
/* the structures of graphs, arrays and textures (named ptxjit_*: the layout test compiles them beside the
   header's); opaque handles as void *, enums as int, dim3 spelled out */
typedef struct {{ unsigned int x, y, z; }} ptxjit_rt_dim3;
struct ptxjit_kernel_node_params {{
    void *func; ptxjit_rt_dim3 gridDim; ptxjit_rt_dim3 blockDim; unsigned int sharedMemBytes;
    void **kernelParams; void **extra;
}};
struct ptxjit_memset_params {{
    void *dst; size_t pitch; unsigned int value; unsigned int elementSize; size_t width; size_t height;
}};
struct ptxjit_pos {{ size_t x, y, z; }};
struct ptxjit_pitched_ptr {{ void *ptr; size_t pitch; size_t xsize; size_t ysize; }};
struct ptxjit_extent {{ size_t width, height, depth; }};
struct ptxjit_memcpy3d_parms {{
    void *srcArray; struct ptxjit_pos srcPos; struct ptxjit_pitched_ptr srcPtr;
    void *dstArray; struct ptxjit_pos dstPos; struct ptxjit_pitched_ptr dstPtr;
    struct ptxjit_extent extent; int kind;
}};
struct ptxjit_host_node_params {{ void (*fn)(void *); void *userData; }};
struct ptxjit_channel_format {{ int x, y, z, w; int f; }};
struct ptxjit_resource_desc {{
    int resType;
    union {{
        struct {{ void *array; }} array;
        struct {{ void *mipmap; }} mipmap;
        struct {{ void *devPtr; struct ptxjit_channel_format desc; size_t sizeInBytes; }} linear;
        struct {{ void *devPtr; struct ptxjit_channel_format desc; size_t width; size_t height;
                 size_t pitchInBytes; }} pitch2D;
        struct {{ int reserved[32]; }} reserved;
    }} res;
    unsigned int flags;
}};
struct ptxjit_texture_desc {{
    int addressMode[3]; int filterMode; int readMode; int sRGB; float borderColor[4]; int normalizedCoords;
    unsigned int maxAnisotropy; int mipmapFilterMode; float mipmapLevelBias; float minMipmapLevelClamp;
    float maxMipmapLevelClamp; int disableTrilinearOptimization; int seamlessCubemap;
}};
"""

# the functions Python implements (cudart/capi.py), in their C signatures (pointers to opaque CUDA types as void *)
API = """
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaUnregisterFatBinary(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun, const char *deviceName,
                            int thread_limit, void *tid, void *bid, void *bDim, void *gDim, int *wSize);
void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress, const char *deviceName, int ext,
                       size_t size, int constant, int global);
void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress, char *deviceAddress,
                              const char *deviceName, int ext, size_t size, int constant, int global);
cudaError_t ptxjit_rt_launch(const void *func, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                             unsigned int by, unsigned int bz, void **args, size_t sharedMem, void *stream);
cudaError_t ptxjit_rt_launch_cooperative(const void *func, unsigned int gx, unsigned int gy, unsigned int gz,
                                         unsigned int bx, unsigned int by, unsigned int bz, void **args,
                                         size_t sharedMem, void *stream);
cudaError_t ptxjit_rt_missing_configuration(void);
cudaError_t ptxjit_rt_init_module(void **fatCubinHandle);
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func);
cudaError_t cudaLaunchKernelExC(const ptxjit_rt_launch_config *config, const void *func, void **args);
cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags);
cudaError_t cudaMallocHost(void **ptr, size_t size);
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, int kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, int kind, void *stream);
cudaError_t cudaMemset(void *devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, void *stream);
cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset, int kind);
cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset, int kind);
cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol);
cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, int attr, int device);
cudaError_t cudaRuntimeGetVersion(int *runtimeVersion);
cudaError_t cudaDriverGetVersion(int *driverVersion);
cudaError_t cudaStreamCreate(void **pStream);
cudaError_t cudaStreamCreateWithFlags(void **pStream, unsigned int flags);
cudaError_t cudaStreamDestroy(void *stream);
cudaError_t cudaStreamSynchronize(void *stream);
cudaError_t cudaStreamQuery(void *stream);
cudaError_t cudaStreamWaitEvent(void *stream, void *event, unsigned int flags);
cudaError_t cudaEventCreate(void **event);
cudaError_t cudaEventCreateWithFlags(void **event, unsigned int flags);
cudaError_t cudaEventRecord(void *event, void *stream);
cudaError_t cudaEventSynchronize(void *event);
cudaError_t cudaEventQuery(void *event);
cudaError_t cudaEventElapsedTime(float *ms, void *start, void *end);
cudaError_t cudaEventDestroy(void *event);
cudaError_t cudaFuncSetAttribute(const void *func, int attr, int value);
cudaError_t cudaFuncSetCacheConfig(const void *func, int cacheConfig);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize,
                                                          size_t dynamicSMemSize);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func, int blockSize,
                                                                   size_t dynamicSMemSize, unsigned int flags);
cudaError_t cudaSetDeviceFlags(unsigned int flags);
cudaError_t cudaGetDeviceFlags(unsigned int *flags);
cudaError_t cudaStreamCreateWithPriority(void **pStream, unsigned int flags, int priority);
cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority);
cudaError_t cudaStreamGetPriority(void *hStream, int *priority);
cudaError_t cudaStreamGetFlags(void *hStream, unsigned int *flags);
cudaError_t cudaEventRecordWithFlags(void *event, void *stream, unsigned int flags);
cudaError_t cudaLaunchHostFunc(void *stream, void (*fn)(void *), void *userData);
cudaError_t cudaStreamAddCallback(void *stream, void (*callback)(void *, cudaError_t, void *), void *userData,
                                  unsigned int flags);
cudaError_t cudaMallocAsync(void **devPtr, size_t size, void *hStream);
cudaError_t cudaFreeAsync(void *devPtr, void *hStream);
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags);
cudaError_t cudaHostUnregister(void *ptr);
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr);
cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height);
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         int kind);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, int kind, void *stream);
cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height);
cudaError_t cudaDeviceSetLimit(int limit, size_t value);
cudaError_t cudaDeviceGetLimit(size_t *pValue, int limit);
cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice);
cudaError_t cudaDeviceSetCacheConfig(int cacheConfig);
cudaError_t cudaDeviceGetCacheConfig(int *pCacheConfig);
cudaError_t cudaStreamBeginCapture(void *stream, int mode);
cudaError_t cudaStreamEndCapture(void *stream, void **pGraph);
cudaError_t cudaStreamIsCapturing(void *stream, int *pCaptureStatus);
cudaError_t cudaStreamGetCaptureInfo(void *stream, int *captureStatus_out, unsigned long long *id_out,
                                     void **graph_out, void ***dependencies_out, void **edgeData_out,
                                     size_t *numDependencies_out);
cudaError_t cudaThreadExchangeStreamCaptureMode(int *mode);
cudaError_t cudaStreamBeginCaptureToGraph(void *stream, void *graph, void **dependencies, const void *dependencyData,
                                          size_t numDependencies, int mode);
cudaError_t cudaStreamUpdateCaptureDependencies(void *stream, void **dependencies, const void *dependencyData,
                                                size_t numDependencies, unsigned int flags);
cudaError_t cudaGraphCreate(void **pGraph, unsigned int flags);
cudaError_t cudaGraphDestroy(void *graph);
cudaError_t cudaGraphAddKernelNode(void **pGraphNode, void *graph, void **pDependencies, size_t numDependencies,
                                   const struct ptxjit_kernel_node_params *pNodeParams);
cudaError_t cudaGraphKernelNodeGetParams(void *node, struct ptxjit_kernel_node_params *pNodeParams);
cudaError_t cudaGraphKernelNodeSetParams(void *node, const struct ptxjit_kernel_node_params *pNodeParams);
cudaError_t cudaGraphAddMemcpyNode(void **pGraphNode, void *graph, void **pDependencies, size_t numDependencies,
                                   const struct ptxjit_memcpy3d_parms *pCopyParams);
cudaError_t cudaGraphAddMemcpyNode1D(void **pGraphNode, void *graph, void **pDependencies, size_t numDependencies,
                                     void *dst, const void *src, size_t count, int kind);
cudaError_t cudaGraphAddMemsetNode(void **pGraphNode, void *graph, void **pDependencies, size_t numDependencies,
                                   const struct ptxjit_memset_params *pMemsetParams);
cudaError_t cudaGraphAddHostNode(void **pGraphNode, void *graph, void **pDependencies, size_t numDependencies,
                                 const struct ptxjit_host_node_params *pNodeParams);
cudaError_t cudaGraphAddEmptyNode(void **pGraphNode, void *graph, void **pDependencies, size_t numDependencies);
cudaError_t cudaGraphNodeGetType(void *node, int *pType);
cudaError_t cudaGraphGetNodes(void *graph, void **nodes, size_t *numNodes);
cudaError_t cudaGraphGetRootNodes(void *graph, void **pRootNodes, size_t *pNumRootNodes);
cudaError_t cudaGraphAddDependencies(void *graph, void **from, void **to, void *edgeData, size_t numDependencies);
cudaError_t cudaGraphDestroyNode(void *node);
cudaError_t cudaGraphInstantiate(void **pGraphExec, void *graph, unsigned long long flags);
cudaError_t cudaGraphInstantiateWithFlags(void **pGraphExec, void *graph, unsigned long long flags);
cudaError_t cudaGraphExecDestroy(void *graphExec);
cudaError_t cudaGraphExecKernelNodeSetParams(void *hGraphExec, void *node,
                                             const struct ptxjit_kernel_node_params *pNodeParams);
cudaError_t cudaGraphUpload(void *graphExec, void *stream);
cudaError_t cudaGraphLaunch(void *graphExec, void *stream);
cudaError_t cudaMallocArray(void **array, const struct ptxjit_channel_format *desc, size_t width, size_t height,
                            unsigned int flags);
cudaError_t ptxjit_rt_malloc_3d_array(void **array, const struct ptxjit_channel_format *desc, size_t width,
                                      size_t height, size_t depth, unsigned int flags);
cudaError_t cudaFreeArray(void *array);
cudaError_t cudaArrayGetInfo(struct ptxjit_channel_format *desc, struct ptxjit_extent *extent, unsigned int *flags,
                             void *array);
cudaError_t cudaMemcpy2DToArray(void *dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch,
                                size_t width, size_t height, int kind);
cudaError_t cudaMemcpyToArray(void *dst, size_t wOffset, size_t hOffset, const void *src, size_t count, int kind);
cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, const void *src, size_t wOffset, size_t hOffset,
                                  size_t width, size_t height, int kind);
cudaError_t cudaMemcpy2DArrayToArray(void *dst, size_t wOffsetDst, size_t hOffsetDst, const void *src,
                                     size_t wOffsetSrc, size_t hOffsetSrc, size_t width, size_t height, int kind);
cudaError_t cudaCreateTextureObject(unsigned long long *pTexObject, const struct ptxjit_resource_desc *pResDesc,
                                    const struct ptxjit_texture_desc *pTexDesc, const void *pResViewDesc);
cudaError_t cudaDestroyTextureObject(unsigned long long texObject);
cudaError_t cudaCreateSurfaceObject(unsigned long long *pSurfObject, const struct ptxjit_resource_desc *pResDesc);
cudaError_t cudaDestroySurfaceObject(unsigned long long surfObject);
cudaError_t ptxjit_unsupported(const char *name);
void ptxjit_shutdown(void);
"""
# what array libraries (CuPy) call around their kernels: memory pools, managed-memory hints,
# peer copies, PCI bus ids, driver entry points (cudart/capi_pools.py)
TYPES += "typedef struct { int type; int id; } ptxjit_rt_mem_location;  /* struct cudaMemLocation */\n"
API += """cudaError_t cudaDeviceGetDefaultMemPool(void **memPool, int device);
cudaError_t cudaDeviceGetMemPool(void **memPool, int device);
cudaError_t cudaDeviceSetMemPool(int device, void *memPool);
cudaError_t cudaMemPoolGetAttribute(void *memPool, int attr, void *value);
cudaError_t cudaMemPoolSetAttribute(void *memPool, int attr, void *value);
cudaError_t cudaMemPoolTrimTo(void *memPool, size_t minBytesToKeep);
cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, void *memPool, void *stream);
cudaError_t cudaMemAdvise(const void *devPtr, size_t count, int advice, ptxjit_rt_mem_location location);
cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, ptxjit_rt_mem_location location,
                                 unsigned int flags, void *stream);
cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count);
cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                void *stream);
cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device);
cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *pciBusId);
cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    int *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags, int *driverStatus);
"""

# the entry points written in C below
C_ENTRIES = ("cudaLaunchKernel", "cudaLaunchKernel_ptsz", "__cudaLaunchKernel", "__cudaLaunchKernel_ptsz",
             "__cudaGetKernel", "__cudaInitModule", "__cudaPushCallConfiguration", "__cudaPopCallConfiguration",
             "cudaProfilerStart", "cudaProfilerStop", "cudaCreateChannelDesc", "cudaLaunchCooperativeKernel",
             "cudaLaunchCooperativeKernel_ptsz", "cudaMalloc3DArray", "cudaGetErrorName", "cudaGetErrorString")
# nvcc's other registration hooks: accepted, named once in the log (they return nothing)
VOID_HOOKS = ("__cudaRegisterHostVar", "__cudaRegisterUnifiedTable", "__cudaRegisterTexture",
              "__cudaRegisterSurface")

_C_CODE = r"""
typedef struct { unsigned int x, y, z; } ptxjit_dim3;

/* <<<grid, block, shared, stream>>>: nvcc's host code pushes the configuration, the kernel's stub pops it
   and launches; a stack per thread (a kernel's arguments may themselves launch kernels). */
typedef struct { ptxjit_dim3 grid, block; size_t shared; void *stream; } ptxjit_config;
static __thread ptxjit_config ptxjit_configs[32];
static __thread int ptxjit_config_depth = 0;

__attribute__((visibility("default")))
unsigned __cudaPushCallConfiguration(ptxjit_dim3 gridDim, ptxjit_dim3 blockDim, size_t sharedMem, void *stream) {
    if (ptxjit_config_depth >= 32) return 1;
    ptxjit_config *c = &ptxjit_configs[ptxjit_config_depth++];
    c->grid = gridDim; c->block = blockDim; c->shared = sharedMem; c->stream = stream;
    return 0;
}

__attribute__((visibility("default")))
cudaError_t __cudaPopCallConfiguration(ptxjit_dim3 *gridDim, ptxjit_dim3 *blockDim, size_t *sharedMem,
                                       void *stream) {
    if (ptxjit_config_depth <= 0) return ptxjit_rt_missing_configuration();
    ptxjit_config *c = &ptxjit_configs[--ptxjit_config_depth];
    if (gridDim) *gridDim = c->grid;
    if (blockDim) *blockDim = c->block;
    if (sharedMem) *sharedMem = c->shared;
    if (stream) *(void **)stream = c->stream;
    return 0;
}

/* a kernel handle is its host stub's address: the registry knows kernels by it */
__attribute__((visibility("default")))
cudaError_t __cudaGetKernel(void **kernel, const void *hostFun) {
    if (!kernel) return 1;
    *kernel = (void *)hostFun;
    return 0;
}

/* the one runtime function returning a structure: a plain constructor (a stub's int would not do, the
   caller reads the structure through the address it passed) */
struct ptxjit_channel_desc { int x, y, z, w; int f; };
__attribute__((visibility("default")))
struct ptxjit_channel_desc cudaCreateChannelDesc(int x, int y, int z, int w, int f) {
    struct ptxjit_channel_desc d = {x, y, z, w, f};
    return d;
}

/* cuda_profiler_api.h: with no profiler attached these do nothing, successfully (as NVIDIA's runtime) */
__attribute__((visibility("default"))) cudaError_t cudaProfilerStart(void) { return 0; }
__attribute__((visibility("default"))) cudaError_t cudaProfilerStop(void) { return 0; }

/* the first host access of a __managed__ variable: its module is loaded, the program's pointer set */
__attribute__((visibility("default")))
char __cudaInitModule(void **fatCubinHandle) { return ptxjit_rt_init_module(fatCubinHandle) == 0; }

__attribute__((visibility("default")))
cudaError_t cudaLaunchKernel(const void *func, ptxjit_dim3 gridDim, ptxjit_dim3 blockDim, void **args,
                             size_t sharedMem, void *stream) {
    return ptxjit_rt_launch(func, gridDim.x, gridDim.y, gridDim.z, blockDim.x, blockDim.y, blockDim.z, args,
                            sharedMem, stream);
}

/* a launch whose blocks may synchronize across the grid (cooperative groups' grid.sync()) */
__attribute__((visibility("default")))
cudaError_t cudaLaunchCooperativeKernel(const void *func, ptxjit_dim3 gridDim, ptxjit_dim3 blockDim, void **args,
                                        size_t sharedMem, void *stream) {
    return ptxjit_rt_launch_cooperative(func, gridDim.x, gridDim.y, gridDim.z, blockDim.x, blockDim.y, blockDim.z,
                                        args, sharedMem, stream);
}
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *, ptxjit_dim3, ptxjit_dim3, void **, size_t, void *)
    __attribute__((alias("cudaLaunchCooperativeKernel"), visibility("default")));

/* the one taking a structure (cudaExtent) by value */
__attribute__((visibility("default")))
cudaError_t cudaMalloc3DArray(void **array, const struct ptxjit_channel_format *desc, struct ptxjit_extent extent,
                              unsigned int flags) {
    return ptxjit_rt_malloc_3d_array(array, desc, extent.width, extent.height, extent.depth, flags);
}

cudaError_t cudaLaunchKernel_ptsz(const void *, ptxjit_dim3, ptxjit_dim3, void **, size_t, void *)
    __attribute__((alias("cudaLaunchKernel"), visibility("default")));
cudaError_t __cudaLaunchKernel(const void *, ptxjit_dim3, ptxjit_dim3, void **, size_t, void *)
    __attribute__((alias("cudaLaunchKernel"), visibility("default")));
cudaError_t __cudaLaunchKernel_ptsz(const void *, ptxjit_dim3, ptxjit_dim3, void **, size_t, void *)
    __attribute__((alias("cudaLaunchKernel"), visibility("default")));
"""

_VERSION_SCRIPT = f"{SONAME} {{\n  global: cuda*; __cuda*; PyInit_{MODULE};\n  local: *;\n}};\n"


def implemented() -> list[str]:
    """The entry points Python implements (the API declarations, less ptxjit's own helpers)."""
    return [n for n in re.findall(r"\b(\w+)\s*\(", API) if n.startswith(("cuda", "__cuda"))]


def _error_functions() -> str:
    """cudaGetErrorName/String in C (they answer while Python cannot run, as at its finalization)."""
    rows = [(c, n, RE.error_string(c) or n) for c, n in RE.NAMES.items()]
    return _driver_build.error_table_c("ptxjit_runtime_error", rows) + r"""
__attribute__((visibility("default"))) const char *cudaGetErrorName(cudaError_t error) {
    const ptxjit_error_row *r = ptxjit_runtime_error_lookup(error);
    return r ? r->name : "unrecognized error code";
}
__attribute__((visibility("default"))) const char *cudaGetErrorString(cudaError_t error) {
    const ptxjit_error_row *r = ptxjit_runtime_error_lookup(error);
    return r ? r->text : "unrecognized error code";
}
"""


def _c_source() -> str:
    done = set(implemented()) | set(C_ENTRIES)
    lines = ["#include <string.h>", "#include <stdint.h>", "#include <stdlib.h>", "#include <stddef.h>", TYPES,
             API, "void ptxjit_register_atexit(void);", "int ptxjit_started_interpreter(void);",
             _driver_build.C_PROLOGUE, _C_CODE, _error_functions()]
    for n in VOID_HOOKS:
        lines.append(f'__attribute__((visibility("default"))) void {n}(void) {{ (void)ptxjit_unsupported("{n}"); }}')
    for n in RUNTIME_FUNCTIONS:
        if n not in done:
            lines.append(f'__attribute__((visibility("default"))) cudaError_t {n}(void) '
                         f'{{ return ptxjit_unsupported("{n}"); }}')
    # a program built with --default-stream per-thread calls the _ptds/_ptsz names: the same functions (one
    # device; the per-thread default stream is served by the legacy stream, whose ordering is only stricter)
    for base, variant in sorted(PER_THREAD.items()):
        if variant not in done and base in done | set(RUNTIME_FUNCTIONS):
            lines.append(f'cudaError_t {variant}() __attribute__((alias("{base}"), visibility("default")));')
    return "\n".join(lines)


def fingerprint() -> str:
    """What the built library depends on: this package's build inputs, the driver's prologue, the interpreter."""
    h = hashlib.sha256()
    for p in (Path(__file__), HERE / "abi_tables.py", HERE / "errors.py", Path(_driver_build.__file__),
              Path(_driver_build.__file__).with_name("errors.py")):
        h.update(p.read_bytes())
    h.update(sys.version.encode() + sys.prefix.encode())
    return h.hexdigest()[:16]


def library_path() -> Path:
    return _driver_build.libdir() / SONAME


def is_current() -> bool:
    stamp = _driver_build.libdir() / "libcudart.stamp"
    return library_path().is_file() and stamp.is_file() and stamp.read_text().strip() == fingerprint()


def build(verbose: bool = False) -> Path:
    """Compile libcudart.so.13 (and the libcudart.so link) next to libcuda.so.1; returns the library's path."""
    import cffi

    out = _driver_build.libdir()
    out.mkdir(parents=True, exist_ok=True)
    ffi = cffi.FFI()
    ffi.cdef(TYPES)
    ffi.embedding_api(API)
    ffi.cdef("void ptxjit_register_atexit(void); int ptxjit_started_interpreter(void);")
    libpython = sysconfig.get_config_var("LIBDIR") or ""
    with tempfile.TemporaryDirectory(prefix="ptxjit-libcudart-") as tmp:
        script = Path(tmp) / "libcudart.map"
        script.write_text(_VERSION_SCRIPT)
        link_args = [f"-Wl,-soname,{SONAME}", f"-Wl,--version-script,{script}"] + (
            [f"-Wl,-rpath,{libpython}"] if libpython else [])
        ffi.set_source(MODULE, _c_source(), extra_link_args=link_args,
                       extra_compile_args=["-Wno-attribute-alias"])
        ffi.embedding_init_code(_driver_build.init_code("ptxjit.cudart.entries", MODULE))
        target = ffi.compile(tmpdir=tmp, target=SONAME, verbose=verbose)
        final = _driver_build.install_library(Path(target), out, SONAME, "libcudart", fingerprint())
    return final


def ensure_built() -> Path:
    """The library, built first if missing or out of date."""
    if not is_current():
        build()
    return library_path()


if __name__ == "__main__":
    print(build(verbose="-v" in sys.argv))
