// A kernel that writes past the end of its allocation: cudaDeviceSynchronize reports
// cudaErrorIllegalAddress, the error is sticky (later calls return it too), and the program succeeds when
// it sees exactly that.
#define PROGRAM "oob_write"
#include "check.h"

__global__ void overrun(int *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i + n] = i;  // every thread writes past the end
}

int main() {
    const int n = 256;
    int *d;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    overrun<<<1, 64>>>(d, n);
    cudaError_t launch = cudaGetLastError();
    cudaError_t sync = cudaDeviceSynchronize();
    void *p = nullptr;
    cudaError_t after = cudaMalloc(&p, 64);
    cudaError_t last = cudaGetLastError();
    if (sync != cudaErrorIllegalAddress || after != cudaErrorIllegalAddress || last != cudaErrorIllegalAddress) {
        std::printf("oob_write: FAIL launch %s, synchronize %s, then cudaMalloc %s, cudaGetLastError %s\n",
                    cudaGetErrorName(launch), cudaGetErrorName(sync), cudaGetErrorName(after),
                    cudaGetErrorName(last));
        return 1;
    }
    std::printf("oob_write: ok %s (%s), sticky\n", cudaGetErrorName(sync), cudaGetErrorString(sync));
    return 0;
}
