// Bitonic sort of independent blocks held in shared memory: barriers inside nested loops.

// One element per thread, 256 per block, ascending; padding with +inf.
extern "C" __global__ void bitonic_sort_f32(float* data, int n)
{
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * 256 + tid;
    s[tid] = (i < n) ? data[i] : __int_as_float(0x7f800000);
    __syncthreads();
    for (unsigned k = 2; k <= blockDim.x; k <<= 1) {
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            unsigned ixj = tid ^ j;
            if (ixj > tid) {
                bool up = (tid & k) == 0;
                float a = s[tid], b = s[ixj];
                if ((a > b) == up) {
                    s[tid] = b;
                    s[ixj] = a;
                }
            }
            __syncthreads();
        }
    }
    if (i < n)
        data[i] = s[tid];
}

// Two elements per thread, block size chosen at launch (power of two), dynamic shared memory,
// descending order of signed ints; padding with INT_MIN.
extern "C" __global__ void bitonic_sort_desc_i32(int* data, int n)
{
    extern __shared__ int sk[];
    unsigned m = 2 * blockDim.x;
    int base = blockIdx.x * m;
    for (unsigned t = threadIdx.x; t < m; t += blockDim.x)
        sk[t] = (base + (int)t < n) ? data[base + t] : (int)0x80000000;
    __syncthreads();
    for (unsigned k = 2; k <= m; k <<= 1) {
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            for (unsigned t = threadIdx.x; t < m; t += blockDim.x) {
                unsigned ixj = t ^ j;
                if (ixj > t) {
                    bool down = (t & k) == 0;
                    int a = sk[t], b = sk[ixj];
                    if ((a < b) == down) {
                        sk[t] = b;
                        sk[ixj] = a;
                    }
                }
            }
            __syncthreads();
        }
    }
    for (unsigned t = threadIdx.x; t < m; t += blockDim.x)
        if (base + (int)t < n)
            data[base + t] = sk[t];
}
