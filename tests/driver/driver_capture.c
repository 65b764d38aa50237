/* Stream capture across streams with the CUDA driver API, as applications use it to build graphs: a fork
   into two side streams through events and a join back into the origin stream, the graph's structure
   (nodes, types, edges), its replay with new inputs, capture into an existing graph, a graph launched
   inside a capture, the capture's dependency set, capture modes, and every rule whose breaking CUDA reports
   (the codes the driver API documentation gives for them).  Each check prints one line; exit status 0 only
   when every check passed.  Usage: driver_capture KERNELS.ptx */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"

static CUfunction vec_add;
static int n = 4096;

static void launch_add(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUstream s) {
    void *args[] = {&a, &b, &c, &n};
    CHECK(cuLaunchKernel(vec_add, (n + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

static int contains(const CUgraphNode *nodes, size_t count, CUgraphNode x) {
    for (size_t i = 0; i < count; i++)
        if (nodes[i] == x) return 1;
    return 0;
}

static void host_cb(void *user) { (*(int *)user)++; }

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s KERNELS.ptx\n", argv[0]); return 2; }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoad(&mod, argv[1]));
    CHECK(cuModuleGetFunction(&vec_add, mod, "vec_add"));

    size_t bytes = n * sizeof(float);
    float *ha, *hb, *hout;
    CHECK(cuMemAllocHost((void **)&ha, bytes));
    CHECK(cuMemAllocHost((void **)&hb, bytes));
    CHECK(cuMemAllocHost((void **)&hout, bytes));
    CUdeviceptr a, b, c1, c2, d;
    CHECK(cuMemAlloc(&a, bytes));
    CHECK(cuMemAlloc(&b, bytes));
    CHECK(cuMemAlloc(&c1, bytes));
    CHECK(cuMemAlloc(&c2, bytes));
    CHECK(cuMemAlloc(&d, bytes));
    CUstream s0, s1, s2, nb;
    CHECK(cuStreamCreate(&s0, CU_STREAM_DEFAULT));
    CHECK(cuStreamCreate(&s1, CU_STREAM_DEFAULT));
    CHECK(cuStreamCreate(&s2, CU_STREAM_DEFAULT));
    CHECK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    CUevent e0, e1, e2;
    CHECK(cuEventCreate(&e0, CU_EVENT_DISABLE_TIMING));
    CHECK(cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
    CHECK(cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING));

    /* fork and join: d = (a + b) + (a + a), the two sums on side streams */
    CUgraph g;
    CUgraphNode k1 = 0, k2 = 0, k3 = 0;
    {
        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK(cuMemcpyHtoDAsync(a, ha, bytes, s0));
        CHECK(cuMemcpyHtoDAsync(b, hb, bytes, s0));
        CHECK(cuEventRecord(e0, s0));
        CHECK(cuStreamWaitEvent(s1, e0, 0));
        CHECK(cuStreamWaitEvent(s2, e0, 0));
        CUstreamCaptureStatus st;
        CHECK(cuStreamIsCapturing(s1, &st));
        expect("a stream that waits for a captured event joins the capture", st == CU_STREAM_CAPTURE_STATUS_ACTIVE);
        cuuint64_t id0, id1;
        CHECK(cuStreamGetCaptureInfo(s0, &st, &id0, NULL, NULL, NULL, NULL));
        CHECK(cuStreamGetCaptureInfo(s1, &st, &id1, NULL, NULL, NULL, NULL));
        expect("the forked stream reports the origin's capture id", id0 == id1 && id0 != 0);
        launch_add(a, b, c1, s1);
        const CUgraphNode *deps;
        size_t ndeps;
        CHECK(cuStreamGetCaptureInfo(s1, &st, NULL, NULL, &deps, NULL, &ndeps));
        expect("the dependency set is the last captured node", ndeps == 1);
        k1 = deps[0];
        launch_add(a, a, c2, s2);
        CHECK(cuStreamGetCaptureInfo(s2, &st, NULL, NULL, &deps, NULL, &ndeps));
        k2 = ndeps == 1 ? deps[0] : 0;
        CHECK(cuEventRecord(e1, s1));
        CHECK(cuEventRecord(e2, s2));
        CHECK(cuStreamWaitEvent(s0, e1, 0));
        CHECK(cuStreamWaitEvent(s0, e2, 0));
        launch_add(c1, c2, d, s0);
        CHECK(cuStreamGetCaptureInfo(s0, &st, NULL, NULL, &deps, NULL, &ndeps));
        k3 = ndeps == 1 ? deps[0] : 0;
        CHECK(cuMemcpyDtoHAsync(hout, d, bytes, s0));
        expect_code("ending the capture on a forked stream", cuStreamEndCapture(s1, &g),
                    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
        CHECK(cuStreamEndCapture(s0, &g));
        CHECK(cuStreamIsCapturing(s1, &st));
        expect("the forked streams stop capturing with the origin", st == CU_STREAM_CAPTURE_STATUS_NONE);
    }
    {
        size_t count = 0;
        CHECK(cuGraphGetNodes(g, NULL, &count));
        expect("the graph has 6 nodes (2 copies in, 3 kernels, 1 copy out)", count == 6);
        CUgraphNode roots[8];
        size_t nroots = 8;
        CHECK(cuGraphGetRootNodes(g, roots, &nroots));
        CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
        if (nroots == 1) CHECK(cuGraphNodeGetType(roots[0], &t));
        expect("one root, the first copy (a memcpy node)", nroots == 1 && t == CU_GRAPH_NODE_TYPE_MEMCPY);
        CHECK(cuGraphNodeGetType(k1, &t));
        expect("a captured launch is a kernel node", t == CU_GRAPH_NODE_TYPE_KERNEL);
        CUgraphNode kd[8];
        size_t nkd = 8;
        CHECK(cuGraphNodeGetDependencies(k3, kd, NULL, &nkd));
        expect("the joining kernel depends on both side kernels", contains(kd, nkd, k1) && contains(kd, nkd, k2));
        CUgraphNode k1d[8];
        size_t nk1d = 8;
        CHECK(cuGraphNodeGetDependentNodes(k1, k1d, NULL, &nk1d));
        expect("a side kernel's dependent is the joining kernel", nk1d == 1 && k1d[0] == k3);
        size_t nedges = 0;
        CHECK(cuGraphGetEdges(g, NULL, NULL, NULL, &nedges));
        CUgraphNode from[16], to[16];
        size_t ne = 16;
        CHECK(cuGraphGetEdges(g, from, to, NULL, &ne));
        int k1_to_k3 = 0;
        for (size_t i = 0; i < ne; i++) k1_to_k3 |= from[i] == k1 && to[i] == k3;
        expect("the edge list holds side kernel -> joining kernel", ne == nedges && nedges >= 5 && k1_to_k3);
    }
    {
        CUgraphExec ge;
        CHECK(cuGraphInstantiate(&ge, g, 0));
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < n; i++) { ha[i] = (float)(i + round); hb[i] = (float)(2 * i); }
            memset(hout, 0, bytes);
            CHECK(cuGraphLaunch(ge, s0));
            CHECK(cuStreamSynchronize(s0));
            int bad = 0;
            for (int i = 0; i < n; i++) bad += hout[i] != (ha[i] + hb[i]) + (ha[i] + ha[i]);
            printf("%s the fork-join graph computes (a+b)+(a+a), launch %d\n", bad ? "FAIL" : "ok", round + 1);
            failures += bad != 0;
        }
        /* a graph launched inside a capture becomes its nodes there */
        CUgraph outer;
        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK(cuGraphLaunch(ge, s0));
        CHECK(cuGraphLaunch(ge, s0));
        CHECK(cuStreamEndCapture(s0, &outer));
        size_t count = 0;
        CHECK(cuGraphGetNodes(outer, NULL, &count));
        expect("two graph launches captured: 12 nodes", count == 12);
        CHECK(cuGraphDestroy(outer));
        CHECK(cuGraphExecDestroy(ge));
    }

    /* capture into an existing graph, after a node of it; the dependency set replaced */
    {
        CUgraph h;
        CUgraphNode first;
        CHECK(cuGraphCreate(&h, 0));
        CHECK(cuGraphAddEmptyNode(&first, h, NULL, 0));
        CHECK(cuStreamBeginCaptureToGraph(s0, h, &first, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
        launch_add(a, b, c1, s0);
        CHECK(cuStreamUpdateCaptureDependencies(s0, NULL, NULL, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
        launch_add(a, a, c2, s0);
        CUgraph same;
        CHECK(cuStreamEndCapture(s0, &same));
        expect("cuStreamBeginCaptureToGraph captures into the given graph", same == h);
        CUgraphNode roots[4];
        size_t nroots = 4;
        CHECK(cuGraphGetRootNodes(h, roots, &nroots));
        expect("after an emptied dependency set the next node is a root", nroots == 2);
        size_t count = 0;
        CHECK(cuGraphGetNodes(h, NULL, &count));
        expect("the existing node and two captured kernels", count == 3);
        CHECK(cuGraphDestroy(h));
    }

    /* host functions and memsets in a capture */
    {
        int calls = 0;
        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK(cuMemsetD32Async(d, 0x3f800000u, n, s0));  /* 1.0f */
        CHECK(cuLaunchHostFunc(s0, host_cb, &calls));
        CHECK(cuMemcpyDtoHAsync(hout, d, bytes, s0));
        CHECK(cuStreamEndCapture(s0, &g));
        expect("nothing ran while capturing", calls == 0);
        CUgraphNode nodes[4];
        size_t count = 4;
        CHECK(cuGraphGetNodes(g, nodes, &count));
        CUgraphNodeType t0 = CU_GRAPH_NODE_TYPE_EMPTY, t1 = CU_GRAPH_NODE_TYPE_EMPTY;
        CHECK(cuGraphNodeGetType(nodes[0], &t0));
        CHECK(cuGraphNodeGetType(nodes[1], &t1));
        expect("a captured memset and host function keep their node types",
               t0 == CU_GRAPH_NODE_TYPE_MEMSET && t1 == CU_GRAPH_NODE_TYPE_HOST);
        CUgraphExec ge;
        CHECK(cuGraphInstantiate(&ge, g, 0));
        CHECK(cuGraphLaunch(ge, s0));
        CHECK(cuStreamSynchronize(s0));
        expect("the replay ran the memset and the host function", calls == 1 && hout[0] == 1.0f && hout[n - 1] == 1.0f);
        CHECK(cuGraphExecDestroy(ge));
        CHECK(cuGraphDestroy(g));
    }

    /* the rules: each broken one reported with CUDA's code, the capture invalidated where CUDA invalidates it */
    {
        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK(cuEventRecord(e0, s0));
        CHECK(cuStreamWaitEvent(s1, e0, 0));
        launch_add(a, b, c1, s1);
        expect_code("ending with a fork that was not joined", cuStreamEndCapture(s0, &g),
                    CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
        expect("no graph from a failed capture", g == NULL);
        CUstreamCaptureStatus st;
        CHECK(cuStreamIsCapturing(s1, &st));
        expect("the unjoined stream stopped capturing", st == CU_STREAM_CAPTURE_STATUS_NONE);

        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        launch_add(a, b, c1, s0);
        expect_code("synchronizing a capturing stream", cuStreamSynchronize(s0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        CHECK(cuStreamIsCapturing(s0, &st));
        expect("the capture is invalidated", st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        void *args[] = {&a, &b, &c1, &n};
        expect_code("a launch into an invalidated capture",
                    cuLaunchKernel(vec_add, 16, 1, 1, 256, 1, 1, 0, s0, args, NULL),
                    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        expect_code("ending an invalidated capture", cuStreamEndCapture(s0, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        expect_code("querying a capturing stream", cuStreamQuery(s0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        cuStreamEndCapture(s0, &g);

        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK(cuEventRecord(e0, s0));
        expect_code("synchronizing a captured event", cuEventSynchronize(e0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        cuStreamEndCapture(s0, &g);

        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        expect_code("the legacy stream while a blocking stream captures",
                    cuLaunchKernel(vec_add, 16, 1, 1, 256, 1, 1, 0, NULL, args, NULL),
                    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
        expect_code("... invalidates the capture", cuStreamEndCapture(s0, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        expect_code("cuCtxSynchronize during a capture", cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        cuStreamEndCapture(s0, &g);

        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        expect_code("a synchronous copy during a global-mode capture", cuMemcpyHtoD(a, ha, 64),
                    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        cuStreamEndCapture(s0, &g);

        /* relaxed mode, on a non-blocking stream: the same copy and the legacy stream are allowed */
        CHECK(cuStreamBeginCapture(nb, CU_STREAM_CAPTURE_MODE_RELAXED));
        launch_add(a, b, c1, nb);
        CHECK(cuMemcpyHtoD(a, ha, 64));
        launch_add(a, b, c2, NULL);
        CHECK(cuStreamSynchronize(NULL));
        CHECK(cuStreamEndCapture(nb, &g));
        size_t count = 0;
        CHECK(cuGraphGetNodes(g, NULL, &count));
        expect("a relaxed capture on a non-blocking stream allows a synchronous copy and the legacy stream",
               count == 1);
        CHECK(cuGraphDestroy(g));

        /* the thread's mode: relaxed lets this thread make unsafe calls during its own global capture (of a
           non-blocking stream, so the legacy stream the copy uses does not depend on it) */
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        CHECK(cuThreadExchangeStreamCaptureMode(&mode));
        expect("the thread's mode was global", mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
        CHECK(cuStreamBeginCapture(nb, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK(cuMemcpyHtoD(a, ha, 64));
        launch_add(a, b, c1, nb);
        CHECK(cuStreamEndCapture(nb, &g));
        CHECK(cuGraphDestroy(g));
        CHECK(cuThreadExchangeStreamCaptureMode(&mode));

        /* an event of uncaptured work, and one of another capture */
        launch_add(a, b, c1, s2);
        CHECK(cuEventRecord(e2, s2));
        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        expect_code("a capturing stream waits for uncaptured work", cuStreamWaitEvent(s0, e2, 0),
                    CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
        cuStreamEndCapture(s0, &g);
        CHECK(cuStreamSynchronize(s2));

        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
        CHECK(cuEventRecord(e1, s1));
        expect_code("merging two captures", cuStreamWaitEvent(s0, e1, 0), CUDA_ERROR_STREAM_CAPTURE_MERGE);
        cuStreamEndCapture(s1, &g);
        cuStreamEndCapture(s0, &g);

        CHECK(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
        expect_code("beginning a capture twice", cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL),
                    CUDA_ERROR_ILLEGAL_STATE);
        CHECK(cuStreamEndCapture(s0, &g));
        CHECK(cuGraphDestroy(g));
        expect_code("ending a capture that was not begun", cuStreamEndCapture(s0, &g), CUDA_ERROR_ILLEGAL_STATE);
        expect_code("updating the dependencies of a stream that is not capturing",
                    cuStreamUpdateCaptureDependencies(s0, NULL, NULL, 0, 0), CUDA_ERROR_ILLEGAL_STATE);
    }

    /* after all of that the context works: plain launches run */
    launch_add(a, b, d, s0);
    CHECK(cuMemcpyDtoHAsync(hout, d, bytes, s0));
    CHECK(cuStreamSynchronize(s0));
    int bad = 0;
    for (int i = 0; i < n; i++) bad += hout[i] != ha[i] + hb[i];
    expect("the context still works", bad == 0);

    printf("%d checks failed\n", failures);
    return failures != 0;
}
