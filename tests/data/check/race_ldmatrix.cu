// racecheck: warp 0 fills an 8x8 b16 tile that warp 1 loads with ldmatrix, with no barrier between them.
// sync != 0: a __syncthreads() between them (clean).  Each lane of warp 1 reads the 16-byte row it names.
extern "C" __global__ void race_ldmatrix(const unsigned* in, unsigned* out, int sync) {
    __shared__ __align__(16) unsigned tile[32];  // 8 rows of 8 b16: 16 bytes each
    int t = threadIdx.x;
    if (t < 32) tile[t] = in[t];  // PEER: the write
    if (sync) __syncthreads();
    if (t >= 32) {
        unsigned row = (unsigned)__cvta_generic_to_shared(&tile[4 * (t % 8)]);
        unsigned r;
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r) : "r"(row));  // BUG: race RAW
        out[t - 32] = r;
    }
}
