"""Value ranges known at translation time (ptxjit/passes/ranges.py), which let bounds-checked code skip the
check of a shared access the thread index keeps in bounds: %tid and %ntid bounded by the block shape the
translation is for (CUDA's limits without one), and/or/xor of non-negative values, a mask's cleared low
bits, and `2 * tid - (tid & m)` (bitonic's partner index).  The analysis against hand-derived ranges, and
tests/data/shared_ranges.cu (nvcc) end to end: right results (NumPy) where every access is proven, and a
KernelFault where a larger block overruns the array, so a proof never stands in for a check it cannot make."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.errors import KernelFault
from ptxjit.frontend.parser import parse
from ptxjit.passes.ranges import value_ranges

PTX = Path(__file__).resolve().parent / "data" / "shared_ranges.ptx"

_SNIPPET = """
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 1;
    and.b32 %r3, %r1, 3;
    sub.s32 %r4, %r2, %r3;
    shr.u32 %r5, %r1, 3;
    and.b32 %r6, %r5, -4;
    or.b32 %r7, %r1, 16;
    xor.b32 %r8, %r1, %r3;
    mov.u32 %r9, %tid.y;
    and.b32 %r10, %r9, 3;
    sub.s32 %r11, %r2, %r10;
    mov.u32 %r12, %ntid.x;
    and.b32 %r13, %r12, %r1;
    mov.u32 %r14, %laneid;
"""


def _ranges(block):
    from tests.ptxsnip import snippet_kernel

    fn = parse(snippet_kernel(_SNIPPET, [("u64", "p")]), "snippet.ptx").functions["k"]
    return value_ranges(fn, lambda name: None, block)


def test_ranges_of_thread_index_arithmetic_with_the_block_shape():
    r = _ranges((256, 4, 1))
    assert r["%r1"] == (0, 255) and r["%r2"] == (0, 510) and r["%r3"] == (0, 3)
    assert r["%r4"] == (0, 510)  # 2 t - (t & 3) >= 0: t's own bits
    assert r["%r5"] == (0, 31) and r["%r6"] == (0, 28)  # (t >> 3) & ~3: a multiple of 4
    assert r["%r7"] == (0, 255) and r["%r8"] == (0, 255)  # or/xor: within t's bit length
    assert "%r11" not in r  # 2 tid.x - (tid.y & 3) may be negative: no range
    # (a register written before any read starts empty: %ntid.x's copy is exactly 256)
    assert r["%r9"] == (0, 3) and r["%r12"] == (256, 256) and r["%r13"] == (0, 255)
    assert r["%r14"] == (0, 31)


def test_ranges_without_the_block_shape_use_cudas_limits():
    r = _ranges(None)
    assert r["%r1"] == (0, 1023) and r["%r9"] == (0, 1023) and r["%r12"] == (1, 1024)
    assert r["%r4"] == (0, 2046)


@pytest.mark.parametrize("block", [64, 256])
def test_proven_shared_accesses_compute_the_reference(block):
    k = ptxjit.Module.from_file(PTX).get_function("pairs")
    grid = 3
    a = np.random.default_rng(block).standard_normal(grid * block).astype(np.float32)
    out = np.zeros_like(a)
    k(grid, block, (a, out))  # bounds-checked (the default)
    t = np.arange(block)
    exp = np.empty_like(a)
    for c in range(grid):
        s = np.zeros(512, np.float32)
        s[t] = a[c * block + t]
        s[t + 256] = -a[c * block + t]
        lo = 2 * t - (t & 3)
        exp[c * block + t] = (s[lo >> 1] + s[(t >> 3) & ~3]) + s[t ^ 1]
    np.testing.assert_array_equal(out, exp)


def test_a_larger_block_overruns_and_faults():
    """With 512 threads `s[t + 256]` passes the 512-float array: the block-specialized translation cannot
    prove it, keeps the check, and the launch faults naming shared memory."""
    k = ptxjit.Module.from_file(PTX).get_function("pairs")
    a = np.ones(512, np.float32)
    out = np.zeros_like(a)
    with pytest.raises(KernelFault, match="shared"):
        k(1, 512, (a, out))


def _guarded_reference(a: np.ndarray, grid: int, limit: int) -> np.ndarray:
    out = np.empty(grid * 512, np.float32)
    t = np.arange(512)
    for c in range(grid):
        s = a[c * 256:(c + 1) * 256].copy()
        v = np.where(t < limit, s[np.minimum(t, 255)] + s[255 - (t & 255)], np.float32(0)).astype(np.float32)
        stride = 128
        while stride:
            s[:stride] += s[stride:2 * stride]
            stride >>= 1
        out[c * 512:(c + 1) * 512] = v + s[0]
    return out


@pytest.mark.parametrize("limit", [0, 200, 256])
def test_accesses_under_conditions_compute_the_reference(limit):
    """Threads 256..511 would overrun `s` in `if (t < limit) ... s[t]` and in the reduction tree's
    `s[t + stride]` (t < stride): the precheck checks each access only where its conditions hold."""
    k = ptxjit.Module.from_file(PTX).get_function("guarded")
    grid = 3
    a = np.random.default_rng(limit).standard_normal(grid * 256).astype(np.float32)
    out = np.zeros(grid * 512, np.float32)
    k(grid, 512, (a, out, np.int32(limit)))
    np.testing.assert_array_equal(out, _guarded_reference(a, grid, limit))


def test_an_access_whose_condition_admits_overrunning_threads_faults():
    k = ptxjit.Module.from_file(PTX).get_function("guarded")
    a = np.ones(256, np.float32)
    out = np.zeros(512, np.float32)
    with pytest.raises(KernelFault, match="shared") as e:
        k(1, 512, (a, out, np.int32(300)))  # threads 256..299 read s[256..299]
    assert "thread (256, 0, 0)" in str(e.value) and "offset 1024" in str(e.value)  # the first to overrun


_PREDICATED = """
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [limit];
    mov.u32 %r2, %tid.x;
    shl.b32 %r3, %r2, 2;
    mov.u32 %r4, s;
    add.s32 %r5, %r4, %r3;
    setp.lt.u32 %p1, %r2, 256;
    cvt.rn.f32.u32 %f1, %r2;
    @%p1 st.shared.f32 [%r5], %f1;
    bar.sync 0;
    setp.lt.u32 %p2, %r2, %r1;
    mov.f32 %f2, 0f3F800000;
    @%p2 ld.shared.f32 %f2, [%r5];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r2, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.f32 [%rd4], %f2;
