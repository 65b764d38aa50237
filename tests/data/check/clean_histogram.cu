// clean: a per-CTA shared histogram built with atomics, merged into global bins with atomics
extern "C" __global__ void clean_histogram(const unsigned* in, unsigned* bins, int n) {
    __shared__ unsigned h[64];
    int t = threadIdx.x;
    if (t < 64) h[t] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x) atomicAdd(&h[in[i] & 63], 1u);
    __syncthreads();
    if (t < 64) atomicAdd(&bins[t], h[t]);
}
