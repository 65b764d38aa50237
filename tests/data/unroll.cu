// Kernels for unrolled lockstep loops (tests/test_unroll.py): grid- and block-stride loops whose
// threads run different numbers of iterations, leave early, skip iterations, and meet barriers
// (and the benchmark's histogram, bench/kernels/histogram.cu).

// A grid-stride loop with a skipped iteration (continue) and an early exit (break): per thread
// the first index holding `key` and a sum over the non-negative values before it.
extern "C" __global__ void find_first(const int* x, int* first, int* sum, int n, int key)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int found = -1, s = 0;
    for (int i = t; i < n; i += gridDim.x * blockDim.x) {
        int v = x[i];
        if (v < 0)
            continue;
        s += v & 7;
        if (v == key) {
            found = i;
            break;
        }
    }
    first[t] = found;
    sum[t] = s;
}

// A block-stride loop in each row of a 2-D grid with a float accumulation (order matters for
// bit-exactness), then a tree reduction with barriers.
extern "C" __global__ void row_sums(const float* a, float* out, int cols)
{
    __shared__ float s[128];
    const float* row = a + (size_t)blockIdx.x * cols;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        acc = acc * 0.5f + row[c];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
