// synccheck: a shuffle whose member mask comes from a kernel parameter; the lanes past n return first, so
// a mask naming them (0xffffffff with n = 16) names lanes that never execute it.  mask = 0x0000ffff: clean
extern "C" __global__ void sync_mask_param(const int* in, int* out, unsigned mask, int n) {
    int t = threadIdx.x;
    if (t % 32 >= n) return;
    int v = in[t];
    v += __shfl_xor_sync(mask, v, 1);  // BUG: warp collective mask
    out[t] = v;
}
