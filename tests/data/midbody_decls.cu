// Inline PTX blocks with their own declarations: nvcc pastes each `{ .reg ...; .local ...; ... }`
// block into the middle of the function body, after the instructions before it.  The blocks also
// name array elements as operands (`%spill[1]`, `%sh[%r]`), the forms tinygrad's PTX uses.
__global__ void clamp_count(const int *in, int *out, int lo, int hi) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    int r;
    asm("{\n\t.reg .pred %%lt, %%gt;\n\t.reg .s32 %%t;\n\t"
        "setp.lt.s32 %%lt, %1, %2;\n\tsetp.gt.s32 %%gt, %1, %3;\n\t"
        "selp.s32 %%t, %2, %1, %%lt;\n\tselp.s32 %0, %3, %%t, %%gt;\n\t}"
        : "=r"(r) : "r"(v), "r"(lo), "r"(hi));
    int s;
    asm("{\n\t.local .align 4 .b32 %%spill[2];\n\t.reg .b32 %%u;\n\t"
        "st.local.b32 %%spill[1], %1;\n\tld.local.b32 %%u, %%spill[1];\n\t"
        "mul.lo.s32 %0, %%u, 3;\n\t}"
        : "=r"(s) : "r"(r));
    // neighbour exchange through a block-local shared array: thread t reads what t^1 wrote
    int n;
    unsigned t = threadIdx.x;
    asm volatile("{\n\t.shared .align 4 .b32 %%sh[256];\n\t.reg .b32 %%j;\n\t"
                 "st.shared.b32 %%sh[%1], %2;\n\tbar.sync 0;\n\txor.b32 %%j, %1, 1;\n\t"
                 "ld.shared.b32 %0, %%sh[%%j];\n\t}"
                 : "=r"(n) : "r"(t), "r"(s));
    out[i] = s + 1000 * n;
}
