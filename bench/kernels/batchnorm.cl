__kernel void batchnorm(__global const float *restrict x, __global const float *restrict scale,
                        __global const float *restrict shift, __global float *restrict y,
                        int total, int channels, int plane)
{
    int i = get_global_id(0);
    if (i < total) {
        int c = (i / plane) % channels;
        y[i] = fmax(fma(x[i], scale[c], shift[c]), 0.0f);
    }
}
