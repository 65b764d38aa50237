// Device malloc/free, correct: each thread allocates a scratch array, fills it, sums it, frees it.
extern "C" __global__ void heap_ok(const float *in, float *out, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float *tmp = (float *)malloc(k * sizeof(float));
    if (tmp == nullptr) { out[i] = -1.0f; return; }
    for (int j = 0; j < k; j++) tmp[j] = in[i] * (j + 1);
    float s = 0.0f;
    for (int j = 0; j < k; j++) s += tmp[j];
    out[i] = s;
    free(tmp);
}
