#include <cstdio>

// printf with ints, unsigned, 64-bit, floats, doubles, strings and chars.
extern "C" __global__ void printf_kernel(const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        printf("tid=%d blk=%u x=%.3f sq=%e name=%s big=%lld hex=%x c=%c\n", i, blockIdx.x, x[i],
               (double)x[i] * x[i], (i & 1) ? "odd" : "even", (long long)i * 1000000007LL, i * 255, 'A' + (i % 26));
}

// printf without arguments, from one thread only, and a %5d / %-4s / %% format.
extern "C" __global__ void printf_simple(int v)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        printf("hello from ptx\n");
        printf("[%5d|%-4s|%%|%+.2f]\n", v, "ab", 2.5);
    }
}
