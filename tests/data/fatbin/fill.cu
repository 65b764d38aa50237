// A second translation unit: a host executable linked from it and host_main.cu holds one fatbin per unit.
__global__ void fill(int* p, int v) { p[threadIdx.x] = v; }
