// memcheck: a per-thread local array read far past its end (compute-sanitizer misses it on an H100)
extern "C" __global__ void oob_local(const int* idx, int* out) {
    int buf[16];
    int t = threadIdx.x;
    for (int k = 0; k < 16; ++k) buf[k] = t * k;
    out[t] = buf[idx[t]];  // BUG: out-of-bounds
}
