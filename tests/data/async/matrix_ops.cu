// Kernels for tests/test_matrix_moves.py: ldmatrix / stmatrix / movmatrix .m8n8 .b16 with rows at arbitrary
// (permuted) addresses, generic and .shared addressing.  Regenerate the PTX with regen.sh.
#include <cstdint>

__device__ __forceinline__ uint32_t smem(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// Block 64 (two warps).  img: 128 rows of 8 b16 copied to shared memory.  Lane l of warp w addresses row
// rows[32w + l] for the loads (x4: matrix i row r is lane 8i + r's row); stmatrix writes 64 rows of shared
// memory, lane l of warp w addressing row srows[32w + l].
// ld/ldt: per thread the 4 registers of ldmatrix.x4 (generic address) and .x4.trans (.shared);
// x1/x2: ldmatrix.x1 and .x2.trans (.shared::cta); mv: movmatrix.trans of ld's register 0;
// st/stt: the 64 rows after stmatrix.x4 of ld's registers (.shared) and stmatrix.x2.trans of ldt's first two
// (generic; rows of lanes 16..31 left as they were: 0xFFFF).
extern "C" __global__ void matrix_moves(const uint16_t* img, const uint32_t* rows, const uint32_t* srows,
                                        uint32_t* ld, uint32_t* ldt, uint32_t* x1, uint32_t* x2, uint32_t* mv,
                                        uint16_t* st, uint16_t* stt)
{
    __shared__ alignas(16) uint16_t m[128 * 8];
    __shared__ alignas(16) uint16_t o[64 * 8];
    __shared__ alignas(16) uint16_t ot[64 * 8];
    uint32_t t = threadIdx.x;
    for (uint32_t i = t; i < 128 * 8; i += blockDim.x)
        m[i] = img[i];
    for (uint32_t i = t; i < 64 * 8; i += blockDim.x)
        o[i] = ot[i] = 0xFFFF;
    __syncthreads();
    const uint16_t* row = &m[rows[t] * 8];
    uint32_t a0, a1, a2, a3, b0, b1, b2, b3, c0, d0, d1, e;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "l"(row) : "memory");
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(b0), "=r"(b1), "=r"(b2), "=r"(b3) : "r"(smem(row)) : "memory");
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared::cta.b16 {%0}, [%1];" : "=r"(c0) : "r"(smem(row)) : "memory");
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared::cta.b16 {%0, %1}, [%2];"
                 : "=r"(d0), "=r"(d1) : "r"(smem(row)) : "memory");
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(e) : "r"(a0));
    uint16_t* srow = &o[srows[t] * 8];
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 :: "r"(smem(srow)), "r"(a0), "r"(a1), "r"(a2), "r"(a3) : "memory");
    uint16_t* trow = &ot[srows[t] * 8];
    asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.b16 [%0], {%1, %2};" :: "l"(trow), "r"(b0), "r"(b1)
                 : "memory");
    ld[4 * t] = a0; ld[4 * t + 1] = a1; ld[4 * t + 2] = a2; ld[4 * t + 3] = a3;
    ldt[4 * t] = b0; ldt[4 * t + 1] = b1; ldt[4 * t + 2] = b2; ldt[4 * t + 3] = b3;
    x1[t] = c0;
    x2[2 * t] = d0; x2[2 * t + 1] = d1;
    mv[t] = e;
    __syncthreads();
    for (uint32_t i = t; i < 64 * 8; i += blockDim.x) {
        st[i] = o[i];
        stt[i] = ot[i];
    }
}

// ldmatrix.x1 whose row address comes from the caller: an out-of-bounds row is a memory fault.
extern "C" __global__ void ldmatrix_at(uint32_t row_offset, uint32_t* out)
{
    __shared__ alignas(16) uint16_t m[8 * 8];
    for (uint32_t i = threadIdx.x; i < 64; i += blockDim.x)
        m[i] = (uint16_t)i;
    __syncthreads();
    uint32_t v, a = smem(m) + (threadIdx.x & 7) * 16 + (threadIdx.x == 3 ? row_offset : 0);
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(v) : "r"(a) : "memory");
    out[threadIdx.x] = v;
}
