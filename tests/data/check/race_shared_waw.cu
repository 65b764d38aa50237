// racecheck: every thread writes the same shared variable (which one wins is undefined)
extern "C" __global__ void race_shared_waw(const int* in, int* out) {
    __shared__ int winner;
    int t = threadIdx.x;
    if (in[t] > 0) winner = t;  // BUG: race WAW
    __syncthreads();
    if (t == 0) out[blockIdx.x] = winner;
}
