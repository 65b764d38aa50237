// racecheck: a thread overwrites its element while its neighbour may still be reading it
extern "C" __global__ void race_shared_war(float* data) {
    __shared__ float s[128];
    int t = threadIdx.x;
    s[t] = data[t];
    __syncthreads();
    float v = s[(t + 1) % blockDim.x];  // PEER: the read
    s[t] = v * 2.0f;  // BUG: race WAR
    __syncthreads();
    data[t] = s[t];
}
