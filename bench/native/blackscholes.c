#include <math.h>
static inline float cnd(float d)
{
    const float A1 = 0.31938153f, A2 = -0.356563782f, A3 = 1.781477937f, A4 = -1.821255978f, A5 = 1.330274429f;
    const float RSQRT2PI = 0.39894228040143267793994605993438f;
    float K = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float c = RSQRT2PI * expf(-0.5f * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
    return d > 0 ? 1.0f - c : c;
}

void blackscholes(float *restrict call, float *restrict put, const float *restrict S, const float *restrict X,
                  const float *restrict T, float R, float V, int n)
{
#pragma omp parallel for simd schedule(static)
    for (int i = 0; i < n; ++i) {
        float s = S[i], x = X[i], t = T[i];
        float sqrtT = sqrtf(t);
        float d1 = (logf(s / x) + (R + 0.5f * V * V) * t) / (V * sqrtT);
        float d2 = d1 - V * sqrtT;
        float cnd1 = cnd(d1), cnd2 = cnd(d2);
        float expRT = expf(-R * t);
        call[i] = s * cnd1 - x * expRT * cnd2;
        put[i] = x * expRT * (1.0f - cnd2) - s * (1.0f - cnd1);
    }
}
