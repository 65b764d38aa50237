"""The CUDA runtime API's C ABI numbers and function names, generated from CUDA's runtime headers
(CUDART_VERSION 13000) by scripts/gen_cudart_abi.py: do not edit by hand."""

CUDART_VERSION = 13000

CUDA_ERROR: dict[str, int] = {
    'cudaSuccess': 0,
    'cudaErrorInvalidValue': 1,
    'cudaErrorMemoryAllocation': 2,
    'cudaErrorInitializationError': 3,
    'cudaErrorCudartUnloading': 4,
    'cudaErrorProfilerDisabled': 5,
    'cudaErrorProfilerNotInitialized': 6,
    'cudaErrorProfilerAlreadyStarted': 7,
    'cudaErrorProfilerAlreadyStopped': 8,
    'cudaErrorInvalidConfiguration': 9,
    'cudaErrorInvalidPitchValue': 12,
    'cudaErrorInvalidSymbol': 13,
    'cudaErrorInvalidHostPointer': 16,
    'cudaErrorInvalidDevicePointer': 17,
    'cudaErrorInvalidTexture': 18,
    'cudaErrorInvalidTextureBinding': 19,
    'cudaErrorInvalidChannelDescriptor': 20,
    'cudaErrorInvalidMemcpyDirection': 21,
    'cudaErrorAddressOfConstant': 22,
    'cudaErrorTextureFetchFailed': 23,
    'cudaErrorTextureNotBound': 24,
    'cudaErrorSynchronizationError': 25,
    'cudaErrorInvalidFilterSetting': 26,
    'cudaErrorInvalidNormSetting': 27,
    'cudaErrorMixedDeviceExecution': 28,
    'cudaErrorNotYetImplemented': 31,
    'cudaErrorMemoryValueTooLarge': 32,
    'cudaErrorStubLibrary': 34,
    'cudaErrorInsufficientDriver': 35,
    'cudaErrorCallRequiresNewerDriver': 36,
    'cudaErrorInvalidSurface': 37,
    'cudaErrorDuplicateVariableName': 43,
    'cudaErrorDuplicateTextureName': 44,
    'cudaErrorDuplicateSurfaceName': 45,
    'cudaErrorDevicesUnavailable': 46,
    'cudaErrorIncompatibleDriverContext': 49,
    'cudaErrorMissingConfiguration': 52,
    'cudaErrorPriorLaunchFailure': 53,
    'cudaErrorLaunchMaxDepthExceeded': 65,
    'cudaErrorLaunchFileScopedTex': 66,
    'cudaErrorLaunchFileScopedSurf': 67,
    'cudaErrorSyncDepthExceeded': 68,
    'cudaErrorLaunchPendingCountExceeded': 69,
    'cudaErrorInvalidDeviceFunction': 98,
    'cudaErrorNoDevice': 100,
    'cudaErrorInvalidDevice': 101,
    'cudaErrorDeviceNotLicensed': 102,
    'cudaErrorSoftwareValidityNotEstablished': 103,
    'cudaErrorStartupFailure': 127,
    'cudaErrorInvalidKernelImage': 200,
    'cudaErrorDeviceUninitialized': 201,
    'cudaErrorMapBufferObjectFailed': 205,
    'cudaErrorUnmapBufferObjectFailed': 206,
    'cudaErrorArrayIsMapped': 207,
    'cudaErrorAlreadyMapped': 208,
    'cudaErrorNoKernelImageForDevice': 209,
    'cudaErrorAlreadyAcquired': 210,
    'cudaErrorNotMapped': 211,
    'cudaErrorNotMappedAsArray': 212,
    'cudaErrorNotMappedAsPointer': 213,
    'cudaErrorECCUncorrectable': 214,
    'cudaErrorUnsupportedLimit': 215,
    'cudaErrorDeviceAlreadyInUse': 216,
    'cudaErrorPeerAccessUnsupported': 217,
    'cudaErrorInvalidPtx': 218,
    'cudaErrorInvalidGraphicsContext': 219,
    'cudaErrorNvlinkUncorrectable': 220,
    'cudaErrorJitCompilerNotFound': 221,
    'cudaErrorUnsupportedPtxVersion': 222,
    'cudaErrorJitCompilationDisabled': 223,
    'cudaErrorUnsupportedExecAffinity': 224,
    'cudaErrorUnsupportedDevSideSync': 225,
    'cudaErrorContained': 226,
    'cudaErrorInvalidSource': 300,
    'cudaErrorFileNotFound': 301,
    'cudaErrorSharedObjectSymbolNotFound': 302,
    'cudaErrorSharedObjectInitFailed': 303,
    'cudaErrorOperatingSystem': 304,
    'cudaErrorInvalidResourceHandle': 400,
    'cudaErrorIllegalState': 401,
    'cudaErrorLossyQuery': 402,
    'cudaErrorSymbolNotFound': 500,
    'cudaErrorNotReady': 600,
    'cudaErrorIllegalAddress': 700,
    'cudaErrorLaunchOutOfResources': 701,
    'cudaErrorLaunchTimeout': 702,
    'cudaErrorLaunchIncompatibleTexturing': 703,
    'cudaErrorPeerAccessAlreadyEnabled': 704,
    'cudaErrorPeerAccessNotEnabled': 705,
    'cudaErrorSetOnActiveProcess': 708,
    'cudaErrorContextIsDestroyed': 709,
    'cudaErrorAssert': 710,
    'cudaErrorTooManyPeers': 711,
    'cudaErrorHostMemoryAlreadyRegistered': 712,
    'cudaErrorHostMemoryNotRegistered': 713,
    'cudaErrorHardwareStackError': 714,
    'cudaErrorIllegalInstruction': 715,
    'cudaErrorMisalignedAddress': 716,
    'cudaErrorInvalidAddressSpace': 717,
    'cudaErrorInvalidPc': 718,
    'cudaErrorLaunchFailure': 719,
    'cudaErrorCooperativeLaunchTooLarge': 720,
    'cudaErrorTensorMemoryLeak': 721,
    'cudaErrorNotPermitted': 800,
    'cudaErrorNotSupported': 801,
    'cudaErrorSystemNotReady': 802,
    'cudaErrorSystemDriverMismatch': 803,
    'cudaErrorCompatNotSupportedOnDevice': 804,
    'cudaErrorMpsConnectionFailed': 805,
    'cudaErrorMpsRpcFailure': 806,
    'cudaErrorMpsServerNotReady': 807,
    'cudaErrorMpsMaxClientsReached': 808,
    'cudaErrorMpsMaxConnectionsReached': 809,
    'cudaErrorMpsClientTerminated': 810,
    'cudaErrorCdpNotSupported': 811,
    'cudaErrorCdpVersionMismatch': 812,
    'cudaErrorStreamCaptureUnsupported': 900,
    'cudaErrorStreamCaptureInvalidated': 901,
    'cudaErrorStreamCaptureMerge': 902,
    'cudaErrorStreamCaptureUnmatched': 903,
    'cudaErrorStreamCaptureUnjoined': 904,
    'cudaErrorStreamCaptureIsolation': 905,
    'cudaErrorStreamCaptureImplicit': 906,
    'cudaErrorCapturedEvent': 907,
    'cudaErrorStreamCaptureWrongThread': 908,
    'cudaErrorTimeout': 909,
    'cudaErrorGraphExecUpdateFailure': 910,
    'cudaErrorExternalDevice': 911,
    'cudaErrorInvalidClusterSize': 912,
    'cudaErrorFunctionNotLoaded': 913,
    'cudaErrorInvalidResourceType': 914,
    'cudaErrorInvalidResourceConfiguration': 915,
    'cudaErrorUnknown': 999,
    'cudaErrorApiFailureBase': 10000,
}

