// Bitonic sort in shared memory (barrier heavy): each block of 512 threads sorts its own segment of
// 1024 unsigned keys in ascending order, src -> dst (the CUDA SDK's bitonicSortShared).
#define SEG 1024
extern "C" __global__ void bitonic(const unsigned int* __restrict__ src, unsigned int* __restrict__ dst)
{
    __shared__ unsigned int s[SEG];
    const unsigned int* in = src + blockIdx.x * SEG;
    unsigned int* out = dst + blockIdx.x * SEG;
    s[threadIdx.x] = in[threadIdx.x];
    s[threadIdx.x + SEG / 2] = in[threadIdx.x + SEG / 2];
    for (unsigned int size = 2; size <= SEG; size <<= 1) {
        for (unsigned int stride = size / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            unsigned int pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
            bool ascending = ((threadIdx.x & (size / 2)) == 0) || size == SEG;
            unsigned int a = s[pos], b = s[pos + stride];
            if ((a > b) == ascending) { s[pos] = b; s[pos + stride] = a; }
        }
    }
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
    out[threadIdx.x + SEG / 2] = s[threadIdx.x + SEG / 2];
}
