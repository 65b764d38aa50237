"""PTX control flow: bra (forward / backward, guarded, .uni), loops with per-thread trip counts, calls to
.func with .param arguments and return values (PTX ABI), recursion (direct and mutual, with a forward
prototype), a .func writing through a pointer, struct-by-value .param arrays, exit and multiple ret.

Every kernel is written out in full; expectations are computed in plain Python.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.intutil import mask, random_values, run_ptx

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n"
SENTINEL = 0xA5A5A5A5

# kernel k(out, inp, n): thread i (one block) loads inp[i] into %r3, runs BODY (result in %r10), stores it
# to out[i].  %rd4 = &inp[i], %rd5 = &out[i].
KERNEL = """
.visible .entry k(
    .param .u64 out,
    .param .u64 inp,
    .param .u32 n
)
{{
    .reg .pred %p<16>;
    .reg .b32 %r<64>;
    .reg .b64 %rd<32>;
{decls}
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [inp];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra $L_done;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    add.s64 %rd5, %rd1, %rd3;
    ld.global.u32 %r3, [%rd4];
{body}
    st.global.u32 [%rd5], %r10;
$L_done:
    ret;
}}
"""


def run_kernel(body: str, inputs, funcs: str = "", decls: str = "", block: int | None = None) -> list[int]:
    """Build `funcs` + kernel k around `body`, run one thread per input, return out[] as Python ints."""
    ptx = HEADER + funcs + KERNEL.format(body=body, decls=decls)
    inp = np.array([x & mask(32) for x in inputs], dtype=np.uint32)
    out = np.full(len(inp), SENTINEL, dtype=np.uint32)
    run_ptx(ptx, [out, inp, np.uint32(len(inp))], grid=1, block=block or len(inp))
    return [int(x) for x in out]


def u32(x: int) -> int:
    return x & mask(32)


# ----------------------------------------------------------------------------------------------------------
# branches and loops
# ----------------------------------------------------------------------------------------------------------


def test_forward_branch_diamond():
    """if (x < 1000) r = 2x + 1 else r = x - 1000, with a guarded forward bra and an unconditional bra."""
    body = """
    setp.lt.u32 %p2, %r3, 1000;
    @%p2 bra $L_then;
    sub.u32 %r10, %r3, 1000;
    bra $L_join;
$L_then:
    mad.lo.u32 %r10, %r3, 2, 1;
$L_join:
"""
    xs = [0, 1, 999, 1000, 1001, 5000, 0xFFFFFFFF, 500] * 8
    assert run_kernel(body, xs) == [u32(2 * x + 1) if x < 1000 else u32(x - 1000) for x in xs]


def test_negated_guard_branch():
    """@!%p bra: odd inputs skip the doubling."""
    body = """
    mov.u32 %r10, %r3;
    and.b32 %r4, %r3, 1;
    setp.eq.u32 %p2, %r4, 1;
    @!%p2 bra $L_even;
    bra $L_end;
$L_even:
    shl.b32 %r10, %r3, 1;
$L_end:
"""
    xs = list(range(64))
    assert run_kernel(body, xs) == [x if x & 1 else 2 * x for x in xs]


def test_backward_loop_divergent_trip_counts():
    """do { acc = acc*3 + i; i++ } while (i < x): every thread runs a different number of iterations."""
    body = """
    mov.u32 %r10, 7;
    mov.u32 %r5, 0;
$L_loop:
    mad.lo.u32 %r10, %r10, 3, %r5;
    add.u32 %r5, %r5, 1;
    setp.lt.u32 %p2, %r5, %r3;
    @%p2 bra $L_loop;
"""
    xs = [1, 2, 3, 10, 100, 257, 1, 64] + [int(v) % 300 + 1 for v in random_values(32, 56, 300)]

    def model(x):
        acc, i = 7, 0
        while True:
            acc = u32(acc * 3 + i)
            i += 1
            if not i < x:
                return acc

    assert run_kernel(body, xs) == [model(x) for x in xs]


def test_while_loop_zero_trip():
    """Top-tested loop (forward exit branch, backward bra): zero iterations when x == 0."""
    body = """
    mov.u32 %r10, 0;
    mov.u32 %r5, %r3;
