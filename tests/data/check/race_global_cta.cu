// racecheck: within a CTA, a thread reads global memory its neighbour writes, with no barrier between
extern "C" __global__ void race_global_cta(float* buf, float* out) {
    int t = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    buf[base + t] = (float)t;  // PEER: the write
    out[base + t] = buf[base + (t + 1) % blockDim.x];  // BUG: race RAW
}
