// memcheck: a shared-memory write one element past the end of the tile (thread 63 writes tile[64])
extern "C" __global__ void oob_shared(float* out) {
    __shared__ float tile[64];
    int t = threadIdx.x;
    tile[t + 1] = (float)t;  // BUG: out-of-bounds
    __syncthreads();
    out[t] = tile[t];
}