$L_head:
    setp.eq.u32 %p2, %r5, 0;
    @%p2 bra $L_exit;
    add.u32 %r10, %r10, %r5;
    sub.u32 %r5, %r5, 1;
    bra $L_head;
$L_exit:
"""
    xs = [0, 1, 2, 3, 0, 100, 1000, 65535] * 4
    assert run_kernel(body, xs) == [u32(x * (x + 1) // 2) for x in xs]


def test_nested_loops_with_break():
    """for i < (x & 15): for j < (x >> 4 & 15): { if (i*j > 40) break outer; cnt++ }."""
    body = """
    and.b32 %r6, %r3, 15;
    shr.u32 %r7, %r3, 4;
    and.b32 %r7, %r7, 15;
    mov.u32 %r10, 0;
    mov.u32 %r4, 0;
$L_outer:
    setp.ge.u32 %p2, %r4, %r6;
    @%p2 bra $L_out;
    mov.u32 %r5, 0;
$L_inner:
    setp.ge.u32 %p3, %r5, %r7;
    @%p3 bra $L_inner_end;
    mul.lo.u32 %r8, %r4, %r5;
    setp.gt.u32 %p4, %r8, 40;
    @%p4 bra $L_out;
    add.u32 %r10, %r10, 1;
    add.u32 %r5, %r5, 1;
    bra $L_inner;
$L_inner_end:
    add.u32 %r4, %r4, 1;
    bra $L_outer;
$L_out:
"""

    def model(x):
        cnt = 0
        for i in range(x & 15):
            for j in range((x >> 4) & 15):
                if i * j > 40:
                    return cnt
                cnt += 1
        return cnt

    xs = list(range(0, 256, 3))
    assert run_kernel(body, xs) == [model(x) for x in xs]


def test_bra_uni_uniform_loop():
    """A loop whose trip count is the kernel parameter n (uniform across the CTA) using bra.uni."""
    body = """
    mov.u32 %r10, %r3;
    mov.u32 %r5, 0;
$L_loop:
    xor.b32 %r10, %r10, %r5;
    shl.b32 %r6, %r10, 1;
    add.u32 %r10, %r10, %r6;
    add.u32 %r5, %r5, 1;
    setp.lt.u32 %p2, %r5, %r1;
    @%p2 bra.uni $L_loop;
    bra.uni $L_after;
    mov.u32 %r10, 0;
$L_after:
"""
    xs = random_values(32, 48, 301)

    def model(x, n):
        for i in range(n):
            x ^= i
            x = u32(x + (x << 1))
        return x

    assert run_kernel(body, xs) == [model(x, len(xs)) for x in xs]


# ----------------------------------------------------------------------------------------------------------
# calls
# ----------------------------------------------------------------------------------------------------------

FUNC_MULADD = """
.func (.param .b32 retval) muladd(
    .param .b32 x,
    .param .b32 y
)
{
    .reg .b32 %r<4>;
    ld.param.b32 %r1, [x];
    ld.param.b32 %r2, [y];
    mad.lo.s32 %r3, %r1, %r2, 1;
    st.param.b32 [retval+0], %r3;
    ret;
}
"""


@pytest.mark.parametrize("call", ["call.uni", "call"])
def test_call_with_params_and_return(call):
    body = f"""
    add.u32 %r4, %r3, 3;
    {{
        .param .b32 param0;
        st.param.b32 [param0+0], %r3;
        .param .b32 param1;
        st.param.b32 [param1+0], %r4;
        .param .b32 retval0;
        {call} (retval0), muladd, (param0, param1);
        ld.param.b32 %r10, [retval0+0];
    }}
