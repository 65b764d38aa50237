// Use after free: the block is read after free.
extern "C" __global__ void heap_uaf(float *out) {
    float *p = (float *)malloc(8 * sizeof(float));  // ALLOC
    p[0] = 1.0f;
    free(p);
    out[threadIdx.x] = p[0];  // BUG: use after free
}