# every function cuda_runtime_api.h declares
RUNTIME_FUNCTIONS: list[str] = [
    'cudaArrayGetInfo',
    'cudaArrayGetMemoryRequirements',
    'cudaArrayGetPlane',
    'cudaArrayGetSparseProperties',
    'cudaChooseDevice',
    'cudaCreateChannelDesc',
    'cudaCreateSurfaceObject',
    'cudaCreateTextureObject',
    'cudaCtxResetPersistingL2Cache',
    'cudaDestroyExternalMemory',
    'cudaDestroyExternalSemaphore',
    'cudaDestroySurfaceObject',
    'cudaDestroyTextureObject',
    'cudaDeviceCanAccessPeer',
    'cudaDeviceDisablePeerAccess',
    'cudaDeviceEnablePeerAccess',
    'cudaDeviceFlushGPUDirectRDMAWrites',
    'cudaDeviceGetAttribute',
    'cudaDeviceGetByPCIBusId',
    'cudaDeviceGetCacheConfig',
    'cudaDeviceGetDefaultMemPool',
    'cudaDeviceGetGraphMemAttribute',
    'cudaDeviceGetHostAtomicCapabilities',
    'cudaDeviceGetLimit',
    'cudaDeviceGetMemPool',
    'cudaDeviceGetNvSciSyncAttributes',
    'cudaDeviceGetP2PAtomicCapabilities',
    'cudaDeviceGetP2PAttribute',
    'cudaDeviceGetPCIBusId',
    'cudaDeviceGetSharedMemConfig',
    'cudaDeviceGetStreamPriorityRange',
    'cudaDeviceGetTexture1DLinearMaxWidth',
    'cudaDeviceGraphMemTrim',
    'cudaDeviceRegisterAsyncNotification',
    'cudaDeviceReset',
    'cudaDeviceSetCacheConfig',
    'cudaDeviceSetGraphMemAttribute',
    'cudaDeviceSetLimit',
    'cudaDeviceSetMemPool',
    'cudaDeviceSetSharedMemConfig',
    'cudaDeviceSynchronize',
    'cudaDeviceUnregisterAsyncNotification',
    'cudaDriverGetVersion',
    'cudaEventCreate',
    'cudaEventCreateWithFlags',
    'cudaEventDestroy',
    'cudaEventElapsedTime',
    'cudaEventQuery',
    'cudaEventRecord',
    'cudaEventRecordWithFlags',
    'cudaEventSynchronize',
    'cudaExternalMemoryGetMappedBuffer',
    'cudaExternalMemoryGetMappedMipmappedArray',
    'cudaFree',
    'cudaFreeArray',
    'cudaFreeAsync',
    'cudaFreeHost',
    'cudaFreeMipmappedArray',
    'cudaFuncGetAttributes',
    'cudaFuncGetName',
    'cudaFuncGetParamInfo',
    'cudaFuncSetAttribute',
    'cudaFuncSetCacheConfig',
    'cudaFuncSetSharedMemConfig',
    'cudaGetChannelDesc',
    'cudaGetDevice',
    'cudaGetDeviceCount',
    'cudaGetDeviceFlags',
    'cudaGetDeviceProperties',
    'cudaGetDriverEntryPoint',
    'cudaGetDriverEntryPointByVersion',
    'cudaGetErrorName',
    'cudaGetErrorString',
    'cudaGetExportTable',
    'cudaGetFuncBySymbol',
    'cudaGetKernel',
    'cudaGetLastError',
    'cudaGetMipmappedArrayLevel',
    'cudaGetSurfaceObjectResourceDesc',
    'cudaGetSymbolAddress',
    'cudaGetSymbolSize',
    'cudaGetTextureObjectResourceDesc',
    'cudaGetTextureObjectResourceViewDesc',
    'cudaGetTextureObjectTextureDesc',
    'cudaGraphAddChildGraphNode',
    'cudaGraphAddDependencies',
    'cudaGraphAddEmptyNode',
    'cudaGraphAddEventRecordNode',
    'cudaGraphAddEventWaitNode',
    'cudaGraphAddExternalSemaphoresSignalNode',
    'cudaGraphAddExternalSemaphoresWaitNode',
    'cudaGraphAddHostNode',
    'cudaGraphAddKernelNode',
    'cudaGraphAddMemAllocNode',
    'cudaGraphAddMemFreeNode',
    'cudaGraphAddMemcpyNode',
    'cudaGraphAddMemcpyNode1D',
    'cudaGraphAddMemcpyNodeFromSymbol',
    'cudaGraphAddMemcpyNodeToSymbol',
    'cudaGraphAddMemsetNode',
    'cudaGraphAddNode',
    'cudaGraphChildGraphNodeGetGraph',
    'cudaGraphClone',
    'cudaGraphConditionalHandleCreate',
    'cudaGraphCreate',
    'cudaGraphDebugDotPrint',
    'cudaGraphDestroy',
    'cudaGraphDestroyNode',
    'cudaGraphEventRecordNodeGetEvent',
    'cudaGraphEventRecordNodeSetEvent',
    'cudaGraphEventWaitNodeGetEvent',
    'cudaGraphEventWaitNodeSetEvent',
    'cudaGraphExecChildGraphNodeSetParams',
    'cudaGraphExecDestroy',
    'cudaGraphExecEventRecordNodeSetEvent',
    'cudaGraphExecEventWaitNodeSetEvent',
    'cudaGraphExecExternalSemaphoresSignalNodeSetParams',
    'cudaGraphExecExternalSemaphoresWaitNodeSetParams',
    'cudaGraphExecGetFlags',
    'cudaGraphExecHostNodeSetParams',
    'cudaGraphExecKernelNodeSetParams',
    'cudaGraphExecMemcpyNodeSetParams',
    'cudaGraphExecMemcpyNodeSetParams1D',
    'cudaGraphExecMemcpyNodeSetParamsFromSymbol',
    'cudaGraphExecMemcpyNodeSetParamsToSymbol',
    'cudaGraphExecMemsetNodeSetParams',
    'cudaGraphExecNodeSetParams',
    'cudaGraphExecUpdate',
    'cudaGraphExternalSemaphoresSignalNodeGetParams',
    'cudaGraphExternalSemaphoresSignalNodeSetParams',
    'cudaGraphExternalSemaphoresWaitNodeGetParams',
    'cudaGraphExternalSemaphoresWaitNodeSetParams',
    'cudaGraphGetEdges',
    'cudaGraphGetNodes',
    'cudaGraphGetRootNodes',
    'cudaGraphHostNodeGetParams',
    'cudaGraphHostNodeSetParams',
    'cudaGraphInstantiate',
    'cudaGraphInstantiateWithFlags',
    'cudaGraphInstantiateWithParams',
    'cudaGraphKernelNodeCopyAttributes',
    'cudaGraphKernelNodeGetAttribute',
    'cudaGraphKernelNodeGetParams',
    'cudaGraphKernelNodeSetAttribute',
    'cudaGraphKernelNodeSetParams',
    'cudaGraphLaunch',
    'cudaGraphMemAllocNodeGetParams',
    'cudaGraphMemFreeNodeGetParams',
    'cudaGraphMemcpyNodeGetParams',
    'cudaGraphMemcpyNodeSetParams',
    'cudaGraphMemcpyNodeSetParams1D',
    'cudaGraphMemcpyNodeSetParamsFromSymbol',
    'cudaGraphMemcpyNodeSetParamsToSymbol',
    'cudaGraphMemsetNodeGetParams',
    'cudaGraphMemsetNodeSetParams',
    'cudaGraphNodeFindInClone',
    'cudaGraphNodeGetDependencies',
    'cudaGraphNodeGetDependentNodes',
    'cudaGraphNodeGetEnabled',
    'cudaGraphNodeGetType',
    'cudaGraphNodeSetEnabled',
    'cudaGraphNodeSetParams',
    'cudaGraphReleaseUserObject',
    'cudaGraphRemoveDependencies',
    'cudaGraphRetainUserObject',
    'cudaGraphUpload',
    'cudaGraphicsMapResources',
    'cudaGraphicsResourceGetMappedMipmappedArray',
    'cudaGraphicsResourceGetMappedPointer',
    'cudaGraphicsResourceSetMapFlags',
    'cudaGraphicsSubResourceGetMappedArray',
    'cudaGraphicsUnmapResources',
    'cudaGraphicsUnregisterResource',
    'cudaHostAlloc',
    'cudaHostGetDevicePointer',
    'cudaHostGetFlags',
    'cudaHostRegister',
    'cudaHostUnregister',
    'cudaImportExternalMemory',
    'cudaImportExternalSemaphore',
    'cudaInitDevice',
    'cudaIpcCloseMemHandle',
    'cudaIpcGetEventHandle',
    'cudaIpcGetMemHandle',
    'cudaIpcOpenEventHandle',
    'cudaIpcOpenMemHandle',
    'cudaKernelSetAttributeForDevice',
    'cudaLaunchCooperativeKernel',
    'cudaLaunchHostFunc',
    'cudaLaunchKernel',
    'cudaLaunchKernelExC',
    'cudaLibraryEnumerateKernels',
    'cudaLibraryGetGlobal',
    'cudaLibraryGetKernel',
    'cudaLibraryGetKernelCount',
    'cudaLibraryGetManaged',
    'cudaLibraryGetUnifiedFunction',
    'cudaLibraryLoadData',
    'cudaLibraryLoadFromFile',
    'cudaLibraryUnload',
    'cudaLogsCurrent',
    'cudaLogsDumpToFile',
    'cudaLogsDumpToMemory',
    'cudaLogsRegisterCallback',
    'cudaLogsUnregisterCallback',
    'cudaMalloc',
    'cudaMalloc3D',
    'cudaMalloc3DArray',
    'cudaMallocArray',
    'cudaMallocAsync',
    'cudaMallocFromPoolAsync',
    'cudaMallocHost',
    'cudaMallocManaged',
    'cudaMallocMipmappedArray',
    'cudaMallocPitch',
    'cudaMemAdvise',
    'cudaMemDiscardAndPrefetchBatchAsync',
    'cudaMemDiscardBatchAsync',
    'cudaMemGetDefaultMemPool',
    'cudaMemGetInfo',
    'cudaMemGetMemPool',
    'cudaMemPoolCreate',
    'cudaMemPoolDestroy',
    'cudaMemPoolExportPointer',
    'cudaMemPoolExportToShareableHandle',
    'cudaMemPoolGetAccess',
    'cudaMemPoolGetAttribute',
    'cudaMemPoolImportFromShareableHandle',
    'cudaMemPoolImportPointer',
    'cudaMemPoolSetAccess',
    'cudaMemPoolSetAttribute',
    'cudaMemPoolTrimTo',
    'cudaMemPrefetchAsync',
    'cudaMemPrefetchBatchAsync',
    'cudaMemRangeGetAttribute',
    'cudaMemRangeGetAttributes',
    'cudaMemSetMemPool',
    'cudaMemcpy',
    'cudaMemcpy2D',
    'cudaMemcpy2DArrayToArray',
    'cudaMemcpy2DAsync',
    'cudaMemcpy2DFromArray',
    'cudaMemcpy2DFromArrayAsync',
    'cudaMemcpy2DToArray',
    'cudaMemcpy2DToArrayAsync',
    'cudaMemcpy3D',
    'cudaMemcpy3DAsync',
    'cudaMemcpy3DBatchAsync',
    'cudaMemcpy3DPeer',
    'cudaMemcpy3DPeerAsync',
    'cudaMemcpyArrayToArray',
    'cudaMemcpyAsync',
    'cudaMemcpyBatchAsync',
    'cudaMemcpyFromArray',
    'cudaMemcpyFromArrayAsync',
    'cudaMemcpyFromSymbol',
    'cudaMemcpyFromSymbolAsync',
    'cudaMemcpyPeer',
    'cudaMemcpyPeerAsync',
    'cudaMemcpyToArray',
    'cudaMemcpyToArrayAsync',
    'cudaMemcpyToSymbol',
    'cudaMemcpyToSymbolAsync',
    'cudaMemset',
    'cudaMemset2D',
    'cudaMemset2DAsync',
    'cudaMemset3D',
    'cudaMemset3DAsync',
    'cudaMemsetAsync',
    'cudaMipmappedArrayGetMemoryRequirements',
    'cudaMipmappedArrayGetSparseProperties',
    'cudaOccupancyAvailableDynamicSMemPerBlock',
    'cudaOccupancyMaxActiveBlocksPerMultiprocessor',
    'cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags',
    'cudaOccupancyMaxActiveClusters',
    'cudaOccupancyMaxPotentialClusterSize',
    'cudaPeekAtLastError',
    'cudaPointerGetAttributes',
    'cudaRuntimeGetVersion',
    'cudaSetDevice',
    'cudaSetDeviceFlags',
    'cudaSetValidDevices',
    'cudaSignalExternalSemaphoresAsync',
    'cudaStreamAddCallback',
    'cudaStreamAttachMemAsync',
    'cudaStreamBeginCapture',
    'cudaStreamBeginCaptureToGraph',
    'cudaStreamCopyAttributes',
    'cudaStreamCreate',
    'cudaStreamCreateWithFlags',
    'cudaStreamCreateWithPriority',
    'cudaStreamDestroy',
    'cudaStreamEndCapture',
    'cudaStreamGetAttribute',
    'cudaStreamGetCaptureInfo',
    'cudaStreamGetDevice',
    'cudaStreamGetFlags',
    'cudaStreamGetId',
    'cudaStreamGetPriority',
    'cudaStreamIsCapturing',
    'cudaStreamQuery',
    'cudaStreamSetAttribute',
    'cudaStreamSynchronize',
    'cudaStreamUpdateCaptureDependencies',
    'cudaStreamWaitEvent',
    'cudaThreadExchangeStreamCaptureMode',
    'cudaUserObjectCreate',
    'cudaUserObjectRelease',
    'cudaUserObjectRetain',
    'cudaWaitExternalSemaphoresAsync',
]

