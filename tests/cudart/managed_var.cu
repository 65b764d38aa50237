// A __managed__ variable: initialized in the device code, updated by kernels and by host code directly,
// read back with cudaMemcpyFromSymbol too.
#define PROGRAM "managed_var"
#include "check.h"

__managed__ int total = 5;

__global__ void bump(int v) { atomicAdd(&total, v); }

int main() {
    bump<<<2, 32>>>(1);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int after_kernel = total;  // 5 + 64
    total += 100;              // host code writes it in place
    bump<<<1, 10>>>(2);
    CHECK(cudaDeviceSynchronize());
    int via_symbol = -1;
    CHECK(cudaMemcpyFromSymbol(&via_symbol, total, sizeof via_symbol));
    if (after_kernel != 69 || total != 189 || via_symbol != 189) {
        std::printf("managed_var: FAIL %d, %d, %d (expected 69, 189, 189)\n", after_kernel, total, via_symbol);
        return 1;
    }
    std::printf("managed_var: ok total %d\n", total);
    return 0;
}
