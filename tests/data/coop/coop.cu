// Cooperative launches: kernels using cooperative_groups::this_grid().sync() (tests/test_cooperative.py).
// nvcc's PTX is next to this file (regen.sh).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Phase 1: every block writes its part; grid.sync(); phase 2: every thread reads the element one block
// further on (another block's data), so a missing grid barrier shows as stale values.
extern "C" __global__ void two_phase(const float* in, float* tmp, float* out, int n) {
    cg::grid_group grid = cg::this_grid();
    int nthreads = blockDim.x * blockDim.y;
    int block = blockIdx.x + gridDim.x * blockIdx.y;
    int i = block * nthreads + threadIdx.x + blockDim.x * threadIdx.y;
    if (i < n) tmp[i] = in[i] * 2.0f;
    grid.sync();
    if (i < n) out[i] = tmp[(i + nthreads) % n] + 1.0f;
}

// A persistent kernel: a grid-stride loop sums `x` into one partial per block (a shared-memory tree), then
// a tree across the blocks' partials with one grid.sync() per level; block 0 thread 0 writes the total.
// Every round also records what partial[0] held (a trace of the whole schedule).
extern "C" __global__ void persistent_sum(const int* x, long long* partial, long long* trace, long long* total,
                                          int n) {
    cg::grid_group grid = cg::this_grid();
    __shared__ long long s[256];
    long long acc = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) acc += x[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    int round = 0;
    for (unsigned int w = 1; w < gridDim.x; w *= 2, ++round) {
        grid.sync();
        if (threadIdx.x == 0 && blockIdx.x % (2 * w) == 0 && blockIdx.x + w < gridDim.x)
            partial[blockIdx.x] += partial[blockIdx.x + w];
        grid.sync();
        if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) trace[round] = partial[0];
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) *total = partial[0];
}

// Several time steps of an integer 1D stencil over the whole grid, one grid.sync() per step (the
// steps alternate between two buffers).
extern "C" __global__ void stencil_steps(int* a, int* b, int n, int steps) {
    cg::grid_group grid = cg::this_grid();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int s = 0; s < steps; ++s) {
        int* src = (s & 1) ? b : a;
        int* dst = (s & 1) ? a : b;
        if (i < n) {
            int l = src[(i + n - 1) % n], c = src[i], r = src[(i + 1) % n];
            dst[i] = (l + 2 * c + r) % 1000003;
        }
        grid.sync();
    }
}

// What the grid group says about itself: is_valid() (false outside a cooperative launch, where only
// sync() would trap), num_blocks(), block_rank(), thread_rank(), num_threads().
extern "C" __global__ void grid_info(unsigned long long* out) {
    cg::grid_group grid = cg::this_grid();
    unsigned long long r = grid.thread_rank();
    out[5 * r + 0] = grid.is_valid();
    out[5 * r + 1] = grid.num_blocks();
    out[5 * r + 2] = grid.block_rank();
    out[5 * r + 3] = grid.thread_rank();
    out[5 * r + 4] = grid.num_threads();
}

// Block `quitter` returns before grid.sync(): the other blocks can never pass it (CUDA requires every
// block to call it).  ptxjit reports a deadlock.
extern "C" __global__ void early_exit(int* out, int quitter) {
    cg::grid_group grid = cg::this_grid();
    if (blockIdx.x == quitter) return;
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
    grid.sync();
    out[blockIdx.x * blockDim.x + threadIdx.x] = 2;
}

// Block 0 spins until *flag becomes 0 before the grid barrier; the others wait there (timeouts and
// Ctrl-C must stop the launch).
extern "C" __global__ void wait_flag(volatile int* flag, int* out) {
    cg::grid_group grid = cg::this_grid();
    if (blockIdx.x == 0) while (*flag) {}
    grid.sync();
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

// Block `bad` traps before the grid barrier: the waiting blocks must stop too.
extern "C" __global__ void trap_before_sync(int* out, int bad) {
    cg::grid_group grid = cg::this_grid();
    if (blockIdx.x == bad && threadIdx.x == 0) __trap();
    grid.sync();
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

// The last block writes past the end of `buf` before grid.sync() and then works on for a while; every
// other block writes past the end after it and ends at once.  The last block's fault came first.
extern "C" __global__ void fault_before_sync(float* buf, int n, int work) {
    cg::grid_group grid = cg::this_grid();
    bool last = blockIdx.x == gridDim.x - 1;
    if (last && threadIdx.x == 0) buf[n] = 1.0f;
    grid.sync();
    if (last) {
        float acc = 0.0f;
        for (int k = 0; k < work; ++k) acc = acc * 0.5f + buf[(threadIdx.x + k) % n];
        buf[threadIdx.x % n] = acc;
    } else if (threadIdx.x == 0) {
        buf[n + 1 + blockIdx.x] = 2.0f;
    }
}
