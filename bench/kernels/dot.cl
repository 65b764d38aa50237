// Named dot_product: "dot" is an OpenCL built-in function.
#define BLOCK 256
__kernel void dot_product(__global const float *restrict x, __global const float *restrict y, __global float *restrict partial, int n)
{
    __local float s[BLOCK];
    int lid = get_local_id(0);
    float acc = 0.0f;
    for (int i = get_group_id(0) * BLOCK + lid; i < n; i += get_num_groups(0) * BLOCK)
        acc += x[i] * y[i];
    s[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (lid < stride) s[lid] += s[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) partial[get_group_id(0)] = s[0];
}
