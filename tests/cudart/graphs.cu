// CUDA graphs, both ways.  Stream capture: a stream forks work to a second stream through an event, both
// launch kernels, the origin joins it back, copies the result to the host; the captured graph is
// instantiated once and launched three times.  An explicit graph: a memset node, two kernel nodes that
// depend on it, a kernel node joining them (one edge added afterwards with cudaGraphAddDependencies) and a
// memcpy node; its node count, node kinds and a changed kernel argument (cudaGraphExecKernelNodeSetParams)
// are checked.  And the capture rules: synchronizing a capturing stream invalidates the capture, an unjoined
// fork makes its end fail, the legacy stream cannot be captured.
#define PROGRAM "graphs"
#include "check.h"
#include <vector>

__global__ void scale(float *x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

__global__ void add_to(float *x, const float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}

__global__ void fill(float *x, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v + i;
}

static int fails = 0;
#define EXPECT(cond)                                                                \
    do {                                                                            \
        if (!(cond)) { std::printf("graphs: expected %s\n", #cond); fails++; }      \
    } while (0)

int main() {
    const int n = 4096, threads = 256, blocks = n / threads;
    std::vector<float> h(n), out(n);
    for (int i = 0; i < n; i++) h[i] = (float)(i % 100);
    float *a, *b;
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    CHECK(cudaMalloc(&b, n * sizeof(float)));
    CHECK(cudaMemcpy(a, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    // ---- stream capture with a fork and a join: a = 2a + (b = a + 1) per launch
    cudaStream_t s, side;
    cudaEvent_t forked, joined;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
    float *pinned;
    CHECK(cudaMallocHost(&pinned, n * sizeof(float)));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status;
    CHECK(cudaStreamIsCapturing(s, &status));
    EXPECT(status == cudaStreamCaptureStatusActive);
    CHECK(cudaMemcpyAsync(b, a, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
    CHECK(cudaEventRecord(forked, s));
    CHECK(cudaStreamWaitEvent(side, forked, 0));  // side joins the capture
    CHECK(cudaStreamIsCapturing(side, &status));
    EXPECT(status == cudaStreamCaptureStatusActive);
    scale<<<blocks, threads, 0, s>>>(a, 2.0f, n);
    fill<<<1, 1, 0, side>>>(b, 0.0f, 0);  // a no-op launch: the side stream's work is ordered after the copy
    CHECK(cudaMemsetAsync(pinned, 0, n * sizeof(float), side));
    CHECK(cudaEventRecord(joined, side));
    CHECK(cudaStreamWaitEvent(s, joined, 0));  // joined back
    add_to<<<blocks, threads, 0, s>>>(b, a, n);  // b = a_old + 2 a_old
    CHECK(cudaMemcpyAsync(a, b, n * sizeof(float), cudaMemcpyDeviceToDevice, s));
    CHECK(cudaMemcpyAsync(pinned, a, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    cudaGraph_t captured;
    CHECK(cudaStreamEndCapture(s, &captured));
    CHECK(cudaStreamIsCapturing(side, &status));
    EXPECT(status == cudaStreamCaptureStatusNone);
    size_t count = 0;
    CHECK(cudaGraphGetNodes(captured, nullptr, &count));
    EXPECT(count == 7);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, captured, 0));
    for (int k = 0; k < 3; k++) CHECK(cudaGraphLaunch(exec, s));  // a = 3^3 a
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++)
        if (pinned[i] != h[i] * 27) { std::printf("graphs: FAIL captured: %d is %g\n", i, pinned[i]); return 1; }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(captured));

    // ---- an explicit graph: memset b; fill a (kernel 1) and scale b (kernel 2) after it; add (3) after both
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t memset_node, k1, k2, k3, copy_node;
    cudaMemsetParams ms = {};
    ms.dst = b; ms.value = 0; ms.elementSize = 4; ms.width = n; ms.height = 1;
    CHECK(cudaGraphAddMemsetNode(&memset_node, g, nullptr, 0, &ms));
    float v = 1.0f, two = 2.0f;
    int nn = n;
    void *fill_args[] = {&a, &v, &nn};
    cudaKernelNodeParams kp = {};
    kp.func = (void *)fill; kp.gridDim = dim3(blocks); kp.blockDim = dim3(threads); kp.kernelParams = fill_args;
    CHECK(cudaGraphAddKernelNode(&k1, g, &memset_node, 1, &kp));
    void *scale_args[] = {&b, &two, &nn};
    kp.func = (void *)scale; kp.kernelParams = scale_args;
    CHECK(cudaGraphAddKernelNode(&k2, g, &memset_node, 1, &kp));
    void *add_args[] = {&b, &a, &nn};
    kp.func = (void *)add_to; kp.kernelParams = add_args;
    CHECK(cudaGraphAddKernelNode(&k3, g, &k1, 1, &kp));
    CHECK(cudaGraphAddDependencies(g, &k2, &k3, nullptr, 1));  // an edge after the fact
    cudaMemcpy3DParms cp = {};
    cp.srcPtr = make_cudaPitchedPtr(b, n * sizeof(float), n, 1);
    cp.dstPtr = make_cudaPitchedPtr(pinned, n * sizeof(float), n, 1);
    cp.extent = make_cudaExtent(n * sizeof(float), 1, 1);
    cp.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaGraphAddMemcpyNode(&copy_node, g, &k3, 1, &cp));
    count = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &count));
    EXPECT(count == 5);
    size_t roots = 0;
    CHECK(cudaGraphGetRootNodes(g, nullptr, &roots));
    EXPECT(roots == 1);
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(memset_node, &type));
    EXPECT(type == cudaGraphNodeTypeMemset);
    CHECK(cudaGraphNodeGetType(copy_node, &type));
    EXPECT(type == cudaGraphNodeTypeMemcpy);
    CHECK(cudaGraphNodeGetType(k3, &type));
    EXPECT(type == cudaGraphNodeTypeKernel);
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int i = 0; i < n; i++) pinned[i] = -1;
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++)
        if (pinned[i] != 1.0f + i) { std::printf("graphs: FAIL explicit: %d is %g\n", i, pinned[i]); return 1; }
    v = 5.0f;  // the node copied its arguments: a new value needs new parameters
    kp.func = (void *)fill; kp.kernelParams = fill_args;
    CHECK(cudaGraphExecKernelNodeSetParams(exec, k1, &kp));
    CHECK(cudaGraphLaunch(exec, 0));  // on the legacy stream this time
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < n; i++)
        if (pinned[i] != 5.0f + i) { std::printf("graphs: FAIL updated: %d is %g\n", i, pinned[i]); return 1; }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));

    // ---- the capture rules
    EXPECT(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal) == cudaErrorStreamCaptureUnsupported);
    cudaGetLastError();
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    scale<<<blocks, threads, 0, s>>>(a, 1.0f, n);
    EXPECT(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
    cudaGraph_t broken = nullptr;
    EXPECT(cudaStreamEndCapture(s, &broken) == cudaErrorStreamCaptureInvalidated && broken == nullptr);
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(forked, s));
    CHECK(cudaStreamWaitEvent(side, forked, 0));
    scale<<<blocks, threads, 0, side>>>(a, 1.0f, n);  // never joined back
    EXPECT(cudaStreamEndCapture(s, &broken) == cudaErrorStreamCaptureUnjoined);
    EXPECT(cudaStreamEndCapture(s, &broken) == cudaErrorIllegalState);  // no capture left to end
    cudaGetLastError();

    CHECK(cudaFreeHost(pinned));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaEventDestroy(forked));
    CHECK(cudaEventDestroy(joined));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaStreamDestroy(side));
    if (fails) { std::printf("graphs: FAIL %d checks\n", fails); return 1; }
    std::printf("graphs: ok captured 7 nodes across 2 streams, 3 launches; explicit 5 nodes, updated\n");
    return 0;
}
