// A __constant__ table written with cudaMemcpyToSymbol, a __device__ counter read back with
// cudaMemcpyFromSymbol, and the counter's address from cudaGetSymbolAddress.
#define PROGRAM "constant_symbol"
#include "check.h"
#include <vector>

__constant__ int weights[16];
__device__ int hits;

__global__ void weigh(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[i] * weights[i % 16];
        if (weights[i % 16] > 8) atomicAdd(&hits, 1);
    }
}

int main() {
    const int n = 4096;
    int w[16];
    for (int k = 0; k < 16; k++) w[k] = k + 1;
    std::vector<int> in(n), out(n);
    for (int i = 0; i < n; i++) in[i] = i % 100;
    CHECK(cudaMemcpyToSymbol(weights, w, sizeof w));
    int zero = 0;
    CHECK(cudaMemcpyToSymbol(hits, &zero, sizeof zero));
    int *din, *dout;
    CHECK(cudaMalloc(&din, n * sizeof(int)));
    CHECK(cudaMalloc(&dout, n * sizeof(int)));
    CHECK(cudaMemcpy(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    weigh<<<n / 128, 128>>>(din, dout, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
    int got_hits = -1;
    CHECK(cudaMemcpyFromSymbol(&got_hits, hits, sizeof got_hits));
    int *hits_addr = nullptr, via_addr = -1;
    CHECK(cudaGetSymbolAddress((void **)&hits_addr, hits));
    CHECK(cudaMemcpy(&via_addr, hits_addr, sizeof via_addr, cudaMemcpyDeviceToHost));
    int bad = 0, expect_hits = 0;
    for (int i = 0; i < n; i++) {
        if (out[i] != in[i] * w[i % 16]) bad++;
        if (w[i % 16] > 8) expect_hits++;
    }
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    if (bad || got_hits != expect_hits || via_addr != expect_hits) {
        std::printf("constant_symbol: FAIL %d wrong, hits %d / %d (expected %d)\n", bad, got_hits, via_addr,
                    expect_hits);
        return 1;
    }
    std::printf("constant_symbol: ok %d elements, hits %d\n", n, got_hits);
    return 0;
}
