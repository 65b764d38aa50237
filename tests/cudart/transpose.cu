// A 384 x 256 matrix transposed twice: naively (reads coalesced, writes strided) and through 32 x 32 tiles
// of shared memory padded by one column (so a tile's column is read without bank conflicts), each block
// of 32 x 8 threads moving four rows per thread.  Both results are checked.
#define PROGRAM "transpose"
#include "check.h"
#include <vector>

#define TILE 32
#define ROWS 8

__global__ void transpose_naive(float *out, const float *in, int width, int height) {
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height) out[x * height + y + j] = in[(y + j) * width + x];
}

__global__ void transpose_tiled(float *out, const float *in, int width, int height) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * width + x];
    __syncthreads();
    // the block's tile lands at the mirrored block position; threads now walk the tile's columns
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < height && y + j < width) out[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

static bool check(const char *what, const std::vector<float> &got, const std::vector<float> &in, int w, int h) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if (got[x * h + y] != in[y * w + x]) {
                std::printf("transpose: FAIL %s: out[%d][%d] is %g, expected %g\n", what, x, y, got[x * h + y],
                            in[y * w + x]);
                return false;
            }
    return true;
}

int main() {
    const int w = 384, h = 256, n = w * h;
    std::vector<float> in(n), got(n);
    for (int i = 0; i < n; i++) in[i] = (float)(i % 9973) * 0.5f - 100.0f;
    float *din, *dout;
    CHECK(cudaMalloc(&din, n * sizeof(float)));
    CHECK(cudaMalloc(&dout, n * sizeof(float)));
    CHECK(cudaMemcpy(din, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    dim3 grid(w / TILE, h / TILE), block(TILE, ROWS);
    CHECK(cudaMemset(dout, 0, n * sizeof(float)));
    transpose_naive<<<grid, block>>>(dout, din, w, h);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
    if (!check("naive", got, in, w, h)) return 1;
    CHECK(cudaMemset(dout, 0, n * sizeof(float)));
    transpose_tiled<<<grid, block>>>(dout, din, w, h);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
    if (!check("tiled", got, in, w, h)) return 1;
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    std::printf("transpose: ok %dx%d naive and tiled\n", w, h);
    return 0;
}
