/* The driver API entry points ptxjit implements, in CUDA 13's C ABI (cuda.h's types reduced to what the
   ABI sees: opaque handles are pointers, CUdeviceptr a 64-bit integer, enums ints).  cffi's embedding mode
   turns each into an exported C function that calls its Python implementation in driver/capi.py. */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef void *CUhandle;
typedef void (*CUhostFn)(void *userData);
typedef void (*CUstreamCallback)(void *hStream, CUresult status, void *userData);
/* CUlaunchConfig and CUDA_MEMCPY2D, field for field */
typedef struct {
    unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    CUhandle hStream;
    void *attrs;
    unsigned int numAttrs;
} ptxjit_launch_config;
typedef struct {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
} ptxjit_memcpy2d;
/* CUmemLocation and CUmemAccessDesc, field for field */
typedef struct {
    int type;
    int id;
} ptxjit_mem_location;
typedef struct {
    ptxjit_mem_location location;
    int flags;
} ptxjit_mem_access_desc;

typedef struct {
    CUhandle func;
    unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    void **kernelParams;
    void **extra;
    CUhandle kern;  /* CUDA_KERNEL_NODE_PARAMS_v2 only */
    CUhandle ctx;
} ptxjit_kernel_node_params;
typedef struct {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    int srcMemoryType;
    const void *srcHost;
    CUdeviceptr srcDevice;
    void *srcArray;
    void *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    int dstMemoryType;
    void *dstHost;
    CUdeviceptr dstDevice;
    void *dstArray;
    void *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
} ptxjit_memcpy3d;
typedef struct { CUhostFn fn; void *userData; } ptxjit_host_node_params;

CUresult cuInit(unsigned int Flags);
CUresult cuDriverGetVersion(int *driverVersion);

CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult cuDeviceGetUuid(void *uuid, CUdevice dev);
CUresult cuDeviceGetUuid_v2(void *uuid, CUdevice dev);
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);
CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev);
CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev);
CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev);
CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId);
CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev);

CUresult cuDevicePrimaryCtxRetain(CUhandle *pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev);
CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags);
CUresult cuCtxCreate_v2(CUhandle *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v4(CUhandle *pctx, void *ctxCreateParams, unsigned int flags, CUdevice dev);
CUresult cuCtxDestroy_v2(CUhandle ctx);
CUresult cuCtxGetCurrent(CUhandle *pctx);
CUresult cuCtxSetCurrent(CUhandle ctx);
CUresult cuCtxPushCurrent_v2(CUhandle ctx);
CUresult cuCtxPopCurrent_v2(CUhandle *pctx);
CUresult cuCtxGetDevice(CUdevice *device);
CUresult cuCtxGetFlags(unsigned int *flags);
CUresult cuCtxGetApiVersion(CUhandle ctx, unsigned int *version);
CUresult cuCtxSynchronize(void);
CUresult cuCtxSynchronize_v2(CUhandle ctx);
CUresult cuCtxSetLimit(int limit, size_t value);
CUresult cuCtxGetLimit(size_t *pvalue, int limit);
CUresult cuCtxGetCacheConfig(int *pconfig);
CUresult cuCtxSetCacheConfig(int config);
CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority);
CUresult cuCtxGetId(CUhandle ctx, unsigned long long *ctxId);

CUresult cuMemGetInfo_v2(size_t *free, size_t *total);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUhandle hStream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUhandle hStream);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUhandle pool, CUhandle hStream);
CUresult cuDeviceGetDefaultMemPool(CUhandle *pool_out, CUdevice dev);
CUresult cuDeviceGetMemPool(CUhandle *pool, CUdevice dev);
CUresult cuDeviceSetMemPool(CUdevice dev, CUhandle pool);
CUresult cuMemPoolGetAttribute(CUhandle pool, int attr, void *value);
CUresult cuMemPoolSetAttribute(CUhandle pool, int attr, void *value);
CUresult cuMemPoolGetAccess(int *flags, CUhandle memPool, ptxjit_mem_location *location);
CUresult cuMemPoolSetAccess(CUhandle pool, const ptxjit_mem_access_desc *map, size_t count);
CUresult cuMemPoolTrimTo(CUhandle pool, size_t minBytesToKeep);
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize);
CUresult cuMemFreeHost(void *p);
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags);
CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p);
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags);
CUresult cuMemHostUnregister(void *p);
CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr);
CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr ptr);
CUresult cuPointerGetAttributes(unsigned int numAttributes, int *attributes, void **data, CUdeviceptr ptr);
CUresult cuPointerSetAttribute(const void *value, int attribute, CUdeviceptr ptr);

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUhandle hStream);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUhandle hStream);
CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUhandle hStream);
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUhandle hStream);
CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N);
CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUhandle hStream);
CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUhandle hStream);
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUhandle hStream);
CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height);
CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height);
CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height);
CUresult cuMemcpy2D_v2(const void *pCopy);
CUresult cuMemcpy2DUnaligned_v2(const void *pCopy);
CUresult cuMemcpy2DAsync_v2(const void *pCopy, CUhandle hStream);

