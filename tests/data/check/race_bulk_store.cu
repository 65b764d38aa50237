// nvcc-arch: sm_90
// racecheck: every thread writes its word of a shared tile, then thread 0 stores the tile to global memory
// with cp.async.bulk; sync == 0 leaves out the __syncthreads() between them (the bulk read races with the
// other threads' writes); sync != 0 is clean
extern "C" __global__ void race_bulk_store(const unsigned* in, unsigned* out, int sync) {
    __shared__ __align__(128) unsigned buf[64];
    int t = threadIdx.x;
    buf[t] = in[t] + 1;  // PEER: the write
    if (sync) __syncthreads();
    if (t == 0) {
        unsigned src = (unsigned)__cvta_generic_to_shared(buf);
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 256;" ::"l"(out), "r"(src) : "memory");  // BUG: race RAW
        asm volatile("cp.async.bulk.commit_group;\n cp.async.bulk.wait_group 0;" ::: "memory");
    }
}
