// Kernels for the interrupt, timeout, deadlock and forward-progress tests (tests/test_interrupts.py).

// Spins until flag[0] is set (by the host: never, while the launch runs).  A spin loop on a
// volatile load: it gets a spin point, so the kernel runs in region mode.
extern "C" __global__ void spin_until(const int* flag, int* out)
{
    while (*(volatile const int*)flag == 0) {
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

// n iterations of arithmetic per thread (no memory in the loop): a barrier-free kernel whose
// thread loop has a plain counted loop inside; with a huge n it runs "forever".
extern "C" __global__ void busy_loop(float* out, long long n)
{
    float acc = (float)threadIdx.x;
    for (long long i = 0; i < n; ++i)
        acc = acc * 0.5f + 1.0f;
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Named barrier 1 expects 128 threads; launched with 64 it can never complete.
extern "C" __global__ void bar_too_many(int* out)
{
    out[threadIdx.x] = 1;
    asm volatile("bar.sync 1, 128;" ::: "memory");
    out[threadIdx.x] = 2;
}

// Threads of warp 0 wait at named barrier 2 for 64 threads; the others exit without arriving.
extern "C" __global__ void bar_missing(int* out)
{
    if (threadIdx.x < 32) {
        asm volatile("bar.sync 2, 64;" ::: "memory");
        out[threadIdx.x] = 1;
    }
}

// Producer/consumer through named barriers (CUDA programming guide pattern), 96 threads: warp 0
// produces, warp 1 consumes, warp 2 does its own work without taking part.  Barrier 1 ("full",
// 64 threads): producer arrives, consumer waits.  Barrier 2 ("empty"): consumer arrives, producer
// waits before it overwrites the buffer.
extern "C" __global__ void prod_cons(const int* in, int* out, int* other, int iters)
{
    __shared__ int buf[32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp == 0) {
        for (int it = 0; it < iters; ++it) {
            if (it > 0)
                asm volatile("bar.sync 2, 64;" ::: "memory");
            buf[lane] = in[it * 32 + lane] * 2;
            asm volatile("bar.arrive 1, 64;" ::: "memory");
        }
    } else if (warp == 1) {
        for (int it = 0; it < iters; ++it) {
            asm volatile("bar.sync 1, 64;" ::: "memory");
            out[it * 32 + lane] = buf[lane] + it;
            asm volatile("bar.arrive 2, 64;" ::: "memory");
        }
    } else {
        other[lane] = lane * 3;
    }
}

// Thread 0 waits for a flag that thread 32 (a later warp of the same CTA) sets: valid since
// Volta's independent thread scheduling; needs the scheduler to switch threads.
extern "C" __global__ void intra_spin(int* out, int* flag, int* data)
{
    int t = threadIdx.x;
    if (t == 32) {
        data[0] = 42;
        __threadfence();
        atomicExch(flag, 1);
    }
    if (t == 0) {
        while (atomicAdd(flag, 0) == 0) {
        }
        __threadfence();
        out[0] = *(volatile int*)data + 1;
    }
    out[t + 1] = t * 2;
}

// The same with a shared-memory flag and a barrier after the spin (region mode from the start).
extern "C" __global__ void intra_spin_shared(int* out)
{
    __shared__ volatile int flag;
    __shared__ int value;
    int t = threadIdx.x;
    if (t == 0)
        flag = 0;
    __syncthreads();
    if (t == blockDim.x - 1) {
        value = 7;
        __threadfence_block();
        flag = 1;
    }
    if (t == 0) {
        while (flag == 0) {
        }
        out[0] = value * 6;
    }
    __syncthreads();
    out[t + 1] = t;
}

// Decoupled look-back in its simplest form: each CTA reduces its 256 elements, then thread 0
// waits for the previous CTA's inclusive prefix, publishes its own, and the CTA writes its
// exclusive prefix.  CTA b spins on a flag that CTA b-1 sets (possibly on another worker).
extern "C" __global__ void lookback(const int* in, int* excl, volatile int* flags, volatile int* incl)
{
    __shared__ int s[256];
    __shared__ int prefix;
    int b = blockIdx.x, t = threadIdx.x;
    s[t] = in[b * 256 + t];
    __syncthreads();
    for (int stride = 128; stride > 0; stride >>= 1) {
        if (t < stride)
            s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) {
        int p = 0;
        if (b > 0) {
            while (flags[b - 1] == 0) {
            }
            __threadfence();
            p = incl[b - 1];
        }
        incl[b] = p + s[0];
        __threadfence();
        flags[b] = 1;
        prefix = p;
    }
    __syncthreads();
    excl[b] = prefix;
}

// Odd and even threads wait at two different __syncthreads() (one CTA barrier, valid on Volta+):
// a completion releases both instructions' threads, and threads that loop back to their
// instruction must wait for the next completion (double-buffered, so the result is exact).
extern "C" __global__ void divergent_sync(int* out, int iters)
{
    __shared__ int s[2][256];
    int t = threadIdx.x, n = blockDim.x;
    int acc = 0;
    for (int it = 0; it < iters; ++it) {
        int* buf = s[it & 1];
        buf[t] = t * 3 + it;
        if (t & 1) {
            __syncthreads();
            acc += buf[(t + 1) % n];
        } else {
            __syncthreads();
            acc += 2 * buf[(t + 5) % n];
        }
    }
    out[t] = acc;
}