"""


def test_predicated_accesses_are_prechecked_where_their_guard_holds():
    """`@%p ld.shared` (Triton's masked loads have this form): threads whose guard is false do not count."""
    from tests.ptxsnip import snippet_kernel

    ptx = snippet_kernel(_PREDICATED, [("u64", "out"), ("u32", "limit")], "pred", ".shared .align 4 .b8 s[1024];")
    k = ptxjit.Module(ptx, "predicated.ptx").get_function("pred")
    out = np.zeros(512, np.float32)
    k(1, 512, (out, np.int32(256)))
    np.testing.assert_array_equal(out, np.where(np.arange(512) < 256, np.arange(512), 1).astype(np.float32))
    with pytest.raises(KernelFault, match=r"thread \(256, 0, 0\).*offset 1024"):
        k(1, 512, (out, np.int32(300)))


def test_remainder_only_where_the_dividend_is_the_one_divided():
    """`a - (a / c) * c` is a's remainder, [0, c - 1], only while a still holds the value divided: after
    a is written again, the same subtraction has no range (it may be negative)."""
    from tests.ptxsnip import snippet_kernel

    src = snippet_kernel("""
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, 7;
    div.u32 %r3, %r1, %r2;
    mul.lo.u32 %r4, %r3, %r2;
    sub.u32 %r5, %r1, %r4;
    mov.u32 %r1, %tid.y;
    sub.u32 %r6, %r1, %r4;
""", [("u64", "p")])
    r = value_ranges(parse(src, "snippet.ptx").functions["k"], lambda name: None, (256, 4, 1))
    assert r["%r2"] == (7, 7) and r["%r3"] == (0, 255 // 7)
    assert r["%r5"] == (0, 6)
    assert "%r6" not in r  # tid.y - 7 * (tid.x / 7): -252 for thread (252, 0)
