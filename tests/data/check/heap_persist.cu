// Device malloc in one launch, free in the next: the heap persists across launches, as CUDA's.
extern "C" __global__ void heap_alloc(float **slots, const float *in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float *p = (float *)malloc(2 * sizeof(float));
    if (p != nullptr) { p[0] = in[i]; p[1] = 2.0f * in[i]; }
    slots[i] = p;
}

extern "C" __global__ void heap_release(float **slots, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float *p = slots[i];
    out[i] = p != nullptr ? p[0] + p[1] : -1.0f;
    free(p);
}

// In a module that uses the heap, an address that is a pure function of the thread index and of either
// of two arguments (checked for the whole block at once, before the loop over its threads).
extern "C" __global__ void heap_select(float *a, float *b, int which, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float *p = which ? a : b;
    if (i < n) p[i] = 2.0f * i;  // BUG: out-of-bounds when n exceeds the array
}
