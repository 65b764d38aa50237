// racecheck: a CTA reads global memory that the next CTA writes (nothing orders the CTAs of a launch)
extern "C" __global__ void race_global_grid(float* buf, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[i] = (float)i;  // PEER: the write
    __syncthreads();
    int j = (i + blockDim.x) % (gridDim.x * blockDim.x);
    out[i] = buf[j];  // BUG: race RAW
}
