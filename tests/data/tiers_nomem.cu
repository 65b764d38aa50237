// Kernels without a memory site for the tiers' counters (instrument/probes.py): no load or store
// outside the parameter space and no conditional branch.

// Nothing at all: the per-launch overhead kernel.
extern "C" __global__ void nothing() {}

// Registers and parameters only: the volatile asm keeps the arithmetic on the parameters alive.
extern "C" __global__ void params_only(int a, int b) {
    int x;
    asm volatile("mad.lo.s32 %0, %1, %2, %1;" : "=r"(x) : "r"(a), "r"(b));
    asm volatile("xor.b32 %0, %0, %1;" : "+r"(x) : "r"(static_cast<int>(threadIdx.x)));
}
