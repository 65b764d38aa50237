/* out = in^T, n x n, in 32 x 32 blocks. */
#define TILE 32
void transpose(const float *restrict in, float *restrict out, int n)
{
#pragma omp parallel for collapse(2) schedule(static)
    for (int by = 0; by < n; by += TILE)
        for (int bx = 0; bx < n; bx += TILE)
            for (int y = by; y < by + TILE && y < n; ++y)
                for (int x = bx; x < bx + TILE && x < n; ++x)
                    out[(long)x * n + y] = in[(long)y * n + x];
}
