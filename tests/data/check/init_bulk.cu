// nvcc-arch: sm_90
// initcheck: thread 0 stages the tile with cp.async.bulk on an mbarrier; every thread reads its word once
// the mbarrier completes.  full == 0 copies only the first 128 bytes: threads 32-63 read unwritten words
extern "C" __global__ void init_bulk(const unsigned* in, unsigned* out, int full) {
    __shared__ __align__(128) unsigned buf[64];
    __shared__ __align__(8) unsigned long long bar;
    int t = threadIdx.x;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    unsigned dst = (unsigned)__cvta_generic_to_shared(buf);
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(b));
    __syncthreads();
    if (t == 0 && full) {
        asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], 256;" ::"r"(b));
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 256, [%2];"
                     ::"r"(dst), "l"(in), "r"(b) : "memory");
    } else if (t == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], 128;" ::"r"(b));
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 128, [%2];"
                     ::"r"(dst), "l"(in), "r"(b) : "memory");
    }
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared.b64 p, [%0], 0;\n @!p bra W;\n}"
                 ::"r"(b) : "memory");
    out[t] = buf[t];  // BUG: uninitialized read
}
