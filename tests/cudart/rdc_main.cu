// Relocatable device code (nvcc -rdc=true) across two translation units: a kernel here calls a device
// function defined in rdc_lib.cu, reads a __constant__ set by cudaMemcpyToSymbol, and a kernel of the other
// unit runs after it.
#define PROGRAM "rdc_main"
#include "check.h"
#include <vector>

extern __device__ float poly(float x);
void launch_twice(float *x, int n);

__constant__ float offset;

__global__ void apply(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = poly(in[i]) + offset;
}

int main() {
    const int n = 5000;
    std::vector<float> in(n), out(n);
    for (int i = 0; i < n; i++) in[i] = (float)(i % 50) * 0.5f;
    float *din, *dout, off = 10.0f;
    CHECK(cudaMalloc(&din, n * sizeof(float)));
    CHECK(cudaMalloc(&dout, n * sizeof(float)));
    CHECK(cudaMemcpy(din, in.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpyToSymbol(offset, &off, sizeof off));
    apply<<<(n + 127) / 128, 128>>>(din, dout, n);
    CHECK(cudaGetLastError());
    launch_twice(dout, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i++) {
        float x = in[i], expect = 2.0f * (3.0f * x * x + 2.0f * x + 1.0f + off);
        if (out[i] != expect) bad++;
    }
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    if (bad) { std::printf("rdc_main: FAIL %d of %d wrong\n", bad, n); return 1; }
    std::printf("rdc_main: ok 2 translation units, %d elements\n", n);
    return 0;
}
