// A cooperative launch (cudaLaunchCooperativeKernel, then cudaLaunchKernelEx with the cooperative launch
// attribute): every block writes its part, the whole grid synchronizes (cooperative groups' grid.sync()),
// then every block reads what the others wrote.
#define PROGRAM "grid_sync"
#include "check.h"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void rotate(int *buf, int *out, int n) {
    cg::grid_group grid = cg::this_grid();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) buf[i] = i * i;
    grid.sync();
    if (i < n) out[i] = buf[(i + blockDim.x) % n];  // a value another block wrote
}

int main() {
    int coop = 0;
    CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
    const int block = 128, blocks = 8, n = block * blocks;
    int *buf, *out, h[n];
    CHECK(cudaMalloc(&buf, n * sizeof(int)));
    CHECK(cudaMalloc(&out, n * sizeof(int)));
    int nn = n;
    void *args[] = {&buf, &out, &nn};
    CHECK(cudaLaunchCooperativeKernel((void *)rotate, dim3(blocks), dim3(block), args, 0, 0));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        int j = (i + block) % n;
        if (h[i] != j * j) { std::printf("grid_sync: FAIL out[%d] = %d, expected %d\n", i, h[i], j * j); return 1; }
    }
    CHECK(cudaMemset(out, 0, n * sizeof(int)));
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(block);
    config.attrs = attr;
    config.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&config, rotate, buf, out, nn));
    CHECK(cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        int j = (i + block) % n;
        if (h[i] != j * j) { std::printf("grid_sync: FAIL (Ex) out[%d] = %d, expected %d\n", i, h[i], j * j); return 1; }
    }
    CHECK(cudaFree(buf));
    CHECK(cudaFree(out));
    std::printf("grid_sync: ok %d blocks synchronized (cooperative launch %s)\n", blocks, coop ? "supported" : "?");
    return 0;
}