"""
    xs = [0, 1, 2, 0xFFFFFFFF, 0x10000, 12345] + random_values(32, 26, 302)
    assert run_kernel(body, xs, funcs=FUNC_MULADD) == [u32(x * (x + 3) + 1) for x in xs]


def test_call_twice_and_divergent_call():
    """The same .func called from two sites, one of them under a guard (divergent call)."""
    body = """
    {
        .param .b32 param0;
        st.param.b32 [param0+0], %r3;
        .param .b32 param1;
        st.param.b32 [param1+0], %r3;
        .param .b32 retval0;
        call.uni (retval0), muladd, (param0, param1);
        ld.param.b32 %r10, [retval0+0];
    }
    and.b32 %r5, %r3, 1;
    setp.eq.u32 %p2, %r5, 0;
    @%p2 bra $L_skip;
    {
        .param .b32 param0;
        st.param.b32 [param0+0], %r10;
        .param .b32 param1;
        st.param.b32 [param1+0], 2;
        .param .b32 retval0;
        call (retval0), muladd, (param0, param1);
        ld.param.b32 %r10, [retval0+0];
    }
$L_skip:
"""
    xs = list(range(40))

    def model(x):
        r = u32(x * x + 1)
        return u32(2 * r + 1) if x & 1 else r

    assert run_kernel(body, xs, funcs=FUNC_MULADD) == [model(x) for x in xs]


FUNC_SHL64 = """
.func (.param .b64 retval) shl_or(
    .param .b64 x,
    .param .b32 sh,
    .param .b64 y
)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<5>;
    ld.param.b64 %rd1, [x];
    ld.param.b32 %r1, [sh];
    ld.param.b64 %rd2, [y];
    shl.b64 %rd3, %rd1, %r1;
    or.b64 %rd4, %rd3, %rd2;
    st.param.b64 [retval+0], %rd4;
    ret;
}
"""


def test_call_mixed_width_params():
    """b64/b32/b64 parameters and a b64 return value; the kernel stores low ^ high of the result."""
    body = """
    cvt.u64.u32 %rd6, %r3;
    and.b32 %r4, %r3, 63;
    {
        .param .b64 param0;
        st.param.b64 [param0+0], %rd6;
        .param .b32 param1;
        st.param.b32 [param1+0], %r4;
        .param .b64 param2;
        st.param.b64 [param2+0], 0x8000000000000001;
        .param .b64 retval0;
        call.uni (retval0), shl_or, (param0, param1, param2);
        ld.param.b64 %rd7, [retval0+0];
    }
    cvt.u32.u64 %r5, %rd7;
    shr.u64 %rd8, %rd7, 32;
    cvt.u32.u64 %r6, %rd8;
    xor.b32 %r10, %r5, %r6;
"""
    xs = [1, 2, 3, 31, 32, 33, 63, 64, 0xFFFFFFFF] + random_values(32, 23, 303)

    def model(x):
        r = ((x << (x & 63)) & mask(64)) | 0x8000000000000001
        return (r & mask(32)) ^ (r >> 32)

    assert run_kernel(body, xs, funcs=FUNC_SHL64) == [model(x) for x in xs]


FUNC_FACT = """
.func (.param .b64 retval) fact(
    .param .b64 n
)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<5>;
    ld.param.b64 %rd1, [n];
    setp.le.u64 %p1, %rd1, 1;
    @%p1 bra $L_base;
    sub.u64 %rd2, %rd1, 1;
    {
        .param .b64 param0;
        st.param.b64 [param0+0], %rd2;
        .param .b64 retval0;
        call (retval0), fact, (param0);
        ld.param.b64 %rd3, [retval0+0];
    }
    mul.lo.u64 %rd4, %rd3, %rd1;
    st.param.b64 [retval+0], %rd4;
    ret;
$L_base:
    mov.u64 %rd4, 1;
    st.param.b64 [retval+0], %rd4;
    ret;
}
"""


def test_recursive_factorial():
    """Recursive .func (divergent recursion depth per thread); n! mod 2^64, folded to 32 bits."""
    body = """
    cvt.u64.u32 %rd6, %r3;
    {
        .param .b64 param0;
        st.param.b64 [param0+0], %rd6;
        .param .b64 retval0;
        call (retval0), fact, (param0);
        ld.param.b64 %rd7, [retval0+0];
    }
    cvt.u32.u64 %r5, %rd7;
    shr.u64 %rd8, %rd7, 32;
    cvt.u32.u64 %r6, %rd8;
    xor.b32 %r10, %r5, %r6;
