// Warp collectives reached after a grid-stride loop that lanes leave at different iterations: every lane
// of the warp reaches the collective with the full member mask (issue: redux.sync returned 0 for some
// warps; an H100 gives per-warp counts [128 x6, 128, 104] for grid 4, block 64, n = 1000).
extern "C" __global__ void redux_after_stride(const int* in, int* out, int n) {
    int k = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) k += in[i] != 0;
    int s = __reduce_add_sync(0xffffffffu, k);
    if ((threadIdx.x & 31) == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = s;
}

extern "C" __global__ void collectives_after_stride(const int* in, int* out, int n) {
    int k = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) k += in[i];
    unsigned lane = threadIdx.x & 31;
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int s = __reduce_add_sync(0xffffffffu, k);
    unsigned mx = __reduce_max_sync(0xffffffffu, (unsigned)k);
    unsigned b = __ballot_sync(0xffffffffu, k > 1);
    int up = __shfl_down_sync(0xffffffffu, k, 1);
    int x = k;
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    if (lane == 0) { out[5 * w] = s; out[5 * w + 1] = mx; out[5 * w + 2] = b; out[5 * w + 3] = x; }
    if (lane == 30) out[5 * w + 4] = up;
}
