// Fast-math intrinsics (approximate PTX instructions) and IEEE directed-rounding intrinsics.

// approx is [8][n]: __expf, __logf, __sinf, __cosf, __fdividef, rsqrtf, __powf, __tanf.
extern "C" __global__ void fast_intrinsics(const float* x, const float* y, float* approx, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float a = x[i], b = y[i];
        approx[0 * n + i] = __expf(b);
        approx[1 * n + i] = __logf(a);
        approx[2 * n + i] = __sinf(b);
        approx[3 * n + i] = __cosf(b);
        approx[4 * n + i] = __fdividef(b, a);
        approx[5 * n + i] = rsqrtf(a);
        approx[6 * n + i] = __powf(a, b);
        approx[7 * n + i] = __tanf(b * 0.25f);
    }
}

// exact is [12][n]: mul rn/rz/rd/ru, add rz/rd/ru, div rz/ru/rd, sqrt ru, __saturatef.
extern "C" __global__ void rounding_modes(const float* x, const float* y, float* exact, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float a = x[i], b = y[i];
        exact[0 * n + i] = __fmul_rn(a, b);
        exact[1 * n + i] = __fmul_rz(a, b);
        exact[2 * n + i] = __fmul_rd(a, b);
        exact[3 * n + i] = __fmul_ru(a, b);
        exact[4 * n + i] = __fadd_rz(a, b);
        exact[5 * n + i] = __fadd_rd(a, b);
        exact[6 * n + i] = __fadd_ru(a, b);
        exact[7 * n + i] = __fdiv_rz(a, b);
        exact[8 * n + i] = __fdiv_ru(a, b);
        exact[9 * n + i] = __fdiv_rd(a, b);
        exact[10 * n + i] = __fsqrt_ru(fabsf(a));
        exact[11 * n + i] = __saturatef(b);
    }
}

// Double-precision directed rounding: [4][n] = __dmul_rz, __dadd_ru, __ddiv_rd, __fma_rz.
extern "C" __global__ void rounding_modes_f64(const double* x, const double* y, double* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double a = x[i], b = y[i];
        out[0 * n + i] = __dmul_rz(a, b);
        out[1 * n + i] = __dadd_ru(a, b);
        out[2 * n + i] = __ddiv_rd(a, b);
        out[3 * n + i] = __fma_rz(a, b, 1.0);
    }
}
