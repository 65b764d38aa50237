__kernel void saxpy(int n, float a, __global const float *restrict x, __global float *restrict y)
{
    int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
