// Bitonic sort of 2^15 unsigned keys (with their values): 1024-key chunks are sorted in shared memory,
// alternately ascending and descending so that neighbours form bitonic sequences; then every merge size
// from 2048 up runs its long strides as global-memory passes (one launch each) and finishes its strides
// below 1024 in shared memory.  Each thread owns one compare-and-swap pair per step; barriers in the loops.
#define PROGRAM "bitonic_sort"
#include "check.h"
#include <algorithm>
#include <vector>

#define CHUNK 1024  // keys a block holds in shared memory; 512 threads

__device__ inline void compare_swap(unsigned &ka, unsigned &va, unsigned &kb, unsigned &vb, bool ascending) {
    if ((ka > kb) == ascending) {
        unsigned t = ka; ka = kb; kb = t;
        t = va; va = vb; vb = t;
    }
}

// sort each chunk: even chunks end ascending, odd ones descending
__global__ void sort_chunks(unsigned *keys, unsigned *vals) {
    __shared__ unsigned sk[CHUNK], sv[CHUNK];
    const unsigned base = blockIdx.x * CHUNK, t = threadIdx.x;
    sk[t] = keys[base + t];
    sv[t] = vals[base + t];
    sk[t + CHUNK / 2] = keys[base + t + CHUNK / 2];
    sv[t + CHUNK / 2] = vals[base + t + CHUNK / 2];
    for (unsigned size = 2; size <= CHUNK; size <<= 1) {
        for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
            __syncthreads();
            unsigned i = 2 * t - (t & (stride - 1));
            // a `size`-run sorts ascending when its position's `size` bit is clear: runs alternate
            compare_swap(sk[i], sv[i], sk[i + stride], sv[i + stride], ((base + i) & size) == 0);
        }
    }
    __syncthreads();
    keys[base + t] = sk[t];
    vals[base + t] = sv[t];
    keys[base + t + CHUNK / 2] = sk[t + CHUNK / 2];
    vals[base + t + CHUNK / 2] = sv[t + CHUNK / 2];
}

// one global step of a merge of `size`-runs: pairs `stride` apart
__global__ void merge_global(unsigned *keys, unsigned *vals, unsigned n, unsigned size, unsigned stride) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;  // one pair per thread: n / 2 threads
    if (t >= n / 2) return;
    unsigned i = 2 * t - (t & (stride - 1));
    bool ascending = (i & size) == 0;  // always, in the last merge (size == n)
    unsigned ka = keys[i], kb = keys[i + stride], va = vals[i], vb = vals[i + stride];
    compare_swap(ka, va, kb, vb, ascending);
    keys[i] = ka; keys[i + stride] = kb;
    vals[i] = va; vals[i + stride] = vb;
}

// the strides below CHUNK of a merge of `size`-runs, in shared memory
__global__ void merge_shared(unsigned *keys, unsigned *vals, unsigned size) {
    __shared__ unsigned sk[CHUNK], sv[CHUNK];
    const unsigned base = blockIdx.x * CHUNK, t = threadIdx.x;
    sk[t] = keys[base + t];
    sv[t] = vals[base + t];
    sk[t + CHUNK / 2] = keys[base + t + CHUNK / 2];
    sv[t + CHUNK / 2] = vals[base + t + CHUNK / 2];
    bool ascending = (base & size) == 0;
    for (unsigned stride = CHUNK / 2; stride > 0; stride >>= 1) {
        __syncthreads();
        unsigned i = 2 * t - (t & (stride - 1));
        compare_swap(sk[i], sv[i], sk[i + stride], sv[i + stride], ascending);
    }
    __syncthreads();
    keys[base + t] = sk[t];
    vals[base + t] = sv[t];
    keys[base + t + CHUNK / 2] = sk[t + CHUNK / 2];
    vals[base + t + CHUNK / 2] = sv[t + CHUNK / 2];
}

int main() {
    const unsigned n = 1 << 15, chunks = n / CHUNK;
    std::vector<unsigned> hk(n), hv(n), gk(n), gv(n);
    unsigned seed = 2024;
    for (unsigned i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        hk[i] = seed >> 12;  // 20-bit keys: duplicates occur
        hv[i] = i;
    }
    unsigned *dk, *dv;
    CHECK(cudaMalloc(&dk, n * sizeof(unsigned)));
    CHECK(cudaMalloc(&dv, n * sizeof(unsigned)));
    CHECK(cudaMemcpy(dk, hk.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dv, hv.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    sort_chunks<<<chunks, CHUNK / 2>>>(dk, dv);
    CHECK(cudaGetLastError());
    int launches = 1;
    for (unsigned size = 2 * CHUNK; size <= n; size <<= 1) {
        for (unsigned stride = size / 2; stride >= CHUNK; stride >>= 1, launches++)
            merge_global<<<n / 2 / 256, 256>>>(dk, dv, n, size, stride);
        merge_shared<<<chunks, CHUNK / 2>>>(dk, dv, size);
        launches++;
        CHECK(cudaGetLastError());
    }
    CHECK(cudaMemcpy(gk.data(), dk, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(gv.data(), dv, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    std::vector<unsigned> expect(hk);
    std::sort(expect.begin(), expect.end());
    for (unsigned i = 0; i < n; i++) {
        if (gk[i] != expect[i]) {
            std::printf("bitonic_sort: FAIL key %u is %u, expected %u\n", i, gk[i], expect[i]);
            return 1;
        }
        if (gv[i] >= n || hk[gv[i]] != gk[i]) {  // each value still travels with its key
            std::printf("bitonic_sort: FAIL value %u (%u) does not belong to key %u\n", i, gv[i], gk[i]);
            return 1;
        }
    }
    CHECK(cudaFree(dk));
    CHECK(cudaFree(dv));
    std::printf("bitonic_sort: ok %u keys, %d launches\n", n, launches);
    return 0;
}