CUresult cuModuleLoad(CUhandle *module, const char *fname);
CUresult cuModuleLoadData(CUhandle *module, const void *image);
CUresult cuModuleLoadDataEx(CUhandle *module, const void *image, unsigned int numOptions, int *options,
                            void **optionValues);
CUresult cuModuleLoadFatBinary(CUhandle *module, const void *fatCubin);
CUresult cuModuleUnload(CUhandle hmod);
CUresult cuModuleGetFunction(CUhandle *hfunc, CUhandle hmod, const char *name);
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUhandle hmod, const char *name);
CUresult cuModuleGetFunctionCount(unsigned int *count, CUhandle mod);
CUresult cuModuleEnumerateFunctions(CUhandle *functions, unsigned int numFunctions, CUhandle mod);
CUresult cuModuleGetLoadingMode(int *mode);
CUresult cuLibraryLoadData(CUhandle *library, const void *code, int *jitOptions, void **jitOptionsValues,
                           unsigned int numJitOptions, int *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions);
CUresult cuLibraryLoadFromFile(CUhandle *library, const char *fileName, int *jitOptions, void **jitOptionsValues,
                               unsigned int numJitOptions, int *libraryOptions, void **libraryOptionValues,
                               unsigned int numLibraryOptions);
CUresult cuLibraryUnload(CUhandle library);
CUresult cuLibraryGetKernel(CUhandle *pKernel, CUhandle library, const char *name);
CUresult cuLibraryGetModule(CUhandle *pMod, CUhandle library);
CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUhandle library, const char *name);
CUresult cuKernelGetFunction(CUhandle *pFunc, CUhandle kernel);
CUresult cuKernelGetAttribute(int *pi, int attrib, CUhandle kernel, CUdevice dev);
CUresult cuKernelSetAttribute(int attrib, int val, CUhandle kernel, CUdevice dev);
CUresult cuKernelGetName(const char **name, CUhandle hfunc);
CUresult cuFuncGetAttribute(int *pi, int attrib, CUhandle hfunc);
CUresult cuFuncSetAttribute(CUhandle hfunc, int attrib, int value);
CUresult cuFuncSetCacheConfig(CUhandle hfunc, int config);
CUresult cuKernelSetCacheConfig(CUhandle kernel, int config, CUdevice dev);
CUresult cuFuncGetName(const char **name, CUhandle hfunc);
CUresult cuFuncGetModule(CUhandle *hmod, CUhandle hfunc);
CUresult cuFuncGetParamInfo(CUhandle func, size_t paramIndex, size_t *paramOffset, size_t *paramSize);

CUresult cuLinkCreate_v2(unsigned int numOptions, int *options, void **optionValues, CUhandle *stateOut);
CUresult cuLinkAddData_v2(CUhandle state, int type, void *data, size_t size, const char *name,
                          unsigned int numOptions, int *options, void **optionValues);
CUresult cuLinkAddFile_v2(CUhandle state, int type, const char *path, unsigned int numOptions, int *options,
                          void **optionValues);
CUresult cuLinkComplete(CUhandle state, void **cubinOut, size_t *sizeOut);
CUresult cuLinkDestroy(CUhandle state);

