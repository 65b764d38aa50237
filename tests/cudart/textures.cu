// Texture and surface objects: a 64 x 48 float cudaArray sampled with tex2D by point (exact texels) and
// linear filtering (against a host bilinear reference, within the GPU's 8-bit filter weights), with
// normalized, wrapping coordinates; an 8-bit array read as normalized floats; a texture over pitched linear
// memory (cudaMallocPitch) that a kernel and then a 2D copy rewrite between reads; and a surface written by
// one kernel, read through a texture by the next and copied back with cudaMemcpy2DFromArray.
#define PROGRAM "textures"
#include "check.h"
#include <cmath>
#include <vector>

#define W 64
#define H 48

__global__ void sample_point(float *out, cudaTextureObject_t t) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < W) out[y * W + x] = tex2D<float>(t, x + 0.5f, y + 0.5f);
}

__global__ void sample_linear(float *out, cudaTextureObject_t t) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < W) out[y * W + x] = tex2D<float>(t, x + 0.25f, y + 0.75f);
}

__global__ void sample_wrapped(float *out, cudaTextureObject_t t) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    // one period to the right and one up: the same texel under cudaAddressModeWrap
    if (x < W) out[y * W + x] = tex2D<float>(t, (x + 0.5f) / W + 1.0f, (y + 0.5f) / H - 1.0f);
}

__global__ void write_pitched(float *m, size_t pitch, float base) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < W) ((float *)((char *)m + y * pitch))[x] = base + x - y;
}

__global__ void write_surface(cudaSurfaceObject_t s) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < W) surf2Dwrite(0.5f * x * y, s, x * (int)sizeof(float), y);
}

static float texel(int x, int y) { return std::sin(0.3f * x) * 10.0f + std::cos(0.2f * y) * 5.0f + 0.01f * x * y; }

static int fails = 0;
static void expect_exact(const char *what, const std::vector<float> &got, float (*want)(int, int)) {
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            if (got[y * W + x] != want(x, y)) {
                std::printf("textures: FAIL %s at (%d, %d): %g, expected %g\n", what, x, y, got[y * W + x],
                            want(x, y));
                fails++;
                return;
            }
}

static float clamped(int x, int y) { return texel(x < 0 ? 0 : x >= W ? W - 1 : x, y < 0 ? 0 : y >= H ? H - 1 : y); }

