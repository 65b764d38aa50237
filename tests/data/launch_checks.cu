// Kernels for the launch-time refusals (tests/test_launch_checks.py).

extern "C" __global__ void copy_scale(const float* x, float* y, float s, int n) {  // x read, y written
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = s * x[i];
}

extern "C" __global__ void dyn_sum(const float* x, float* out, int n) {  // extern __shared__ buffer
    extern __shared__ float buf[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0;
        for (int k = 0; k < blockDim.x; k++) s += buf[k];
        atomicAdd(out, s);
    }
}

extern "C" __global__ void dyn_fixed(int* out) {  // constant offsets: needs 64 bytes of dynamic shared
    extern __shared__ int tab[];
    if (threadIdx.x == 0) { tab[0] = 1; tab[15] = 2; }
    __syncthreads();
    if (threadIdx.x == 0) out[0] = tab[0] + tab[15];
}

__device__ __noinline__ void store_via(float* p, int i, float v) { p[i] = v; }

extern "C" __global__ void writes_via_call(float* p, int n) {  // the write happens in a device function
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) store_via(p, i, 1.0f);
}
