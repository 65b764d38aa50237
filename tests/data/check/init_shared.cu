// initcheck: half of the shared tile is never written, all of it is read (compute-sanitizer misses it)
extern "C" __global__ void init_shared(float* out) {
    __shared__ float s[128];
    int t = threadIdx.x;
    if (t < 64) s[t] = (float)t;
    __syncthreads();
    out[t] = s[t];  // BUG: uninitialized read
}
