// Layout change NCHW -> NHWC (a framework's permute before a channels-last kernel): thread i writes
// element i of the output; its (n, pixel, channel) come from the flat index and the run-time sizes.
extern "C" __global__ void nchw_to_nhwc(const float* __restrict__ x, float* __restrict__ y, int total,
                                        int channels, int plane)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total) {
        int c = i % channels, p = (i / channels) % plane, n = i / (channels * plane);
        y[i] = x[((long)n * channels + c) * plane + p];
    }
}
