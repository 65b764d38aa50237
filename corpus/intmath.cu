// Integer arithmetic: signed division/modulo with negative operands, 64-bit math.

// out is [6][n]: a / b, a % b, a / 7, a % 7, a / -3, a % 16 (signed, C truncation).
extern "C" __global__ void int_divmod(const int* a, const int* b, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int x = a[i], y = b[i];
        out[0 * n + i] = x / y;
        out[1 * n + i] = x % y;
        out[2 * n + i] = x / 7;
        out[3 * n + i] = x % 7;
        out[4 * n + i] = x / -3;
        out[5 * n + i] = x % 16;
    }
}

// out is [4][n]: unsigned a / b, a % b, a / 10, a % 10.
extern "C" __global__ void uint_divmod(const unsigned* a, const unsigned* b, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned x = a[i], y = b[i];
        out[0 * n + i] = x / y;
        out[1 * n + i] = x % y;
        out[2 * n + i] = x / 10u;
        out[3 * n + i] = x % 10u;
    }
}

// 64-bit: out is [8][n] (s64): a*b, a/b, a%b, a+b, a-b, a>>5 (arith), (u64)a>>7, min(a,b)
// plus uout [3][n] (u64): ua/ub, ua%ub, ua*ub + 12345.
extern "C" __global__ void int64_math(const long long* a, const long long* b, long long* out,
                                      unsigned long long* uout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        long long x = a[i], y = b[i];
        out[0 * n + i] = x * y;
        out[1 * n + i] = x / y;
        out[2 * n + i] = x % y;
        out[3 * n + i] = x + y;
        out[4 * n + i] = x - y;
        out[5 * n + i] = x >> 5;
        out[6 * n + i] = (long long)((unsigned long long)x >> 7);
        out[7 * n + i] = min(x, y);
        unsigned long long ux = (unsigned long long)x, uy = (unsigned long long)y;
        uout[0 * n + i] = ux / uy;
        uout[1 * n + i] = ux % uy;
        uout[2 * n + i] = ux * uy + 12345ull;
    }
}

// Mixed-width: 32x32->64 widening multiply, sign/zero extension, saturating-free abs/min/max.
extern "C" __global__ void int_widen(const int* a, const int* b, long long* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int x = a[i], y = b[i];
        out[0 * n + i] = (long long)x * (long long)y;
        out[1 * n + i] = (long long)((unsigned long long)(unsigned)x * (unsigned)y);
        out[2 * n + i] = (long long)(short)x + (long long)(unsigned char)y;
        out[3 * n + i] = abs(x) + (long long)max(x, y) - (long long)min(x, y);
        out[4 * n + i] = (long long)(x << (y & 31)) ^ (long long)((unsigned)x >> (y & 31));
    }
}
