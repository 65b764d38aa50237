// initcheck: ldmatrix .x2 loads two 8x8 tiles of which only the first was written (rows 8-15 of the
// shared tile are never written)
extern "C" __global__ void init_ldmatrix(const unsigned* in, unsigned* out) {
    __shared__ __align__(16) unsigned tile[64];  // 16 rows of 16 bytes
    int t = threadIdx.x;
    tile[t] = in[t];  // the first 8 rows (32 threads x 4 bytes)
    __syncwarp();
    unsigned row = (unsigned)__cvta_generic_to_shared(&tile[4 * (t % 16)]);
    unsigned r0, r1;
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(row));  // BUG: uninitialized read
    out[t] = r0 ^ r1;
}
