// c[i] = a[i] + b[i] over a million elements: cudaMalloc, cudaMemcpy, <<<grid, block>>>.
#define PROGRAM "vector_add"
#include "check.h"
#include <vector>

__global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

int main() {
    const int n = 1 << 20;
    const size_t bytes = n * sizeof(float);
    std::vector<float> a(n), b(n), c(n);
    for (int i = 0; i < n; i++) { a[i] = 0.5f * i; b[i] = 2.0f * (n - i); }
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, bytes));
    CHECK(cudaMalloc(&db, bytes));
    CHECK(cudaMalloc(&dc, bytes));
    CHECK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
    const int block = 256, grid = (n + block - 1) / block;
    vector_add<<<grid, block>>>(da, db, dc, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (c[i] != a[i] + b[i]) bad++;
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    if (bad) { std::printf("vector_add: FAIL %d of %d elements wrong\n", bad, n); return 1; }
    std::printf("vector_add: ok %d elements\n", n);
    return 0;
}
