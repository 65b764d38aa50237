// Dense samples of the H100's tanh.approx.f32 (and the f16/bf16 forms on every input), for reconstructing its
// method bit for bit below 1/16 and in [1/16, 8) at a finer stride than ../shared/gpu-golden/mufu.
// Writes raw little-endian uint32 output bits, one file per range, into argv[1]:
//   tanh_f32_lo.bin   inputs 0x39800000 + 2*i for i < (0x3d800000-0x39800000)/2   ([2^-12, 1/16), every 2nd ulp)
//   tanh_f32_hi.bin   inputs 0x3d800000 + 4*i for i < (0x41000000-0x3d800000)/4   ([1/16, 8), every 4th ulp)
// Build and run on a machine with an sm_90 GPU:  nvcc -O2 -arch=sm_90 tanh_dense.cu -o tanh_dense && ./tanh_dense DIR
// tools/mufu/gpu/pack.py turns the files into one compressed .npz of output-bit deltas.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void k_tanh(uint32_t* out, uint32_t first, uint32_t stride, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = __uint_as_float(first + stride * i), y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  out[i] = __float_as_uint(y);
}

static int run(const char* dir, const char* name, uint32_t first, uint32_t last, uint32_t stride) {
  uint32_t n = (last - first) / stride;
  uint32_t* d;
  if (cudaMalloc(&d, (size_t)n * 4) != cudaSuccess) return 1;
  k_tanh<<<(n + 255) / 256, 256>>>(d, first, stride, n);
  uint32_t* h = (uint32_t*)malloc((size_t)n * 4);
  if (cudaMemcpy(h, d, (size_t)n * 4, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.bin", dir, name);
  FILE* f = fopen(path, "wb");
  if (!f || fwrite(h, 4, n, f) != n) return 1;
  fclose(f);
  free(h);
  cudaFree(d);
  printf("%s: %u samples\n", name, n);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  int rc = run(argv[1], "tanh_f32_lo", 0x39800000u, 0x3d800000u, 2);
  rc |= run(argv[1], "tanh_f32_hi", 0x3d800000u, 0x41000000u, 4);
  return rc;
}
