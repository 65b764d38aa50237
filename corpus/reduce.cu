// Reductions: shared-memory tree, warp shuffle, atomics, __reduce_*_sync, dynamic shared memory.

extern "C" __global__ void reduce_tree_f32(const float* in, float* out, int n)
{
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x * 2 + tid;
    float v = 0.0f;
    if (i < n) v = in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    s[tid] = v;
    __syncthreads();
    for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
        if (tid < st)
            s[tid] += s[tid + st];
        __syncthreads();
    }
    if (tid == 0)
        atomicAdd(out, s[0]);
}

// Tree reduction in double precision, one partial sum per block (deterministic).
extern "C" __global__ void reduce_tree_f64_partials(const double* in, double* partials, int n)
{
    __shared__ double s[128];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? in[i] : 0.0;
    __syncthreads();
    for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
        if (tid < st)
            s[tid] += s[tid + st];
        __syncthreads();
    }
    if (tid == 0)
        partials[blockIdx.x] = s[0];
}

__device__ __forceinline__ float warp_sum_f32(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ double warp_sum_f64(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void reduce_shfl_f32(const float* in, float* out, int n)
{
    __shared__ float ws[32];
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        v += in[i];
    v = warp_sum_f32(v);
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) ws[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = (lane < (blockDim.x >> 5)) ? ws[lane] : 0.0f;
        v = warp_sum_f32(v);
        if (lane == 0)
            atomicAdd(out, v);
    }
}

extern "C" __global__ void reduce_shfl_f64(const double* in, double* out, int n)
{
    __shared__ double ws[32];
    double v = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        v += in[i];
    v = warp_sum_f64(v);
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0) ws[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = (lane < (blockDim.x >> 5)) ? ws[lane] : 0.0;
        v = warp_sum_f64(v);
        if (lane == 0)
            atomicAdd(out, v);
    }
}

// Dynamic shared memory (extern __shared__) sized at launch: blockDim.x floats.
extern "C" __global__ void reduce_dyn_smem_f32(const float* in, float* partials, int n)
{
    extern __shared__ float sdata[];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    sdata[tid] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
        if (tid < st)
            sdata[tid] += sdata[tid + st];
        __syncthreads();
    }
    if (tid == 0)
        partials[blockIdx.x] = sdata[0];
}

// sm_80 warp reductions: redux.sync add/min/max, combined with global atomics.
// out[0] = sum, out[1] = min, out[2] = max, out[3] = and, out[4] = or, out[5] = xor
extern "C" __global__ void reduce_warp_redux_u32(const unsigned* in, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned v = (i < n) ? in[i] : 0u;
    unsigned vmin = (i < n) ? in[i] : 0xffffffffu;
    unsigned vand = (i < n) ? in[i] : 0xffffffffu;
    unsigned s = __reduce_add_sync(0xffffffffu, v);
    unsigned mn = __reduce_min_sync(0xffffffffu, vmin);
    unsigned mx = __reduce_max_sync(0xffffffffu, v);
    unsigned a = __reduce_and_sync(0xffffffffu, vand);
    unsigned o = __reduce_or_sync(0xffffffffu, v);
    unsigned x = __reduce_xor_sync(0xffffffffu, v);
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(&out[0], s);
        atomicMin(&out[1], mn);
        atomicMax(&out[2], mx);
        atomicAnd(&out[3], a);
        atomicOr(&out[4], o);
        atomicXor(&out[5], x);
    }
}

// Signed warp reduction (redux.sync.min/max.s32).
extern "C" __global__ void reduce_warp_redux_s32(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = (i < n) ? in[i] : 0;
    int mn = __reduce_min_sync(0xffffffffu, (i < n) ? v : 0x7fffffff);
    int mx = __reduce_max_sync(0xffffffffu, (i < n) ? v : (int)0x80000000);
    int s = __reduce_add_sync(0xffffffffu, v);
    if ((threadIdx.x & 31) == 0) {
        int w = i >> 5;
        out[3 * w + 0] = s;
        out[3 * w + 1] = mn;
        out[3 * w + 2] = mx;
    }
}
