// The runtime and the driver API in one program (linked with -lcudart and -lcuda): the runtime's primary
// context is the driver's current context, memory from cudaMalloc is filled with cuMemsetD32, a <<<>>> launch
// reads it.
#define PROGRAM "driver_and_runtime"
#include "check.h"
#include <cuda.h>

__global__ void add_one(unsigned *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += 1;
}

int main() {
    const int n = 1024;
    unsigned *d, h[n];
    CHECK(cudaMalloc(&d, n * sizeof(unsigned)));
    CUcontext ctx = nullptr;
    if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr) {
        std::printf("driver_and_runtime: FAIL no current driver context after cudaMalloc\n");
        return 1;
    }
    if (cuMemsetD32((CUdeviceptr)d, 41u, n) != CUDA_SUCCESS) {
        std::printf("driver_and_runtime: FAIL cuMemsetD32\n");
        return 1;
    }
    add_one<<<n / 256, 256>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (h[i] != 42u) { std::printf("driver_and_runtime: FAIL h[%d] = %u\n", i, h[i]); return 1; }
    CHECK(cudaFree(d));
    std::printf("driver_and_runtime: ok one context, %d elements\n", n);
    return 0;
}
