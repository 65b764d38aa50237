// One Jacobi sweep of the 2D heat equation on an n x n grid: interior points become the mean of
// their four neighbours; boundary points are left alone.  Block (32, 8).
extern "C" __global__ void jacobi(const float* __restrict__ in, float* __restrict__ out, int n)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= 1 && x < n - 1 && y >= 1 && y < n - 1)
        out[y * n + x] = 0.25f * (in[(y - 1) * n + x] + in[(y + 1) * n + x] + in[y * n + x - 1] + in[y * n + x + 1]);
}
