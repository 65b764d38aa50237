// Empty kernel: measures per-launch overhead.
extern "C" __global__ void empty_kernel() {}
