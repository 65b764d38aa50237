/* im2col: col[(c*k + ky)*k + kx][oy*out_w + ox] = img[c][oy*stride - pad + ky][ox*stride - pad + kx] (0 outside). */
void im2col(const float *restrict img, float *restrict col, int channels, int height, int width, int ksize,
            int pad, int stride, int out_h, int out_w)
{
#pragma omp parallel for collapse(3) schedule(static)
    for (int c = 0; c < channels; ++c)
        for (int ky = 0; ky < ksize; ++ky)
            for (int kx = 0; kx < ksize; ++kx) {
                float *dst = col + (((long)c * ksize + ky) * ksize + kx) * out_h * out_w;
                const float *src = img + (long)c * height * width;
                for (int oy = 0; oy < out_h; ++oy) {
                    int iy = oy * stride - pad + ky;
                    for (int ox = 0; ox < out_w; ++ox) {
                        int ix = ox * stride - pad + kx;
                        dst[oy * out_w + ox] = (iy >= 0 && iy < height && ix >= 0 && ix < width)
                                                   ? src[iy * width + ix] : 0.0f;
                    }
                }
            }
}
