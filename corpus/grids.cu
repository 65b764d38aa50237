// 2D and 3D grids and blocks: every thread records its coordinates.

// out[y * w + x] = (x << 16) | y for a 2D launch covering at least w x h.
extern "C" __global__ void grid2d_coords(unsigned* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h)
        out[y * w + x] = ((unsigned)x << 16) | (unsigned)y;
}

// 3D launch; each thread writes 8 ints describing itself at its linear global id.
extern "C" __global__ void grid3d_ids(int* out)
{
    int bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;
    int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    int block_lin = (bz * gridDim.y + by) * gridDim.x + bx;
    int nthr = blockDim.x * blockDim.y * blockDim.z;
    int thr_lin = (tz * blockDim.y + ty) * blockDim.x + tx;
    int g = block_lin * nthr + thr_lin;
    int* o = out + 8 * g;
    o[0] = bx;
    o[1] = by;
    o[2] = bz;
    o[3] = tx;
    o[4] = ty;
    o[5] = tz;
    o[6] = gridDim.x * 10000 + gridDim.y * 100 + gridDim.z;
    o[7] = blockDim.x * 10000 + blockDim.y * 100 + blockDim.z;
}

// 3D volume add with a 3D grid: c = a + 2*b over a (d, h, w) volume.
extern "C" __global__ void vol3d_add(const float* a, const float* b, float* c, int d, int h, int w)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < w && y < h && z < d) {
        int idx = (z * h + y) * w + x;
        c[idx] = a[idx] + 2.0f * b[idx];
    }
}
