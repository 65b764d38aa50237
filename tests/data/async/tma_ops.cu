// Kernels for tests/test_tma.py: cp.async.bulk.tensor (TMA) tile loads completing on an mbarrier and tile stores
// in a bulk group, with the tensor map passed as a __grid_constant__ parameter.  Regenerate with regen.sh.
#include <cstdint>
#include <cuda.h>

__device__ __forceinline__ uint32_t smem(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

__shared__ alignas(1024) uint8_t tile[16384];
__shared__ uint64_t bar;

__device__ __forceinline__ void begin(uint32_t nbytes)
{
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem(&bar)) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem(&bar)), "r"(nbytes)
                     : "memory");
    }
}

// every thread waits for the load, then copies the box's shared bytes out
__device__ __forceinline__ void finish(uint32_t nbytes, uint32_t* out)
{
    uint32_t ok = 0;
    while (!ok)
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(ok) : "r"(smem(&bar)) : "memory");
    for (uint32_t i = threadIdx.x; i < nbytes / 4; i += blockDim.x)
        out[i] = ((const uint32_t*)tile)[i];
}

extern "C" __global__ void tma_load_1d(const __grid_constant__ CUtensorMap tmap, int c0, uint32_t nbytes,
                                       uint32_t* out)
{
    begin(nbytes);
    if (threadIdx.x == 0)
        asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2}], [%3];" :: "r"(smem(tile)), "l"(&tmap), "r"(c0), "r"(smem(&bar)) : "memory");
    finish(nbytes, out);
}

extern "C" __global__ void tma_load_2d(const __grid_constant__ CUtensorMap tmap, int c0, int c1, uint32_t nbytes,
                                       uint32_t* out)
{
    begin(nbytes);
    if (threadIdx.x == 0)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];"
                     :: "r"(smem(tile)), "l"(&tmap), "r"(c0), "r"(c1), "r"(smem(&bar)) : "memory");
    finish(nbytes, out);
}

extern "C" __global__ void tma_load_3d(const __grid_constant__ CUtensorMap tmap, int c0, int c1, int c2,
                                       uint32_t nbytes, uint32_t* out)
{
    begin(nbytes);
    if (threadIdx.x == 0)
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3, %4}], [%5];"
                     :: "r"(smem(tile)), "l"(&tmap), "r"(c0), "r"(c1), "r"(c2), "r"(smem(&bar)) : "memory");
    finish(nbytes, out);
}

extern "C" __global__ void tma_load_5d(const __grid_constant__ CUtensorMap tmap, int c0, int c1, int c2, int c3,
                                       int c4, uint32_t nbytes, uint32_t* out)
{
    begin(nbytes);
    if (threadIdx.x == 0)
        asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
                     :: "r"(smem(tile)), "l"(&tmap), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(smem(&bar))
                     : "memory");
    finish(nbytes, out);
}

// the box's shared bytes come from `in`; one thread stores the box at (c0, c1) in a bulk group
extern "C" __global__ void tma_store_2d(const __grid_constant__ CUtensorMap tmap, int c0, int c1, uint32_t nbytes,
                                        const uint32_t* in)
{
    for (uint32_t i = threadIdx.x; i < nbytes / 4; i += blockDim.x)
        ((uint32_t*)tile)[i] = in[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                     :: "l"(&tmap), "r"(c0), "r"(c1), "r"(smem(tile)) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}

// the box's shared bytes come from `in`; one thread reduces them into the tensor at (c0, c1): which = 0 add,
// 1 min, 2 max, 3 xor, 4 inc (cp.reduce.async.bulk.tensor, the element type is the map's)
extern "C" __global__ void tma_reduce_2d(const __grid_constant__ CUtensorMap tmap, int c0, int c1, uint32_t nbytes,
                                         const uint32_t* in, int which)
{
    for (uint32_t i = threadIdx.x; i < nbytes / 4; i += blockDim.x)
        ((uint32_t*)tile)[i] = in[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        if (which == 0)
            asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];"
                         :: "l"(&tmap), "r"(c0), "r"(c1), "r"(smem(tile)) : "memory");
        else if (which == 1)
            asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.min.tile.bulk_group [%0, {%1, %2}], [%3];"
                         :: "l"(&tmap), "r"(c0), "r"(c1), "r"(smem(tile)) : "memory");
        else if (which == 2)
            asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.max.tile.bulk_group [%0, {%1, %2}], [%3];"
                         :: "l"(&tmap), "r"(c0), "r"(c1), "r"(smem(tile)) : "memory");
        else if (which == 3)
            asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.xor.tile.bulk_group [%0, {%1, %2}], [%3];"
                         :: "l"(&tmap), "r"(c0), "r"(c1), "r"(smem(tile)) : "memory");
        else
            asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.inc.tile.bulk_group [%0, {%1, %2}], [%3];"
                         :: "l"(&tmap), "r"(c0), "r"(c1), "r"(smem(tile)) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}

// A warp-specialized pipeline: lane 0 of warp 0 loads `ntiles` boxes of 8 rows x 32 floats (rows 8t.. of a
// (8 * ntiles) x 32 tensor) through a 2-stage ring of shared buffers, each with a "full" mbarrier (the TMA's
// transactions) and an "empty" one (the 96 consumer threads of warps 1..3 arrive when done with the stage).
// Consumer thread j (0..95) adds element (j / 32 + ... ) of every tile: out[j] = sum over tiles and rows r with
// r % 3 == j / 32 of tile[r][j % 32].
extern "C" __global__ void tma_pipeline(const __grid_constant__ CUtensorMap tmap, int ntiles, float* out)
{
    __shared__ alignas(1024) float ring[2][8 * 32];
    __shared__ uint64_t full[2], empty[2];
    uint32_t t = threadIdx.x;
    if (t == 0) {
        for (int s = 0; s < 2; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem(&full[s])) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 96;" :: "r"(smem(&empty[s])) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (t < 32) {  // producer warp
        if (t == 0) {
            for (int k = 0; k < ntiles; ++k) {
                int s = k & 1;
                if (k >= 2) {  // wait until the consumers released this stage ((k / 2 - 1)-th use completes)
                    uint32_t ok = 0;
                    while (!ok)
                        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                                     " selp.u32 %0, 1, 0, p;\n}"
                                     : "=r"(ok) : "r"(smem(&empty[s])), "r"((k / 2 - 1) & 1) : "memory");
                }
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 1024;" :: "r"(smem(&full[s]))
                             : "memory");
                asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                             " [%0], [%1, {%2, %3}], [%4];"
                             :: "r"(smem(ring[s])), "l"(&tmap), "r"(0), "r"(8 * k), "r"(smem(&full[s])) : "memory");
            }
        }
        return;
    }
    uint32_t j = t - 32;
    float acc = 0.0f;
    for (int k = 0; k < ntiles; ++k) {
        int s = k & 1;
        uint32_t ok = 0;
        while (!ok)
            asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                         " selp.u32 %0, 1, 0, p;\n}" : "=r"(ok) : "r"(smem(&full[s])), "r"((k / 2) & 1) : "memory");
        for (int r = j / 32; r < 8; r += 3)
            acc += ring[s][r * 32 + (j % 32)];
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem(&empty[s])) : "memory");
    }
    out[j] = acc;
}
