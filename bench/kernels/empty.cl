__kernel void empty_kernel(void) {}
