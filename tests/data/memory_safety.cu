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
