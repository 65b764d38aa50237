// The calls CUDA samples make around their kernels: occupancy, a kernel opting in to more than 48 KB of
// dynamic shared memory (cudaFuncSetAttribute), device flags, stream priorities, host functions and stream
// callbacks in stream order, stream-ordered allocation, registered host memory, pointer attributes, pitched
// 2D copies and limits.
#define PROGRAM "api_samples"
#include "check.h"
#include <vector>

__global__ void fill_shared(int *out, int n) {
    extern __shared__ int buf[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = i * 3;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buf[n - 1 - i];
}

__global__ void add_row(float *m, size_t pitch, int width, float v) {
    float *row = (float *)((char *)m + blockIdx.x * pitch);
    for (int x = threadIdx.x; x < width; x += blockDim.x) row[x] += v;
}

static int order[4], steps = 0;
static void CUDART_CB host_step(void *arg) { order[steps++] = (int)(size_t)arg; }
static void CUDART_CB callback_step(cudaStream_t, cudaError_t status, void *arg) {
    order[steps++] = status == cudaSuccess ? (int)(size_t)arg : -1;
}

static int fails = 0;
#define EXPECT(cond)                                                                     \
    do {                                                                                 \
        if (!(cond)) { std::printf("api_samples: expected %s\n", #cond); fails++; }      \
    } while (0)

int main() {
    CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    unsigned flags = 0;
    CHECK(cudaGetDeviceFlags(&flags));
    EXPECT((flags & cudaDeviceScheduleBlockingSync) != 0);

    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fill_shared, 256, 0));
    EXPECT(blocks >= 1 && blocks <= 32);

    const int n = 20000;  // 80 000 bytes of dynamic shared memory: above the 48 KB default
    const size_t smem = n * sizeof(int);
    int *d;
    CHECK(cudaMalloc(&d, smem));
    CHECK(cudaFuncSetAttribute(fill_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    fill_shared<<<1, 256, smem>>>(d, n);
    CHECK(cudaGetLastError());
    std::vector<int> h(n);
    CHECK(cudaMemcpy(h.data(), d, smem, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) if (h[i] != (n - 1 - i) * 3) { fails++; break; }

    int least = 1, greatest = 1;
    CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
    int prio = 1;
    CHECK(cudaStreamGetPriority(s, &prio));
    EXPECT(least == 0 && greatest < 0 && prio == greatest);

    int *a;
    CHECK(cudaMallocAsync(&a, 1024 * sizeof(int), s));
    CHECK(cudaLaunchHostFunc(s, host_step, (void *)1));
    CHECK(cudaMemsetAsync(a, 0, 1024 * sizeof(int), s));
    CHECK(cudaStreamAddCallback(s, callback_step, (void *)2, 0));
    CHECK(cudaLaunchHostFunc(s, host_step, (void *)3));
    CHECK(cudaFreeAsync(a, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(steps == 3 && order[0] == 1 && order[1] == 2 && order[2] == 3);

    static float host_rows[8][100];
    CHECK(cudaHostRegister(host_rows, sizeof host_rows, cudaHostRegisterDefault));
    cudaPointerAttributes pa;
    CHECK(cudaPointerGetAttributes(&pa, host_rows));
    EXPECT(pa.type == cudaMemoryTypeHost);
    CHECK(cudaPointerGetAttributes(&pa, d));
    EXPECT(pa.type == cudaMemoryTypeDevice && pa.devicePointer == d && pa.device == 0);

    float *m;
    size_t pitch = 0;
    CHECK(cudaMallocPitch(&m, &pitch, 100 * sizeof(float), 8));
    EXPECT(pitch >= 100 * sizeof(float) && pitch % 256 == 0);
    for (int r = 0; r < 8; r++) for (int x = 0; x < 100; x++) host_rows[r][x] = (float)(r * 100 + x);
    CHECK(cudaMemcpy2D(m, pitch, host_rows, sizeof host_rows[0], 100 * sizeof(float), 8, cudaMemcpyHostToDevice));
    add_row<<<8, 64>>>(m, pitch, 100, 0.5f);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy2D(host_rows, sizeof host_rows[0], m, pitch, 100 * sizeof(float), 8, cudaMemcpyDeviceToHost));
    for (int r = 0; r < 8; r++) for (int x = 0; x < 100; x++)
        if (host_rows[r][x] != r * 100 + x + 0.5f) { fails++; r = 8; break; }
    CHECK(cudaHostUnregister(host_rows));

    size_t heap = 0;
    CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 16 << 20));
    CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
    EXPECT(heap == (16u << 20));
    int peer = 1;
    CHECK(cudaDeviceCanAccessPeer(&peer, 0, 0));
    EXPECT(peer == 0);

    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(m));
    CHECK(cudaFree(d));
    if (fails) { std::printf("api_samples: FAIL %d checks\n", fails); return 1; }
    std::printf("api_samples: ok occupancy %d blocks/SM, %zu bytes of dynamic shared memory, pitch %zu\n", blocks,
                smem, pitch);
    return 0;
}
