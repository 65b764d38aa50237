// Branch uniformity and memory patterns of tier 0's counted launch (tests/test_tiers_patterns.py).
// Block (16, 8): a warp is two rows of 16 threads.  Every access sits on its own source line (the test
// finds them by line); what each one's uniformity, stride and sectors are follows from the indices.
#define BX 16
#define BY 8
extern "C" __global__ void patterns(const float* a, const float* b, const float* c, const int* flags,
                                    const int* trips, float* out, int n, int pitch)
{
    __shared__ float tile[BY][BX + 1];
    int x = blockIdx.x * BX + threadIdx.x, y = blockIdx.y * BY + threadIdx.y;
    int i = y * pitch + x;
    float v = a[i];
    float w = b[x * pitch + y];
    float u = c[blockIdx.x + 1];
    tile[threadIdx.y][threadIdx.x] = v;
    if (threadIdx.x < 8) out[n + i] = w;
    if (threadIdx.y < 2) out[2 * n + i] = u;
    if (blockIdx.x & 1) out[3 * n + i] = v + u;
    if (flags[i] > 0) out[4 * n + i] = w * 2.0f;
    float acc = 0.0f;
    int k = trips[i];
#pragma unroll 1
    for (int j = 0; j < k; ++j) acc += a[j];
    out[i] = acc + v + w + u + tile[threadIdx.y][threadIdx.x];
}
