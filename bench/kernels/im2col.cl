__kernel void im2col(__global const float *restrict img, __global float *restrict col, int channels,
                     int height, int width, int ksize, int pad, int stride, int out_h, int out_w)
{
    int i = get_global_id(0);
    int plane = out_h * out_w;
    if (i >= channels * plane) return;
    int ox = i % out_w, oy = (i / out_w) % out_h, c = i / plane;
    __global float *dst = col + (long)c * ksize * ksize * plane + oy * out_w + ox;
    for (int ky = 0; ky < ksize; ++ky) {
        int iy = oy * stride - pad + ky;
        for (int kx = 0; kx < ksize; ++kx) {
            int ix = ox * stride - pad + kx;
            int inside = iy >= 0 && iy < height && ix >= 0 && ix < width;
            *dst = inside ? img[((long)c * height + iy) * width + ix] : 0.0f;
            dst += plane;
        }
    }
}
