/* 2x2 max pooling, stride 2, over planes (n*c) of height x width. */
#include <math.h>
void maxpool(const float *restrict x, float *restrict y, int planes, int height, int width)
{
    int oh = height / 2, ow = width / 2;
#pragma omp parallel for collapse(2) schedule(static)
    for (int p = 0; p < planes; ++p)
        for (int r = 0; r < oh; ++r) {
            const float *a = x + ((long)p * height + 2 * r) * width, *b = a + width;
            float *out = y + ((long)p * oh + r) * ow;
            for (int c = 0; c < ow; ++c)
                out[c] = fmaxf(fmaxf(a[2 * c], a[2 * c + 1]), fmaxf(b[2 * c], b[2 * c + 1]));
        }
}
