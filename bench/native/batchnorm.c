/* y = max(x * scale[c] + shift[c], 0) over an NCHW tensor (batch normalization at inference + ReLU). */
#include <math.h>
void batchnorm(const float *restrict x, const float *restrict scale, const float *restrict shift,
               float *restrict y, int batch, int channels, int plane)
{
#pragma omp parallel for collapse(2) schedule(static)
    for (int n = 0; n < batch; ++n)
        for (int c = 0; c < channels; ++c) {
            long base = ((long)n * channels + c) * plane;
            float s = scale[c], b = shift[c];
            for (int p = 0; p < plane; ++p) y[base + p] = fmaxf(fmaf(x[base + p], s, b), 0.0f);
        }
}