# the per-thread default stream variant of each function that has one (nvcc --default-stream per-thread)
PER_THREAD: dict[str, str] = {
    'cudaEventRecord': 'cudaEventRecord_ptsz',
    'cudaEventRecordWithFlags': 'cudaEventRecordWithFlags_ptsz',
    'cudaFreeAsync': 'cudaFreeAsync_ptsz',
    'cudaGetDriverEntryPoint': 'cudaGetDriverEntryPoint_ptsz',
    'cudaGetDriverEntryPointByVersion': 'cudaGetDriverEntryPointByVersion_ptsz',
    'cudaGraphInstantiateWithParams': 'cudaGraphInstantiateWithParams_ptsz',
    'cudaGraphLaunch': 'cudaGraphLaunch_ptsz',
    'cudaGraphUpload': 'cudaGraphUpload_ptsz',
    'cudaLaunchCooperativeKernel': 'cudaLaunchCooperativeKernel_ptsz',
    'cudaLaunchHostFunc': 'cudaLaunchHostFunc_ptsz',
    'cudaLaunchKernel': 'cudaLaunchKernel_ptsz',
    'cudaLaunchKernelExC': 'cudaLaunchKernelExC_ptsz',
    'cudaMallocAsync': 'cudaMallocAsync_ptsz',
    'cudaMallocFromPoolAsync': 'cudaMallocFromPoolAsync_ptsz',
    'cudaMemDiscardAndPrefetchBatchAsync': 'cudaMemDiscardAndPrefetchBatchAsync_ptsz',
    'cudaMemDiscardBatchAsync': 'cudaMemDiscardBatchAsync_ptsz',
    'cudaMemPrefetchAsync': 'cudaMemPrefetchAsync_ptsz',
    'cudaMemPrefetchBatchAsync': 'cudaMemPrefetchBatchAsync_ptsz',
    'cudaMemcpy': 'cudaMemcpy_ptds',
    'cudaMemcpy2D': 'cudaMemcpy2D_ptds',
    'cudaMemcpy2DArrayToArray': 'cudaMemcpy2DArrayToArray_ptds',
    'cudaMemcpy2DAsync': 'cudaMemcpy2DAsync_ptsz',
    'cudaMemcpy2DFromArray': 'cudaMemcpy2DFromArray_ptds',
    'cudaMemcpy2DFromArrayAsync': 'cudaMemcpy2DFromArrayAsync_ptsz',
    'cudaMemcpy2DToArray': 'cudaMemcpy2DToArray_ptds',
    'cudaMemcpy2DToArrayAsync': 'cudaMemcpy2DToArrayAsync_ptsz',
    'cudaMemcpy3D': 'cudaMemcpy3D_ptds',
    'cudaMemcpy3DAsync': 'cudaMemcpy3DAsync_ptsz',
    'cudaMemcpy3DBatchAsync': 'cudaMemcpy3DBatchAsync_ptsz',
    'cudaMemcpy3DPeer': 'cudaMemcpy3DPeer_ptds',
    'cudaMemcpy3DPeerAsync': 'cudaMemcpy3DPeerAsync_ptsz',
    'cudaMemcpyArrayToArray': 'cudaMemcpyArrayToArray_ptds',
    'cudaMemcpyAsync': 'cudaMemcpyAsync_ptsz',
    'cudaMemcpyBatchAsync': 'cudaMemcpyBatchAsync_ptsz',
    'cudaMemcpyFromArray': 'cudaMemcpyFromArray_ptds',
    'cudaMemcpyFromArrayAsync': 'cudaMemcpyFromArrayAsync_ptsz',
    'cudaMemcpyFromSymbol': 'cudaMemcpyFromSymbol_ptds',
    'cudaMemcpyFromSymbolAsync': 'cudaMemcpyFromSymbolAsync_ptsz',
    'cudaMemcpyToArray': 'cudaMemcpyToArray_ptds',
    'cudaMemcpyToArrayAsync': 'cudaMemcpyToArrayAsync_ptsz',
    'cudaMemcpyToSymbol': 'cudaMemcpyToSymbol_ptds',
    'cudaMemcpyToSymbolAsync': 'cudaMemcpyToSymbolAsync_ptsz',
    'cudaMemset': 'cudaMemset_ptds',
    'cudaMemset2D': 'cudaMemset2D_ptds',
    'cudaMemset2DAsync': 'cudaMemset2DAsync_ptsz',
    'cudaMemset3D': 'cudaMemset3D_ptds',
    'cudaMemset3DAsync': 'cudaMemset3DAsync_ptsz',
    'cudaMemsetAsync': 'cudaMemsetAsync_ptsz',
    'cudaSignalExternalSemaphoresAsync': 'cudaSignalExternalSemaphoresAsync_ptsz',
    'cudaStreamAddCallback': 'cudaStreamAddCallback_ptsz',
    'cudaStreamAttachMemAsync': 'cudaStreamAttachMemAsync_ptsz',
    'cudaStreamBeginCapture': 'cudaStreamBeginCapture_ptsz',
    'cudaStreamBeginCaptureToGraph': 'cudaStreamBeginCaptureToGraph_ptsz',
    'cudaStreamCopyAttributes': 'cudaStreamCopyAttributes_ptsz',
    'cudaStreamEndCapture': 'cudaStreamEndCapture_ptsz',
    'cudaStreamGetAttribute': 'cudaStreamGetAttribute_ptsz',
    'cudaStreamGetCaptureInfo': 'cudaStreamGetCaptureInfo_ptsz',
    'cudaStreamGetDevice': 'cudaStreamGetDevice_ptsz',
    'cudaStreamGetFlags': 'cudaStreamGetFlags_ptsz',
    'cudaStreamGetId': 'cudaStreamGetId_ptsz',
    'cudaStreamGetPriority': 'cudaStreamGetPriority_ptsz',
    'cudaStreamIsCapturing': 'cudaStreamIsCapturing_ptsz',
    'cudaStreamQuery': 'cudaStreamQuery_ptsz',
    'cudaStreamSetAttribute': 'cudaStreamSetAttribute_ptsz',
    'cudaStreamSynchronize': 'cudaStreamSynchronize_ptsz',
    'cudaStreamUpdateCaptureDependencies': 'cudaStreamUpdateCaptureDependencies_ptsz',
    'cudaStreamWaitEvent': 'cudaStreamWaitEvent_ptsz',
    'cudaWaitExternalSemaphoresAsync': 'cudaWaitExternalSemaphoresAsync_ptsz',
}

