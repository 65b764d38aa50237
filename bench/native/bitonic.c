/* Sort each segment of 1024 keys in ascending order (src -> dst) with the same bitonic network as
   the GPU kernel, one segment per loop iteration. */
#include <string.h>
#define SEG 1024
void bitonic(const unsigned int *restrict src, unsigned int *restrict dst, int nseg)
{
#pragma omp parallel for schedule(static)
    for (int g = 0; g < nseg; ++g) {
        unsigned int *s = dst + (long)g * SEG;
        memcpy(s, src + (long)g * SEG, SEG * sizeof(unsigned int));
        for (unsigned int size = 2; size <= SEG; size <<= 1)
            for (unsigned int stride = size / 2; stride > 0; stride >>= 1)
                for (unsigned int t = 0; t < SEG / 2; ++t) {
                    unsigned int pos = 2 * t - (t & (stride - 1));
                    int ascending = ((t & (size / 2)) == 0) || size == SEG;
                    unsigned int a = s[pos], b = s[pos + stride];
                    if ((a > b) == ascending) { s[pos] = b; s[pos + stride] = a; }
                }
    }
}
