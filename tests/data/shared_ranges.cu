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

// A block of 512 threads where only the threads a condition selects touch a 256-float array: the bounds
// precheck checks each access where its conditions hold (passes/conditions.py), so `limit` <= 256 runs
// the unchecked copy and 256 < `limit` faults (threads 256..limit-1 read past the array).
extern "C" __global__ void guarded(const float* a, float* out, int limit)
{
    __shared__ float s[256];
    unsigned t = threadIdx.x;
    if (t < 256) s[t] = a[blockIdx.x * 256 + t];
    __syncthreads();
    float v = 0.0f;
    if (t < limit) v = s[t] + s[255 - (t & 255)];
    __syncthreads();
    for (unsigned stride = 128; stride > 0; stride >>= 1) {  // a reduction tree: s[t + stride] when t < stride
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    out[blockIdx.x * blockDim.x + t] = v + s[0];
}
