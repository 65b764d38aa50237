// Kernels for tests/test_async_copy.py: cp.async.bulk, cp.reduce.async.bulk, bulk groups, fence.proxy.async
// and mbarrier semantics beyond the H100's recorded set.  Regenerate the PTX with regen.sh.
#include <cstdint>

__device__ __forceinline__ uint32_t smem(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ bool mbar_test_parity(uint64_t* bar, uint32_t parity)
{
    uint32_t ok;
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(ok) : "r"(smem(bar)), "r"(parity) : "memory");
    return ok != 0;
}

// a spin on try_wait.parity: the waiting threads run before the one that completes the phase
__device__ __forceinline__ void mbar_wait_parity(uint64_t* bar, uint32_t parity)
{
    uint32_t ok = 0;
    while (!ok)
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(ok) : "r"(smem(bar)), "r"(parity) : "memory");
}

__device__ __forceinline__ void mbar_wait_state(uint64_t* bar, uint64_t state)
{
    uint32_t ok = 0;
    while (!ok)
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.shared::cta.b64 p, [%1], %2, 1000;\n selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(ok) : "r"(smem(bar)), "l"(state) : "memory");
}

// Global -> shared by bulk copies completing on an mbarrier (issued by the block's LAST thread, after the others
// started waiting), shared -> shared, then every thread changes its words, fence.proxy.async, and shared -> global
// by a bulk group.  out: per block nbytes (x * 3 + 1 of src), then the shared -> shared copy of the first 64 bytes;
// flags: per thread test_wait.parity(0) | test_wait.parity(1) << 1 after the wait.
extern "C" __global__ void bulk_roundtrip(const uint32_t* src, uint32_t* out, uint32_t* flags, uint32_t nbytes)
{
    __shared__ alignas(128) uint32_t buf[1024];
    __shared__ alignas(128) uint32_t copy[16];
    __shared__ uint64_t bar;
    const uint32_t* s = src + blockIdx.x * (nbytes / 4);
    uint32_t* o = out + blockIdx.x * (nbytes / 4 + 16);
    if (threadIdx.x == 0) {
        mbar_init(&bar, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == blockDim.x - 1) {
        uint32_t half = nbytes / 2;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem(&bar)), "r"(nbytes)
                     : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(smem(buf)), "l"(s), "r"(half), "r"(smem(&bar)) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(smem(buf) + half), "l"((const char*)s + half), "r"(half), "r"(smem(&bar)) : "memory");
    }
    mbar_wait_parity(&bar, 0);
    flags[blockIdx.x * blockDim.x + threadIdx.x] = mbar_test_parity(&bar, 0) | mbar_test_parity(&bar, 1) << 1;
    __syncthreads();
    if (threadIdx.x == 0) {  // shared -> shared, completing phase 1 on the same mbarrier
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 64;" :: "r"(smem(&bar)) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], 64, [%2];"
                     :: "r"(smem(copy)), "r"(smem(buf)), "r"(smem(&bar)) : "memory");
    }
    mbar_wait_parity(&bar, 1);
    for (uint32_t i = threadIdx.x; i < nbytes / 4; i += blockDim.x)
        buf[i] = buf[i] * 3 + 1;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(o), "r"(smem(buf)),
                     "r"(nbytes) : "memory");
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 64;" :: "l"(o + nbytes / 4),
                     "r"(smem(copy)) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}

// cp.reduce.async.bulk from shared memory into global arrays (a bulk group) and into shared memory (completing on
// an mbarrier).  n words each; block 128, one block.
extern "C" __global__ void bulk_reduce(const uint32_t* src, uint32_t* add_u32, int32_t* min_s32, uint32_t* max_u32,
                                       float* add_f32, unsigned long long* xor_b64, uint32_t* inc_u32,
                                       uint32_t* dec_u32, uint32_t* smem_sum, uint32_t n)
{
    __shared__ alignas(128) uint32_t s[1024];
    __shared__ alignas(128) uint32_t acc[1024];
    __shared__ uint64_t bar;
    for (uint32_t i = threadIdx.x; i < 2 * n; i += blockDim.x)
        s[i] = src[i];
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
        acc[i] = 1000u * i;
    if (threadIdx.x == 0)
        mbar_init(&bar, 1);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t bytes = 4 * n, src_s = smem(s);
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%0], [%1], %2;"
                     :: "l"(add_u32), "r"(src_s), "r"(bytes) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.min.s32 [%0], [%1], %2;"
                     :: "l"(min_s32), "r"(src_s), "r"(bytes) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.max.u32 [%0], [%1], %2;"
                     :: "l"(max_u32), "r"(src_s), "r"(bytes) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;"
                     :: "l"(add_f32), "r"(src_s), "r"(bytes) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.xor.b64 [%0], [%1], %2;"
                     :: "l"(xor_b64), "r"(src_s), "r"(2 * bytes) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.inc.u32 [%0], [%1], %2;"
                     :: "l"(inc_u32), "r"(src_s), "r"(bytes) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.dec.u32 [%0], [%1], %2;"
                     :: "l"(dec_u32), "r"(src_s), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem(&bar)), "r"(bytes)
                     : "memory");
        asm volatile("cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.add.u32 "
                     "[%0], [%1], %2, [%3];" :: "r"(smem(acc)), "r"(src_s), "r"(bytes), "r"(smem(&bar)) : "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    mbar_wait_parity(&bar, 0);
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
        smem_sum[i] = acc[i];
}

