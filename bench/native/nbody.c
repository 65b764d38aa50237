/* All-pairs n-body accelerations; pos[i] = (x, y, z, mass). */
#include <math.h>
void nbody(const float *restrict pos, float *restrict acc, int n, float eps2)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; ++i) {
        float px = pos[4 * i], py = pos[4 * i + 1], pz = pos[4 * i + 2];
        float ax = 0.0f, ay = 0.0f, az = 0.0f;
#pragma omp simd reduction(+ : ax, ay, az)
        for (int j = 0; j < n; ++j) {
            float dx = pos[4 * j] - px, dy = pos[4 * j + 1] - py, dz = pos[4 * j + 2] - pz;
            float r2 = dx * dx + dy * dy + dz * dz + eps2;
            float inv = 1.0f / sqrtf(r2);
            float s = pos[4 * j + 3] * inv * inv * inv;
            ax += dx * s; ay += dy * s; az += dz * s;
        }
        acc[4 * i] = ax; acc[4 * i + 1] = ay; acc[4 * i + 2] = az; acc[4 * i + 3] = 0.0f;
    }
}
