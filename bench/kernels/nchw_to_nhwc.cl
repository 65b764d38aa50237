__kernel void nchw_to_nhwc(__global const float *restrict x, __global float *restrict y, int total, int channels,
                           int plane)
{
    int i = get_global_id(0);
    if (i < total) {
        int c = i % channels, p = (i / channels) % plane, n = i / (channels * plane);
        y[i] = x[((long)n * channels + c) * plane + p];
    }
}
