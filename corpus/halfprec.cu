// __half, __half2 and __nv_bfloat16 arithmetic.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// out is [6][n]: add, sub, mul, fma(a,b,0.5), max, min.  gt is [n] (a > b).  f is [n] float(a)*float(b).
extern "C" __global__ void half_ops(const __half* a, const __half* b, __half* out, unsigned char* gt,
                                    float* f, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __half x = a[i], y = b[i];
    out[0 * n + i] = __hadd(x, y);
    out[1 * n + i] = __hsub(x, y);
    out[2 * n + i] = __hmul(x, y);
    out[3 * n + i] = __hfma(x, y, __float2half(0.5f));
    out[4 * n + i] = __hmax(x, y);
    out[5 * n + i] = __hmin(x, y);
    gt[i] = __hgt(x, y) ? 1 : 0;
    f[i] = __half2float(x) * __half2float(y);
}

// float -> half (cvt.rn.f16.f32) and half -> float round trip.
extern "C" __global__ void half_convert(const float* in, __half* h, float* back, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __half v = __float2half_rn(in[i]);
        h[i] = v;
        back[i] = __half2float(v);
    }
}

// Packed half2: out is [4][n2] half2: add2, mul2, fma2(a, b, c), swap; lowhigh: float sum of halves.
extern "C" __global__ void half2_ops(const __half2* a, const __half2* b, const __half2* c, __half2* out,
                                     float* lowhigh, int n2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        __half2 x = a[i], y = b[i], z = c[i];
        out[0 * n2 + i] = __hadd2(x, y);
        out[1 * n2 + i] = __hmul2(x, y);
        out[2 * n2 + i] = __hfma2(x, y, z);
        out[3 * n2 + i] = __lowhigh2highlow(x);
        lowhigh[i] = __low2float(x) + __high2float(y);
    }
}

// bfloat16: out is [4][n]: add, mul, fma(a, b, c), float->bf16 of (float(a) * 3.0f).
extern "C" __global__ void bf16_ops(const __nv_bfloat16* a, const __nv_bfloat16* b, const __nv_bfloat16* c,
                                    __nv_bfloat16* out, float* f, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        __nv_bfloat16 x = a[i], y = b[i], z = c[i];
        out[0 * n + i] = __hadd(x, y);
        out[1 * n + i] = __hmul(x, y);
        out[2 * n + i] = __hfma(x, y, z);
        out[3 * n + i] = __float2bfloat16(__bfloat162float(x) * 3.0f);
        f[i] = __bfloat162float(x) + __bfloat162float(y);
    }
}

// bfloat162 packed.
extern "C" __global__ void bf162_ops(const __nv_bfloat162* a, const __nv_bfloat162* b, __nv_bfloat162* out, int n2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) {
        out[0 * n2 + i] = __hadd2(a[i], b[i]);
        out[1 * n2 + i] = __hmul2(a[i], b[i]);
    }
}
