// Host driver for access_patterns.cu under Nsight Compute (run_ncu.sh): launches each kernel once per
// parameter value, one warp each.
#include <cstdio>
#include <cuda_runtime.h>
extern "C" __global__ void strided_load(const float*, float*, int);
extern "C" __global__ void gather_broadcast(const float*, float*, int);
extern "C" __global__ void shared_columns(const float*, float*, int);
extern "C" __global__ void divergent(const int*, int*, int);
int main() {
    float *in, *out;
    cudaMalloc(&in, 32 * 32 * 33 * sizeof(float));
    cudaMalloc(&out, 4096 * sizeof(float));
    cudaMemset(in, 0, 32 * 32 * 33 * sizeof(float));
    int strides[] = {0, 1, 2, 4, 8, 16, 32};
    for (int s : strides) strided_load<<<1, 32>>>(in, out, s);
    gather_broadcast<<<1, 32>>>(in, out, 0);
    shared_columns<<<1, 32>>>(in, out, 32);
    shared_columns<<<1, 32>>>(in, out, 33);
    int ms[] = {1, 2, 32};
    for (int m : ms) divergent<<<1, 32>>>((const int*)in, (int*)out, m);
    cudaError_t e = cudaDeviceSynchronize();
    printf("done: %s\n", cudaGetErrorString(e));
    return e != cudaSuccess;
}
