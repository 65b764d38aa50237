// Stencils with halos staged through shared memory.
#define R 3
#define BS 128

// 1D: out[i] = sum_{o=-R..R} w[o] * in[i+o], zero outside [0, n). blockDim.x == BS.
extern "C" __global__ void stencil1d(const int* in, int* out, int n)
{
    __shared__ int s[BS + 2 * R];
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    int l = threadIdx.x + R;
    s[l] = (g < n) ? in[g] : 0;
    if (threadIdx.x < R) {
        int gl = g - R;
        s[l - R] = (gl >= 0 && gl < n) ? in[gl] : 0;
        int gr = g + blockDim.x;
        s[l + blockDim.x] = (gr < n) ? in[gr] : 0;
    }
    __syncthreads();
    if (g < n) {
        int sum = 0;
        for (int o = -R; o <= R; ++o)
            sum += (o + R + 1) * s[l + o];
        out[g] = sum;
    }
}

// 2D 5-point Laplacian on a 16x16 tile with a 1-element halo; zero boundary.
#define T2 16
extern "C" __global__ void stencil2d(const float* in, float* out, int h, int w)
{
    __shared__ float s[T2 + 2][T2 + 2];
    int gx0 = blockIdx.x * T2, gy0 = blockIdx.y * T2;
    for (int yy = threadIdx.y; yy < T2 + 2; yy += blockDim.y)
        for (int xx = threadIdx.x; xx < T2 + 2; xx += blockDim.x) {
            int gy = gy0 - 1 + yy, gx = gx0 - 1 + xx;
            s[yy][xx] = (gy >= 0 && gy < h && gx >= 0 && gx < w) ? in[gy * w + gx] : 0.0f;
        }
    __syncthreads();
    int x = gx0 + threadIdx.x, y = gy0 + threadIdx.y;
    if (x < w && y < h) {
        int ly = threadIdx.y + 1, lx = threadIdx.x + 1;
        float c = s[ly][lx];
        out[y * w + x] = 4.0f * c - s[ly - 1][lx] - s[ly + 1][lx] - s[ly][lx - 1] - s[ly][lx + 1];
    }
}
