// Device printf and assert, one mode per process:
//   printf_assert printf  a kernel prints from 12 threads of 3 blocks (%d %u %ld %f %e %x %s %c); the output
//                         reaches the program's stdout by the next synchronization, between the host's
//                         line before the launch and its line after, and no error is left behind;
//   printf_assert assert  one thread of a kernel fails assert(x[i] < limit): cudaDeviceSynchronize returns
//                         cudaErrorAssert, the error is sticky (later calls return it too), and the failing
//                         thread's assertion message is on stderr.
// Each mode exits 0 when everything behaved as CUDA documents, 1 otherwise.
#define PROGRAM "printf_assert"
#include "check.h"
#include <cassert>
#include <cstring>

__global__ void report(int base, double scale) {
    int b = blockIdx.x, t = threadIdx.x;
    int gid = b * blockDim.x + t;
    unsigned u = 4000000000u + gid;
    long l = -10000000000L * (gid + 1);
    double f = scale * gid;
    printf("thread %d.%d: d=%d u=%u ld=%ld f=%f e=%e x=%x\n", b, t, base - gid, u, l, f, f * 1234.5,
           0xbeef00u + gid);
    if (t == 0) printf("block %d: %s %c%c\n", b, "says", 'h', 'i');
}

__global__ void check_limit(const int *x, int limit) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(x[i] < limit);
}

static int run_printf() {
    std::printf("printf_assert: launching 3 blocks of 4 threads\n");
    report<<<3, 4>>>(100, 1.5);
    cudaError_t launch = cudaGetLastError();
    cudaError_t sync = cudaDeviceSynchronize();
    cudaError_t last = cudaGetLastError();
    if (launch != cudaSuccess || sync != cudaSuccess || last != cudaSuccess) {
        std::printf("printf_assert: FAIL launch %s, synchronize %s, cudaGetLastError %s\n",
                    cudaGetErrorName(launch), cudaGetErrorName(sync), cudaGetErrorName(last));
        return 1;
    }
    std::printf("printf_assert: ok printf from 12 threads of 3 blocks\n");
    return 0;
}

static int run_assert() {
    const int n = 64, limit = 10, bad = 45;  // element 45: block 1, thread 13 of blocks of 32
    int h[n] = {};
    h[bad] = limit;
    int *d;
    CHECK(cudaMalloc(&d, sizeof h));
    CHECK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    check_limit<<<2, 32>>>(d, limit);
    cudaError_t launch = cudaGetLastError();
    cudaError_t sync = cudaDeviceSynchronize();
    cudaError_t again = cudaDeviceSynchronize();
    void *p = nullptr;
    cudaError_t after = cudaMalloc(&p, 64);
    cudaError_t last = cudaGetLastError();
    // the launch may report the kernel's error itself (CUDA allows either) or leave it to the synchronization
    bool launch_ok = launch == cudaSuccess || launch == cudaErrorAssert;
    if (!launch_ok || sync != cudaErrorAssert || again != cudaErrorAssert || after != cudaErrorAssert ||
        last != cudaErrorAssert) {
        std::printf("printf_assert: FAIL launch %s, synchronize %s, again %s, then cudaMalloc %s, "
                    "cudaGetLastError %s\n", cudaGetErrorName(launch), cudaGetErrorName(sync),
                    cudaGetErrorName(again), cudaGetErrorName(after), cudaGetErrorName(last));
        return 1;
    }
    std::printf("printf_assert: ok %s (%s), sticky\n", cudaGetErrorName(sync), cudaGetErrorString(sync));
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && std::strcmp(argv[1], "printf") == 0) return run_printf();
    if (argc == 2 && std::strcmp(argv[1], "assert") == 0) return run_assert();
    std::printf("usage: printf_assert printf|assert\n");
    return 1;
}
