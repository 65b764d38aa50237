__kernel void maxpool(__global const float *restrict x, __global float *restrict y, int total, int height, int width)
{
    int i = get_global_id(0);
    if (i < total) {
        int out_w = width / 2, out_h = height / 2;
        int col = i % out_w, row = (i / out_w) % out_h, plane = i / (out_w * out_h);
        __global const float *p = x + ((long)plane * height + 2 * row) * width + 2 * col;
        y[i] = fmax(fmax(p[0], p[1]), fmax(p[width], p[width + 1]));
    }
}
