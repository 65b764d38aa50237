__kernel void jacobi(__global const float *restrict in, __global float *restrict out, int n)
{
    int x = get_global_id(0), y = get_global_id(1);
    if (x >= 1 && x < n - 1 && y >= 1 && y < n - 1)
        out[y * n + x] = 0.25f * (in[(y - 1) * n + x] + in[(y + 1) * n + x] + in[y * n + x - 1] + in[y * n + x + 1]);
}
