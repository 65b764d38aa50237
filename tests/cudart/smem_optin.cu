// More than 48 KB of dynamic shared memory: refused at the launch (cudaErrorInvalidValue, not sticky) until
// the kernel opts in with cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize); then it runs.
#define PROGRAM "smem_optin"
#include "check.h"

__global__ void touch_all(int *out, int n) {
    extern __shared__ int buf[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = i;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = buf[n - 1];
}

int main() {
    const int n = 16384;  // 64 KB
    int *d, got = 0;
    CHECK(cudaMalloc(&d, sizeof(int)));
    touch_all<<<1, 128, n * sizeof(int)>>>(d, n);
    cudaError_t e = cudaGetLastError();
    if (e != cudaErrorInvalidValue) { std::printf("smem_optin: FAIL without opt-in: %s\n", cudaGetErrorName(e)); return 1; }
    CHECK(cudaFuncSetAttribute(touch_all, cudaFuncAttributeMaxDynamicSharedMemorySize, n * sizeof(int)));
    touch_all<<<1, 128, n * sizeof(int)>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&got, d, sizeof got, cudaMemcpyDeviceToHost));
    if (got != n - 1) { std::printf("smem_optin: FAIL got %d\n", got); return 1; }
    std::printf("smem_optin: ok 65536 bytes refused (cudaErrorInvalidValue), then opted in\n");
    return 0;
}
