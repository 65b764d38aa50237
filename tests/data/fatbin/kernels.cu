// Two kernels and one out-of-line device function, the smallest program whose
// fatbins, cubin and host executable cover what the fatbin reader must tell apart.
__device__ __noinline__ float axpy1(float a, float x, float y) { return a * x + y; }

extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = axpy1(a, x[i], y[i]);
}

__global__ void scale(float* y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= s;
}
