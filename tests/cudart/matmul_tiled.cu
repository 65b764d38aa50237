// C = A * B for 192 x 192 matrices with 16 x 16 tiles in shared memory on a 2D grid.
#define PROGRAM "matmul_tiled"
#include "check.h"
#include <cmath>
#include <vector>

#define TILE 16

__global__ void matmul(const float *A, const float *B, float *C, int n) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n / TILE; t++) {
        as[threadIdx.y][threadIdx.x] = A[row * n + t * TILE + threadIdx.x];
        bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; k++) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = acc;
}

int main() {
    const int n = 192;
    const size_t bytes = n * n * sizeof(float);
    std::vector<float> a(n * n), b(n * n), c(n * n);
    for (int i = 0; i < n * n; i++) { a[i] = (i % 7) - 3.0f; b[i] = (i % 5) * 0.25f; }
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, bytes));
    CHECK(cudaMalloc(&db, bytes));
    CHECK(cudaMalloc(&dc, bytes));
    CHECK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
    dim3 block(TILE, TILE), grid(n / TILE, n / TILE);
    matmul<<<grid, block>>>(da, db, dc, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            float ref = 0.0f;
            for (int k = 0; k < n; k++) ref += a[i * n + k] * b[k * n + j];
            if (std::fabs(ref - c[i * n + j]) > 1e-3f * (1.0f + std::fabs(ref))) bad++;
        }
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    if (bad) { std::printf("matmul_tiled: FAIL %d of %d entries wrong\n", bad, n * n); return 1; }
    std::printf("matmul_tiled: ok %dx%d, %dx%d blocks\n", n, n, grid.x, grid.y);
    return 0;
}
