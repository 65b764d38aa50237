// Texture and surface kernels for tests/test_texture.py (texture objects, no texture references).
// Regenerate the PTX with regen.sh (nvcc -arch=sm_80 -ptx -lineinfo).
#include <cuda_runtime.h>

// tex1Dfetch on a linear resource: integer index, element type read.
extern "C" __global__ void fetch1d(cudaTextureObject_t t, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float>(t, i - 2);
}

// tex1Dfetch of a 4-channel int texture.
extern "C" __global__ void fetch1d_int4(cudaTextureObject_t t, int4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<int4>(t, i);
}

// tex1D with float coordinates.
extern "C" __global__ void sample1d(cudaTextureObject_t t, const float *x, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1D<float>(t, x[i]);
}

// tex2D at arbitrary (x, y), float4 result.
extern "C" __global__ void sample2d(cudaTextureObject_t t, const float *x, const float *y, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float4>(t, x[i], y[i]);
}

// tex2D with an unsigned integer element (read mode element type).
extern "C" __global__ void sample2d_uint(cudaTextureObject_t t, const float *x, const float *y, unsigned *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<unsigned>(t, x[i], y[i]);
}

// tex3D.
extern "C" __global__ void sample3d(cudaTextureObject_t t, const float *x, const float *y, const float *z,
                                    float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex3D<float>(t, x[i], y[i], z[i]);
}

// tex2DLayered.
extern "C" __global__ void sample2d_layered(cudaTextureObject_t t, const float *x, const float *y, const int *layer,
                                            float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2DLayered<float>(t, x[i], y[i], layer[i]);
}

// tex2Dgather of each component.
extern "C" __global__ void gather2d(cudaTextureObject_t t, const float *x, const float *y, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[4 * i + 0] = tex2Dgather<float4>(t, x[i], y[i], 0);
        out[4 * i + 1] = tex2Dgather<float4>(t, x[i], y[i], 1);
        out[4 * i + 2] = tex2Dgather<float4>(t, x[i], y[i], 2);
        out[4 * i + 3] = tex2Dgather<float4>(t, x[i], y[i], 3);
    }
}

// Copy through a 2D surface: read (x, y), write doubled at (x, y) of another surface (bytes coordinates).
extern "C" __global__ void surf2d_scale(cudaSurfaceObject_t src, cudaSurfaceObject_t dst, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        float v = surf2Dread<float>(src, x * 4, y);
        surf2Dwrite(v * 2.0f, dst, x * 4, y);
    }
}

// surf1Dwrite past the end with each boundary mode.
extern "C" __global__ void surf1d_write_zero(cudaSurfaceObject_t s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) surf1Dwrite<int>(i + 100, s, i * 4, cudaBoundaryModeZero);
}
extern "C" __global__ void surf1d_write_clamp(cudaSurfaceObject_t s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) surf1Dwrite<int>(i + 100, s, i * 4, cudaBoundaryModeClamp);
}
extern "C" __global__ void surf1d_write_trap(cudaSurfaceObject_t s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) surf1Dwrite<int>(i + 100, s, i * 4, cudaBoundaryModeTrap);
}
extern "C" __global__ void surf1d_read_zero(cudaSurfaceObject_t s, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = surf1Dread<int>(s, i * 4 - 8, cudaBoundaryModeZero);
}
// uchar4 surface read/write (v4.b8).
extern "C" __global__ void surf2d_uchar4(cudaSurfaceObject_t s, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        uchar4 v = surf2Dread<uchar4>(s, x * 4, y);
        surf2Dwrite(make_uchar4(v.w, v.z, v.y, v.x + 1), s, x * 4, y);
    }
}

// Query a texture's and a surface's size.
extern "C" __global__ void query(cudaTextureObject_t t, cudaSurfaceObject_t s, int *out) {
    // txq is not exposed by the CUDA headers for texture objects; the asm below is what it lowers to.
    int w, h, d, sw, sh;
    asm("txq.width.b32 %0, [%1];" : "=r"(w) : "l"(t));
    asm("txq.height.b32 %0, [%1];" : "=r"(h) : "l"(t));
    asm("txq.depth.b32 %0, [%1];" : "=r"(d) : "l"(t));
    asm("suq.width.b32 %0, [%1];" : "=r"(sw) : "l"(s));
    asm("suq.height.b32 %0, [%1];" : "=r"(sh) : "l"(s));
    out[0] = w; out[1] = h; out[2] = d; out[3] = sw; out[4] = sh;
}

// tex2DLod / tex2DGrad on a texture without mipmaps: level 0.
extern "C" __global__ void sample2d_lod(cudaTextureObject_t t, const float *x, const float *y, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[2 * i] = tex2DLod<float>(t, x[i], y[i], 1.5f);
        out[2 * i + 1] = tex2DGrad<float>(t, x[i], y[i], make_float2(2.0f, 0.0f), make_float2(0.0f, 2.0f));
    }
}

// Layered surfaces: write (layer * 1000 + y * 10 + x) at every element of every layer, read back 1D layered.
extern "C" __global__ void surf2d_layered_fill(cudaSurfaceObject_t s, int w, int h, int layers) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h)
        for (int l = 0; l < layers; l++) surf2DLayeredwrite(l * 1000 + y * 10 + x, s, x * 4, y, l);
}
extern "C" __global__ void surf1d_layered_read(cudaSurfaceObject_t s, int *out, int w, int layers) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x < w)
        for (int l = 0; l < layers; l++) out[l * w + x] = surf1DLayeredread<int>(s, x * 4, l, cudaBoundaryModeZero);
}
