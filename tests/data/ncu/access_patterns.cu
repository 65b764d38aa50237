// Access patterns with known memory behaviour, for checking ptxjit's profile analyses (global sectors per
// warp request, shared-memory bank conflicts, branch divergence) against an H100's Nsight Compute counters
// (tests/data/ncu/h100_metrics.csv, made by run_ncu.sh on a machine with the GPU).
// One warp per launch (block 32, grid 1) unless noted, so every counter is per warp instruction.

// out[t] = in[t * stride]: a warp request touches min(32, ceil(32*stride*4/32)) 32-byte sectors.
extern "C" __global__ void strided_load(const float* in, float* out, int stride) {
    int t = threadIdx.x;
    out[t] = in[t * stride];
}

// out[t] = in[(t * 4) % 32 + off]: 8 distinct words, broadcast within 4-lane groups.
extern "C" __global__ void gather_broadcast(const float* in, float* out, int off) {
    int t = threadIdx.x;
    out[t] = in[(t * 4) % 32 + off];
}

// A 32x32 tile written by rows and read by columns: without padding every column read hits one bank
// (32-way conflict); with a row pitch of 33 words none conflicts.
extern "C" __global__ void shared_columns(const float* in, float* out, int pitch) {
    __shared__ float tile[32 * 33];
    int t = threadIdx.x;
    for (int r = 0; r < 32; ++r)
        tile[r * pitch + t] = in[r * 32 + t];
    __syncwarp();
    float s = 0.0f;
    for (int c = 0; c < 32; ++c)
        s += tile[t * pitch + c];
    out[t] = s;
}

// if (t % m == 0) a longer path: branch divergence within the warp for m > 1.
extern "C" __global__ void divergent(const int* in, int* out, int m) {
    int t = threadIdx.x;
    int v = in[t];
    if (t % m == 0) {
        for (int i = 0; i < 8; ++i)
            v = v * 3 + i;
    }
    out[t] = v;
}
