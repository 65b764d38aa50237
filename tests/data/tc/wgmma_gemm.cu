// Two warpgroups per CTA, each computing a 64x16 f32 tile of C = A (128 x K, f16, row-major) x B (K x 16, f16,
// row-major) with wgmma.mma_async m64n16k16 over K in steps of 16 (scale-d = 0 on the first step, so C starts
// from A x B alone).  A and B go to shared memory in the no-swizzle K-major canonical layout (core matrix = 8 rows
// of 16 bytes): A (m, k) at (m / 8) * 256 + (k / 8) * 128 + (m % 8) * 16 + (k % 8) * 2 (LBO 128, SBO 256) per
// warpgroup tile, B (k, n) at (n / 8) * 256 + (k / 8) * 128 + (n % 8) * 16 + (k % 8) * 2.
// D element i of thread tid (warp w = tid / 32 in the warpgroup, g = lane / 4, t = lane % 4):
//   row 16w + g + 8((i % 4) / 2), col 8(i / 4) + 2t + i % 2.
#include <cuda_fp16.h>
#include <stdint.h>

__device__ static uint64_t desc(const void* smem, uint32_t lbo, uint32_t sbo) {
    uint64_t a = (uint64_t)__cvta_generic_to_shared(smem);
    return ((a & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32);
}

extern "C" __global__ void wgmma_gemm(const half* A, const half* B, float* C, int K) {
    __shared__ __align__(128) half sa[2][64 * 16];
    __shared__ __align__(128) half sb[16 * 16];
    int tid = threadIdx.x, wg = tid / 128, wtid = tid % 128;
    int row0 = blockIdx.x * 128 + wg * 64;
    float d[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = wtid; i < 64 * 16; i += 128) {
            int m = i / 16, k = i % 16;
            sa[wg][((m / 8) * 256 + (k / 8) * 128 + (m % 8) * 16 + (k % 8) * 2) / 2] = A[(row0 + m) * K + k0 + k];
        }
        for (int i = tid; i < 16 * 16; i += 256) {
            int k = i / 16, n = i % 16;
            sb[((n / 8) * 256 + (k / 8) * 128 + (n % 8) * 16 + (k % 8) * 2) / 2] = B[(k0 + k) * 16 + n];
        }
        asm volatile("fence.proxy.async.shared::cta;");
        __syncthreads();
        uint64_t da = desc(sa[wg], 128, 256), db = desc(sb, 128, 256);
        int scale_d = k0 > 0;
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
                     "wgmma.fence.sync.aligned;\n"
                     "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1, 0, 0;\n"
                     "wgmma.commit_group.sync.aligned;\n"
                     "wgmma.wait_group.sync.aligned 0;\n}"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                     : "l"(da), "l"(db), "r"(scale_d));
        __syncthreads();
    }
    int w = wtid / 32, lane = wtid % 32, g = lane / 4, t = lane % 4;
    for (int i = 0; i < 8; ++i)
        C[(row0 + 16 * w + g + 8 * ((i % 4) / 2)) * 16 + 8 * (i / 4) + 2 * t + i % 2] = d[i];
}

// The same product for K = 32 with both k16 steps issued back to back (no barrier between them, one
// commit and wait): a warp may reach the second wgmma while the others still finish the first.
extern "C" __global__ void wgmma_gemm_k32_back_to_back(const half* A, const half* B, float* C) {
    __shared__ __align__(128) half sa[2][2][64 * 16];
    __shared__ __align__(128) half sb[2][16 * 16];
    int tid = threadIdx.x, wg = tid / 128, wtid = tid % 128;
    int row0 = blockIdx.x * 128 + wg * 64;
    for (int s = 0; s < 2; ++s) {
        for (int i = wtid; i < 64 * 16; i += 128) {
            int m = i / 16, k = i % 16;
            sa[wg][s][((m / 8) * 256 + (k / 8) * 128 + (m % 8) * 16 + (k % 8) * 2) / 2] = A[(row0 + m) * 32 + 16 * s + k];
        }
        for (int i = tid; i < 16 * 16; i += 256) {
            int k = i / 16, n = i % 16;
            sb[s][((n / 8) * 256 + (k / 8) * 128 + (n % 8) * 16 + (k % 8) * 2) / 2] = B[(16 * s + k) * 16 + n];
        }
    }
    asm volatile("fence.proxy.async.shared::cta;");
    __syncthreads();
    float d[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    uint64_t da0 = desc(sa[wg][0], 128, 256), db0 = desc(sb[0], 128, 256);
    uint64_t da1 = desc(sa[wg][1], 128, 256), db1 = desc(sb[1], 128, 256);
    asm volatile("wgmma.fence.sync.aligned;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, 0, 1, 1, 0, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0,%1,%2,%3,%4,%5,%6,%7}, %10, %11, 1, 1, 1, 0, 0;\n"
                 "wgmma.commit_group.sync.aligned;\n"
                 "wgmma.wait_group.sync.aligned 0;\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
                 : "l"(da0), "l"(db0), "l"(da1), "l"(db1));
    int w = wtid / 32, lane = wtid % 32, g = lane / 4, t = lane % 4;
    for (int i = 0; i < 8; ++i)
        C[(row0 + 16 * w + g + 8 * ((i % 4) / 2)) * 16 + 8 * (i / 4) + 2 * t + i % 2] = d[i];
}
