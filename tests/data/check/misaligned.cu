// memcheck: float loads from a byte pointer offset by 2 (every access misaligned: the GPU faults)
extern "C" __global__ void misaligned(const char* in, float* out) {
    int t = threadIdx.x;
    const float* p = (const float*)(in + 2);
    out[t] = p[t];  // BUG: misaligned
}
