// Non-inlined and recursive device functions, struct arguments.

__device__ __noinline__ float poly3(float x, float a, float b, float c)
{
    return (a * x + b) * x + c;
}

struct Vec3 {
    float x, y, z;
};

__device__ __noinline__ Vec3 cross3(Vec3 a, Vec3 b)
{
    Vec3 r;
    r.x = a.y * b.z - a.z * b.y;
    r.y = a.z * b.x - a.x * b.z;
    r.z = a.x * b.y - a.y * b.x;
    return r;
}

__device__ __noinline__ int collatz_steps(unsigned long long x)
{
    int s = 0;
    while (x != 1) {
        x = (x & 1) ? 3 * x + 1 : x / 2;
        ++s;
    }
    return s;
}

// y[i] = poly3(x[i], 0.5, -1.25, 2.0); steps[i] = collatz_steps(i + 1).
extern "C" __global__ void noinline_calls(const float* x, float* y, int* steps, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = poly3(x[i], 0.5f, -1.25f, 2.0f);
        steps[i] = collatz_steps((unsigned long long)i + 1);
    }
}

// out[3*i..] = cross(a[i], b[i]) with Vec3 passed by value to a non-inlined function.
extern "C" __global__ void noinline_struct(const float* a, const float* b, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        Vec3 u = {a[3 * i], a[3 * i + 1], a[3 * i + 2]};
        Vec3 v = {b[3 * i], b[3 * i + 1], b[3 * i + 2]};
        Vec3 r = cross3(u, v);
        out[3 * i] = r.x;
        out[3 * i + 1] = r.y;
        out[3 * i + 2] = r.z;
    }
}

__device__ __noinline__ int fib(int n)
{
    if (n < 2)
        return n;
    return fib(n - 1) + fib(n - 2);
}

extern "C" __global__ void recursive_fib(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = fib(in[i]);
}

// Ackermann-free mutual recursion: even/odd depth walk with a non-trivial combine.
__device__ __noinline__ unsigned long long rec_b(int n, unsigned long long acc);

__device__ __noinline__ unsigned long long rec_a(int n, unsigned long long acc)
{
    if (n <= 0)
        return acc;
    unsigned long long r = rec_b(n - 1, acc * 3 + (unsigned long long)n);
    return r ^ (unsigned long long)n;
}

__device__ __noinline__ unsigned long long rec_b(int n, unsigned long long acc)
{
    if (n <= 0)
        return acc + 7;
    unsigned long long r = rec_a(n - 1, acc + 2 * (unsigned long long)n);
    return r * 5;
}

extern "C" __global__ void recursive_mutual(const int* in, unsigned long long* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = rec_a(in[i], (unsigned long long)i);
}

// Kernel parameter: a struct passed by value.
struct Params {
    float scale;
    int offset;
    double bias;
    unsigned char flag;
    short delta;
    long long big;
};

// out[i] = flag ? (in[i] * scale + offset) + bias : big + delta * i
extern "C" __global__ void struct_param(Params p, const float* in, double* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (p.flag)
            out[i] = (double)(in[i] * p.scale + (float)p.offset) + p.bias;
        else
            out[i] = (double)(p.big + (long long)p.delta * i);
    }
}
