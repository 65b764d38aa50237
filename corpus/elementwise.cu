// Elementwise kernels: plain indexing, grid-stride loops, float4 vector loads, early exit + barrier.

extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

// Grid-stride loop: launched with far fewer threads than elements.
extern "C" __global__ void saxpy_gridstride(int n, float a, const float* x, float* y)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

// Double-precision grid-stride with 64-bit count and index.
extern "C" __global__ void daxpy_gridstride(unsigned long long n, double a, const double* x, double* y)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

// float4 vector loads/stores (ld.global.v4.f32).
extern "C" __global__ void float4_ops(const float4* in, float4* out, float s, int n4)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = in[i];
        float4 r;
        r.x = v.x * s;
        r.y = v.y + s;
        r.z = v.z - s;
        r.w = v.w * v.x;
        out[i] = r;
    }
}

// Threads past the end return before a __syncthreads(); the rest still synchronise.
extern "C" __global__ void early_exit_sync(const int* in, int* out, int n)
{
    __shared__ int s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    s[threadIdx.x] = in[i];
    __syncthreads();
    int partner = threadIdx.x ^ 1;
    int gp = blockIdx.x * blockDim.x + partner;
    int pv = (gp < n) ? s[partner] : -1;
    out[i] = s[threadIdx.x] * 1000 + pv;
}
