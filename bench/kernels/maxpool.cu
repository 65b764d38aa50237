// 2x2 max pooling with stride 2 over an NCHW tensor: one thread per output element, whose (n*c, row,
// column) come from its flat index and the run-time height and width.
extern "C" __global__ void maxpool(const float* __restrict__ x, float* __restrict__ y, int total, int height,
                                   int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int out_w = width / 2, out_h = height / 2;
        int col = i % out_w, row = (i / out_w) % out_h, plane = i / (out_w * out_h);
        const float* p = x + ((long)plane * height + 2 * row) * width + 2 * col;
        y[i] = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[width], p[width + 1]));
    }
}