CUresult cuLaunchKernel(CUhandle f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUhandle hStream, void **kernelParams, void **extra);
CUresult cuLaunchCooperativeKernel(CUhandle f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUhandle hStream, void **kernelParams);
CUresult cuLaunchKernelEx(const void *config, CUhandle f, void **kernelParams, void **extra);
CUresult cuLaunchHostFunc(CUhandle hStream, CUhostFn fn, void *userData);
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUhandle func, int blockSize,
                                                     size_t dynamicSMemSize);
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUhandle func, int blockSize,
                                                              size_t dynamicSMemSize, unsigned int flags);
CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUhandle func, void *blockSizeToDynamicSMemSize,
                                          size_t dynamicSMemSize, int blockSizeLimit);
CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUhandle func,
                                                   void *blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
                                                   int blockSizeLimit, unsigned int flags);
CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUhandle func, int numBlocks, int blockSize);

CUresult cuStreamCreate(CUhandle *phStream, unsigned int Flags);
CUresult cuStreamCreateWithPriority(CUhandle *phStream, unsigned int flags, int priority);
CUresult cuStreamDestroy_v2(CUhandle hStream);
CUresult cuStreamSynchronize(CUhandle hStream);
CUresult cuStreamQuery(CUhandle hStream);
CUresult cuStreamWaitEvent(CUhandle hStream, CUhandle hEvent, unsigned int Flags);
CUresult cuStreamGetPriority(CUhandle hStream, int *priority);
CUresult cuStreamGetFlags(CUhandle hStream, unsigned int *flags);
CUresult cuStreamGetCtx(CUhandle hStream, CUhandle *pctx);
CUresult cuStreamGetId(CUhandle hStream, unsigned long long *streamId);
CUresult cuStreamIsCapturing(CUhandle hStream, int *captureStatus);
CUresult cuProfilerStart(void);
CUresult cuProfilerStop(void);
CUresult cuStreamAddCallback(CUhandle hStream, CUstreamCallback callback, void *userData, unsigned int flags);
CUresult cuEventCreate(CUhandle *phEvent, unsigned int Flags);
CUresult cuEventDestroy_v2(CUhandle hEvent);
CUresult cuEventRecord(CUhandle hEvent, CUhandle hStream);
CUresult cuEventRecordWithFlags(CUhandle hEvent, CUhandle hStream, unsigned int flags);
CUresult cuEventSynchronize(CUhandle hEvent);
CUresult cuEventQuery(CUhandle hEvent);
CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUhandle hStart, CUhandle hEnd);

CUresult cuGraphCreate(CUhandle *phGraph, unsigned int flags);
CUresult cuGraphDestroy(CUhandle hGraph);
CUresult cuGraphAddKernelNode(CUhandle *phGraphNode, CUhandle hGraph, const CUhandle *dependencies, size_t numDependencies,
                              const ptxjit_kernel_node_params *nodeParams);
CUresult cuGraphAddKernelNode_v2(CUhandle *phGraphNode, CUhandle hGraph, const CUhandle *dependencies,
                                 size_t numDependencies, const ptxjit_kernel_node_params *nodeParams);
CUresult cuGraphAddMemcpyNode(CUhandle *phGraphNode, CUhandle hGraph, const CUhandle *dependencies, size_t numDependencies,
                              const ptxjit_memcpy3d *copyParams, CUhandle ctx);
CUresult cuGraphAddHostNode(CUhandle *phGraphNode, CUhandle hGraph, const CUhandle *dependencies, size_t numDependencies,
                            const ptxjit_host_node_params *nodeParams);
CUresult cuGraphAddEmptyNode(CUhandle *phGraphNode, CUhandle hGraph, const CUhandle *dependencies, size_t numDependencies);
CUresult cuGraphInstantiateWithFlags(CUhandle *phGraphExec, CUhandle hGraph, unsigned long long flags);
typedef struct {
    cuuint64_t flags;
    CUhandle hUploadStream;
    CUhandle hErrNode_out;
    int result_out;  /* CUgraphInstantiateResult */
} ptxjit_graph_instantiate_params;
CUresult cuGraphInstantiateWithParams(CUhandle *phGraphExec, CUhandle hGraph,
                                      ptxjit_graph_instantiate_params *instantiateParams);
CUresult cuGraphInstantiate_v2(CUhandle *phGraphExec, CUhandle hGraph, CUhandle *phErrorNode, char *logBuffer,
                               size_t bufferSize);
