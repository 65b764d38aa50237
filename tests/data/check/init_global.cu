// initcheck: fill_half writes the first half of a buffer made uninitialized (ptxjit.checking.empty);
// scale then reads all of it
extern "C" __global__ void fill_half(float* buf, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) buf[i] = (float)i;
}

extern "C" __global__ void scale(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * in[i];  // BUG: uninitialized read
}
