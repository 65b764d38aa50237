#define BINS 256
__kernel void histogram(__global const uchar *restrict data, __global uint *restrict hist, int n)
{
    __local uint h[BINS];
    int lid = get_local_id(0);
    h[lid] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = get_global_id(0); i < n; i += get_global_size(0))
        atomic_inc(&h[data[i]]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (h[lid]) atomic_add(&hist[lid], h[lid]);
}
