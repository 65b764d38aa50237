/* C = A * B, n x n row-major: i-k-j loop order (the inner loop streams rows of B and C). */
void sgemm(const float *restrict A, const float *restrict B, float *restrict C, int n)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i) {
        float *c = C + (long)i * n;
        for (int j = 0; j < n; ++j) c[j] = 0.0f;
        for (int k = 0; k < n; ++k) {
            float a = A[(long)i * n + k];
            const float *b = B + (long)k * n;
            for (int j = 0; j < n; ++j) c[j] += a * b[j];
        }
    }
}
