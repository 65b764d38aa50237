// Example kernels for the ptxjit demo (compiled by scripts/regen_examples.sh with nvcc).
#ifndef __CUDACC_RTC__  // NVRTC has printf built in and no system headers
#include <cstdio>
#endif

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// Block reduction: shared-memory tree, then a warp-shuffle tail, then one atomic per block.
extern "C" __global__ void sum_reduce(const float* x, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x;
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x) v += x[i];
    s[t] = v;
    __syncthreads();
    for (int k = blockDim.x / 2; k >= 32; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t < 32) {
        v = s[t];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (t == 0) atomicAdd(out, v);
    }
}

// Tiled matrix multiply C = A * B (n x n, n a multiple of 16).
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int n) {
    __shared__ float As[16][16], Bs[16][16];
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += 16) {
        As[threadIdx.y][threadIdx.x] = A[row * n + k0 + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = acc;
}

extern "C" __global__ void hello(int answer) {
    if (threadIdx.x == 0) printf("hello from block %d: the answer is %d\n", blockIdx.x, answer);
}
