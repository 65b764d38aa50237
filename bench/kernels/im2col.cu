// im2col for a convolution (one image, C x H x W, square kernel, zero padding): thread i makes the
// ksize*ksize column entries of output pixel (channel c, row oy, column ox).  Kernel size, padding and
// stride are run-time arguments, as in a framework's convolution layer.
extern "C" __global__ void im2col(const float* __restrict__ img, float* __restrict__ col, int channels,
                                  int height, int width, int ksize, int pad, int stride, int out_h, int out_w)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int plane = out_h * out_w;
    if (i >= channels * plane) return;
    int ox = i % out_w, oy = (i / out_w) % out_h, c = i / plane;
    float* dst = col + (long)c * ksize * ksize * plane + oy * out_w + ox;
    for (int ky = 0; ky < ksize; ++ky) {
        int iy = oy * stride - pad + ky;
        for (int kx = 0; kx < ksize; ++kx) {
            int ix = ox * stride - pad + kx;
            bool inside = iy >= 0 && iy < height && ix >= 0 && ix < width;
            *dst = inside ? img[((long)c * height + iy) * width + ix] : 0.0f;
            dst += plane;
        }
    }
}
