float dot(const float *restrict x, const float *restrict y, int n)
{
    float acc = 0.0f;
#pragma omp parallel for simd reduction(+ : acc) schedule(static)
    for (int i = 0; i < n; ++i) acc += x[i] * y[i];
    return acc;
}
