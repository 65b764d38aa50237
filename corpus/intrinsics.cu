// Integer intrinsics.  out32 is [14][n] (u32), out64 is [6][n] (u64).
extern "C" __global__ void int_intrinsics(const unsigned* a, const unsigned* b, const unsigned* c,
                                          const unsigned long long* a64, const unsigned long long* b64,
                                          unsigned* out32, unsigned long long* out64, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned x = a[i], y = b[i], z = c[i];
    unsigned long long p = a64[i], q = b64[i];
    out32[0 * n + i] = __brev(x);
    out32[1 * n + i] = __clz((int)x);
    out32[2 * n + i] = __ffs((int)x);
    out32[3 * n + i] = __popc(x);
    out32[4 * n + i] = __byte_perm(x, y, z & 0x7777u);
    out32[5 * n + i] = __funnelshift_l(x, y, z);
    out32[6 * n + i] = __funnelshift_r(x, y, z);
    out32[7 * n + i] = __mulhi((int)x, (int)y);
    out32[8 * n + i] = __umulhi(x, y);
    out32[9 * n + i] = __sad((int)x, (int)y, z & 0xffffu);
    out32[10 * n + i] = __usad(x, y, z & 0xffffu);
    out32[11 * n + i] = __funnelshift_lc(x, y, z);
    out32[12 * n + i] = __funnelshift_rc(x, y, z);
    out32[13 * n + i] = __clzll(p) + 100u * __ffsll((long long)q) + 10000u * __popcll(p);
    out64[0 * n + i] = __brevll(p);
    out64[1 * n + i] = __mul64hi((long long)p, (long long)q);
    out64[2 * n + i] = __umul64hi(p, q);
    out64[3 * n + i] = (p << (z & 63)) | (q >> (y & 63));
    out64[4 * n + i] = (unsigned long long)((long long)p >> (x & 63));
    out64[5 * n + i] = __mul24((int)x, (int)y) + (unsigned long long)__umul24(y, z);
}
