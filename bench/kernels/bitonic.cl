#define SEG 1024
__kernel void bitonic(__global const uint *restrict src, __global uint *restrict dst)
{
    __local uint s[SEG];
    uint lid = get_local_id(0);
    __global const uint *in = src + get_group_id(0) * SEG;
    __global uint *out = dst + get_group_id(0) * SEG;
    s[lid] = in[lid];
    s[lid + SEG / 2] = in[lid + SEG / 2];
    for (uint size = 2; size <= SEG; size <<= 1) {
        for (uint stride = size / 2; stride > 0; stride >>= 1) {
            barrier(CLK_LOCAL_MEM_FENCE);
            uint pos = 2 * lid - (lid & (stride - 1));
            bool ascending = ((lid & (size / 2)) == 0) || size == SEG;
            uint a = s[pos], b = s[pos + stride];
            if ((a > b) == ascending) { s[pos] = b; s[pos + stride] = a; }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    out[lid] = s[lid];
    out[lid + SEG / 2] = s[lid + SEG / 2];
}
