// Stream compaction with warp-aggregated atomics; read-only loads, fences, __syncwarp, __activemask.

// Keeps the elements > thr; order of the output is not deterministic, count is.
extern "C" __global__ void compact_warp_aggregated(const int* __restrict__ in, int* __restrict__ out,
                                                   unsigned* count, int thr, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = (i < n) ? __ldg(&in[i]) : 0;
    bool keep = (i < n) && v > thr;
    unsigned m = __ballot_sync(0xffffffffu, keep);
    unsigned base = 0;
    int leader = __ffs(m) - 1;
    if (lane == leader)
        base = atomicAdd(count, (unsigned)__popc(m));
    base = __shfl_sync(0xffffffffu, base, leader < 0 ? 0 : leader);
    if (keep)
        out[base + __popc(m & ((1u << lane) - 1u))] = v;
}

// Last block done pattern: every block writes its partial sum, fences, takes a ticket; the last block
// to finish sums the partials.  result[0] = total, result[1] = index of the block that did it (any).
extern "C" __global__ void last_block_sum(const int* in, int* partials, unsigned* ticket, int* result, int n)
{
    __shared__ int s[128];
    __shared__ bool is_last;
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    s[tid] = (i < n) ? in[i] : 0;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st >>= 1) {
        if (tid < st)
            s[tid] += s[tid + st];
        __syncthreads();
    }
    if (tid == 0) {
        partials[blockIdx.x] = s[0];
        __threadfence();
        unsigned t = atomicInc(ticket, 0xffffffffu);
        is_last = (t == gridDim.x - 1);
    }
    __syncthreads();
    if (is_last) {
        int acc = 0;
        for (int b = tid; b < gridDim.x; b += blockDim.x)
            acc += ((volatile int*)partials)[b];
        s[tid] = acc;
        __syncthreads();
        if (tid == 0) {
            int tot = 0;
            for (int k = 0; k < blockDim.x; ++k)
                tot += s[k];
            result[0] = tot;
            result[1] = blockIdx.x;
        }
    }
}

// __activemask inside a divergent branch and __syncwarp with that mask.  out[i] = the mask seen by
// thread i, negated-bitwise (~mask) on the even-value path, so both paths stay distinct.
extern "C" __global__ void divergent_activemask(const int* in, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned r;
    if (in[i] & 1) {
        unsigned am = __activemask();
        __syncwarp(am);
        r = am;
    } else {
        unsigned am = __activemask();
        __syncwarp(am);
        r = ~am;
    }
    out[i] = r;
}
