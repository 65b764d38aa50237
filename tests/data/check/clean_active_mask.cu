// clean: warp collectives inside a divergent branch, with the branch's lanes as their member mask
// (__activemask(), and a ballot of the same condition), so the mask names exactly the lanes that arrive
extern "C" __global__ void clean_active_mask(const int* in, int* out) {
    int t = threadIdx.x;
    int v = in[t];
    unsigned b = __ballot_sync(0xffffffffu, v % 3 != 0);
    if (v % 3 != 0) {
        unsigned m = __activemask();
        v = __reduce_add_sync(m, v) + __reduce_max_sync(b, v);
    }
    out[t] = v;
}
