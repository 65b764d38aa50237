// cudaGetDeviceProperties against cudaDeviceGetAttribute: the same device, read two ways.
#define PROGRAM "device_props"
#include "check.h"

static int attr(cudaDeviceAttr a) {
    int v = -1;
    CHECK(cudaDeviceGetAttribute(&v, a, 0));
    return v;
}

int main() {
    int count = 0, dev = -1, runtime = 0, driver = 0;
    CHECK(cudaGetDeviceCount(&count));
    CHECK(cudaSetDevice(0));
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaRuntimeGetVersion(&runtime));
    CHECK(cudaDriverGetVersion(&driver));
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, 0));
    int bad = 0;
#define SAME(field, a)                                                                             \
    if (p.field != attr(a)) {                                                                      \
        std::printf("device_props: %s = %d but the attribute says %d\n", #field, (int)p.field, attr(a)); \
        bad++;                                                                                     \
    }
    SAME(major, cudaDevAttrComputeCapabilityMajor)
    SAME(minor, cudaDevAttrComputeCapabilityMinor)
    SAME(multiProcessorCount, cudaDevAttrMultiProcessorCount)
    SAME(maxThreadsPerBlock, cudaDevAttrMaxThreadsPerBlock)
    SAME(warpSize, cudaDevAttrWarpSize)
    SAME(maxThreadsDim[0], cudaDevAttrMaxBlockDimX)
    SAME(maxGridSize[1], cudaDevAttrMaxGridDimY)
    SAME(l2CacheSize, cudaDevAttrL2CacheSize)
    SAME(maxThreadsPerMultiProcessor, cudaDevAttrMaxThreadsPerMultiProcessor)
    SAME(sharedMemPerBlockOptin, cudaDevAttrMaxSharedMemoryPerBlockOptin)
    SAME(memoryBusWidth, cudaDevAttrGlobalMemoryBusWidth)
    SAME(managedMemory, cudaDevAttrManagedMemory)
    size_t free_b = 0, total_b = 0;
    CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (count != 1 || dev != 0 || runtime < 13000 || driver < 13000 || p.totalGlobalMem == 0 ||
        total_b != p.totalGlobalMem || p.name[0] == 0 || p.warpSize != 32)
        bad++;
    if (bad) { std::printf("device_props: FAIL (%d mismatches)\n", bad); return 1; }
    std::printf("device_props: ok %s, compute capability %d.%d, %d SMs, %zu MiB\n", p.name, p.major, p.minor,
                p.multiProcessorCount, p.totalGlobalMem >> 20);
    return 0;
}
