__kernel void vadd(__global const float *restrict a, __global const float *restrict b, __global float *restrict c, int n)
{
    int i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i];
}
