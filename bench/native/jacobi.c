void jacobi(const float *restrict in, float *restrict out, int n)
{
#pragma omp parallel for schedule(static)
    for (int y = 1; y < n - 1; ++y)
        for (int x = 1; x < n - 1; ++x)
            out[(long)y * n + x] = 0.25f * (in[(long)(y - 1) * n + x] + in[(long)(y + 1) * n + x]
                                            + in[(long)y * n + x - 1] + in[(long)y * n + x + 1]);
}
