// A small f16 GEMM on tensor cores: C[M x N] (f32) = A[M x K] (f16, row-major) x B[K x N] (f16, row-major),
// one warp per 16x8 tile of C, k in steps of 16 with mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.
// Fragments are gathered from global memory with the PTX ISA's layout (g = lane / 4, t = lane % 4):
//   A reg j = {A[g + 8(j%2)][2t + 8(j/2)], A[..][.. + 1]},  B reg j = {B[2t + 8j][g], B[2t + 8j + 1][g]},
//   C element i = C[g + 8(i/2)][2t + i%2].
// Also: the same tile with tf32 inputs (m16n8k8), for tolerance tests against NumPy.
#include <cuda_fp16.h>
#include <stdint.h>

__device__ static uint32_t pack(half lo, half hi) {
    return (uint32_t)__half_as_ushort(lo) | ((uint32_t)__half_as_ushort(hi) << 16);
}

extern "C" __global__ void gemm_f16_f32(const half* A, const half* B, float* C, int M, int N, int K) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    int tiles_n = N / 8;
    int m0 = (warp / tiles_n) * 16, n0 = (warp % tiles_n) * 8;
    if (m0 >= M) return;
    int g = lane / 4, t = lane % 4;
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        uint32_t a[4], b[2];
        for (int j = 0; j < 4; ++j) {
            int r = m0 + g + 8 * (j % 2), c = k0 + 2 * t + 8 * (j / 2);
            a[j] = pack(A[r * K + c], A[r * K + c + 1]);
        }
        for (int j = 0; j < 2; ++j) {
            int k = k0 + 2 * t + 8 * j;
            b[j] = pack(B[k * N + n0 + g], B[(k + 1) * N + n0 + g]);
        }
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    for (int i = 0; i < 4; ++i)
        C[(m0 + g + 8 * (i / 2)) * N + n0 + 2 * t + i % 2] = d[i];
}

extern "C" __global__ void gemm_tf32_f32(const float* A, const float* B, float* C, int M, int N, int K) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    int tiles_n = N / 8;
    int m0 = (warp / tiles_n) * 16, n0 = (warp % tiles_n) * 8;
    if (m0 >= M) return;
    int g = lane / 4, t = lane % 4;
    float d[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k0 = 0; k0 < K; k0 += 8) {
        uint32_t a[4], b[2];
        for (int j = 0; j < 4; ++j)
            a[j] = __float_as_uint(A[(m0 + g + 8 * (j % 2)) * K + k0 + t + 4 * (j / 2)]);
        for (int j = 0; j < 2; ++j)
            b[j] = __float_as_uint(B[(k0 + t + 4 * j) * N + n0 + g]);
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    for (int i = 0; i < 4; ++i)
        C[(m0 + g + 8 * (i / 2)) * N + n0 + 2 * t + i % 2] = d[i];
}
