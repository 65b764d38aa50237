// The second translation unit of rdc_main (relocatable device code): a device function the other unit
// calls, and a kernel of its own launched through a host function.
#include <cuda_runtime.h>

__device__ float poly(float x) { return 3.0f * x * x + 2.0f * x + 1.0f; }

__global__ void twice(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

void launch_twice(float *x, int n) { twice<<<(n + 255) / 256, 256>>>(x, n); }
