// Device printf with bad arguments: the host must print, never crash (tests/test_printf.py).
#include <cstdio>

extern "C" __global__ void print_str_ptr(const char* s) {  // a string in a kernel argument array
    if (threadIdx.x == 0) printf("[%s]\n", s);
}

extern "C" __global__ void print_addr_as_str(unsigned long long addr) {  // %s of an arbitrary address
    if (threadIdx.x == 0) printf("[%s]\n", (const char*)addr);
}

extern "C" __global__ void print_int_as_str(int v) {  // printf("%s", int): a classic bug
    if (threadIdx.x == 0) printf("[%s]\n", v);
}

extern "C" __global__ void print_star_width(int w, int p, int v) {
    if (threadIdx.x == 0) printf("[%*d][%.*f]\n", w, v, p, 1.5);
}

extern "C" __global__ void print_literal(int v) {
    if (threadIdx.x == 0) printf("[%s|%.3s|%-6s|%5s] %hhd %hd %u %x %c %%\n", "lit", "abcdef", "ab", "cd",
                                 v, v, v, v, 65 + (v & 7));
}

extern "C" __global__ void print_offset_str(const char* s, int off) {  // a pointer inside an array
    if (threadIdx.x == 0) printf("[%s]\n", s + off);
}
