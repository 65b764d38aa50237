// Thread-block clusters (sm_90): cg::this_cluster(), map_shared_rank (distributed shared memory) and
// cluster.sync() (tests/test_cooperative.py).  nvcc's PTX is next to this file (regen.sh).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Each block loads its tile into shared memory; after cluster.sync() every thread reads the tile of the
// next block of its cluster (rank + 1, wrapping), then a second sync keeps the memory alive while read.
extern "C" __global__ void __cluster_dims__(2, 1, 1) rotate_tiles(const int* in, int* out) {
    __shared__ int tile[128];
    cg::cluster_group cluster = cg::this_cluster();
    unsigned int rank = cluster.block_rank();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = in[i];
    cluster.sync();
    const int* other = cluster.map_shared_rank(tile, (rank + 1) % cluster.num_blocks());
    int v = other[threadIdx.x];
    cluster.sync();
    out[i] = v;
}

// The programming guide's distributed-shared-memory histogram: the bins are split over the blocks of
// the cluster; every thread adds its elements into the bin's owner block with an atomic, then each
// block adds its slice to the global histogram.  Cluster dims come from the launch (cluster=...).
extern "C" __global__ void cluster_histogram(int* bins, int nbins, int bins_per_block, const int* input,
                                             int n) {
    extern __shared__ int smem[];
    cg::cluster_group cluster = cg::this_cluster();
    int tid = cg::this_grid().thread_rank();
    for (int i = threadIdx.x; i < bins_per_block; i += blockDim.x) smem[i] = 0;
    cluster.sync();
    for (int i = tid; i < n; i += blockDim.x * gridDim.x) {
        int b = min(max(input[i], 0), nbins - 1);
        int dst_rank = b / bins_per_block;
        int dst_offset = b % bins_per_block;
        int* dst = cluster.map_shared_rank(smem, dst_rank);
        atomicAdd(dst + dst_offset, 1);
    }
    cluster.sync();
    int* lbins = bins + cluster.block_rank() * bins_per_block;
    for (int i = threadIdx.x; i < bins_per_block; i += blockDim.x) atomicAdd(&lbins[i], smem[i]);
}

// What a block sees of its cluster: block_rank, num_blocks, block_index (x, y), dim_blocks (x, y),
// the cluster's index in the grid (%clusterid.x/.y) and %is_explicit_cluster.
extern "C" __global__ void cluster_info(unsigned int* out) {
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x != 0) return;
    unsigned int b = blockIdx.x + gridDim.x * blockIdx.y;
    dim3 bi = cluster.block_index();
    dim3 cd = cluster.dim_blocks();
    unsigned int cx, cy;
    asm("mov.u32 %0, %%clusterid.x;" : "=r"(cx));
    asm("mov.u32 %0, %%clusterid.y;" : "=r"(cy));
    unsigned int explicit_cluster;
    asm("{ .reg .pred p; mov.pred p, %%is_explicit_cluster; selp.u32 %0, 1, 0, p; }" : "=r"(explicit_cluster));
    unsigned int* o = out + 9 * b;
    o[0] = cluster.block_rank(); o[1] = cluster.num_blocks(); o[2] = bi.x; o[3] = bi.y;
    o[4] = cd.x; o[5] = cd.y; o[6] = cx; o[7] = cy; o[8] = explicit_cluster;
}

// Block rank 1 of each cluster spins until *flag is 0 before cluster.sync(): the other blocks wait in
// the cluster barrier (timeouts must stop the launch).
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_wait_flag(volatile int* flag, int* out) {
    cg::cluster_group cluster = cg::this_cluster();
    if (cluster.block_rank() == 1) while (*flag) {}
    cluster.sync();
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

// Block rank `quitter` of every cluster returns before cluster.sync(): its cluster's other blocks can
// never pass the barrier (ptxjit reports a deadlock).
extern "C" __global__ void __cluster_dims__(4, 1, 1) cluster_early_exit(int* out, int quitter) {
    cg::cluster_group cluster = cg::this_cluster();
    if (cluster.block_rank() == quitter) return;
    cluster.sync();
    out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}

// cluster.query_shared_rank (getctarank) of this block's own shared memory and of every other rank's
// (mapped with map_shared_rank), written by thread r for rank r.
extern "C" __global__ void query_ranks(unsigned int* out) {
    __shared__ int tile[32];
    cg::cluster_group cluster = cg::this_cluster();
    unsigned int b = blockIdx.x + gridDim.x * blockIdx.y;
    cluster.sync();
    unsigned int r = threadIdx.x;
    if (r < cluster.num_blocks()) out[(cluster.num_blocks() + 1) * b + r] =
        cluster.query_shared_rank(cluster.map_shared_rank(tile + r, r));
    if (r == 0) out[(cluster.num_blocks() + 1) * b + cluster.num_blocks()] = cluster.query_shared_rank(tile + 5);
    cluster.sync();
}
