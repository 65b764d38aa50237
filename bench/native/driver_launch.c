/* Launch overhead through ptxjit's libcuda.so.1 (the C ABI): an empty kernel launched N times with
   cuLaunchKernel and a cuCtxSynchronize after each (latency), N launches then one synchronize (throughput),
   and a one-node graph launched N times (cuGraphLaunch + synchronize).  Prints one JSON line of
   microseconds per launch.  Usage: driver_launch EMPTY.ptx N (built at run time by ptxbench/driver_launch.py) */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(x) do { CUresult r_ = (x); if (r_) { printf("{\"error\": \"%s -> %d\"}\n", #x, r_); return 1; } } while (0)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int n = argc > 2 ? atoi(argv[2]) : 2000;
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
    CHECK(cuModuleLoad(&mod, argv[1]));
    CHECK(cuModuleGetFunction(&f, mod, "empty_kernel"));
    for (int i = 0; i < 50; i++) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuCtxSynchronize());
    double t0 = now();
    for (int i = 0; i < n; i++) {
        CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
        CHECK(cuCtxSynchronize());
    }
    double sync_us = (now() - t0) / n * 1e6;
    t0 = now();
    for (int i = 0; i < n; i++) CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    CHECK(cuCtxSynchronize());
    double async_us = (now() - t0) / n * 1e6;
    CUgraph g;
    CUgraphNode node;
    CUgraphExec ge;
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof kp);
    kp.func = f;
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
    kp.blockDimX = 32; kp.blockDimY = kp.blockDimZ = 1;
    CHECK(cuGraphCreate(&g, 0));
    CHECK(cuGraphAddKernelNode(&node, g, NULL, 0, &kp));
    CHECK(cuGraphInstantiate(&ge, g, 0));
    t0 = now();
    for (int i = 0; i < n; i++) {
        CHECK(cuGraphLaunch(ge, NULL));
        CHECK(cuCtxSynchronize());
    }
    double graph_us = (now() - t0) / n * 1e6;
    printf("{\"launch_sync_us\": %.2f, \"launch_async_us\": %.2f, \"graph_us\": %.2f}\n", sync_us, async_us, graph_us);
    return 0;
}
