// 256-bin histogram: shared-memory atomics, then one global atomicAdd per bin per block.
extern "C" __global__ void hist256(const unsigned char* data, int n, unsigned int* hist)
{
    __shared__ unsigned int sh[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        sh[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&sh[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {
        unsigned c = sh[b];
        if (c)
            atomicAdd(&hist[b], c);
    }
}
