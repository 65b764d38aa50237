// Linked with callee.cu by the JIT linker (tests/test_driver_link.py): compiled separately, as numba-cuda,
// cuda.core and NVRTC users compile the pieces they link.
//  - `consume` is declared here with a return value that the caller ignores; callee.cu defines it void (a
//    C-ABI declaration that does not match its definition links: the linker compares symbols, not prototypes)
//  - `bias` is a C++17 inline variable: both files define it, weak, and the linked program has one
extern "C" __device__ int consume(int *slot, int value);

inline __device__ int bias = 7;

extern "C" __global__ void scale_and_consume(int *out, int *slots, const int *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        consume(&slots[i], in[i]);
        out[i] = 2 * in[i] + bias;
    }
}
