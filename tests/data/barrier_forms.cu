// Barrier forms combined with spin waits (tests/test_barrier_forms.py): each kernel has a spin point
// (a volatile load in a loop, a polled atomic, a nanosleep loop), so it runs in region code, and one
// form of CTA barrier: bar.arrive with and without a matching bar.sync, more arrivals than the count,
// bar.red, barrier.sync.aligned with a count, named ids in divergent code and in loops, register
// operands, and counts that can never complete.  Launched with 64 threads (two warps) unless a test
// says otherwise; out[] starts zeroed.

// Thread 0 spins on a flag the CTA's last thread sets (valid since Volta's independent scheduling).
__device__ __forceinline__ void handoff(volatile int* flag, int* value, int* out)
{
    int t = threadIdx.x;
    if (t == blockDim.x - 1) {
        *value = 7;
        __threadfence_block();
        *flag = 1;
    }
    if (t == 0) {
        while (*flag == 0) {
        }
        out[0] = *value * 6;
    }
}

// bar.arrive on an id no thread syncs on: the arrivals complete (or never complete) a phase that
// nobody waits for; the kernel runs on.
extern "C" __global__ void arrive_unsynced(int* out)
{
    __shared__ volatile int flag;
    __shared__ int value;
    int t = threadIdx.x;
    if (t == 0)
        flag = 0;
    __syncthreads();
    asm volatile("bar.arrive 1, 64;" ::: "memory");
    handoff(&flag, &value, out);
    __syncthreads();
    out[t + 1] = t;
}

// Every thread arrives at barrier 1 counted 32: a CTA of 64 completes two phases with nobody waiting.
extern "C" __global__ void arrive_surplus(int* out)
{
    __shared__ volatile int flag;
    __shared__ int value;
    int t = threadIdx.x;
    if (t == 0)
        flag = 0;
    __syncthreads();
    asm volatile("bar.arrive 1, 32;" ::: "memory");
    handoff(&flag, &value, out);
    __syncthreads();
    out[t + 1] = t * 2;
}

// Warp 0 publishes and arrives at barrier 1 (64 threads), warp 1 syncs there and reads (the CUDA
// programming guide's producer/consumer); then a polled atomic and __syncthreads().
extern "C" __global__ void arrive_then_sync(int* out, int* flag)
{
    __shared__ int buf[32];
    __shared__ int value;
    int t = threadIdx.x, lane = t % 32;
    if (t < 32) {
        buf[lane] = lane * 5;
        asm volatile("bar.arrive 1, 64;" ::: "memory");
    } else {
        asm volatile("bar.sync 1, 64;" ::: "memory");
        out[t + 1] = buf[lane] + 1;
    }
    if (t == 63) {
        value = 9;
        __threadfence();
        atomicExch(flag, 1);
    }
    if (t == 0) {
        while (atomicAdd(flag, 0) == 0) {
        }
        __threadfence();
        out[0] = *(volatile int*)&value * 2;
    }
    __syncthreads();
    if (t < 32)
        out[t + 1] = lane;
}

// bar.red.popc and bar.red.and with a spin wait between them.
extern "C" __global__ void red_spin(int* out)
{
    __shared__ volatile int flag;
    __shared__ int value;
    int t = threadIdx.x;
    if (t == 0)
        flag = 0;
    int c = __syncthreads_count(t % 3 == 0);
    handoff(&flag, &value, out);
    int a = __syncthreads_and(t < 1000);
    out[t + 1] = c * 10 + a;
}

// A named barrier counted 32 that only warp 0 reaches (divergent code), while thread 32 polls an
// atomic that thread 0 sets after the barrier.
extern "C" __global__ void divergent_named(int* out, int* flag)
{
    __shared__ int buf[32];
    int t = threadIdx.x;
    if (t < 32) {
        buf[t] = t + 100;
        asm volatile("bar.sync 1, 32;" ::: "memory");
        out[t + 1] = buf[31 - t];
        if (t == 0) {
            __threadfence();
            atomicExch(flag, 1);
        }
    } else {
        if (t == 32) {
            while (atomicAdd(flag, 0) == 0) {
            }
        }
        out[t + 1] = -t;
    }
}

// A named barrier (id 2, all 64 threads) in a loop, and per iteration thread 0 waits with
// __nanosleep for the value the last thread publishes.
extern "C" __global__ void loop_named_nanosleep(int* out, int iters)
{
    __shared__ volatile int stage;
    int t = threadIdx.x;
    if (t == 0)
        stage = 0;
    __syncthreads();
    int acc = 0;
    for (int it = 0; it < iters; ++it) {
        if (t == blockDim.x - 1)
            stage = it + 1;
        if (t == 0) {
            while (stage != it + 1)
                __nanosleep(100);
        }
        asm volatile("bar.sync 2, 64;" ::: "memory");
        acc += stage;
        asm volatile("bar.sync 2, 64;" ::: "memory");
    }
    out[t + 1] = acc;
}

// barrier.sync.aligned with a count (both warps), around a polled atomic.
extern "C" __global__ void aligned_count(int* out, int* flag)
{
    __shared__ int buf[64];
    int t = threadIdx.x;
    buf[t] = t * 3;
    asm volatile("barrier.sync.aligned 3, 64;" ::: "memory");
    if (t == 1)
        atomicExch(flag, 1);
    if (t == 0) {
        while (atomicAdd(flag, 0) == 0) {
        }
    }
    out[t + 1] = buf[63 - t];
}

// Barrier id and count in registers (launch arguments): bar.arrive by warp 0, bar.sync by warp 1.
extern "C" __global__ void register_operands(int* out, int* flag, int id, int count)
{
    __shared__ int buf[32];
    int t = threadIdx.x, lane = t % 32;
    if (t < 32) {
        buf[lane] = lane + 11;
        asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
    } else {
        asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
        out[t + 1] = buf[lane];
        if (t == 32)
            atomicExch(flag, 1);
    }
    if (t == 0) {
        while (atomicAdd(flag, 0) == 0) {
        }
        out[0] = 1;
    }
}

// Warp 0 waits at barrier 1 for 64 threads; warp 1 spins until warp 0 is there, then exits without
// arriving: the barrier can never complete (a deadlock).
extern "C" __global__ void count_never_completes(int* out, int* flag)
{
    int t = threadIdx.x;
    if (t < 32) {
        if (t == 0)
            atomicExch(flag, 1);
        asm volatile("bar.sync 1, 64;" ::: "memory");
        out[t] = 1;
    } else {
        while (atomicAdd(flag, 0) == 0) {
        }
        out[t] = 2;
    }
}

// Warp 0 only arrives at barrier 1 (64 threads); warp 1 syncs there but after a spin that waits for
// the barrier's end: nobody else ever arrives, so warp 1 waits forever.
extern "C" __global__ void arrive_short(int* out, int* flag)
{
    int t = threadIdx.x;
    if (t < 32) {
        asm volatile("bar.arrive 1, 96;" ::: "memory");
        atomicExch(flag, 1);
    } else {
        while (atomicAdd(flag, 0) == 0) {
        }
        asm volatile("bar.sync 1, 96;" ::: "memory");
        out[t] = 1;
    }
}
