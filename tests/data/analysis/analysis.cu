// Kernels with hand-computable branch divergence and barrier waits, for the profile analyses
// (src/ptxjit/instrument/analysis.py, tests/test_trace_analysis.py).  PTX: regen.sh (nvcc -ptx -arch=sm_80
// -O3).  The tests derive their expected values from this source and the PTX's basic blocks, by hand.

// Per thread a data-dependent trip count n = in[t]: the loop's branches diverge where the lanes of a warp
// have different n; the store is conditional on t % m (every lane for m = 1, divergent for m > 1).
extern "C" __global__ void trip_counts(const int* in, int* out, int m) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int n = in[t];
    int s = 0;
#pragma unroll 1
    for (int i = 0; i < n; ++i)
        s += i ^ t;
    if (t % m == 0)
        out[t] = s;
}

// Warp w of the CTA runs its loop iters[w] times before the first barrier and iters[w + nwarps] times
// between the first and the second: every other warp waits for the slowest at each barrier.
extern "C" __global__ void slow_warps(const int* iters, int* out) {
    __shared__ int s[1024];
    int t = threadIdx.x;
    int w = t / 32;
    int nw = blockDim.x / 32;
    int v = t;
    int a = iters[w];
#pragma unroll 1
    for (int i = 0; i < a; ++i)
        v = v * 3 + i;
    s[t] = v;
    __syncthreads();
    v = s[(t + 1) % blockDim.x];
    int b = iters[w + nw];
#pragma unroll 1
    for (int i = 0; i < b; ++i)
        v = v * 5 + i;
    s[t] = v;
    __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[(t + 2) % blockDim.x];
}
