// Shared-memory accesses whose indices the thread index bounds (tests/test_ranges.py): in bounds for
// blocks of up to 256 threads, decided at translation time (passes/ranges.py); a larger block overruns.
extern "C" __global__ void pairs(const float* a, float* out)
{
    __shared__ float s[512];
    unsigned t = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + t;
    s[t] = a[i];
    s[t + 256] = -a[i];
    __syncthreads();
    unsigned lo = 2 * t - (t & 3);            // bitonic's partner index: at most 2 t
    out[i] = s[lo >> 1] + s[(t >> 3) & ~3u] + s[t ^ 1];
}
