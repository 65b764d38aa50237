#define BLOCK 256
__kernel void nbody(__global const float4 *restrict pos, __global float4 *restrict acc, int n, float eps2)
{
    __local float4 tile[BLOCK];
    int lid = get_local_id(0);
    float4 p = pos[get_global_id(0)];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int t = 0; t < n; t += BLOCK) {
        tile[lid] = pos[t + lid];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = 0; j < BLOCK; ++j) {
            float4 q = tile[j];
            float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
            float r2 = dx * dx + dy * dy + dz * dz + eps2;
            float inv = rsqrt(r2);
            float s = q.w * inv * inv * inv;
            ax += dx * s; ay += dy * s; az += dz * s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    acc[get_global_id(0)] = (float4)(ax, ay, az, 0.0f);
}
