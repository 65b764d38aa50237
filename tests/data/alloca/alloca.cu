// Kernels using per-thread dynamic stack allocation (alloca), for tests/test_alloca.py.
// Regenerate the PTX with ./regen.sh (needs nvcc 12.x+ with device-side alloca support).
#include <cstdint>

// out[t] = sum over i < n[t] of (x[t] + i) * (i + 1), computed in an alloca'ed buffer of n[t]
// floats that must survive a __syncthreads() (the block's threads are suspended and resumed).
extern "C" __global__ void alloca_barrier(const int *n, const float *x, float *out, float *first)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int m = n[t];
    float *buf = (float *)alloca(m * sizeof(float));
    for (int i = 0; i < m; i++)
        buf[i] = x[t] + (float)i;
    __syncthreads();
    float s = 0.0f;
    for (int i = 0; i < m; i++)
        s += buf[i] * (float)(i + 1);
    out[t] = s;
    first[t] = m > 0 ? buf[0] : -1.0f;
}

// A device function with its own alloca: each call's memory is released when it returns.
__device__ __noinline__ long long dot_fresh(int m, long long seed)
{
    long long *v = (long long *)alloca(m * sizeof(long long));
    for (int i = 0; i < m; i++)
        v[i] = seed * (i + 3);
    long long s = 0;
    for (int i = 0; i < m; i++)
        s += v[i] * v[m - 1 - i];
    return s;
}

// Many calls per thread: without the release at return the stack would overflow.
extern "C" __global__ void alloca_calls(const int *n, long long *out, int calls)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    long long s = 0;
    for (int c = 0; c < calls; c++)
        s += dot_fresh(n[t], t + c);
    out[t] = s;
}

// An allocation the stack cannot hold: a KernelFault at the alloca.
extern "C" __global__ void alloca_big(int bytes, uint8_t *out)
{
    uint8_t *b = (uint8_t *)alloca(bytes);
    for (int i = 0; i < bytes; i++)
        b[i] = (uint8_t)i;
    out[threadIdx.x] = b[bytes - 1];
}
