// Barriers and warp shuffles inside non-inlined device functions (ptxjit inlines them at the PTX level).
__device__ __noinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

__device__ __noinline__ void block_stage(float* s, int t, float v) {
    s[t] = v;
    __syncthreads();
}

extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    block_stage(s, t, i < n ? x[i] : 0.0f);
    float v = s[t] + s[(t + 1) % blockDim.x];
    v = warp_sum(v);
    if ((t & 31) == 0) atomicAdd(out, v);
}