"""
    xs = list(range(26)) + [30, 40, 50, 64, 100, 3]

    def model(x):
        f = 1
        for i in range(2, x + 1):
            f = (f * i) & mask(64)
        return (f & mask(32)) ^ (f >> 32)

    assert run_kernel(body, xs, funcs=FUNC_FACT) == [model(x) for x in xs]


FUNC_EVEN_ODD = """
.func (.param .b32 r) is_odd(.param .b32 n);

.func (.param .b32 r) is_even(
    .param .b32 n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    ld.param.b32 %r1, [n];
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra $L_yes;
    sub.u32 %r2, %r1, 1;
    {
        .param .b32 a0;
        st.param.b32 [a0+0], %r2;
        .param .b32 r0;
        call (r0), is_odd, (a0);
        ld.param.b32 %r3, [r0+0];
    }
    st.param.b32 [r+0], %r3;
    ret;
$L_yes:
    st.param.b32 [r+0], 1;
    ret;
}

.func (.param .b32 r) is_odd(
    .param .b32 n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    ld.param.b32 %r1, [n];
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra $L_no;
    sub.u32 %r2, %r1, 1;
    {
        .param .b32 a0;
        st.param.b32 [a0+0], %r2;
        .param .b32 r0;
        call (r0), is_even, (a0);
        ld.param.b32 %r3, [r0+0];
    }
    st.param.b32 [r+0], %r3;
    ret;
$L_no:
    st.param.b32 [r+0], 0;
    ret;
}
"""


def test_mutual_recursion_with_prototype():
    body = """
    {
        .param .b32 a0;
        st.param.b32 [a0+0], %r3;
        .param .b32 r0;
        call (r0), is_even, (a0);
        ld.param.b32 %r10, [r0+0];
    }
"""
    xs = list(range(0, 64, 3)) + [100, 101]
    assert run_kernel(body, xs, funcs=FUNC_EVEN_ODD) == [int(x % 2 == 0) for x in xs]


FUNC_STORE = """
.func store3(
    .param .b64 ptr,
    .param .b32 v
)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    ld.param.b64 %rd1, [ptr];
    ld.param.b32 %r1, [v];
    mul.lo.u32 %r2, %r1, 3;
    st.u32 [%rd1], %r2;
    ret;
}
"""


def test_func_writes_through_global_pointer():
    """A void .func receives a b64 (generic) pointer to out[i] and stores through it; the kernel's own
    store is skipped."""
    body = """
    {
        .param .b64 param0;
        st.param.b64 [param0+0], %rd5;
        .param .b32 param1;
        st.param.b32 [param1+0], %r3;
        call.uni store3, (param0, param1);
    }
    bra $L_done;
"""
    xs = random_values(32, 32, 304)
    assert run_kernel(body, xs, funcs=FUNC_STORE) == [u32(3 * x) for x in xs]


def test_func_writes_through_local_pointer():
    """Out-parameter on the thread's stack: cvta.local of a .local buffer passed to the .func."""
    decls = "    .local .align 4 .b8 buf[8];"
    body = """
    mov.u32 %r6, 11;
    st.local.u32 [buf+4], %r6;
    mov.u64 %rd10, buf;
    cvta.local.u64 %rd11, %rd10;
    {
        .param .b64 param0;
        st.param.b64 [param0+0], %rd11;
        .param .b32 param1;
        st.param.b32 [param1+0], %r3;
        call.uni store3, (param0, param1);
    }
    ld.local.u32 %r7, [buf];
    ld.local.u32 %r8, [buf+4];
    add.u32 %r10, %r7, %r8;
"""
    xs = random_values(32, 32, 305)
    assert run_kernel(body, xs, funcs=FUNC_STORE, decls=decls) == [u32(3 * x + 11) for x in xs]


