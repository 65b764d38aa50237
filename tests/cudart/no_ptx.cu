// Built with SASS only (no PTX in the fatbin): the launch fails with cudaErrorNoKernelImageForDevice.
#define PROGRAM "no_ptx"
#include "check.h"

__global__ void touch(int *a) { a[threadIdx.x] = 1; }

int main() {
    int *d;
    CHECK(cudaMalloc(&d, 64 * sizeof(int)));
    touch<<<1, 64>>>(d);
    cudaError_t err = cudaGetLastError();
    if (err != cudaErrorNoKernelImageForDevice) {
        std::printf("no_ptx: FAIL the launch returned %s\n", cudaGetErrorName(err));
        return 1;
    }
    std::printf("no_ptx: ok %s\n", cudaGetErrorName(err));
    return 0;
}
