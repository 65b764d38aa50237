// Two streams, each copying its half in (async, pinned memory), scaling it and copying it out; events time
// the work (cudaEventElapsedTime > 0) and order the streams.
#define PROGRAM "streams_events"
#include "check.h"

__global__ void scale(float *x, float f, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * f + 1.0f;
}

int main() {
    const int n = 1 << 18, half = n / 2;
    float *h, *d;
    CHECK(cudaMallocHost(&h, n * sizeof(float)));
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    for (int i = 0; i < n; i++) h[i] = (float)(i % 1000);
    cudaStream_t s[2];
    CHECK(cudaStreamCreate(&s[0]));
    CHECK(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreateWithFlags(&stop, cudaEventDefault));
    CHECK(cudaEventRecord(start, s[0]));
    for (int k = 0; k < 2; k++) {
        float *hp = h + k * half, *dp = d + k * half;
        CHECK(cudaMemcpyAsync(dp, hp, half * sizeof(float), cudaMemcpyHostToDevice, s[k]));
        scale<<<half / 256, 256, 0, s[k]>>>(dp, 2.0f + k, half);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(hp, dp, half * sizeof(float), cudaMemcpyDeviceToHost, s[k]));
    }
    CHECK(cudaStreamSynchronize(s[1]));
    CHECK(cudaEventRecord(stop, s[0]));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    int bad = 0;
    for (int i = 0; i < n; i++) {
        float expect = (float)(i % 1000) * (i < half ? 2.0f : 3.0f) + 1.0f;
        if (h[i] != expect) bad++;
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaStreamDestroy(s[0]));
    CHECK(cudaStreamDestroy(s[1]));
    CHECK(cudaFreeHost(h));
    CHECK(cudaFree(d));
    if (bad || !(ms > 0.0f)) { std::printf("streams_events: FAIL %d wrong, %.3f ms\n", bad, ms); return 1; }
    std::printf("streams_events: ok 2 streams, elapsed %.3f ms\n", ms);
    return 0;
}