FUNC_STRUCT = """
.func (.param .b32 r) weighted(
    .param .align 4 .b8 s[12]
)
{
    .reg .b32 %r<6>;
    ld.param.u32 %r1, [s+0];
    ld.param.u32 %r2, [s+4];
    ld.param.u32 %r3, [s+8];
    mad.lo.u32 %r4, %r2, 5, %r1;
    sub.u32 %r5, %r4, %r3;
    st.param.b32 [r+0], %r5;
    ret;
}
"""


def test_struct_by_value_param():
    """An aggregate passed as `.param .align 4 .b8 s[12]` (how nvcc passes structs by value)."""
    body = """
    not.b32 %r4, %r3;
    {
        .param .align 4 .b8 param0[12];
        st.param.u32 [param0+0], %r3;
        st.param.u32 [param0+4], %r4;
        st.param.u32 [param0+8], 77;
        .param .b32 retval0;
        call.uni (retval0), weighted, (param0);
        ld.param.b32 %r10, [retval0+0];
    }
"""
    xs = random_values(32, 32, 306)
    assert run_kernel(body, xs, funcs=FUNC_STRUCT) == [u32(x + 5 * (~x & mask(32)) - 77) for x in xs]


FUNC_CLAMP = """
.func (.param .b32 r) clamp_ret(
    .param .b32 x
)
{
    .reg .pred %p<3>;
    .reg .b32 %r<3>;
    ld.param.b32 %r1, [x];
    setp.lt.s32 %p1, %r1, 0;
    @%p1 bra $L_neg;
    setp.gt.s32 %p2, %r1, 100;
    @!%p2 bra $L_mid;
    st.param.b32 [r+0], 100;
    ret;
$L_mid:
    st.param.b32 [r+0], %r1;
    ret;
$L_neg:
    st.param.b32 [r+0], 0;
    ret;
}
"""


def test_func_with_multiple_returns():
    body = """
    {
        .param .b32 param0;
        st.param.b32 [param0+0], %r3;
        .param .b32 retval0;
        call (retval0), clamp_ret, (param0);
        ld.param.b32 %r10, [retval0+0];
    }
"""
    xs = [0, 1, 50, 99, 100, 101, 1000, -1, -100, 0x7FFFFFFF, 0x80000000]

    def model(x):
        v = x - (1 << 32) if x & 0x80000000 else x
        return 0 if v < 0 else (100 if v > 100 else v)

    xs = [u32(x) for x in xs]
    assert run_kernel(body, xs, funcs=FUNC_CLAMP) == [model(x) for x in xs]


# ----------------------------------------------------------------------------------------------------------
# exit / ret
# ----------------------------------------------------------------------------------------------------------


def test_exit_midway():
    """Threads with odd input exit before storing: their out[] keeps the sentinel."""
    body = """
    and.b32 %r4, %r3, 1;
    setp.eq.u32 %p2, %r4, 1;
    @%p2 exit;
    add.u32 %r10, %r3, 1000;
"""
    xs = list(range(48))
    assert run_kernel(body, xs) == [SENTINEL if x & 1 else x + 1000 for x in xs]


def test_exit_after_partial_stores():
    """Stores before exit are kept; an exit inside a loop ends the thread at once."""
    body = """
    st.global.u32 [%rd5], 1;
    mov.u32 %r5, 0;
$L_loop:
    add.u32 %r5, %r5, 1;
    setp.eq.u32 %p2, %r5, %r3;
    @%p2 exit;
    setp.lt.u32 %p3, %r5, 10;
    @%p3 bra $L_loop;
    mov.u32 %r10, 99;
"""
    xs = list(range(16))
    assert run_kernel(body, xs) == [1 if 1 <= x <= 10 else 99 for x in xs]


FUNC_EXIT = """
.func (.param .b32 r) check_or_exit(
    .param .b32 x
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    ld.param.b32 %r1, [x];
    setp.gt.u32 %p1, %r1, 20;
    @%p1 exit;
    add.u32 %r2, %r1, 500;
    st.param.b32 [r+0], %r2;
    ret;
}
"""


