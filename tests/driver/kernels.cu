// Kernels for the driver-API test programs (driver_vecadd.c, driver_matmul.c).
extern "C" __global__ void vec_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// one element too far: the last thread of a full grid writes c[n]
extern "C" __global__ void vec_add_off_by_one(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) c[i] = a[i < n ? i : 0] + b[i < n ? i : 0];
}

__constant__ float scale;

template <int TILE>
__device__ void matmul_tiled(const float *A, const float *B, float *C, int n) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < n && t + threadIdx.x < n) ? A[row * n + t + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < n) ? B[(t + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) C[row * n + col] = scale * acc;
}

extern "C" __global__ void matmul16(const float *A, const float *B, float *C, int n) { matmul_tiled<16>(A, B, C, n); }

struct Saxpy { float a; int n; const float *x; float *y; };

// a by-value struct parameter holding pointers
extern "C" __global__ void saxpy_struct(Saxpy p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.y[i] = p.a * p.x[i] + p.y[i];
}

// pointers loaded from device memory (a table of allocations the kernel is not given directly)
extern "C" __global__ void gather_ptrs(float *const *ptrs, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = ptrs[i % 4][i];
}
