// Kernels for the lockstep-loop, affine-restore and entry-guard tests (tests/test_lockstep.py).

// Two grid-stride loops in a row, twice, then a block reduction: threads leave the second loop
// after different numbers of iterations and start the first one again while others are still in
// the second, so they reach the first loop's head at different iterations and the saved indices
// are not u + tid (the dense copy's check must fall back to the guarded copy).
extern "C" __global__ void two_loops(const float* x, const int* w, float* partial, int n, int m)
{
    __shared__ float s[256];
    float acc = 0.0f;
    int stride = gridDim.x * blockDim.x;
#pragma unroll 1
    for (int r = 1; r <= 2; ++r) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
            acc += x[i];
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < m; i += stride)
            acc += (float)(w[i] * r);
    }
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

// A per-thread loop whose trip count depends on the data (not a stride loop: no lockstep point),
// with a barrier after it and a 2-D block: the registers live across the barrier include a row
// index affine in tid.y.
extern "C" __global__ void rows(const int* counts, int* out, int width)
{
    __shared__ int tile[16][17];
    int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    int idx = y * width + x;
    int c = counts[idx], v = 0;
    for (int k = 0; k < c; ++k)
        v += k ^ idx;
    tile[threadIdx.y][threadIdx.x] = v;
    __syncthreads();
    out[idx] = tile[threadIdx.x][threadIdx.y] + idx;
}

// The common entry guard: when no thread of a CTA takes it, the body runs without it.
extern "C" __global__ void guarded_axpy(float a, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

// A guard preceded by a global load may not be evaluated ahead (that would read memory twice).
extern "C" __global__ void load_then_guard(const int* flags, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int f = flags[i];
    if (f > 0 && i < n)
        out[i] = f * 2;
}
