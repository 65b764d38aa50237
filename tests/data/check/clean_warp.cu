// clean: warp-synchronous exchanges through shared memory, ordered by __syncwarp()
extern "C" __global__ void clean_warp(const int* in, int* out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    s[t] = in[t];
    __syncwarp();
    int v = s[t ^ 1];
    __syncwarp();
    s[t] = v + 1;
    __syncwarp();
    out[t] = s[(t + 1) % 32 + (t / 32) * 32];
}
