// Two steps of an all-pairs gravitational n-body simulation of 1024 bodies: positions (w: the mass) and
// velocities as float4, each block staging tiles of body positions in shared memory, the inverse distance
// from rsqrtf with a softening term.  Checked against a double-precision host simulation, with a tolerance.
#define PROGRAM "nbody"
#include "check.h"
#include <cmath>
#include <vector>

#define SOFTENING2 0.01f

__device__ float3 interact(float3 acc, float4 me, float4 other) {
    float dx = other.x - me.x, dy = other.y - me.y, dz = other.z - me.z;
    float r2 = dx * dx + dy * dy + dz * dz + SOFTENING2;
    float inv = rsqrtf(r2);
    float s = other.w * inv * inv * inv;
    acc.x += dx * s;
    acc.y += dy * s;
    acc.z += dz * s;
    return acc;
}

__global__ void integrate(const float4 *pos, float4 *new_pos, float4 *vel, int n, float dt) {
    extern __shared__ float4 tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float4 me = i < n ? pos[i] : make_float4(0, 0, 0, 0);
    float3 acc = make_float3(0, 0, 0);
    for (int start = 0; start < n; start += blockDim.x) {
        int j = start + threadIdx.x;
        tile[threadIdx.x] = j < n ? pos[j] : make_float4(0, 0, 0, 0);  // a massless body adds nothing
        __syncthreads();
#pragma unroll 4
        for (int k = 0; k < blockDim.x; k++) acc = interact(acc, me, tile[k]);
        __syncthreads();
    }
    if (i < n) {
        float4 v = vel[i];
        v.x += acc.x * dt; v.y += acc.y * dt; v.z += acc.z * dt;
        vel[i] = v;
        new_pos[i] = make_float4(me.x + v.x * dt, me.y + v.y * dt, me.z + v.z * dt, me.w);
    }
}

int main() {
    const int n = 1024, threads = 128, steps = 2;
    const float dt = 0.01f;
    std::vector<float4> hp(n), hv(n), gp(n);
    std::vector<double> p(4 * n), v(3 * n);
    unsigned seed = 7;
    auto rnd = [&]() { seed = seed * 1664525u + 1013904223u; return (float)(seed >> 8) / 16777216.0f * 2 - 1; };
    for (int i = 0; i < n; i++) {
        hp[i] = make_float4(rnd() * 4, rnd() * 4, rnd() * 4, 0.5f + 0.5f * (rnd() + 1));
        hv[i] = make_float4(rnd() * 0.1f, rnd() * 0.1f, rnd() * 0.1f, 0);
        p[4 * i] = hp[i].x; p[4 * i + 1] = hp[i].y; p[4 * i + 2] = hp[i].z; p[4 * i + 3] = hp[i].w;
        v[3 * i] = hv[i].x; v[3 * i + 1] = hv[i].y; v[3 * i + 2] = hv[i].z;
    }
    float4 *dpos[2], *dvel;
    CHECK(cudaMalloc(&dpos[0], n * sizeof(float4)));
    CHECK(cudaMalloc(&dpos[1], n * sizeof(float4)));
    CHECK(cudaMalloc(&dvel, n * sizeof(float4)));
    CHECK(cudaMemcpy(dpos[0], hp.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dvel, hv.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
    for (int s = 0; s < steps; s++) {
        integrate<<<n / threads, threads, threads * sizeof(float4)>>>(dpos[s & 1], dpos[(s + 1) & 1], dvel, n, dt);
        CHECK(cudaGetLastError());
    }
    CHECK(cudaMemcpy(gp.data(), dpos[steps & 1], n * sizeof(float4), cudaMemcpyDeviceToHost));
    for (int s = 0; s < steps; s++) {  // the host reference, in double
        std::vector<double> np(p);
        for (int i = 0; i < n; i++) {
            double ax = 0, ay = 0, az = 0;
            for (int j = 0; j < n; j++) {
                double dx = p[4 * j] - p[4 * i], dy = p[4 * j + 1] - p[4 * i + 1], dz = p[4 * j + 2] - p[4 * i + 2];
                double r2 = dx * dx + dy * dy + dz * dz + SOFTENING2;
                double sc = p[4 * j + 3] / (r2 * std::sqrt(r2));
                ax += dx * sc; ay += dy * sc; az += dz * sc;
            }
            v[3 * i] += ax * dt; v[3 * i + 1] += ay * dt; v[3 * i + 2] += az * dt;
            np[4 * i] += v[3 * i] * dt; np[4 * i + 1] += v[3 * i + 1] * dt; np[4 * i + 2] += v[3 * i + 2] * dt;
        }
        p = np;
    }
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double e = std::fabs(gp[i].x - p[4 * i]) + std::fabs(gp[i].y - p[4 * i + 1]) +
                   std::fabs(gp[i].z - p[4 * i + 2]);
        if (!(e <= worst)) worst = e;  // a NaN is the worst of all
        if (gp[i].w != (float)p[4 * i + 3]) { std::printf("nbody: FAIL body %d lost its mass\n", i); return 1; }
    }
    CHECK(cudaFree(dpos[0]));
    CHECK(cudaFree(dpos[1]));
    CHECK(cudaFree(dvel));
    if (!(worst < 1e-3)) { std::printf("nbody: FAIL position error %g\n", worst); return 1; }
    std::printf("nbody: ok %d bodies, %d steps, max error %.1e\n", n, steps, worst);
    return 0;
}
