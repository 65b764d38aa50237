// nvcc-arch: sm_90
// clean: warp 0 stores an 8x8 b16 tile with stmatrix (each lane's 16-byte row: the fragment layout), a
// barrier, then warp 1 reads it back word by word (initcheck sees stmatrix's writes)
extern "C" __global__ void clean_stmatrix(const unsigned* in, unsigned* out) {
    __shared__ __align__(16) unsigned tile[32];
    int t = threadIdx.x;
    if (t < 32) {
        unsigned row = (unsigned)__cvta_generic_to_shared(&tile[4 * (t % 8)]);
        asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" ::"r"(row), "r"(in[t]) : "memory");
    }
    __syncthreads();
    if (t >= 32) out[t - 32] = tile[t - 32];
}
