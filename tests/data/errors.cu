// Kernels that fail on purpose, for the error-path tests (regenerate with tests/data/regen.sh).
#include <cassert>
#include <cstdio>

extern "C" __global__ void trap_at(int* out, int bad_block, int bad_thread) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
    if (blockIdx.x == bad_block && threadIdx.x == bad_thread) __trap();
}

extern "C" __global__ void check_positive(const int* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) assert(v[i] > 0);
}

struct Pair { int a; float b; double c; };
extern "C" __global__ void by_value(Pair p, double* out) {
    out[0] = p.a + p.b + p.c;
}

extern "C" __global__ void scalars(signed char c, unsigned short h, long long q, double d, float* out) {
    out[0] = c; out[1] = h; out[2] = (float)q; out[3] = (float)d;
}