def test_exit_inside_called_function():
    """`exit` inside a .func terminates the thread: the caller's store never happens."""
    body = """
    {
        .param .b32 param0;
        st.param.b32 [param0+0], %r3;
        .param .b32 retval0;
        call (retval0), check_or_exit, (param0);
        ld.param.b32 %r10, [retval0+0];
    }
"""
    xs = list(range(0, 40))
    assert run_kernel(body, xs, funcs=FUNC_EXIT) == [x + 500 if x <= 20 else SENTINEL for x in xs]


def test_kernel_with_multiple_ret():
    """Early `ret` from the kernel for inputs divisible by 3, a second one for inputs divisible by 5."""
    body = """
    rem.u32 %r4, %r3, 3;
    setp.eq.u32 %p2, %r4, 0;
    @%p2 ret;
    rem.u32 %r5, %r3, 5;
    setp.ne.u32 %p3, %r5, 0;
    @%p3 bra $L_cont;
    st.global.u32 [%rd5], 5;
    ret;
$L_cont:
    mov.u32 %r10, 7;
"""
    xs = list(range(1, 61))
    assert run_kernel(body, xs) == [SENTINEL if x % 3 == 0 else (5 if x % 5 == 0 else 7) for x in xs]


def test_exit_with_multiple_blocks():
    """exit / early ret in a multi-block grid: each block's exiting threads are independent."""
    ptx = HEADER + """
.visible .entry k(
    .param .u64 out
)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.u32 %r4, %r2, %r3, %r1;
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    setp.lt.u32 %p1, %r1, %r2;
    @%p1 exit;
    mul.lo.u32 %r5, %r4, 10;
    st.global.u32 [%rd3], %r5;
    ret;
}
"""
    out = np.full(4 * 8, SENTINEL, dtype=np.uint32)
    run_ptx(ptx, [out], grid=4, block=8)
    exp = [SENTINEL if t < blk else (blk * 8 + t) * 10 for blk in range(4) for t in range(8)]
    assert [int(x) for x in out] == exp


# ----------------------------------------------------------------------------------------------------------
# guarded call / ret, indirect branches and calls
# ----------------------------------------------------------------------------------------------------------


def test_guarded_call():
    """@%p call: only threads with the predicate set call the function."""
    body = """
    mov.u32 %r10, 5;
    setp.gt.u32 %p2, %r3, 15;
    {
        .param .b32 param0;
        st.param.b32 [param0+0], %r3;
        .param .b32 param1;
        st.param.b32 [param1+0], 10;
        .param .b32 retval0;
        @%p2 call (retval0), muladd, (param0, param1);
        ld.param.b32 %r11, [retval0+0];
    }
    @%p2 mov.u32 %r10, %r11;
"""
    xs = list(range(32))
    assert run_kernel(body, xs, funcs=FUNC_MULADD) == [10 * x + 1 if x > 15 else 5 for x in xs]


FUNC_EARLY_RET = """
.func (.param .b32 r) early(
    .param .b32 x
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    ld.param.b32 %r1, [x];
    st.param.b32 [r+0], 1;
    setp.lt.u32 %p1, %r1, 10;
    @%p1 ret;
    mul.lo.u32 %r2, %r1, %r1;
    st.param.b32 [r+0], %r2;
    ret;
}
"""


def test_guarded_ret_in_function():
    body = """
    {
        .param .b32 param0;
        st.param.b32 [param0+0], %r3;
        .param .b32 retval0;
        call (retval0), early, (param0);
        ld.param.b32 %r10, [retval0+0];
    }
"""
    xs = list(range(0, 40))
    assert run_kernel(body, xs, funcs=FUNC_EARLY_RET) == [1 if x < 10 else x * x for x in xs]


