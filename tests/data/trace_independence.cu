// Kernels for the counting run without memory accesses (src/ptxjit/instrument/independence.py): the
// first four decide their control flow from parameters and thread indices only ("independent"); the
// others let a value from memory decide a branch, a loop bound, a guard or a shuffle ("dependent").
#include <cstdint>

// ---------------------------------------------------------------- independent
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// in place, grid-stride: a counting run that stored would scale twice
extern "C" __global__ void scale_inplace(float* x, int n, float f) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        x[i] = x[i] * f;
}

// atomics whose results are unused: a counting run that performed them would count twice
extern "C" __global__ void bin_count(const int* v, int* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[v[i] & 15], 1);
}

// shared memory and barriers (region mode): a tree reduction per block
extern "C" __global__ void block_sum(const float* in, float* out) {
    extern __shared__ float s[];
    unsigned t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] += s[0];
}

// ---------------------------------------------------------------- dependent
// a branch on a loaded value (more work than nvcc if-converts)
extern "C" __global__ void branch_on_load(const int* a, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = a[i];
    if (v > 0) {
        out[i] += v;
        out[n + i] += 2 * v;
    }
}

// a loop bound loaded from memory
extern "C" __global__ void loop_from_memory(const int* reps, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int r = reps[i];
    for (int j = 0; j < r; ++j) out[i] = out[i] * 0.5f + 1.0f;
}

// a flag through an atomic: the thread that draws ticket 0 writes
extern "C" __global__ void ticket(int* counter, int* out) {
    int my = atomicAdd(counter, 1);
    if (my == 0) {
        out[0] += 42;
        out[1] += blockIdx.x * blockDim.x + threadIdx.x + 1;
    }
}

// a shuffle of a loaded value decides the branch
extern "C" __global__ void shfl_branch(const int* a, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lead = __shfl_sync(0xffffffffu, a[i], 0);
    if (lead > 0) {
        out[i] += lead;
        out[i + gridDim.x * blockDim.x] += i;
    }
}

// a store guarded by a predicate from a load (inline PTX: nvcc would branch)
extern "C" __global__ void guarded_store(const int* a, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = a[i];
    asm volatile("{\n\t.reg .pred p;\n\tsetp.gt.s32 p, %0, 0;\n\t@p st.global.u32 [%1], %0;\n\t}"
                 :: "r"(v), "l"(out + i) : "memory");
}
