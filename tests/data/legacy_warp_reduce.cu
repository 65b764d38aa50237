// Legacy warp-synchronous kernels (tests/test_legacy_warp_sync.py): the last warp of a block
// reduction or a warp's prefix scan steps through `volatile` shared memory with no __syncwarp(),
// relying on the lanes of a warp running each step in lockstep (pre-Volta style: SHOC, the CUDA
// samples' reduction kernels 4-6, Rodinia, old CUB).  An H100 computes what the programmer meant.

// SHOC's reduce<T, blockSize>: a shared-memory tree down to 64 elements, then the first warp alone.
template <class T, int blockSize>
__device__ void shoc_reduce(const T* g_idata, T* g_odata, unsigned int n)
{
    extern __shared__ __align__(sizeof(T)) unsigned char smem_raw[];
    T* sdata = reinterpret_cast<T*>(smem_raw);
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockSize * 2) + tid;
    unsigned int gridSize = blockSize * 2 * gridDim.x;
    sdata[tid] = 0;
    while (i < n) {
        sdata[tid] += g_idata[i];
        if (i + blockSize < n) sdata[tid] += g_idata[i + blockSize];
        i += gridSize;
    }
    __syncthreads();
    if (blockSize >= 512) { if (tid < 256) sdata[tid] += sdata[tid + 256]; __syncthreads(); }
    if (blockSize >= 256) { if (tid < 128) sdata[tid] += sdata[tid + 128]; __syncthreads(); }
    if (blockSize >= 128) { if (tid < 64) sdata[tid] += sdata[tid + 64]; __syncthreads(); }
    if (tid < 32) {
        volatile T* s = sdata;
        if (blockSize >= 64) s[tid] += s[tid + 32];
        if (blockSize >= 32) s[tid] += s[tid + 16];
        if (blockSize >= 16) s[tid] += s[tid + 8];
        if (blockSize >= 8) s[tid] += s[tid + 4];
        if (blockSize >= 4) s[tid] += s[tid + 2];
        if (blockSize >= 2) s[tid] += s[tid + 1];
    }
    if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

extern "C" __global__ void reduce_f32_64(const float* in, float* out, unsigned int n) { shoc_reduce<float, 64>(in, out, n); }
extern "C" __global__ void reduce_f32_128(const float* in, float* out, unsigned int n) { shoc_reduce<float, 128>(in, out, n); }
extern "C" __global__ void reduce_f32_256(const float* in, float* out, unsigned int n) { shoc_reduce<float, 256>(in, out, n); }
extern "C" __global__ void reduce_f32_512(const float* in, float* out, unsigned int n) { shoc_reduce<float, 512>(in, out, n); }
extern "C" __global__ void reduce_i32_64(const int* in, int* out, unsigned int n) { shoc_reduce<int, 64>(in, out, n); }
extern "C" __global__ void reduce_i32_128(const int* in, int* out, unsigned int n) { shoc_reduce<int, 128>(in, out, n); }
extern "C" __global__ void reduce_i32_256(const int* in, int* out, unsigned int n) { shoc_reduce<int, 256>(in, out, n); }
extern "C" __global__ void reduce_i32_512(const int* in, int* out, unsigned int n) { shoc_reduce<int, 512>(in, out, n); }

// The CUDA samples' reduce4-style kernel: a separate warpReduce on a volatile pointer.
template <unsigned int blockSize>
__device__ void warpReduce(volatile float* sdata, unsigned int tid)
{
    if (blockSize >= 64) sdata[tid] += sdata[tid + 32];
    if (blockSize >= 32) sdata[tid] += sdata[tid + 16];
    if (blockSize >= 16) sdata[tid] += sdata[tid + 8];
    if (blockSize >= 8) sdata[tid] += sdata[tid + 4];
    if (blockSize >= 4) sdata[tid] += sdata[tid + 2];
    if (blockSize >= 2) sdata[tid] += sdata[tid + 1];
}

template <unsigned int blockSize>
__device__ void samples_reduce(const float* g_idata, float* g_odata, unsigned int n)
{
    extern __shared__ float sdata2[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockSize * 2) + threadIdx.x;
    float v = 0.0f;
    if (i < n) v = g_idata[i];
    if (i + blockSize < n) v += g_idata[i + blockSize];
    sdata2[tid] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata2[tid] += sdata2[tid + s];
        __syncthreads();
    }
    if (tid < 32) warpReduce<blockSize>(sdata2, tid);
    if (tid == 0) g_odata[blockIdx.x] = sdata2[0];
}

