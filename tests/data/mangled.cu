// A kernel without extern "C": its PTX name is mangled (_Z5scalePii).
__global__ void scale(int* v, int k) { v[threadIdx.x] *= k; }
