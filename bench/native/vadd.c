void vadd(const float *restrict a, const float *restrict b, float *restrict c, int n)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
}
