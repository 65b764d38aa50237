// synccheck: the member mask is a ballot of `v > 0`, computed at run time; the reduction inside the branch
// is then executed by the lanes with v >= lo.  lo = 0: the lanes with v == 0 execute it without being
// named.  lo = 1: the lanes executing it are exactly the ballot's (clean)
extern "C" __global__ void sync_ballot_mask(const int* in, int* out, int lo) {
    int t = threadIdx.x;
    int v = in[t];
    unsigned m = __ballot_sync(0xffffffffu, v > 0);
    if (v >= lo) {
        v = __reduce_add_sync(m, v);  // BUG: warp collective mask
    }
    out[t] = v;
}
