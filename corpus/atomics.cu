// Atomic operations: CAS loops, integer atomics, a device global counter.

__device__ __forceinline__ float atomic_max_float(float* addr, float v)
{
    int* ia = (int*)addr;
    int old = *ia, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= v)
            break;
        old = atomicCAS(ia, assumed, __float_as_int(v));
    } while (old != assumed);
    return __int_as_float(old);
}

// out[k] = max over i with i % m == k of in[i] (out pre-initialised to -inf).
extern "C" __global__ void atomic_cas_fmax(const float* in, float* out, int m, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomic_max_float(&out[i % m], in[i]);
}

__device__ __forceinline__ double atomic_add_double_cas(double* addr, double v)
{
    unsigned long long* a = (unsigned long long*)addr;
    unsigned long long old = *a, assumed;
    do {
        assumed = old;
        old = atomicCAS(a, assumed, __double_as_longlong(v + __longlong_as_double(assumed)));
    } while (old != assumed);
    return __longlong_as_double(old);
}

// out[i % m] += in[i] via a 64-bit CAS loop.
extern "C" __global__ void atomic_cas_dadd(const double* in, double* out, int m, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomic_add_double_cas(&out[i % m], in[i]);
}

// slots: [0] min, [1] max, [2] inc(limit), [3] dec(limit), [4] and, [5] or, [6] xor,
//        [7] add (signed), [8] exch;  old_exch[i] = value returned by atomicExch.
extern "C" __global__ void atomic_int_ops(const int* in, int* slots, unsigned* uslots, int* old_exch,
                                          unsigned limit, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int v = in[i];
    atomicMin(&slots[0], v);
    atomicMax(&slots[1], v);
    atomicInc(&uslots[0], limit);
    atomicDec(&uslots[1], limit);
    atomicAnd(&uslots[2], (unsigned)v | 0x0f0f0000u);
    atomicOr(&uslots[3], 1u << (v & 31));
    atomicXor(&uslots[4], (unsigned)v);
    atomicAdd(&slots[2], v);
    atomicSub(&slots[3], v);
    old_exch[i] = atomicExch(&slots[4], v);
    atomicMin(&uslots[5], (unsigned)v);
    atomicMax(&uslots[6], (unsigned)v);
}

// 64-bit integer atomics: add, min, max (signed), and, or, xor.
extern "C" __global__ void atomic_u64_ops(const long long* in, long long* s, unsigned long long* u, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    long long v = in[i];
    atomicAdd((unsigned long long*)&s[0], (unsigned long long)v);
    atomicMin(&s[1], v);
    atomicMax(&s[2], v);
    atomicAnd(&u[0], (unsigned long long)v | 0xff00ff00ff00ff00ull);
    atomicOr(&u[1], 1ull << (v & 63));
    atomicXor(&u[2], (unsigned long long)v);
}

// A device global with a static initializer, bumped by atomics.
__device__ unsigned int g_counter = 1000;
__device__ int g_table[4] = {10, 20, 30, 40};

// tickets[i] = atomicAdd(&g_counter, 1); also g_table[i % 4] += 1.
extern "C" __global__ void global_counter(unsigned* tickets, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        tickets[i] = atomicAdd(&g_counter, 1u);
        atomicAdd(&g_table[i % 4], 1);
    }
}

extern "C" __global__ void read_globals(unsigned* out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        out[0] = g_counter;
        for (int k = 0; k < 4; ++k)
            out[1 + k] = (unsigned)g_table[k];
    }
}

// Float atomics in shared memory then global: per-block sums into out[blockIdx.x % m].
extern "C" __global__ void atomic_shared_f32(const float* in, float* out, int m, int n)
{
    __shared__ float acc;
    if (threadIdx.x == 0)
        acc = 0.0f;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&acc, in[i]);
    __syncthreads();
    if (threadIdx.x == 0)
        atomicAdd(&out[blockIdx.x % m], acc);
}