int main() {
    const dim3 grid(1, H), block(W);
    std::vector<float> h(W * H), got(W * H);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) h[y * W + x] = texel(x, y);
    float *out;
    CHECK(cudaMalloc(&out, W * H * sizeof(float)));

    // a float array: point, linear, normalized + wrap
    cudaChannelFormatDesc fdesc = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CHECK(cudaMallocArray(&arr, &fdesc, W, H));
    CHECK(cudaMemcpy2DToArray(arr, 0, 0, h.data(), W * sizeof(float), W * sizeof(float), H, cudaMemcpyHostToDevice));
    cudaResourceDesc res = {};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = arr;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    td.filterMode = cudaFilterModePoint;
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t point, linear, wrapped;
    CHECK(cudaCreateTextureObject(&point, &res, &td, nullptr));
    td.filterMode = cudaFilterModeLinear;
    CHECK(cudaCreateTextureObject(&linear, &res, &td, nullptr));
    td.filterMode = cudaFilterModePoint;
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeWrap;
    td.normalizedCoords = 1;
    CHECK(cudaCreateTextureObject(&wrapped, &res, &td, nullptr));

    sample_point<<<grid, block>>>(out, point);
    CHECK(cudaMemcpy(got.data(), out, W * H * sizeof(float), cudaMemcpyDeviceToHost));
    expect_exact("point", got, texel);
    sample_wrapped<<<grid, block>>>(out, wrapped);
    CHECK(cudaMemcpy(got.data(), out, W * H * sizeof(float), cudaMemcpyDeviceToHost));
    expect_exact("normalized wrap", got, texel);
    sample_linear<<<grid, block>>>(out, linear);
    CHECK(cudaMemcpy(got.data(), out, W * H * sizeof(float), cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            // CUDA's bilinear filter: texel centres at +0.5, so the sample at (x + 0.25, y + 0.75) lies between
            // texels x-1, x (weight 0.75 on x) and y, y+1 (weight 0.25 on y+1), clamped at the edges
            float a = 0.75f, b = 0.25f;
            float t00 = clamped(x - 1, y), t10 = clamped(x, y), t01 = clamped(x - 1, y + 1), t11 = clamped(x, y + 1);
            double want = (1 - a) * (1 - b) * t00 + a * (1 - b) * t10 + (1 - a) * b * t01 + a * b * t11;
            double spread = std::fmax(std::fmax(t00, t10), std::fmax(t01, t11)) -
                            std::fmin(std::fmin(t00, t10), std::fmin(t01, t11));
            double e = std::fabs(got[y * W + x] - want);
            if (!(e <= spread / 256 + 1e-4)) {
                std::printf("textures: FAIL linear at (%d, %d): %g, expected %g\n", x, y, got[y * W + x], want);
                fails++;
                y = H;
                break;
            }
            if (e > worst) worst = e;
        }

    // 8-bit texels read as normalized floats
    std::vector<unsigned char> bytes(W * H);
    for (int i = 0; i < W * H; i++) bytes[i] = (unsigned char)(i * 7);
    cudaChannelFormatDesc bdesc = cudaCreateChannelDesc<unsigned char>();
    cudaArray_t barr;
    CHECK(cudaMallocArray(&barr, &bdesc, W, H));
    CHECK(cudaMemcpy2DToArray(barr, 0, 0, bytes.data(), W, W, H, cudaMemcpyHostToDevice));
    res.res.array.array = barr;
    td = {};
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    td.readMode = cudaReadModeNormalizedFloat;
    cudaTextureObject_t normalized;
    CHECK(cudaCreateTextureObject(&normalized, &res, &td, nullptr));
    sample_point<<<grid, block>>>(out, normalized);
    CHECK(cudaMemcpy(got.data(), out, W * H * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < W * H; i++)
        if (std::fabs(got[i] - bytes[i] / 255.0f) > 1e-6f) {
            std::printf("textures: FAIL normalized read %d: %g, expected %g\n", i, got[i], bytes[i] / 255.0f);
            fails++;
            break;
        }

    // pitched linear memory: a kernel writes it, a texture reads it; a 2D copy rewrites it, the texture follows
    float *pitched;
    size_t pitch;
    CHECK(cudaMallocPitch(&pitched, &pitch, W * sizeof(float), H));
    cudaResourceDesc pres = {};
    pres.resType = cudaResourceTypePitch2D;
    pres.res.pitch2D.devPtr = pitched;
    pres.res.pitch2D.desc = fdesc;
    pres.res.pitch2D.width = W;
    pres.res.pitch2D.height = H;
    pres.res.pitch2D.pitchInBytes = pitch;
    td = {};
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    cudaTextureObject_t ptex;
    CHECK(cudaCreateTextureObject(&ptex, &pres, &td, nullptr));
    write_pitched<<<grid, block>>>(pitched, pitch, 1000.0f);
    sample_point<<<grid, block>>>(out, ptex);
    CHECK(cudaMemcpy(got.data(), out, W * H * sizeof(float), cudaMemcpyDeviceToHost));
    expect_exact("pitched after a kernel", got, [](int x, int y) { return 1000.0f + x - y; });
    CHECK(cudaMemcpy2D(pitched, pitch, h.data(), W * sizeof(float), W * sizeof(float), H, cudaMemcpyHostToDevice));
    sample_point<<<grid, block>>>(out, ptex);
    CHECK(cudaMemcpy(got.data(), out, W * H * sizeof(float), cudaMemcpyDeviceToHost));
    expect_exact("pitched after a copy", got, texel);

    // a surface: written by a kernel, read through a texture of the same array, copied back
    cudaArray_t sarr;
    CHECK(cudaMallocArray(&sarr, &fdesc, W, H, cudaArraySurfaceLoadStore));
    cudaResourceDesc sres = {};
    sres.resType = cudaResourceTypeArray;
    sres.res.array.array = sarr;
    cudaSurfaceObject_t surf;
    CHECK(cudaCreateSurfaceObject(&surf, &sres));
    // a surface needs an array made for it
    {
        cudaSurfaceObject_t bad;
        cudaError_t e = cudaCreateSurfaceObject(&bad, &res);  // barr lacks cudaArraySurfaceLoadStore
        if (e != cudaErrorInvalidValue) { std::printf("textures: FAIL surface on a plain array: %d\n", e); fails++; }
        cudaGetLastError();
    }
    cudaTextureObject_t stex;
    CHECK(cudaCreateTextureObject(&stex, &sres, &td, nullptr));
    write_surface<<<grid, block>>>(surf);
    sample_point<<<grid, block>>>(out, stex);
    CHECK(cudaMemcpy(got.data(), out, W * H * sizeof(float), cudaMemcpyDeviceToHost));
    expect_exact("surface through a texture", got, [](int x, int y) { return 0.5f * x * y; });
    CHECK(cudaMemcpy2DFromArray(got.data(), W * sizeof(float), sarr, 0, 0, W * sizeof(float), H,
                                cudaMemcpyDeviceToHost));
    expect_exact("surface copied back", got, [](int x, int y) { return 0.5f * x * y; });
    CHECK(cudaGetLastError());

    for (cudaTextureObject_t t : {point, linear, wrapped, normalized, ptex, stex}) CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaDestroySurfaceObject(surf));
    for (cudaArray_t a : {arr, barr, sarr}) CHECK(cudaFreeArray(a));
    CHECK(cudaFree(pitched));
    CHECK(cudaFree(out));
    if (fails) return 1;
    std::printf("textures: ok point, linear (max error %.1e), normalized wrap, 8-bit normalized, pitched, surface\n",
                worst);
    return 0;
}
