// CUDA math library (libdevice code inlined into the PTX, no fast-math).

// out is [9][n]: sinf, cosf, expf, logf, powf(x, y), erff, tanhf, sqrtf, exp2f... (see below)
extern "C" __global__ void math_f32(const float* x, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float a = x[i], b = y[i];
        out[0 * n + i] = sinf(a);
        out[1 * n + i] = cosf(a);
        out[2 * n + i] = expf(b);
        out[3 * n + i] = logf(fabsf(a) + 0.01f);
        out[4 * n + i] = powf(fabsf(a) + 0.5f, b);
        out[5 * n + i] = erff(b);
        out[6 * n + i] = tanhf(b);
        out[7 * n + i] = sqrtf(fabsf(a));
        out[8 * n + i] = atan2f(a, b);
    }
}

// out is [5][n]: sin, cos, exp, log, sqrt in double precision.
extern "C" __global__ void math_f64(const double* x, double* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double a = x[i];
        out[0 * n + i] = sin(a);
        out[1 * n + i] = cos(a);
        out[2 * n + i] = exp(a * 0.5);
        out[3 * n + i] = log(fabs(a) + 1e-3);
        out[4 * n + i] = sqrt(fabs(a));
    }
}

// Correctly rounded float ops: division, fmaf, rintf/floorf/ceilf/truncf, fminf/fmaxf, copysignf.
extern "C" __global__ void math_exact_f32(const float* x, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float a = x[i], b = y[i];
        out[0 * n + i] = a / b;
        out[1 * n + i] = rintf(a * 3.0f);
        out[2 * n + i] = floorf(a * 3.0f);
        out[3 * n + i] = ceilf(a * 3.0f);
        out[4 * n + i] = truncf(a * 3.0f);
        out[5 * n + i] = fminf(a, b);
        out[6 * n + i] = fmaxf(a, b);
        out[7 * n + i] = copysignf(a, b);
        out[8 * n + i] = fabsf(a) * -1.0f;
    }
}

// Conversions between float/double/int with various rounding and saturation.
// io is [6][n] ints: (int)a, __float2int_rn, __float2int_rd, __float2int_ru, (unsigned)fabs, (long long)(a*1e9)
extern "C" __global__ void float_int_convert(const float* x, const double* d, long long* io, float* fo, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float a = x[i];
        io[0 * n + i] = (int)a;
        io[1 * n + i] = __float2int_rn(a);
        io[2 * n + i] = __float2int_rd(a);
        io[3 * n + i] = __float2int_ru(a);
        io[4 * n + i] = (unsigned)fabsf(a);
        io[5 * n + i] = (long long)(d[i] * 1e9);
        fo[0 * n + i] = (float)d[i];
        fo[1 * n + i] = (float)(i * 7 - 100);
        fo[2 * n + i] = (float)((unsigned long long)i * 123456789ull);
    }
}
