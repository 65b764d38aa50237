// Per-thread local arrays that stay in local memory: sorted windows indexed by loop counters,
// a data-dependent index, an array of structs, and an array passed by pointer to a device function.
// Built by regen.sh at -O3 (median_filter.ptx: ld.local/st.local, cvta.to.local in the callee) and with
// -G (median_filter_G.ptx: generic ld/st through %SP = cvta.local %SPL).

// Clamp-to-edge read of a w x h image.
__device__ __forceinline__ float at(const float* img, int w, int h, int x, int y)
{
    x = min(max(x, 0), w - 1);
    y = min(max(y, 0), h - 1);
    return img[y * w + x];
}

// 3x3 median: the window is sorted by a bubble sort whose indices are loop counters (both loops
// kept rolled, so the indices are run-time values and the array stays in local memory).
extern "C" __global__ void median3(const float* in, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float win[9];
    int k = 0;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            win[k++] = at(in, w, h, x + dx, y + dy);
#pragma unroll 1
    for (int i = 0; i < 9; ++i)
#pragma unroll 1
        for (int j = 0; j < 8 - i; ++j)
            if (win[j] > win[j + 1]) {
                float t = win[j];
                win[j] = win[j + 1];
                win[j + 1] = t;
            }
    out[y * w + x] = win[4];
}

// 5x5 median: the window is sorted by an insertion sort (a data-dependent inner loop bound).
extern "C" __global__ void median5(const float* in, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float win[25];
    int k = 0;
    for (int dy = -2; dy <= 2; ++dy)
        for (int dx = -2; dx <= 2; ++dx)
            win[k++] = at(in, w, h, x + dx, y + dy);
    for (int i = 1; i < 25; ++i) {
        float v = win[i];
        int j = i - 1;
        while (j >= 0 && win[j] > v) {
            win[j + 1] = win[j];
            --j;
        }
        win[j + 1] = v;
    }
    out[y * w + x] = win[12];
}

// Histogram of 16 bins per thread: the index is the data (masked into range).
extern "C" __global__ void local_histogram(const int* in, int* out, int n, int per_thread)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int bins[16];
    for (int b = 0; b < 16; ++b) bins[b] = 0;
    for (int i = 0; i < per_thread; ++i)
        bins[in[t * per_thread + i] & 15] += 1;
    // Write back the bins in an order chosen by the data so the reads are dynamic too.
    int rot = in[t * per_thread] & 15;
    for (int b = 0; b < 16; ++b) out[t * 16 + b] = bins[(b + rot) & 15];
}

struct Pair {
    float key;
    int idx;
};

// A local array of structs, sorted by key; writes the indices in key order (an argsort of 8).
extern "C" __global__ void local_struct_sort(const float* in, int* out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    Pair p[8];
    for (int i = 0; i < 8; ++i) {
        p[i].key = in[t * 8 + i];
        p[i].idx = i;
    }
    for (int i = 1; i < 8; ++i) {
        Pair v = p[i];
        int j = i - 1;
        while (j >= 0 && p[j].key > v.key) {
            p[j + 1] = p[j];
            --j;
        }
        p[j + 1] = v;
    }
    for (int i = 0; i < 8; ++i) out[t * 8 + i] = p[i].idx;
}

// Sorts a[0..n) in place; never inlined, so the caller's local array reaches it as a generic pointer.
__device__ __noinline__ void sort_in_place(float* a, int n)
{
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n - 1 - i; ++j)
            if (a[j] > a[j + 1]) {
                float t = a[j];
                a[j] = a[j + 1];
                a[j + 1] = t;
            }
}

extern "C" __global__ void median3_call(const float* in, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float win[9];
    int k = 0;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            win[k++] = at(in, w, h, x + dx, y + dy);
    sort_in_place(win, 9);
    out[y * w + x] = win[4];
}

// A device function with a local window of its own, sorted by another: the callee reaches the
// window in its caller's frame.
__device__ __noinline__ float median9_at(const float* in, int w, int h, int x, int y)
{
    float win[9];
    int k = 0;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx)
            win[k++] = at(in, w, h, x + dx, y + dy);
    sort_in_place(win, 9);
    return win[4];
}

extern "C" __global__ void median3_nested(const float* in, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    out[y * w + x] = median9_at(in, w, h, x, y);
}

// A real bug: writes win[pos] for a pos from the caller, past the end when pos >= 9.
extern "C" __global__ void local_oob(const float* in, float* out, int n, int pos)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    float win[9];
    for (int i = 0; i < 9; ++i) win[i] = in[t * 9 + i];
    win[pos] = -1.0f;
    float s = 0.0f;
    for (int i = 0; i < 9; ++i) s += win[(i * 5 + pos) % 9];
    out[t] = s;
}

// Which state space a callee sees a pointer in: 1 local (the caller's window), 2 global, 0 neither.
__device__ __noinline__ int space_of(const float* p)
{
    return __isLocal(p) ? 1 : (__isGlobal(p) ? 2 : 0);
}

extern "C" __global__ void local_spaces(const float* in, int* out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    float win[4];
    for (int i = 0; i < 4; ++i) win[i] = in[t * 4 + i];
    out[2 * t] = space_of(win + (t & 3));
    out[2 * t + 1] = space_of(in + t);
}
