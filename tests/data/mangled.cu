// A kernel without extern "C": its PTX name is mangled (_Z5scalePii).
__global__ void scale(int* v, int k) { v[threadIdx.x] *= k; }

// A template kernel: found by the name its author wrote, `tiled<float, 16>`.
template <typename T, int N> __global__ void tiled(T* v, T k) { v[threadIdx.x % N] *= k; }
template __global__ void tiled<float, 16>(float*, float);
template __global__ void tiled<int, 8>(int*, int);
