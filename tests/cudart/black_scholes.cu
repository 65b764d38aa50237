// European call and put prices for 2^16 options by the Black-Scholes formula: expf, logf, sqrtf and a
// polynomial approximation of the cumulative normal distribution (Abramowitz and Stegun 26.2.17).  The host
// reference uses erfc in double precision; the prices must agree within a tolerance.
#define PROGRAM "black_scholes"
#include "check.h"
#include <cmath>
#include <vector>

__device__ inline float cnd(float d) {
    const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f, a4 = -1.821255978f, a5 = 1.330274429f;
    const float inv_sqrt_2pi = 0.39894228040143267794f;
    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float tail = inv_sqrt_2pi * expf(-0.5f * d * d) * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));
    return d > 0 ? 1.0f - tail : tail;
}

__global__ void black_scholes(float *call, float *put, const float *spot, const float *strike, const float *years,
                              float rate, float vol, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float s = spot[i], x = strike[i], t = years[i];
        float sqrt_t = sqrtf(t);
        float d1 = (logf(s / x) + (rate + 0.5f * vol * vol) * t) / (vol * sqrt_t);
        float d2 = d1 - vol * sqrt_t;
        float discount = expf(-rate * t);
        float c1 = cnd(d1), c2 = cnd(d2);
        call[i] = s * c1 - x * discount * c2;
        put[i] = x * discount * (1.0f - c2) - s * (1.0f - c1);
    }
}

static double cnd_exact(double d) { return 0.5 * std::erfc(-d / std::sqrt(2.0)); }

int main() {
    const int n = 1 << 16;
    const float rate = 0.02f, vol = 0.30f;
    std::vector<float> s(n), x(n), t(n), c(n), p(n);
    unsigned seed = 99;
    auto uniform = [&](float lo, float hi) {
        seed = seed * 1664525u + 1013904223u;
        return lo + (hi - lo) * (float)(seed >> 8) / 16777216.0f;
    };
    for (int i = 0; i < n; i++) { s[i] = uniform(5, 30); x[i] = uniform(1, 100); t[i] = uniform(0.25f, 10); }
    const size_t bytes = n * sizeof(float);
    float *ds, *dx, *dt, *dc, *dp;
    for (float **d : {&ds, &dx, &dt, &dc, &dp}) CHECK(cudaMalloc(d, bytes));
    CHECK(cudaMemcpy(ds, s.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dt, t.data(), bytes, cudaMemcpyHostToDevice));
    black_scholes<<<128, 128>>>(dc, dp, ds, dx, dt, rate, vol, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(p.data(), dp, bytes, cudaMemcpyDeviceToHost));
    double worst = 0, sum_err = 0, sum_ref = 0;
    for (int i = 0; i < n; i++) {
        double sq = std::sqrt((double)t[i]);
        double d1 = (std::log((double)s[i] / x[i]) + (rate + 0.5 * vol * vol) * t[i]) / (vol * sq);
        double d2 = d1 - vol * sq, disc = std::exp(-(double)rate * t[i]);
        double call = s[i] * cnd_exact(d1) - x[i] * disc * cnd_exact(d2);
        double put = x[i] * disc * cnd_exact(-d2) - s[i] * cnd_exact(-d1);
        double e = std::fmax(std::fabs(c[i] - call), std::fabs(p[i] - put));
        if (!(e <= worst)) worst = e;
        sum_err += std::fabs(c[i] - call);
        sum_ref += std::fabs(call);
    }
    for (float *d : {ds, dx, dt, dc, dp}) CHECK(cudaFree(d));
    double l1 = sum_err / sum_ref;
    if (!(worst < 1e-3 && l1 < 1e-5)) {
        std::printf("black_scholes: FAIL max error %g, relative L1 error %g\n", worst, l1);
        return 1;
    }
    std::printf("black_scholes: ok %d options, max error %.1e, L1 %.1e\n", n, worst, l1);
    return 0;
}
