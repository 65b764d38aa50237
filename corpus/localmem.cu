// Per-thread arrays indexed with data-dependent indices: they live in .local memory.

// Each thread counts the low 4 bits of its m inputs into a local array, then writes the
// counts in a rotated order (rotation chosen by the thread's first value).
extern "C" __global__ void local_counts(const unsigned* in, unsigned* out, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned cnt[16];
    for (int k = 0; k < 16; ++k)
        cnt[k] = 0;
    for (int j = 0; j < m; ++j)
        cnt[in[i * m + j] & 15u]++;
    unsigned rot = in[i * m] >> 4;
    for (int k = 0; k < 16; ++k)
        out[i * 16 + k] = cnt[(k + rot) & 15u];
}

// Per-thread local buffer read back through a permutation: out[i*L + k] = buf[(k*7 + i) % L].
#define L 24
extern "C" __global__ void local_permute(const float* in, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float buf[L];
    for (int k = 0; k < L; ++k)
        buf[k] = in[i * L + k] * 2.0f;
    for (int k = 0; k < L; ++k)
        out[i * L + k] = buf[(k * 7 + i) % L];
}