def test_brx_idx_jump_table():
    """brx.idx through a .branchtargets list (a switch statement)."""
    body = """
    and.b32 %r4, %r3, 3;
$L_targets:
    .branchtargets $L_c0, $L_c1, $L_c2, $L_c3;
    brx.idx %r4, $L_targets;
$L_c0:
    mov.u32 %r10, 100;
    bra $L_end;
$L_c1:
    add.u32 %r10, %r3, 1;
    bra $L_end;
$L_c2:
    shl.b32 %r10, %r3, 2;
    bra $L_end;
$L_c3:
    not.b32 %r10, %r3;
    bra $L_end;
$L_end:
"""
    xs = list(range(32)) + [0xFFFFFFFF, 0x80000002]

    def model(x):
        return [100, u32(x + 1), u32(x << 2), u32(~x)][x & 3]

    assert run_kernel(body, xs) == [model(x) for x in xs]


FUNC_PTRS = """
.func (.param .b32 r) plus7(
    .param .b32 x
)
{
    .reg .b32 %r<3>;
    ld.param.b32 %r1, [x];
    add.u32 %r2, %r1, 7;
    st.param.b32 [r+0], %r2;
    ret;
}

.func (.param .b32 r) times3(
    .param .b32 x
)
{
    .reg .b32 %r<3>;
    ld.param.b32 %r1, [x];
    mul.lo.u32 %r2, %r1, 3;
    st.param.b32 [r+0], %r2;
    ret;
}
"""


def test_indirect_call_through_function_pointer():
    """call through a register holding a function address, with a .callprototype (how nvcc emits calls
    through function pointers)."""
    body = """
    mov.u64 %rd10, plus7;
    mov.u64 %rd11, times3;
    and.b32 %r4, %r3, 1;
    setp.eq.u32 %p2, %r4, 1;
    selp.b64 %rd12, %rd10, %rd11, %p2;
    {
        .param .b32 param0;
        st.param.b32 [param0+0], %r3;
        .param .b32 retval0;
        prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
        call (retval0), %rd12, (param0), prototype_0;
        ld.param.b32 %r10, [retval0+0];
    }
"""
    xs = list(range(32))
    assert run_kernel(body, xs, funcs=FUNC_PTRS) == [x + 7 if x & 1 else 3 * x for x in xs]


FUNC_RSUM_LOCAL = """
.func (.param .b32 r) rsum(
    .param .b32 n
)
{
    .local .align 4 .b8 slot[4];
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    ld.param.b32 %r1, [n];
    st.local.u32 [slot], %r1;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra $L_base;
    sub.u32 %r2, %r1, 1;
    {
        .param .b32 a0;
        st.param.b32 [a0+0], %r2;
        .param .b32 r0;
        call (r0), rsum, (a0);
        ld.param.b32 %r3, [r0+0];
    }
    ld.local.u32 %r4, [slot];
    mad.lo.u32 %r5, %r4, %r4, %r3;
    st.param.b32 [r+0], %r5;
    ret;
$L_base:
    st.param.b32 [r+0], 0;
    ret;
}
"""


def test_recursion_keeps_a_local_frame_per_activation():
    """Each activation of a recursive .func has its own .local variable: sum of squares 1..n, reading the
    value stored *before* the recursive call."""
    body = """
    {
        .param .b32 a0;
        st.param.b32 [a0+0], %r3;
        .param .b32 r0;
        call (r0), rsum, (a0);
        ld.param.b32 %r10, [r0+0];
    }
"""
    xs = list(range(0, 32)) + [60, 100]
    assert run_kernel(body, xs, funcs=FUNC_RSUM_LOCAL) == [sum(i * i for i in range(1, x + 1)) for x in xs]


def test_ret_from_inside_loop():
    """A kernel `ret` inside a loop body ends the thread; out[] holds what was stored last."""
    body = """
    mov.u32 %r5, 0;
$L_loop:
    st.global.u32 [%rd5], %r5;
    setp.eq.u32 %p2, %r5, %r3;
    @%p2 ret;
    add.u32 %r5, %r5, 1;
    setp.lt.u32 %p3, %r5, 20;
    @%p3 bra $L_loop;
    mov.u32 %r10, 1000;
"""
    xs = list(range(0, 40))
    assert run_kernel(body, xs) == [x if x < 20 else 1000 for x in xs]
