// Warp reductions and scans as CUDA programmers write them (tests/test_shfl_chain.py): nvcc unrolls each loop
// into a chain of shuffles that ptxjit runs at one suspension point (passes/shflchain.py).

// float butterfly sum: nvcc shuffles the float's bits (mov.b32) and adds the float
extern "C" __global__ void warp_sum_f32(const float *x, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    out[i] = v;
}

// float max by shuffle-down: only lane 0 holds the warp's maximum
extern "C" __global__ void warp_max_down(const float *x, float *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffff, v, o));
    out[i] = v;
}

// inclusive scan of ints (Kogge-Stone with shuffle-up), then each lane's share of its warp's total
extern "C" __global__ void warp_scan_i32(const int *x, int *out, int *share) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = x[i];
    for (int o = 1; o < 32; o <<= 1) {
        int n = __shfl_up_sync(0xffffffff, v, o);
        if (lane >= o) v += n;
    }
    out[i] = v;
    share[i] = __shfl_sync(0xffffffff, v, 31) - v;
}

// a double's sum: two 32-bit shuffles per step
extern "C" __global__ void warp_sum_f64(const double *x, double *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v = x[i];
    for (int o = 1; o < 32; o <<= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    out[i] = v;
}
