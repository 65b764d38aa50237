// Inclusive scan of each work-group of 512 ints in local memory (Hillis-Steele, double-buffered).
#define BLOCK 512
__kernel void scan(__global const int *restrict in, __global int *restrict out)
{
    __local int buf[2][BLOCK];
    int lid = get_local_id(0);
    int i = get_global_id(0);
    int cur = 0;
    buf[0][lid] = in[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = 1; d < BLOCK; d <<= 1) {
        int v = buf[cur][lid];
        if (lid >= d) v += buf[cur][lid - d];
        buf[1 - cur][lid] = v;
        cur = 1 - cur;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    out[i] = buf[cur][lid];
}
