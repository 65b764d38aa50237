/* y[n][p][c] = x[n][c][p]: NCHW -> NHWC, p = h*W + w. */
void nchw_to_nhwc(const float *restrict x, float *restrict y, int batch, int channels, int plane)
{
#pragma omp parallel for collapse(2) schedule(static)
    for (int n = 0; n < batch; ++n)
        for (int p = 0; p < plane; ++p) {
            const float *src = x + (long)n * channels * plane + p;
            float *dst = y + ((long)n * plane + p) * channels;
            for (int c = 0; c < channels; ++c) dst[c] = src[(long)c * plane];
        }
}
