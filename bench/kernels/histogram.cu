// 256-bin histogram of bytes: per-block privatised histogram in shared memory (shared atomics),
// merged into the global one with global atomics.  Block size 256, grid-stride loop.
#define BINS 256
extern "C" __global__ void histogram(const unsigned char* __restrict__ data, unsigned int* __restrict__ hist, int n)
{
    __shared__ unsigned int h[BINS];
    h[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&h[data[i]], 1u);
    __syncthreads();
    if (h[threadIdx.x]) atomicAdd(&hist[threadIdx.x], h[threadIdx.x]);
}
