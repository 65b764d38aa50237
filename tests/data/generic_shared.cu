// A __shared__ array's address passed as a generic pointer to __noinline__ device functions that load and
// store through it (nvcc converts it with cvta.shared at the call), next to a global pointer taken the same
// way: the callee cannot know which space a pointer is in.
#define N 128

__device__ __noinline__ void scale_into(int *dst, const int *src, int i, int k) { dst[i] = src[i] * k; }

__device__ __noinline__ int sum_window(const int *p, int i, int n) {
    int s = 0;
    for (int j = 0; j < 4; ++j) s += p[(i + j) % n];
    return s;
}

__device__ __noinline__ void bump(int *p, int i) { p[i] += 1; }

extern "C" __global__ void generic_shared(const int *in, int *out, int *gscratch) {
    __shared__ int buf[N];
    __shared__ int counts[4];
    int t = threadIdx.x;
    int g = blockIdx.x * N + t;
    if (t < 4) counts[t] = 0;
    scale_into(buf, in + blockIdx.x * N, t, 3);   // shared destination, global source
    scale_into(gscratch + blockIdx.x * N, in + blockIdx.x * N, t, 5);  // global destination
    __syncthreads();
    int s = sum_window(buf, t, N);                // reads neighbours' shared words
    int h = sum_window(gscratch + blockIdx.x * N, t, N);
    __syncthreads();
    bump(buf, t);
    if ((t & 31) == 0) atomicAdd(&counts[t >> 5], 1);
    __syncthreads();
    out[3 * g] = s;
    out[3 * g + 1] = h;
    out[3 * g + 2] = buf[(t + 1) % N] + counts[t >> 5];
}
