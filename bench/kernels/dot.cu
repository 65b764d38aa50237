// Dot product: grid-stride partial sums, shared-memory tree reduction, one partial per block
// (the host adds the partials).  Block size 256.
#define BLOCK 256
extern "C" __global__ void dot(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ partial, int n)
{
    __shared__ float s[BLOCK];
    float acc = 0.0f;
    for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK)
        acc += x[i] * y[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}
