// Counted loops whose bounds checks are hoisted to the loop's entry (lower/bounds_loops.py).

// a loop with a parameter step (not a grid stride: no lockstep rounds, a per-thread inner loop)
extern "C" __global__ void strided_sum(const float* a, float* out, int start, int n, int step) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int i = start + t; i < n; i += step)
        s += a[i];
    out[t] = s;
}

// the same with an unsigned counter, and a store inside the loop
extern "C" __global__ void strided_scale(float* a, unsigned start, unsigned n, unsigned step, float f) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    for (unsigned i = start + t; i < n; i += step)
        a[i] *= f;
}
