// synccheck: __syncthreads() in a branch only the first warp takes; the other threads skip it and go on
// (compute-sanitizer misses it on an H100)
extern "C" __global__ void sync_divergent(float* data) {
    int t = threadIdx.x;
    float v = data[t];
    if (t < 32) {
        __syncthreads();  // BUG: divergent barrier
        v += 1.0f;
    }
    data[t] = 2.0f * v;
}
