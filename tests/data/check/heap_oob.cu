// Out of bounds: thread 3 writes one element past its 16-float block.
extern "C" __global__ void heap_oob(float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float *p = (float *)malloc(16 * sizeof(float));  // ALLOC
    int last = i == 3 ? 16 : 15;
    p[last] = 1.0f;  // BUG: out-of-bounds
    out[i] = p[0];
    free(p);
}