extern "C" __global__ void samples_reduce_64(const float* in, float* out, unsigned int n) { samples_reduce<64>(in, out, n); }
extern "C" __global__ void samples_reduce_128(const float* in, float* out, unsigned int n) { samples_reduce<128>(in, out, n); }
extern "C" __global__ void samples_reduce_256(const float* in, float* out, unsigned int n) { samples_reduce<256>(in, out, n); }
extern "C" __global__ void samples_reduce_512(const float* in, float* out, unsigned int n) { samples_reduce<512>(in, out, n); }

// The classic warp-synchronous inclusive scan (Sengupta et al.): each warp scans its 32 elements
// in volatile shared memory, lanes below the step's distance keeping their value.
__device__ int warp_scan(volatile int* s, unsigned int i, unsigned int lane)
{
    if (lane >= 1) s[i] = s[i - 1] + s[i];
    if (lane >= 2) s[i] = s[i - 2] + s[i];
    if (lane >= 4) s[i] = s[i - 4] + s[i];
    if (lane >= 8) s[i] = s[i - 8] + s[i];
    if (lane >= 16) s[i] = s[i - 16] + s[i];
    return s[i];
}

extern "C" __global__ void warp_scan_i32(const int* in, int* out, unsigned int n)
{
    extern __shared__ int sscan[];
    unsigned int tid = threadIdx.x;
    unsigned int g = blockIdx.x * blockDim.x + tid;
    sscan[tid] = g < n ? in[g] : 0;
    __syncthreads();
    int v = warp_scan(sscan, tid, tid & 31);
    if (g < n) out[g] = v;
}

// The warp-synchronous part inside a loop: one block reduces `rows` rows of blockDim.x elements,
// a barrier-separated tree and a volatile last-warp step per row.
extern "C" __global__ void row_sums(const float* in, float* out, unsigned int rows)
{
    extern __shared__ float srow[];
    unsigned int tid = threadIdx.x;
    for (unsigned int r = blockIdx.x; r < rows; r += gridDim.x) {
        srow[tid] = in[r * blockDim.x + tid];
        __syncthreads();
        for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
            if (tid < s) srow[tid] += srow[tid + s];
            __syncthreads();
        }
        if (tid < 32) {
            volatile float* v = srow;
            v[tid] += v[tid + 32];
            v[tid] += v[tid + 16];
            v[tid] += v[tid + 8];
            v[tid] += v[tid + 4];
            v[tid] += v[tid + 2];
            v[tid] += v[tid + 1];
        }
        if (tid == 0) out[r] = srow[0];
        __syncthreads();
    }
}

// No barrier at all, in global memory: each warp sums its 32 inputs in a volatile global scratch
// array (one slot per thread), lanes below the step's distance adding their partner's value.
extern "C" __global__ void warp_sums_global(const float* in, volatile float* scratch, float* out)
{
    unsigned int g = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int lane = threadIdx.x & 31;
    scratch[g] = in[g];
    if (lane < 16) scratch[g] += scratch[g + 16];
    if (lane < 8) scratch[g] += scratch[g + 8];
    if (lane < 4) scratch[g] += scratch[g + 4];
    if (lane < 2) scratch[g] += scratch[g + 2];
    if (lane < 1) scratch[g] += scratch[g + 1];
    if (lane == 0) out[g / 32] = scratch[g];
}

// Volatile stores, then a spin-wait on a flag the block's last thread sets (valid since Volta) after
// a volatile load of its own: the waiting loop holds no lockstep point, so the thread that sets the
// flag gets to run (nvcc places the loop first).
extern "C" __global__ void flag_wait(volatile int* buf, int* out)
{
    unsigned int tid = threadIdx.x, n = blockDim.x;
    buf[1 + tid] = 3 * tid;
    if (tid + 1 < n) {
        while (buf[0] == 0) { }
    } else {
        int v = buf[1 + tid];
        __threadfence_block();
        buf[0] = v + 1;
    }
    out[tid] = buf[n] + buf[1 + tid];
}

// The last warp's steps in a function nvcc keeps as a .func (no barrier or collective inside it).
__device__ __noinline__ void warp_reduce_noinline(volatile float* s, unsigned int tid)
{
    s[tid] += s[tid + 32];
    s[tid] += s[tid + 16];
    s[tid] += s[tid + 8];
    s[tid] += s[tid + 4];
    s[tid] += s[tid + 2];
    s[tid] += s[tid + 1];
}

extern "C" __global__ void reduce_noinline(const float* in, float* out)
{
    extern __shared__ float snl[];
    unsigned int tid = threadIdx.x;
    snl[tid] = in[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) snl[tid] += snl[tid + s];
        __syncthreads();
    }
    if (tid < 32) warp_reduce_noinline(snl, tid);
    if (tid == 0) out[blockIdx.x] = snl[0];
}
