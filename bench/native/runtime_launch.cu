/* Launch overhead through ptxjit's libcudart.so.13 (the runtime's C ABI, nvcc's <<<>>>): an empty kernel
   launched N times with a cudaDeviceSynchronize after each (latency), N launches then one synchronize
   (throughput), and a kernel with four parameters (two pointers, a float, an int) launched N times with a
   synchronize after each (the parameters gathered from nvcc's argument array).  Prints one JSON line of
   microseconds per launch.  Usage: runtime_launch N (built by bench/native/build.sh; run by
   bench/ptxbench/driver_launch.py under ptxjit's library folder) */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(x) do { cudaError_t r_ = (x); if (r_) { printf("{\"error\": \"%s -> %d\"}\n", #x, (int)r_); return 1; } } while (0)

__global__ void empty_kernel() {}

__global__ void axpy_kernel(const float *x, float *y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    const int len = 32;
    float *x, *y;
    CHECK(cudaMalloc(&x, len * sizeof(float)));
    CHECK(cudaMalloc(&y, len * sizeof(float)));
    CHECK(cudaMemset(x, 0, len * sizeof(float)));
    CHECK(cudaMemset(y, 0, len * sizeof(float)));
    for (int i = 0; i < 50; i++) {
        empty_kernel<<<1, 32>>>();
        axpy_kernel<<<1, 32>>>(x, y, 2.0f, len);
    }
    CHECK(cudaDeviceSynchronize());
    double t0 = now();
    for (int i = 0; i < n; i++) {
        empty_kernel<<<1, 32>>>();
        CHECK(cudaDeviceSynchronize());
    }
    double sync_us = (now() - t0) / n * 1e6;
    t0 = now();
    for (int i = 0; i < n; i++) empty_kernel<<<1, 32>>>();
    CHECK(cudaDeviceSynchronize());
    double async_us = (now() - t0) / n * 1e6;
    t0 = now();
    for (int i = 0; i < n; i++) {
        axpy_kernel<<<1, 32>>>(x, y, 2.0f, len);
        CHECK(cudaDeviceSynchronize());
    }
    double params_us = (now() - t0) / n * 1e6;
    CHECK(cudaGetLastError());
    printf("{\"rt_launch_sync_us\": %.2f, \"rt_launch_async_us\": %.2f, \"rt_params_sync_us\": %.2f}\n",
           sync_us, async_us, params_us);
    return 0;
}
