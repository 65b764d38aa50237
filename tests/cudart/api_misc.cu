// The rest of this increment's API, and the error rules around it: managed and mapped host memory,
// cudaMemsetAsync with stream and event queries, cudaFuncGetAttributes, a launch with a block the device
// cannot run (cudaErrorInvalidConfiguration, not sticky: cudaGetLastError clears it), and cudaDeviceReset
// followed by fresh allocations and a launch (the kernels' module is loaded again).
#define PROGRAM "api_misc"
#include "check.h"

__global__ void add_to(int *a, int v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += v;
}

static int fails = 0;
#define EXPECT(cond)                                                       \
    do {                                                                   \
        if (!(cond)) { std::printf("api_misc: expected %s\n", #cond); fails++; } \
    } while (0)

int main() {
    const int n = 1000;
    int *m;
    CHECK(cudaMallocManaged(&m, n * sizeof(int), cudaMemAttachGlobal));
    for (int i = 0; i < n; i++) m[i] = i;
    add_to<<<(n + 127) / 128, 128>>>(m, 5, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < n; i++) if (m[i] != i + 5) { fails++; break; }
    CHECK(cudaFree(m));

    int *h;
    CHECK(cudaHostAlloc(&h, n * sizeof(int), cudaHostAllocDefault));
    int *d;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t done;
    CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CHECK(cudaMemsetAsync(d, 0x01, n * sizeof(int), s));
    add_to<<<(n + 127) / 128, 128, 0, s>>>(d, 1, n);
    CHECK(cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaEventRecord(done, s));
    CHECK(cudaEventSynchronize(done));
    EXPECT(cudaEventQuery(done) == cudaSuccess);
    EXPECT(cudaStreamQuery(s) == cudaSuccess);
    for (int i = 0; i < n; i++) if (h[i] != 0x01010101 + 1) { fails++; break; }

    cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, add_to));
    EXPECT(fa.maxThreadsPerBlock >= 256 && fa.numRegs >= 0 && fa.ptxVersion >= 80);

    add_to<<<1, 4096>>>(d, 1, n);  // more threads per block than the device has
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration);
    EXPECT(cudaGetLastError() == cudaSuccess);  // cleared, and the device is still usable
    EXPECT(cudaMemset(d, 0, sizeof(int)) == cudaSuccess);
    EXPECT(cudaFree((void *)0x1234) == cudaErrorInvalidValue);
    EXPECT(cudaPeekAtLastError() == cudaErrorInvalidValue);
    EXPECT(cudaGetLastError() == cudaErrorInvalidValue);

    CHECK(cudaEventDestroy(done));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFreeHost(h));
    CHECK(cudaDeviceReset());
    int *d2, back[4] = {0};
    CHECK(cudaMalloc(&d2, 4 * sizeof(int)));
    CHECK(cudaMemset(d2, 0, 4 * sizeof(int)));
    add_to<<<1, 4>>>(d2, 7, 4);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(back, d2, sizeof back, cudaMemcpyDeviceToHost));
    EXPECT(back[0] == 7 && back[3] == 7);
    CHECK(cudaFree(d2));
    if (fails) { std::printf("api_misc: FAIL %d checks\n", fails); return 1; }
    std::printf("api_misc: ok managed, mapped, async memset, queries, attributes, reset\n");
    return 0;
}
