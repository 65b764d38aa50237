// Kernels with the bugs compute-sanitizer's tools exist for, and one correct kernel that looks like a bug
// (driver_sanitize.c launches each; tests/test_driver_sanitize.py runs it under `ptxjit exec --check`).

// memcheck: the last thread of the grid writes one element past the end of the allocation
extern "C" __global__ void write_past_end(float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i] = 1.0f;
}

// correct: a pointer into the middle of an allocation, read behind it (every byte of the allocation is legal)
extern "C" __global__ void read_behind(const float *middle, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = middle[i - n];
}

// racecheck: every thread writes one shared word and thread 0 reads it, with no barrier in between
extern "C" __global__ void shared_race(int *out) {
    __shared__ int slot;
    slot = threadIdx.x;
    if (threadIdx.x == 0) out[blockIdx.x] = slot;
}

// initcheck: each thread reads a shared word no thread wrote
extern "C" __global__ void read_uninitialized_shared(int *out) {
    __shared__ int never_written[64];
    out[blockIdx.x * blockDim.x + threadIdx.x] = never_written[threadIdx.x];
}

// synccheck: __syncthreads() reached by half of each warp
extern "C" __global__ void divergent_barrier(int *out) {
    __shared__ int s[64];
    s[threadIdx.x] = threadIdx.x;
    if (threadIdx.x % 32 < 16) __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x];
}

// initcheck when `in` is memory nothing wrote (cuMemAlloc's memory starts uninitialized)
extern "C" __global__ void copy_ints(const int *in, int *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = in[i];
}
