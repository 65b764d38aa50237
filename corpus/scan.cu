// Block-level prefix sums (scans): shared-memory and warp-shuffle variants.

// Inclusive Hillis-Steele scan with a double buffer; also writes each block's total.
extern "C" __global__ void scan_incl_smem(const int* in, int* out, int* block_sums, int n)
{
    __shared__ int buf[2][256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    int pout = 0, pin = 1;
    buf[pout][tid] = (i < n) ? in[i] : 0;
    __syncthreads();
    for (int off = 1; off < blockDim.x; off <<= 1) {
        pout = 1 - pout;
        pin = 1 - pout;
        int v = buf[pin][tid];
        if (tid >= off)
            v += buf[pin][tid - off];
        buf[pout][tid] = v;
        __syncthreads();
    }
    if (i < n)
        out[i] = buf[pout][tid];
    if (tid == blockDim.x - 1)
        block_sums[blockIdx.x] = buf[pout][tid];
}

// Exclusive work-efficient (Blelloch) scan over 2*blockDim.x elements per block.
extern "C" __global__ void scan_excl_blelloch(const int* in, int* out, int n)
{
    __shared__ int t[512];
    int tid = threadIdx.x;
    int m = 2 * blockDim.x;
    int base = blockIdx.x * m;
    t[2 * tid] = (base + 2 * tid < n) ? in[base + 2 * tid] : 0;
    t[2 * tid + 1] = (base + 2 * tid + 1 < n) ? in[base + 2 * tid + 1] : 0;
    int off = 1;
    for (int d = m >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (tid < d) {
            int ai = off * (2 * tid + 1) - 1;
            int bi = off * (2 * tid + 2) - 1;
            t[bi] += t[ai];
        }
        off <<= 1;
    }
    if (tid == 0)
        t[m - 1] = 0;
    for (int d = 1; d < m; d <<= 1) {
        off >>= 1;
        __syncthreads();
        if (tid < d) {
            int ai = off * (2 * tid + 1) - 1;
            int bi = off * (2 * tid + 2) - 1;
            int x = t[ai];
            t[ai] = t[bi];
            t[bi] += x;
        }
    }
    __syncthreads();
    if (base + 2 * tid < n) out[base + 2 * tid] = t[2 * tid];
    if (base + 2 * tid + 1 < n) out[base + 2 * tid + 1] = t[2 * tid + 1];
}

__device__ __forceinline__ int warp_incl_scan(int v)
{
    int lane = threadIdx.x & 31;
    for (int o = 1; o < 32; o <<= 1) {
        int y = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o)
            v += y;
    }
    return v;
}

__device__ __forceinline__ int block_incl_scan_shfl(int v)
{
    __shared__ int wsum[32];
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    int nw = (blockDim.x + 31) >> 5;
    v = warp_incl_scan(v);
    if (lane == 31)
        wsum[wid] = v;
    __syncthreads();
    if (wid == 0) {
        int w = (lane < nw) ? wsum[lane] : 0;
        w = warp_incl_scan(w);
        wsum[lane] = w;
    }
    __syncthreads();
    if (wid > 0)
        v += wsum[wid - 1];
    return v;
}

extern "C" __global__ void scan_incl_shfl(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = (i < n) ? in[i] : 0;
    int v = block_incl_scan_shfl(x);
    if (i < n)
        out[i] = v;
}

extern "C" __global__ void scan_excl_shfl(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = (i < n) ? in[i] : 0;
    int v = block_incl_scan_shfl(x);
    if (i < n)
        out[i] = v - x;
}

// Float inclusive scan within each warp (shfl.up on f32).
extern "C" __global__ void scan_warp_f32(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    float v = (i < n) ? in[i] : 0.0f;
    for (int o = 1; o < 32; o <<= 1) {
        float y = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o)
            v += y;
    }
    if (i < n)
        out[i] = v;
}
