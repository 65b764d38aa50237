// tests/test_tiers_counters.py: tier 0's block, edge and trip counts against hand-computed ones.
// branchy: a bounds guard (threads past n leave), a data-dependent if/else, and a loop whose trip count
// is the thread's own input value (not unrolled), so every count follows from x and n.
extern "C" __global__ void branchy(const int* __restrict__ x, int* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = x[i];
    int acc = 0;
    if (v > 3) {
        acc = v * v + 7;
        y[n + i] = 1;
    } else {
        y[n + i] = 2;
    }
#pragma unroll 1
    for (int k = 0; k < v; ++k) acc += k ^ v;
    y[i] = acc;
}
