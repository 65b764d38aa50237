// Double free (thread 0), and free of an interior pointer (thread 1).
extern "C" __global__ void heap_double_free(float *out) {
    float *p = (float *)malloc(8 * sizeof(float));
    p[0] = 2.0f;
    out[threadIdx.x] = p[0];
    free(p);
    if (threadIdx.x == 0) free(p);  // BUG: double free
}

extern "C" __global__ void heap_interior_free(float *out) {
    float *p = (float *)malloc(8 * sizeof(float));
    p[1] = 3.0f;
    out[threadIdx.x] = p[1];
    free(p + 1);  // BUG: invalid free
}

// Free of memory device malloc never returned (the kernel's argument): libc free would abort the process.
extern "C" __global__ void heap_free_arg(float *out) {
    out[threadIdx.x] = 1.0f;
    free(out);  // BUG: free of an argument
}
