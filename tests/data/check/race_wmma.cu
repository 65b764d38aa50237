// racecheck: warp 0 stages a 16x16 half tile (16 bytes a thread) in shared memory that warp 1 loads with wmma, with no barrier
// between them (sync != 0: a __syncthreads(), clean); warp 1 then computes D = A B (B column-major from
// global memory) and stores it
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void race_wmma(const half* a, const half* b, float* d, int sync) {
    __shared__ __align__(32) half sa[256];
    int t = threadIdx.x;
    if (t < 32) reinterpret_cast<uint4*>(sa)[t] = reinterpret_cast<const uint4*>(a)[t];  // PEER: the write
    if (sync) __syncthreads();
    if (t >= 32) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
        wmma::fill_fragment(fc, 0.0f);
        wmma::load_matrix_sync(fa, sa, 16);  // BUG: race RAW
        wmma::load_matrix_sync(fb, b, 16);
        wmma::mma_sync(fc, fa, fb, fc);
        wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
    }
}