# the fields of struct cudaDeviceProp, in order, as C declarations
DEVICE_PROP_FIELDS = """\
    char name[256];
    ptxjit_cuda_uuid uuid;
    char luid[8];
    unsigned int luidDeviceNodeMask;
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    size_t memPitch;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    size_t totalConstMem;
    int major;
    int minor;
    size_t textureAlignment;
    size_t texturePitchAlignment;
    int multiProcessorCount;
    int integrated;
    int canMapHostMemory;
    int maxTexture1D;
    int maxTexture1DMipmap;
    int maxTexture2D[2];
    int maxTexture2DMipmap[2];
    int maxTexture2DLinear[3];
    int maxTexture2DGather[2];
    int maxTexture3D[3];
    int maxTexture3DAlt[3];
    int maxTextureCubemap;
    int maxTexture1DLayered[2];
    int maxTexture2DLayered[3];
    int maxTextureCubemapLayered[2];
    int maxSurface1D;
    int maxSurface2D[2];
    int maxSurface3D[3];
    int maxSurface1DLayered[2];
    int maxSurface2DLayered[3];
    int maxSurfaceCubemap;
    int maxSurfaceCubemapLayered[2];
    size_t surfaceAlignment;
    int concurrentKernels;
    int ECCEnabled;
    int pciBusID;
    int pciDeviceID;
    int pciDomainID;
    int tccDriver;
    int asyncEngineCount;
    int unifiedAddressing;
    int memoryBusWidth;
    int l2CacheSize;
    int persistingL2CacheMaxSize;
    int maxThreadsPerMultiProcessor;
    int streamPrioritiesSupported;
    int globalL1CacheSupported;
    int localL1CacheSupported;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor;
    int managedMemory;
    int isMultiGpuBoard;
    int multiGpuBoardGroupID;
    int hostNativeAtomicSupported;
    int pageableMemoryAccess;
    int concurrentManagedAccess;
    int computePreemptionSupported;
    int canUseHostPointerForRegisteredMem;
    int cooperativeLaunch;
    size_t sharedMemPerBlockOptin;
    int pageableMemoryAccessUsesHostPageTables;
    int directManagedMemAccessFromHost;
    int maxBlocksPerMultiProcessor;
    int accessPolicyMaxWindowSize;
    size_t reservedSharedMemPerBlock;
    int hostRegisterSupported;
    int sparseCudaArraySupported;
    int hostRegisterReadOnlySupported;
    int timelineSemaphoreInteropSupported;
    int memoryPoolsSupported;
    int gpuDirectRDMASupported;
    unsigned int gpuDirectRDMAFlushWritesOptions;
    int gpuDirectRDMAWritesOrdering;
    unsigned int memoryPoolSupportedHandleTypes;
    int deferredMappingCudaArraySupported;
    int ipcEventSupported;
    int clusterLaunch;
    int unifiedFunctionPointers;
    int deviceNumaConfig;
    int deviceNumaId;
    int mpsEnabled;
    int hostNumaId;
    unsigned int gpuPciDeviceID;
    unsigned int gpuPciSubsystemID;
    int hostNumaMultinodeIpcSupported;
    int reserved[56];
"""

# the fields of struct cudaFuncAttributes
FUNC_ATTRIBUTES_FIELDS = """\
    size_t sharedSizeBytes;
    size_t constSizeBytes;
    size_t localSizeBytes;
    int maxThreadsPerBlock;
    int numRegs;
    int ptxVersion;
    int binaryVersion;
    int cacheModeCA;
    int maxDynamicSharedSizeBytes;
    int preferredShmemCarveout;
    int clusterDimMustBeSet;
    int requiredClusterWidth;
    int requiredClusterHeight;
    int requiredClusterDepth;
    int clusterSchedulingPolicyPreference;
    int nonPortableClusterSizeAllowed;
    int reserved[16];
"""

# the fields of struct cudaPointerAttributes (its enum as the int it is)
POINTER_ATTRIBUTES_FIELDS = """\
    int type;
    int device;
    void *devicePointer;
    void *hostPointer;
    long reserved[8];
"""
