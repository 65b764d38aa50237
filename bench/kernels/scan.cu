// Inclusive scan of each block of 512 ints: warp-level scans with __shfl_up_sync, the warp totals
// scanned by the first warp, then added back.
#define BLOCK 512
#define WARPS (BLOCK / 32)
extern "C" __global__ void scan(const int* __restrict__ in, int* __restrict__ out)
{
    __shared__ int warp_sum[WARPS];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int v = in[i];
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        int u = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += u;
    }
    if (lane == 31) warp_sum[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int w = lane < WARPS ? warp_sum[lane] : 0;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            int u = __shfl_up_sync(0xffffffffu, w, d);
            if (lane >= d) w += u;
        }
        if (lane < WARPS) warp_sum[lane] = w;
    }
    __syncthreads();
    if (warp > 0) v += warp_sum[warp - 1];
    out[i] = v;
}
