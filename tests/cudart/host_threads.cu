// Four host threads using the runtime at once, each with its own stream: the primary context becomes
// current on each thread at its first call, and every thread's work lands in its own buffer.
#define PROGRAM "host_threads"
#include "check.h"
#include <thread>
#include <vector>

__global__ void iota_plus(int *a, int base, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = base + i;
}

static int worker(int t) {
    const int n = 4096;
    int *d;
    std::vector<int> h(n);
    cudaStream_t s;
    if (cudaStreamCreate(&s) != cudaSuccess || cudaMalloc(&d, n * sizeof(int)) != cudaSuccess) return 1;
    iota_plus<<<n / 256, 256, 0, s>>>(d, t * 100000, n);
    if (cudaMemcpyAsync(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost, s) != cudaSuccess) return 1;
    if (cudaStreamSynchronize(s) != cudaSuccess) return 1;
    for (int i = 0; i < n; i++) if (h[i] != t * 100000 + i) return 1;
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess || dev != 0) return 1;
    cudaFree(d);
    cudaStreamDestroy(s);
    return 0;
}

int main() {
    int results[4] = {-1, -1, -1, -1};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) threads.emplace_back([t, &results] { results[t] = worker(t); });
    for (auto &th : threads) th.join();
    int bad = 0;
    for (int t = 0; t < 4; t++) bad += results[t] != 0;
    if (bad) { std::printf("host_threads: FAIL %d of 4 threads\n", bad); return 1; }
    std::printf("host_threads: ok 4 threads\n");
    return 0;
}
