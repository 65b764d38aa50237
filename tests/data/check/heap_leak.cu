// Leak: every thread allocates 24 bytes; odd threads never free theirs.
extern "C" __global__ void heap_leak(int *out) {
    int *p = (int *)malloc(6 * sizeof(int));  // ALLOC
    p[0] = threadIdx.x;
    out[threadIdx.x] = p[0];
    if (threadIdx.x % 2 == 0) free(p);
}

// Allocations of `bytes` each: beyond the heap's size, malloc returns NULL.
extern "C" __global__ void heap_limit(unsigned long long *out, unsigned long long bytes) {
    void *p = malloc(bytes);
    out[threadIdx.x] = (unsigned long long)p;
}

// malloc beyond the heap gives NULL, and free(NULL) is a no-op (as in CUDA): no report.
extern "C" __global__ void heap_free_null(int *got, unsigned long long bytes) {
    void *p = malloc(bytes);
    got[threadIdx.x] = p != nullptr;
    free(p);
}
