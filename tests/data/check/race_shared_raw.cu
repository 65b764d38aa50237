// racecheck: each thread reads its neighbour's shared element without a barrier after the writes
extern "C" __global__ void race_shared_raw(const float* in, float* out) {
    __shared__ float s[128];
    int t = threadIdx.x;
    s[t] = in[t];  // PEER: the write
    out[t] = s[(t + 1) % blockDim.x];  // BUG: race RAW
}
