/* 256-bin histogram: a private histogram per thread, merged at the end. */
#include <string.h>
void histogram(const unsigned char *restrict data, unsigned int *restrict hist, int n)
{
    memset(hist, 0, 256 * sizeof(unsigned int));
#pragma omp parallel
    {
        unsigned int h[256] = {0};
#pragma omp for schedule(static) nowait
        for (int i = 0; i < n; ++i) h[data[i]]++;
        for (int b = 0; b < 256; ++b) {
            if (h[b]) {
#pragma omp atomic
                hist[b] += h[b];
            }
        }
    }
}