CUresult cuGraphExecKernelNodeSetParams(CUhandle hGraphExec, CUhandle hNode, const ptxjit_kernel_node_params *nodeParams);
CUresult cuGraphExecKernelNodeSetParams_v2(CUhandle hGraphExec, CUhandle hNode,
                                           const ptxjit_kernel_node_params *nodeParams);
CUresult cuGraphExecMemcpyNodeSetParams(CUhandle hGraphExec, CUhandle hNode, const ptxjit_memcpy3d *copyParams,
                                        CUhandle ctx);
CUresult cuGraphLaunch(CUhandle hGraphExec, CUhandle hStream);
CUresult cuGraphExecDestroy(CUhandle hGraphExec);
CUresult cuUserObjectCreate(CUhandle *object_out, void *ptr, CUhostFn destroy, unsigned int initialRefcount,
                            unsigned int flags);
CUresult cuUserObjectRetain(CUhandle object, unsigned int count);
CUresult cuUserObjectRelease(CUhandle object, unsigned int count);
CUresult cuGraphRetainUserObject(CUhandle graph, CUhandle object, unsigned int count, unsigned int flags);
CUresult cuGraphReleaseUserObject(CUhandle graph, CUhandle object, unsigned int count);
CUresult cuGraphGetNodes(CUhandle hGraph, CUhandle *nodes, size_t *numNodes);
CUresult cuStreamBeginCapture_v2(CUhandle hStream, int mode);
CUresult cuStreamEndCapture(CUhandle hStream, CUhandle *phGraph);
CUresult cuStreamGetCaptureInfo_v3(CUhandle hStream, int *captureStatus_out, unsigned long long *id_out,
                                   CUhandle *graph_out, const CUhandle **dependencies_out, const void **edgeData_out,
                                   size_t *numDependencies_out);
CUresult cuThreadExchangeStreamCaptureMode(int *mode);
CUresult cuStreamBeginCapture(CUhandle hStream);
CUresult cuStreamBeginCaptureToGraph(CUhandle hStream, CUhandle hGraph, const CUhandle *dependencies,
                                     const void *dependencyData, size_t numDependencies, int mode);
CUresult cuStreamGetCaptureInfo_v2(CUhandle hStream, int *captureStatus_out, unsigned long long *id_out,
                                   CUhandle *graph_out, const CUhandle **dependencies_out,
                                   size_t *numDependencies_out);
CUresult cuStreamGetCaptureInfo(CUhandle hStream, int *captureStatus, unsigned long long *id);
CUresult cuStreamUpdateCaptureDependencies_v2(CUhandle hStream, CUhandle *dependencies, const void *dependencyData,
                                              size_t numDependencies, unsigned int flags);
CUresult cuStreamUpdateCaptureDependencies(CUhandle hStream, CUhandle *dependencies, size_t numDependencies,
                                           unsigned int flags);
CUresult cuGraphAddDependencies(CUhandle hGraph, const CUhandle *from, const CUhandle *to, size_t numDependencies);
CUresult cuGraphAddDependencies_v2(CUhandle hGraph, const CUhandle *from, const CUhandle *to, const void *edgeData,
                                   size_t numDependencies);
CUresult cuGraphGetEdges(CUhandle hGraph, CUhandle *from, CUhandle *to, size_t *numEdges);
CUresult cuGraphGetEdges_v2(CUhandle hGraph, CUhandle *from, CUhandle *to, void *edgeData, size_t *numEdges);
CUresult cuGraphGetRootNodes(CUhandle hGraph, CUhandle *rootNodes, size_t *numRootNodes);
CUresult cuGraphNodeGetType(CUhandle hNode, int *type);
CUresult cuGraphNodeGetDependencies(CUhandle hNode, CUhandle *dependencies, size_t *numDependencies);
CUresult cuGraphNodeGetDependencies_v2(CUhandle hNode, CUhandle *dependencies, void *edgeData,
                                       size_t *numDependencies);
CUresult cuGraphNodeGetDependentNodes(CUhandle hNode, CUhandle *dependentNodes, size_t *numDependentNodes);
CUresult cuGraphNodeGetDependentNodes_v2(CUhandle hNode, CUhandle *dependentNodes, void *edgeData,
                                         size_t *numDependentNodes);
CUresult cuGraphDestroyNode(CUhandle hNode);
CUresult cuGraphUpload(CUhandle hGraphExec, CUhandle hStream);
