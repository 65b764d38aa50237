// An exclusive prefix sum of 2^16 integers in the work-efficient (up-sweep / down-sweep) form: each block
// scans 512 elements in shared memory (padded against bank conflicts) and writes its total; the block totals
// are scanned by the same kernel, then added back to every element of their block.
#define PROGRAM "scan"
#include "check.h"
#include <vector>

#define BANKS_LOG 5
#define PAD(i) ((i) >> BANKS_LOG)  // one padding word every 32 entries

__global__ void block_scan(const int *in, int *out, int *sums, int n) {
    extern __shared__ int tmp[];
    const int t = threadIdx.x, per_block = 2 * blockDim.x;
    const int base = blockIdx.x * per_block;
    int a = t, b = t + blockDim.x;
    tmp[a + PAD(a)] = base + a < n ? in[base + a] : 0;
    tmp[b + PAD(b)] = base + b < n ? in[base + b] : 0;
    int offset = 1;
    for (int d = per_block >> 1; d > 0; d >>= 1) {  // up-sweep: partial sums up a balanced tree
        __syncthreads();
        if (t < d) {
            int i = offset * (2 * t + 1) - 1, j = offset * (2 * t + 2) - 1;
            tmp[j + PAD(j)] += tmp[i + PAD(i)];
        }
        offset <<= 1;
    }
    if (t == 0) {
        int last = per_block - 1;
        if (sums) sums[blockIdx.x] = tmp[last + PAD(last)];
        tmp[last + PAD(last)] = 0;
    }
    for (int d = 1; d < per_block; d <<= 1) {  // down-sweep: push the prefixes back down
        offset >>= 1;
        __syncthreads();
        if (t < d) {
            int i = offset * (2 * t + 1) - 1, j = offset * (2 * t + 2) - 1;
            int left = tmp[i + PAD(i)];
            tmp[i + PAD(i)] = tmp[j + PAD(j)];
            tmp[j + PAD(j)] += left;
        }
    }
    __syncthreads();
    if (base + a < n) out[base + a] = tmp[a + PAD(a)];
    if (base + b < n) out[base + b] = tmp[b + PAD(b)];
}

__global__ void add_block_offsets(int *data, const int *offsets, int n) {
    int i = blockIdx.x * 2 * blockDim.x + threadIdx.x;
    int add = offsets[blockIdx.x];
    if (i < n) data[i] += add;
    if (i + blockDim.x < n) data[i + blockDim.x] += add;
}

int main() {
    const int n = 1 << 16, threads = 256, per_block = 2 * threads, blocks = (n + per_block - 1) / per_block;
    std::vector<int> h(n), got(n), expect(n);
    for (int i = 0; i < n; i++) h[i] = (int)((i * 2654435761u) >> 27) - 7;  // in [-7, 24]
    for (int i = 0, run = 0; i < n; i++) { expect[i] = run; run += h[i]; }
    int *din, *dout, *dsums, *dsums_scanned;
    CHECK(cudaMalloc(&din, n * sizeof(int)));
    CHECK(cudaMalloc(&dout, n * sizeof(int)));
    CHECK(cudaMalloc(&dsums, blocks * sizeof(int)));
    CHECK(cudaMalloc(&dsums_scanned, blocks * sizeof(int)));
    CHECK(cudaMemcpy(din, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    auto smem = [](int elems) { return (elems + PAD(elems - 1) + 1) * sizeof(int); };
    block_scan<<<blocks, threads, smem(per_block)>>>(din, dout, dsums, n);
    CHECK(cudaGetLastError());
    // the 128 block totals: one block of 64 threads scans them
    block_scan<<<1, blocks / 2, smem(blocks)>>>(dsums, dsums_scanned, nullptr, blocks);
    CHECK(cudaGetLastError());
    add_block_offsets<<<blocks, threads>>>(dout, dsums_scanned, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (got[i] != expect[i]) {
            std::printf("scan: FAIL element %d is %d, expected %d\n", i, got[i], expect[i]);
            return 1;
        }
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    CHECK(cudaFree(dsums));
    CHECK(cudaFree(dsums_scanned));
    std::printf("scan: ok %d elements, %d blocks, total %d\n", n, blocks, expect[n - 1] + h[n - 1]);
    return 0;
}
