// synccheck: a full-warp shuffle inside a branch only half of the warp takes (its member mask names lanes
// that never execute it)
extern "C" __global__ void sync_warp_mask(const int* in, int* out) {
    int t = threadIdx.x;
    int v = in[t];
    if (t % 32 < 16) {
        v += __shfl_down_sync(0xffffffffu, v, 1);  // BUG: warp collective mask
    }
    out[t] = v;
}
