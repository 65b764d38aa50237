// unsigned __int128 in device code (tests/test_b128.py): nvcc passes it in .b128 registers and
// atomicExch on it is atom.global.exch.b128.  Regenerate the PTX with ./regen.sh.
__device__ __noinline__ unsigned __int128 f(unsigned __int128 a, unsigned __int128 b)
{
    return a * b + (a >> 3);
}

// x[t] = f(x[t], s) ^ (the old x[t + n]), x[t + n] = the old x[t], for t < n = blockDim.x
extern "C" __global__ void int128_exch(unsigned __int128 *x, unsigned __int128 s)
{
    int t = threadIdx.x;
    unsigned __int128 v = x[t];
    x[t] = f(v, s) ^ atomicExch(&x[t + blockDim.x], v);
}

// every thread adds its (t + 1) << 64 | 1 to one 128-bit counter with an atomicCAS loop
extern "C" __global__ void int128_cas_sum(unsigned __int128 *ctr)
{
    unsigned __int128 add = ((unsigned __int128)(threadIdx.x + 1) << 64) | 1;
    unsigned __int128 old = *ctr, assumed;
    do {
        assumed = old;
        old = atomicCAS(ctr, assumed, assumed + add);
    } while (old != assumed);
}
