// memcheck: a global read one element past the end of `in` (thread n-1 reads in[n])
extern "C" __global__ void oob_global(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i + 1];  // BUG: out-of-bounds
    }
}