// mbarrier semantics, block 64: arrive_drop lowers the expected count of later phases; arrive with a state token
// and try_wait(state); cp.async.mbarrier.arrive.noinc counts as an arrival, without .noinc it does not; inval.
// flags per thread: bit 0 phase 0 complete, bit 1 phase 1 complete (only the 32 non-dropping threads arrived),
// bit 2 test_wait.parity(0) in phase 2 (0), bit 3 the noinc barrier's phase 0 complete, bit 4 the other one's.
// out: per thread (noinc copy of src[63 - tid], plain copy of src[(tid + 1) % 64]).
extern "C" __global__ void mbar_semantics(const uint32_t* src, uint32_t* flags, uint32_t* out)
{
    __shared__ uint64_t bar[3];
    __shared__ alignas(16) uint32_t a[64];
    __shared__ alignas(16) uint32_t b[64];
    uint32_t t = threadIdx.x, f = 0;
    if (t == 0) {
        mbar_init(&bar[0], 64);
        mbar_init(&bar[1], 64);
        mbar_init(&bar[2], 64);
    }
    __syncthreads();
    uint64_t state;
    if (t < 32)
        asm volatile("mbarrier.arrive_drop.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem(&bar[0])) : "memory");
    else
        asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem(&bar[0])) : "memory");
    mbar_wait_state(&bar[0], state);
    f |= mbar_test_parity(&bar[0], 0);
    __syncthreads();
    if (t >= 32) {
        asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(state) : "r"(smem(&bar[0])) : "memory");
        mbar_wait_state(&bar[0], state);
    }
    __syncthreads();
    f |= mbar_test_parity(&bar[0], 1) << 1;
    f |= mbar_test_parity(&bar[0], 0) << 2;
    // cp.async + cp.async.mbarrier.arrive.noinc: each thread's arrive-on counts
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(smem(&a[t])), "l"(src + t) : "memory");
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" :: "r"(smem(&bar[1])) : "memory");
    mbar_wait_parity(&bar[1], 0);
    f |= mbar_test_parity(&bar[1], 0) << 3;
    out[2 * t] = a[63 - t];
    // without .noinc the arrive-on is balanced by an increment: the explicit arrive completes the phase
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem(&b[t & ~3u])), "l"(src + (t & ~3u))
                 : "memory");
    asm volatile("cp.async.mbarrier.arrive.shared.b64 [%0];" :: "r"(smem(&bar[2])) : "memory");
    asm volatile("mbarrier.arrive.shared.b64 _, [%0];" :: "r"(smem(&bar[2])) : "memory");
    mbar_wait_parity(&bar[2], 0);
    f |= mbar_test_parity(&bar[2], 0) << 4;
    out[2 * t + 1] = b[(t + 1) % 64];
    flags[t] = f;
    __syncthreads();
    if (t == 0)
        asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(smem(&bar[0])) : "memory");
}

// cp.reduce.async.bulk .add.noftz.f16 and .max.bf16 from shared memory into global arrays; one block.
extern "C" __global__ void bulk_reduce_half(const uint16_t* src, uint16_t* add_f16, uint16_t* max_bf16, uint32_t n)
{
    __shared__ alignas(128) uint16_t s[2048];
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
        s[i] = src[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.f16 [%0], [%1], %2;"
                     :: "l"(add_f16), "r"(smem(s)), "r"(2 * n) : "memory");
        asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.max.bf16 [%0], [%1], %2;"
                     :: "l"(max_bf16), "r"(smem(s)), "r"(2 * n) : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
