// Cooperative groups: thread_block, tiled_partition (static tiles of 32 and 8), cg::reduce.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// sums[block] = block sum via tile<32> reductions; tile8[i] = sum over i's 8-thread tile; ranks too.
extern "C" __global__ void cg_reduce(const int* in, int* sums, int* tile8, int* ranks, int n)
{
    __shared__ int wsum[32];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<8> t8 = cg::tiled_partition<8>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = (i < n) ? in[i] : 0;
    int ws = cg::reduce(warp, v, cg::plus<int>());
    int s8 = cg::reduce(t8, v, cg::plus<int>());
    if (warp.thread_rank() == 0)
        wsum[warp.meta_group_rank()] = ws;
    block.sync();
    if (i < n) {
        tile8[i] = s8;
        ranks[i] = (int)(t8.thread_rank() * 1000 + t8.meta_group_rank());
    }
    if (block.thread_rank() == 0) {
        int tot = 0;
        for (unsigned w = 0; w < warp.meta_group_size(); ++w)
            tot += wsum[w];
        sums[blockIdx.x] = tot;
    }
}

// Max via tile shfl_down and the any()/ballot() members of a tile.
extern "C" __global__ void cg_tile_ops(const int* in, int* mx, unsigned* ballots, int thr, int n)
{
    cg::thread_block_tile<16> t = cg::tiled_partition<16>(cg::this_thread_block());
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = (i < n) ? in[i] : (int)0x80000000;
    for (int o = t.size() / 2; o > 0; o /= 2)
        v = max(v, t.shfl_down(v, o));
    v = t.shfl(v, 0);
    unsigned b = t.ballot((i < n) && in[i] > thr);
    if (i < n) {
        mx[i] = v;
        ballots[i] = b;
    }
}
