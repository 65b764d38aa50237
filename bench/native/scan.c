/* Inclusive scan of each block of 512 ints, sequentially within a block. */
#define BLOCK 512
void scan(const int *restrict in, int *restrict out, int nblocks)
{
#pragma omp parallel for schedule(static)
    for (int b = 0; b < nblocks; ++b) {
        const int *src = in + (long)b * BLOCK;
        int *dst = out + (long)b * BLOCK;
        int acc = 0;
        for (int i = 0; i < BLOCK; ++i) { acc += src[i]; dst[i] = acc; }
    }
}
