// Warp votes, matches, shuffles and block-wide barrier reductions.

// Per warp w: out[4w+0] = ballot(v > thr), out[4w+1] = any(v > thr), out[4w+2] = all(v > thr),
// out[4w+3] = ballot(v odd) with inactive tail lanes voting 0.
extern "C" __global__ void warp_votes(const int* in, unsigned* out, int thr, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = (i < n) ? in[i] : 0;
    bool p = (i < n) && v > thr;
    unsigned b = __ballot_sync(0xffffffffu, p);
    int an = __any_sync(0xffffffffu, p);
    int al = __all_sync(0xffffffffu, p);
    unsigned odd = __ballot_sync(0xffffffffu, (i < n) && (v & 1));
    if ((threadIdx.x & 31) == 0) {
        int w = i >> 5;
        out[4 * w + 0] = b;
        out[4 * w + 1] = an;
        out[4 * w + 2] = al;
        out[4 * w + 3] = odd;
    }
}

// match.any: out[i] = mask of lanes in my warp holding the same key.
extern "C" __global__ void warp_match_any(const int* keys, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int k = (i < n) ? keys[i] : -1;
    unsigned m = __match_any_sync(0xffffffffu, k);
    if (i < n)
        out[i] = m;
}

// match.all: out[w] = mask if all lanes of warp w hold the same key, else 0; pred recorded too.
extern "C" __global__ void warp_match_all(const int* keys, unsigned* out, int* pred, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int k = (i < n) ? keys[i] : keys[n - 1];
    int p;
    unsigned m = __match_all_sync(0xffffffffu, k, &p);
    if ((threadIdx.x & 31) == 0) {
        out[i >> 5] = m;
        pred[i >> 5] = p;
    }
}

// Butterfly all-reduce with shfl.xor: every lane ends with the warp sum; also max via xor.
extern "C" __global__ void shfl_xor_allreduce(const int* in, int* sum, int* mx, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = (i < n) ? in[i] : 0;
    int m = (i < n) ? in[i] : (int)0x80000000;
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
        m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
    }
    if (i < n) {
        sum[i] = v;
        mx[i] = m;
    }
}

// Broadcast with shfl.idx: out[i] = value of lane src (from srcs[warp]) of the same warp;
// out2[i] = value of lane (lane + 5) % 32 (rotation); width-8 sub-segments broadcast lane 3 -> out3.
extern "C" __global__ void shfl_broadcast(const float* in, const int* srcs, float* out, float* out2,
                                          float* out3, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    float v = (i < n) ? in[i] : -1.0f;
    int src = srcs[i >> 5];
    float b = __shfl_sync(0xffffffffu, v, src);
    float r = __shfl_sync(0xffffffffu, v, (lane + 5) & 31);
    float s = __shfl_sync(0xffffffffu, v, 3, 8);
    if (i < n) {
        out[i] = b;
        out2[i] = r;
        out3[i] = s;
    }
}

// Barrier reductions: per block out[3b+0] = count(pred), out[3b+1] = or(pred), out[3b+2] = and(pred).
extern "C" __global__ void syncthreads_reduce(const int* in, int* out, int thr, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int p = (i < n) && in[i] > thr;
    int c = __syncthreads_count(p);
    int o = __syncthreads_or(p);
    int a = __syncthreads_and(p);
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x + 0] = c;
        out[3 * blockIdx.x + 1] = o;
        out[3 * blockIdx.x + 2] = a;
    }
}

// Warp-shuffle segmented broadcast with a partial mask: only even lanes take part.
extern "C" __global__ void shfl_partial_mask(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    if ((lane & 1) == 0) {
        int v = (i < n) ? in[i] : 0;
        int r = __shfl_sync(0x55555555u, v, (lane + 2) & 31);
        unsigned b = __ballot_sync(0x55555555u, v > 0);
        if (i < n)
            out[i] = r + (int)__popc(b);
    }
}
