// Kernels for tests/test_memory_safety.py: out-of-bounds accesses that must raise ptxjit.KernelFault
// (with checked=True) and never touch other memory.

// out[i + off] = in[i] for i < n: off > 0 writes past the end of out, off < 0 before its start
extern "C" __global__ void shifted_copy(const float *in, float *out, int n, int off) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i + off] = in[i];
}

// out[i] = in[i + off]: an out-of-bounds read when off != 0
extern "C" __global__ void shifted_read(const float *in, float *out, int n, int off) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i + off];
}

// a pointer made from integers (a wild pointer)
extern "C" __global__ void wild_store(unsigned int hi, unsigned int lo, float v) {
    *(float *)(((unsigned long long)hi << 32) | lo) = v;
}

// shared memory indexed past its declared size when k >= 64
extern "C" __global__ void shared_index(const float *in, float *out, int k) {
    __shared__ float tile[64];
    int t = threadIdx.x;
    tile[t] = in[t];
    __syncthreads();
    tile[(t + k) % 4096] = 1.0f;  // k >= 64: past the end of tile
    __syncthreads();
    out[t] = tile[t];
}

// An index affine in the thread index modulo 2^32 that wraps inside the block: threads 0 and 32 (the
// block's corners for a 33-thread block) read in bounds, threads 1..31 far past the end. A check of the
// corners alone would pass; the bounds-check precheck must see that the index is not exactly affine.
extern "C" __global__ void wrapping_index(const float *in, float *out) {
    unsigned t = threadIdx.x;
    unsigned i = t * 0x08000001u;
    out[t] = in[i];
}

// Guarded accesses at affine addresses: the last, partial block's threads past n would be out of bounds
// but do not access (the per-block precheck fails there and the fully checked copy runs, without a fault).
extern "C" __global__ void guarded_tile(const float *in, float *out, int n) {
    __shared__ float tile[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    if (i < n)
        out[i] = tile[threadIdx.x] + tile[(threadIdx.x + 1) % blockDim.x];
}
