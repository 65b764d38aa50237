// initcheck: a local array of which only the first 16 elements are written, read at idx[t] < 32
extern "C" __global__ void init_local(const int* idx, int* out) {
    int buf[32];
    int t = threadIdx.x;
    for (int k = 0; k < 16; ++k) buf[k] = t + k;
    out[t] = buf[idx[t] & 31];  // BUG: uninitialized read
}
