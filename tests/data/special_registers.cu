// Kernels that read special registers, compiled by nvcc for sm_90 (tests/test_special_registers.py).
#include <cooperative_groups.h>
#include <cuda/ptx>

namespace cg = cooperative_groups;

// A tile wider than a warp keeps its barrier in the shared memory CUDA reserves per block: nvcc reads
// that region's address from %reserved_smem_offset_1 (<cooperative_groups/details/memory.h>).  Each
// tile's first thread sums the tile's values after tile.sync(), next to a user shared array.
extern "C" __global__ void tile64_sums(const int* in, int* out, int n) {
    __shared__ int buf[256];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<64> tile = cg::tiled_partition<64>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? in[i] : 0;
    tile.sync();
    if (tile.thread_rank() == 0) {
        int s = 0;
        for (unsigned k = 0; k < tile.num_threads(); ++k) s += buf[threadIdx.x + k];
        out[i / 64] = s;
    }
}

// The launch's shared-memory sizes, the global timer and the graph handle as libcu++'s cuda::ptx
// reads them.
extern "C" __global__ void launch_registers(unsigned* out, unsigned long long* times) {
    extern __shared__ unsigned dyn[];
    __shared__ unsigned stat[40];
    unsigned t = threadIdx.x;
    if (t < 40) stat[t] = t;
    dyn[t] = t;
    __syncthreads();
    if (t == 0) {
        out[0] = cuda::ptx::get_sreg_dynamic_smem_size();
        out[1] = cuda::ptx::get_sreg_total_smem_size();
        out[2] = cuda::ptx::get_sreg_aggr_smem_size();
        out[3] = stat[3] + dyn[blockDim.x - 1];
        times[0] = cuda::ptx::get_sreg_globaltimer();
        times[1] = cuda::ptx::get_sreg_current_graph_exec();
    }
}
