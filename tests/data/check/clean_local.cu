// clean: a fully written local array read at a dynamic index
extern "C" __global__ void clean_local(const int* idx, int* out) {
    int buf[16];
    int t = threadIdx.x;
    for (int k = 0; k < 16; ++k) buf[k] = t * k;
    out[t] = buf[idx[t] & 15];
}
