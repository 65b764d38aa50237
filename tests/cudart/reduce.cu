// The sum of 2^20 integers: a shared-memory tree per block down to one warp, warp shuffles, one atomicAdd
// per block into the result.
#define PROGRAM "reduce"
#include "check.h"
#include <vector>

__global__ void reduce_sum(const int *in, unsigned long long *out, int n) {
    __shared__ int partial[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x * 2 + tid;
    int v = 0;
    if (i < n) v += in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    partial[tid] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s >= 32; s >>= 1) {
        if (tid < s) partial[tid] += partial[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        v = partial[tid];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (tid == 0) atomicAdd(out, (unsigned long long)v);
    }
}

int main() {
    const int n = 1 << 20;
    std::vector<int> h(n);
    unsigned long long expect = 0;
    for (int i = 0; i < n; i++) { h[i] = (int)((i * 7919LL) % 1000); expect += h[i]; }
    int *din;
    unsigned long long *dout, got = 0;
    CHECK(cudaMalloc(&din, n * sizeof(int)));
    CHECK(cudaMalloc(&dout, sizeof(unsigned long long)));
    CHECK(cudaMemcpy(din, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dout, 0, sizeof(unsigned long long)));
    const int block = 256, grid = (n + 2 * block - 1) / (2 * block);
    reduce_sum<<<grid, block>>>(din, dout, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&got, dout, sizeof got, cudaMemcpyDeviceToHost));
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    if (got != expect) { std::printf("reduce: FAIL sum %llu, expected %llu\n", got, expect); return 1; }
    std::printf("reduce: ok sum %llu over %d blocks\n", got, grid);
    return 0;
}
