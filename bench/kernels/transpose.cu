// Matrix transpose through a padded shared-memory tile (no bank conflicts): out = in^T, n x n,
// n a multiple of TILE.  Block (TILE, ROWS).
#define TILE 32
#define ROWS 8
extern "C" __global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int n)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
