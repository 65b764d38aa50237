/* A CUDA driver-API program as people write them: cuInit, a context, cuModuleLoad of a PTX file, cuMemAlloc,
   cuMemcpyHtoD, cuLaunchKernel with kernelParams and with `extra`, streams and events, and the error paths
   (an out-of-bounds kernel, a freed pointer).  It checks its own results and prints one line per check;
   exit status 0 only when every check passed.  Usage: driver_vecadd KERNELS.ptx KERNELS.fatbin */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"

static void *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n + 1);
    if (fread(buf, 1, n, f) != (size_t)n) { perror(path); exit(1); }
    buf[n] = 0;
    fclose(f);
    *size = n;
    return buf;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s KERNELS.ptx KERNELS.fatbin\n", argv[0]); return 2; }
    CUdevice dev;
    CUcontext ctx;
    int count = 0;
    expect_code("cuDeviceGetCount before cuInit", cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
    CHECK(cuInit(0));
    CHECK(cuDeviceGetCount(&count));
    expect("one device", count == 1);
    CHECK(cuDeviceGet(&dev, 0));
    char name[256];
    CHECK(cuDeviceGetName(name, sizeof name, dev));
    int major = 0, minor = 0, sms = 0, warp = 0;
    CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    CHECK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
    printf("device: %s, compute capability %d.%d, %d SMs\n", name, major, minor, sms);
    expect("warp size 32", warp == 32);
    expect_code("cuDeviceGet(1)", cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
    CHECK(cuDeviceGet(&dev, 0));
    CUmodule mod;
    expect_code("cuModuleLoad without a context", cuModuleLoad(&mod, argv[1]), CUDA_ERROR_INVALID_CONTEXT);
    CHECK(cuCtxCreate(&ctx, NULL, 0, dev));

    CHECK(cuModuleLoad(&mod, argv[1]));
    CUfunction vec_add, off_by_one, saxpy_struct;
    CHECK(cuModuleGetFunction(&vec_add, mod, "vec_add"));
    CHECK(cuModuleGetFunction(&off_by_one, mod, "vec_add_off_by_one"));
    CHECK(cuModuleGetFunction(&saxpy_struct, mod, "saxpy_struct"));
    CUfunction missing;
    expect_code("cuModuleGetFunction of a missing kernel", cuModuleGetFunction(&missing, mod, "nope"),
                CUDA_ERROR_NOT_FOUND);

    const int n = 100000;
    size_t bytes = n * sizeof(float);
    float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
    for (int i = 0; i < n; i++) { ha[i] = (float)i * 0.5f; hb[i] = 3.0f - (float)i; }
    CUdeviceptr da, db, dc;
    CHECK(cuMemAlloc(&da, bytes));
    CHECK(cuMemAlloc(&db, bytes));
    CHECK(cuMemAlloc(&dc, bytes));
    CHECK(cuMemcpyHtoD(da, ha, bytes));
    CHECK(cuMemcpyHtoD(db, hb, bytes));
    CHECK(cuMemsetD32(dc, 0, n));
    int nn = n;
    void *args[] = {&da, &db, &dc, &nn};
    unsigned grid = (n + 255) / 256;
    CHECK(cuLaunchKernel(vec_add, grid, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(hc, dc, bytes));
    int bad = 0;
    for (int i = 0; i < n; i++) bad += hc[i] != ha[i] + hb[i];
    expect("vec_add with kernelParams", bad == 0);

    /* the same launch with a packed parameter buffer (CU_LAUNCH_PARAM_BUFFER_POINTER / SIZE) on a stream */
    struct { CUdeviceptr a, b, c; int n; int pad; } packed = {db, da, dc, n, 0};
    size_t psize = sizeof packed;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &psize, CU_LAUNCH_PARAM_END};
    CUstream s;
    CUevent e0, e1;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&e0, 0));
    CHECK(cuEventCreate(&e1, 0));
    CHECK(cuMemsetD32Async(dc, 0, n, s));
    CHECK(cuEventRecord(e0, s));
    CHECK(cuLaunchKernel(vec_add, grid, 1, 1, 256, 1, 1, 0, s, NULL, extra));
    CHECK(cuEventRecord(e1, s));
    CHECK(cuMemcpyDtoHAsync(hc, dc, bytes, s));
    CHECK(cuStreamSynchronize(s));
    float ms = -1;
    CHECK(cuEventElapsedTime(&ms, e0, e1));
    bad = 0;
    for (int i = 0; i < n; i++) bad += hc[i] != ha[i] + hb[i];
    expect("vec_add with extra on a stream", bad == 0);
    expect("event elapsed time", ms >= 0.0f);
    expect_code("cuStreamQuery after synchronize", cuStreamQuery(s), CUDA_SUCCESS);

    /* a struct by value holding device pointers */
    struct { float a; int n; CUdeviceptr x, y; } sp = {2.0f, n, da, dc};
    void *sargs[] = {&sp};
    CHECK(cuLaunchKernel(saxpy_struct, grid, 1, 1, 256, 1, 1, 0, NULL, sargs, NULL));
    CHECK(cuMemcpyDtoH(hc, dc, bytes));
    bad = 0;
    for (int i = 0; i < n; i++) bad += fabsf(hc[i] - (2.0f * ha[i] + ha[i] + hb[i])) > 1e-3f * (1 + fabsf(hc[i]));
    expect("saxpy through a struct parameter", bad == 0);

    /* a table of device pointers: the kernel loads them (no launch range of its own covers them) */
    {
        CUfunction gather;
        CHECK(cuModuleGetFunction(&gather, mod, "gather_ptrs"));
        CUdeviceptr parts[4], table, dout;
        for (int k = 0; k < 4; k++) {
            CHECK(cuMemAlloc(&parts[k], bytes));
            for (int i = 0; i < n; i++) hc[i] = (float)(k * 1000 + i % 100);
            CHECK(cuMemcpyHtoD(parts[k], hc, bytes));
        }
        CHECK(cuMemAlloc(&table, sizeof parts));
        CHECK(cuMemcpyHtoD(table, parts, sizeof parts));
        CHECK(cuMemAlloc(&dout, bytes));
        void *gargs[] = {&table, &dout, &nn};
        CHECK(cuLaunchKernel(gather, grid, 1, 1, 256, 1, 1, 0, NULL, gargs, NULL));
        CHECK(cuMemcpyDtoH(hc, dout, bytes));
        bad = 0;
        for (int i = 0; i < n; i++) bad += hc[i] != (float)((i % 4) * 1000 + i % 100);
        expect("pointers loaded from a table in device memory", bad == 0);
        for (int k = 0; k < 4; k++) CHECK(cuMemFree(parts[k]));
        CHECK(cuMemFree(table));
        CHECK(cuMemFree(dout));
    }

    /* the fatbin: matmul16 with a __constant__ set through cuModuleGetGlobal */
    size_t fsize;
    void *fat = read_file(argv[2], &fsize);
    CUmodule fmod;
    CHECK(cuModuleLoadData(&fmod, fat));
    CUfunction mm;
    CHECK(cuModuleGetFunction(&mm, fmod, "matmul16"));
    CUdeviceptr dscale;
    size_t ssize;
    CHECK(cuModuleGetGlobal(&dscale, &ssize, fmod, "scale"));
    expect("__constant__ size", ssize == sizeof(float));
    float sc = 0.5f;
    CHECK(cuMemcpyHtoD(dscale, &sc, sizeof sc));
    const int m = 80;
    float *A = malloc(m * m * 4), *B = malloc(m * m * 4), *C = malloc(m * m * 4);
    for (int i = 0; i < m * m; i++) { A[i] = (float)(i % 7) - 3.0f; B[i] = (float)(i % 5) * 0.25f; }
    CUdeviceptr dA, dB, dC;
    CHECK(cuMemAlloc(&dA, m * m * 4));
    CHECK(cuMemAlloc(&dB, m * m * 4));
    CHECK(cuMemAlloc(&dC, m * m * 4));
    CHECK(cuMemcpyHtoD(dA, A, m * m * 4));
    CHECK(cuMemcpyHtoD(dB, B, m * m * 4));
    int mm_n = m;
    void *margs[] = {&dA, &dB, &dC, &mm_n};
    CHECK(cuLaunchKernel(mm, (m + 15) / 16, (m + 15) / 16, 1, 16, 16, 1, 0, NULL, margs, NULL));
    CHECK(cuMemcpyDtoH(C, dC, m * m * 4));
    bad = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            double acc = 0;
            for (int k = 0; k < m; k++) acc += (double)A[i * m + k] * B[k * m + j];
            bad += fabs(C[i * m + j] - 0.5 * acc) > 1e-3 * (1 + fabs(acc));
        }
    expect("matmul16 from the fatbin", bad == 0);

    /* an explicit graph: copy in, vec_add, copy out; instantiated once, launched twice with new parameters */
    {
        CUgraph g;
        CUgraphNode cin, kn, cout;
        CHECK(cuGraphCreate(&g, 0));
        CUDA_MEMCPY3D cp;
        memset(&cp, 0, sizeof cp);
        cp.srcMemoryType = CU_MEMORYTYPE_HOST;
        cp.srcHost = hb;
        cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        cp.dstDevice = db;
        cp.WidthInBytes = bytes;
        cp.Height = 1;
        cp.Depth = 1;
        CHECK(cuGraphAddMemcpyNode(&cin, g, NULL, 0, &cp, ctx));
        CUDA_KERNEL_NODE_PARAMS kp;
        memset(&kp, 0, sizeof kp);
        kp.func = vec_add;
        kp.gridDimX = grid; kp.gridDimY = 1; kp.gridDimZ = 1;
        kp.blockDimX = 256; kp.blockDimY = 1; kp.blockDimZ = 1;
        void *gargs[] = {&da, &db, &dc, &nn};
        kp.kernelParams = gargs;
        CHECK(cuGraphAddKernelNode(&kn, g, &cin, 1, &kp));
        CUDA_MEMCPY3D back;
        memset(&back, 0, sizeof back);
        back.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        back.srcDevice = dc;
        back.dstMemoryType = CU_MEMORYTYPE_HOST;
        back.dstHost = hc;
        back.WidthInBytes = bytes;
        back.Height = 1;
        back.Depth = 1;
        CHECK(cuGraphAddMemcpyNode(&cout, g, &kn, 1, &back, ctx));
        CUgraphExec ge;
        CHECK(cuGraphInstantiate(&ge, g, 0));
        for (int i = 0; i < n; i++) hb[i] = (float)(i % 13);
        memset(hc, 0, bytes);
        CHECK(cuGraphLaunch(ge, s));
        CHECK(cuStreamSynchronize(s));
        bad = 0;
        for (int i = 0; i < n; i++) bad += hc[i] != ha[i] + (float)(i % 13);
        expect("graph: copy in, kernel, copy out", bad == 0);
        void *gargs2[] = {&da, &da, &dc, &nn};  /* c = a + a */
        kp.kernelParams = gargs2;
        CHECK(cuGraphExecKernelNodeSetParams(ge, kn, &kp));
        CHECK(cuGraphLaunch(ge, s));
        CHECK(cuStreamSynchronize(s));
        bad = 0;
        for (int i = 0; i < n; i++) bad += hc[i] != ha[i] + ha[i];
        expect("graph relaunched with new kernel parameters", bad == 0);
        CHECK(cuGraphExecDestroy(ge));
        CHECK(cuGraphDestroy(g));
        CHECK(cuMemcpyHtoD(db, hb, bytes));
    }

    /* stream capture: a memset, a launch and a copy recorded into a graph instead of running */
    {
        CUgraph g;
        CUgraphExec ge;
        CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CUstreamCaptureStatus st;
        CHECK(cuStreamIsCapturing(s, &st));
        expect("the stream is capturing", st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
        CHECK(cuMemsetD32Async(dc, 0, n, s));
        void *cargs[] = {&da, &db, &dc, &nn};
        CHECK(cuLaunchKernel(vec_add, grid, 1, 1, 256, 1, 1, 0, s, cargs, NULL));
        CHECK(cuMemcpyDtoHAsync(hc, dc, bytes, s));
        memset(hc, 0, bytes);
        CHECK(cuStreamEndCapture(s, &g));
        CHECK(cuStreamSynchronize(s));
        bad = 0;
        for (int i = 0; i < n; i++) bad += hc[i] != 0.0f;
        expect("captured work did not run during capture", bad == 0);
        CHECK(cuGraphInstantiate(&ge, g, 0));
        CHECK(cuGraphLaunch(ge, s));
        CHECK(cuStreamSynchronize(s));
        bad = 0;
        for (int i = 0; i < n; i++) bad += hc[i] != ha[i] + hb[i];
        expect("the captured graph replays the work", bad == 0);
        CHECK(cuGraphExecDestroy(ge));
        CHECK(cuGraphDestroy(g));
        expect_code("capturing the legacy stream", cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
                    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }

    /* bad input: CUDA's codes, no crash */
    CUdeviceptr dummy;
    expect_code("cuMemAlloc of 0 bytes", cuMemAlloc(&dummy, 0), CUDA_ERROR_INVALID_VALUE);
    expect_code("cuMemFree of an interior pointer", cuMemFree(da + 4), CUDA_ERROR_INVALID_VALUE);
    expect_code("cuLaunchKernel of a NULL function", cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
                CUDA_ERROR_INVALID_HANDLE);
    expect_code("cuLaunchKernel with a 2048-thread block",
                cuLaunchKernel(vec_add, 1, 1, 1, 2048, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    expect_code("cuMemcpyHtoD past the end of an allocation", cuMemcpyHtoD(da, ha, bytes + 4),
                CUDA_ERROR_INVALID_VALUE);

    /* an out-of-bounds kernel: CUDA_ERROR_ILLEGAL_ADDRESS at the next synchronization, sticky afterwards */
    CHECK(cuMemFree(db));
    void *oargs[] = {&da, &da, &dc, &nn};
    unsigned full = n / 256 + 1;
    CUresult r = cuLaunchKernel(off_by_one, full, 1, 1, 256, 1, 1, 0, NULL, oargs, NULL);
    if (r == CUDA_SUCCESS) r = cuCtxSynchronize();
    expect_code("an out-of-bounds store", r, CUDA_ERROR_ILLEGAL_ADDRESS);
    expect_code("the context stays failed", cuMemAlloc(&dummy, 64), CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(cuCtxDestroy(ctx));
    expect_code("a destroyed context", cuCtxSetCurrent(ctx), CUDA_ERROR_INVALID_CONTEXT);

    printf("%d checks failed\n", failures);
    return failures ? 1 : 0;
}
