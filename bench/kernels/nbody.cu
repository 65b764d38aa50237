// All-pairs n-body accelerations (compute bound): pos[i] = (x, y, z, mass); shared-memory tiles of
// blockDim.x bodies; rsqrtf.  n a multiple of the block size (256).
#define BLOCK 256
extern "C" __global__ void nbody(const float4* __restrict__ pos, float4* __restrict__ acc, int n, float eps2)
{
    __shared__ float4 tile[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    float4 p = pos[i];
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int t = 0; t < n; t += BLOCK) {
        tile[threadIdx.x] = pos[t + threadIdx.x];
        __syncthreads();
        for (int j = 0; j < BLOCK; ++j) {
            float4 q = tile[j];
            float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
            float r2 = dx * dx + dy * dy + dz * dz + eps2;
            float inv = rsqrtf(r2);
            float s = q.w * inv * inv * inv;
            ax += dx * s; ay += dy * s; az += dz * s;
        }
        __syncthreads();
    }
    acc[i] = make_float4(ax, ay, az, 0.0f);
}
