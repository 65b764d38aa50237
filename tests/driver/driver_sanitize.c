/* A CUDA driver-API program with the bugs compute-sanitizer's tools find (sanitize.cu): a shared-memory
   race, reads of uninitialized shared memory and of a cuMemAlloc allocation nothing wrote, a barrier half of
   each warp skips, and a write one element past the end of an allocation; and correct kernels that look
   alike: one reading behind a pointer into the middle of an allocation, copies of memory a memset, a host
   copy or a kernel wrote.  Run plainly it computes what it can and checks it; run under `ptxjit exec --check ...`
   the tools report the bugs (tests/test_driver_sanitize.py).  One line per check, exit status 0 only when
   every check passed.  Usage: driver_sanitize SANITIZE.ptx */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "checks.h"

#define N 1000

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s SANITIZE.ptx\n", argv[0]); return 2; }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
    CHECK(cuModuleLoad(&mod, argv[1]));
    CUfunction write_past_end, read_behind, shared_race, read_uninitialized, divergent_barrier, copy_ints;
    CHECK(cuModuleGetFunction(&write_past_end, mod, "write_past_end"));
    CHECK(cuModuleGetFunction(&read_behind, mod, "read_behind"));
    CHECK(cuModuleGetFunction(&shared_race, mod, "shared_race"));
    CHECK(cuModuleGetFunction(&read_uninitialized, mod, "read_uninitialized_shared"));
    CHECK(cuModuleGetFunction(&divergent_barrier, mod, "divergent_barrier"));
    CHECK(cuModuleGetFunction(&copy_ints, mod, "copy_ints"));

    /* correct: `middle` points N floats into a 2N-float allocation; the kernel reads middle[i - N] */
    float host[2 * N], out[N];
    for (int i = 0; i < 2 * N; i++) host[i] = (float)i;
    CUdeviceptr d_in, d_out, d_ints;
    CHECK(cuMemAlloc(&d_in, sizeof host));
    CHECK(cuMemAlloc(&d_out, sizeof out));
    CHECK(cuMemAlloc(&d_ints, 128 * sizeof(int)));
    CHECK(cuMemcpyHtoD(d_in, host, sizeof host));
    CUdeviceptr middle = d_in + N * sizeof(float);
    int n = N;
    void *behind_args[] = {&middle, &d_out, &n};
    CHECK(cuLaunchKernel(read_behind, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, behind_args, NULL));
    expect_code("read_behind", cuCtxSynchronize(), CUDA_SUCCESS);
    CHECK(cuMemcpyDtoH(out, d_out, sizeof out));
    int same = 1;
    for (int i = 0; i < N; i++) same &= out[i] == host[i];
    expect("read_behind read the first half of the allocation", same);

    /* the race, the uninitialized read and the divergent barrier: each launch completes */
    void *ints_args[] = {&d_ints};
    CUstream stream;
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuLaunchKernel(shared_race, 2, 1, 1, 64, 1, 1, 0, stream, ints_args, NULL));
    expect_code("shared_race on a stream", cuStreamSynchronize(stream), CUDA_SUCCESS);
    CHECK(cuLaunchKernel(read_uninitialized, 2, 1, 1, 64, 1, 1, 0, NULL, ints_args, NULL));
    expect_code("read_uninitialized_shared", cuCtxSynchronize(), CUDA_SUCCESS);
    CHECK(cuLaunchKernel(divergent_barrier, 2, 1, 1, 64, 1, 1, 0, NULL, ints_args, NULL));
    expect_code("divergent_barrier", cuCtxSynchronize(), CUDA_SUCCESS);

    /* copies of memory a kernel wrote (d_ints, above), a memset wrote, a host copy wrote, and nothing wrote */
    CUdeviceptr d_set, d_copied, d_fresh, d_sink;
    int host_ints[128];
    for (int i = 0; i < 128; i++) host_ints[i] = i;
    CHECK(cuMemAlloc(&d_set, sizeof host_ints));
    CHECK(cuMemAlloc(&d_copied, sizeof host_ints));
    CHECK(cuMemAlloc(&d_fresh, sizeof host_ints));
    CHECK(cuMemAlloc(&d_sink, sizeof host_ints));
    CHECK(cuMemsetD32(d_set, 7, 128));
    CHECK(cuMemcpyHtoD(d_copied, host_ints, sizeof host_ints));
    CUdeviceptr sources[] = {d_ints, d_set, d_copied, d_fresh};
    for (int k = 0; k < 4; k++) {
        void *copy_args[] = {&sources[k], &d_sink};
        CHECK(cuLaunchKernel(copy_ints, 2, 1, 1, 64, 1, 1, 0, NULL, copy_args, NULL));
        expect_code("copy_ints", cuCtxSynchronize(), CUDA_SUCCESS);
    }
    CHECK(cuMemcpyDtoH(host_ints, d_sink, sizeof host_ints));

    /* last: out of bounds (on ptxjit always CUDA_ERROR_ILLEGAL_ADDRESS; the context is unusable after it) */
    void *past_args[] = {&d_out, &n};
    CUresult launched = cuLaunchKernel(write_past_end, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, past_args, NULL);
    CUresult synced = cuCtxSynchronize();
    expect_code("write_past_end", launched != CUDA_SUCCESS ? launched : synced, CUDA_ERROR_ILLEGAL_ADDRESS);
    printf("%d checks failed\n", failures);
    return failures != 0;
}
