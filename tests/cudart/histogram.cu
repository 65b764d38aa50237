// A 256-bin histogram of 2^20 bytes: each block counts into its own shared-memory histogram with shared
// atomics (the bytes read four at a time), then adds its bins into the global one with global atomics.
#define PROGRAM "histogram"
#include "check.h"
#include <vector>

#define BINS 256

__global__ void histogram256(const unsigned int *words, int nwords, unsigned int *bins) {
    __shared__ unsigned int local[BINS];
    for (int i = threadIdx.x; i < BINS; i += blockDim.x) local[i] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < nwords; i += gridDim.x * blockDim.x) {
        unsigned int w = words[i];
        atomicAdd(&local[w & 0xFF], 1u);
        atomicAdd(&local[(w >> 8) & 0xFF], 1u);
        atomicAdd(&local[(w >> 16) & 0xFF], 1u);
        atomicAdd(&local[w >> 24], 1u);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < BINS; i += blockDim.x)
        if (local[i]) atomicAdd(&bins[i], local[i]);
}

int main() {
    const int nbytes = 1 << 20, nwords = nbytes / 4;
    std::vector<unsigned char> h(nbytes);
    unsigned int seed = 12345, expect[BINS] = {0}, got[BINS];
    for (int i = 0; i < nbytes; i++) {
        seed = seed * 1103515245u + 12345u;
        // skewed: low values far more frequent, so some bins see heavy contention
        unsigned int r = (seed >> 16) & 0xFF;
        h[i] = (unsigned char)(i % 3 == 0 ? r & 0x0F : r);
        expect[h[i]]++;
    }
    unsigned int *dwords, *dbins;
    CHECK(cudaMalloc(&dwords, nbytes));
    CHECK(cudaMalloc(&dbins, BINS * sizeof(unsigned int)));
    CHECK(cudaMemcpy(dwords, h.data(), nbytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dbins, 0, BINS * sizeof(unsigned int)));
    histogram256<<<64, 256>>>(dwords, nwords, dbins);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got, dbins, sizeof got, cudaMemcpyDeviceToHost));
    unsigned long long total = 0;
    for (int b = 0; b < BINS; b++) {
        total += got[b];
        if (got[b] != expect[b]) {
            std::printf("histogram: FAIL bin %d has %u, expected %u\n", b, got[b], expect[b]);
            return 1;
        }
    }
    CHECK(cudaFree(dwords));
    CHECK(cudaFree(dbins));
    std::printf("histogram: ok %d bins, %llu bytes counted\n", BINS, total);
    return 0;
}
