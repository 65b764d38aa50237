"""Refusals before launch: what would crash or corrupt memory on a CPU is refused with an error naming
the parameter or the limit (tests/data/launch_checks.cu; the parameter facts come from
runtime/access.py)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.runtime import args as argsmod
from ptxjit.runtime.access import analyze

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA / "launch_checks.ptx")


@pytest.fixture(scope="module")
def demo() -> ptxjit.Module:
    return ptxjit.Module.from_file(EXAMPLES / "demo_kernels.ptx")


def _copy(mod, x, y, n=64):
    mod.get_function("copy_scale")(1, 64, (x, y, 2.0, n))


# ------------------------------------------------------------------ read-only and object arrays
def test_read_only_array_for_a_written_parameter_is_refused(mod):
    x = np.ones(64, np.float32)
    y = np.zeros(64, np.float32)
    y.flags.writeable = False
    with pytest.raises(TypeError, match=r"argument 1 \('copy_scale_param_1'.*read-only"):
        _copy(mod, x, y)
    assert not y.any()


def test_bytes_view_is_never_written(mod):
    raw = b"\0" * 256
    y = np.frombuffer(raw, np.float32)
    with pytest.raises(TypeError, match="read-only"):
        _copy(mod, np.ones(64, np.float32), y)
    assert raw == b"\0" * 256


def test_read_only_array_for_a_parameter_the_kernel_only_reads_is_accepted(mod):
    x = np.frombuffer(np.arange(64, dtype=np.float32).tobytes(), np.float32)  # read-only
    y = np.zeros(64, np.float32)
    _copy(mod, x, y)
    np.testing.assert_array_equal(y, 2 * np.arange(64, dtype=np.float32))


def test_read_only_memmap(mod, tmp_path):
    f = tmp_path / "x.bin"
    np.arange(64, dtype=np.float32).tofile(f)
    ro = np.memmap(f, dtype=np.float32, mode="r")
    y = np.zeros(64, np.float32)
    _copy(mod, ro, y)  # read through: fine
    np.testing.assert_array_equal(y, 2 * np.arange(64, dtype=np.float32))
    with pytest.raises(TypeError, match="read-only"):  # written through: would segfault
        _copy(mod, y, ro)


def test_write_inside_a_device_function_counts_as_write(mod):
    p = np.zeros(32, np.float32)
    p.flags.writeable = False
    with pytest.raises(TypeError, match="read-only"):
        mod.get_function("writes_via_call")(1, 32, (p, 32))
    p = np.zeros(32, np.float32)
    mod.get_function("writes_via_call")(1, 32, (p, 32))
    assert (p == 1).all()


@pytest.mark.parametrize("dtype", [object, np.dtype([("a", np.float32), ("o", object)])])
def test_object_arrays_are_refused(mod, dtype):
    a = np.empty(64, dtype=dtype)
    with pytest.raises(TypeError, match=r"argument 0 .*Python objects"):
        _copy(mod, a, np.zeros(64, np.float32))


def test_device_array_read_only_is_refused(mod):
    d = ptxjit.zeros(64, np.float32)
    d.array.flags.writeable = False
    with pytest.raises(TypeError, match="read-only"):
        _copy(mod, np.ones(64, np.float32), d)


# ------------------------------------------------------------------ ints in pointer slots
@pytest.mark.parametrize("bad", [12345, 0, np.int64(4096), np.uint64(2 ** 63)])
def test_int_in_a_pointer_slot_is_refused(mod, bad):
    with pytest.raises(TypeError, match=r"argument 0 .*is a pointer the kernel dereferences.*Pointer"):
        _copy(mod, bad, np.zeros(64, np.float32))


def test_none_in_a_pointer_slot_is_refused(mod):
    with pytest.raises(TypeError, match=r"Pointer\(0\)"):
        _copy(mod, None, np.zeros(64, np.float32))


def test_explicit_pointer_is_accepted(mod):
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    _copy(mod, ptxjit.Pointer(x.ctypes.data), ptxjit.Pointer(y.ctypes.data))
    np.testing.assert_array_equal(y, 2 * x)
    assert ptxjit.Pointer(5) == ptxjit.Pointer(5) and int(ptxjit.Pointer(7)) == 7
    with pytest.raises(TypeError):
        ptxjit.Pointer(1.5)
    with pytest.raises(ValueError):
        ptxjit.Pointer(-1)


def test_pointer_in_a_32_bit_slot_is_refused(mod):
    with pytest.raises(TypeError, match="64-bit pointer"):
        _copy(mod, np.ones(64, np.float32), np.zeros(64, np.float32), n=ptxjit.Pointer(8))


def test_size_added_to_a_pointer_is_not_taken_for_a_pointer():
    # hand-written PTX, no cvta: `p + n` (a size_t) is an address; only p is a pointer, n takes an int
    ptx = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry bump(.param .u64 p, .param .u64 n)
{
    .reg .b64 %rd<4>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [p];
    ld.param.u64 %rd2, [n];
    add.s64 %rd3, %rd1, %rd2;
    ld.u32 %r1, [%rd3];
    add.s32 %r1, %r1, 1;
    st.u32 [%rd3], %r1;
    ret;
}
"""
    m = ptxjit.Module(ptx)
    acc = analyze(m.ir, m.ir.functions["bump"])
    assert [a.pointer for a in acc.params] == [False, False]  # ambiguous: neither is refused an int
    a = np.zeros(4, np.int32)
    m.get_function("bump")(1, 1, (a, 8))
    assert a.tolist() == [0, 0, 1, 0]


def test_pointer_without_cvta_is_recognized():
    ptx = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry inc(.param .u64 p)
{
    .reg .b64 %rd<2>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [p];
    ld.u32 %r1, [%rd1];
    add.s32 %r1, %r1, 1;
    st.u32 [%rd1], %r1;
    ret;
}
"""
    m = ptxjit.Module(ptx)
    with pytest.raises(TypeError, match="Pointer"):
        m.get_function("inc")(1, 1, (4096,))


def test_pointer_spilled_to_local_memory_and_written_counts_as_written():
    # the pointer goes through local memory (as at -O0) before it is written through
    ptx = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry spill(.param .u64 p)
{
    .local .align 8 .b8 depot[8];
    .reg .b64 %rd<4>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [p];
    mov.u64 %rd2, depot;
    st.local.u64 [%rd2], %rd1;
    ld.local.u64 %rd3, [%rd2];
    mov.u32 %r1, 7;
    st.global.u32 [%rd3], %r1;
    ret;
}
"""
    m = ptxjit.Module(ptx)
    a = np.zeros(4, np.int32)
    a.flags.writeable = False
    with pytest.raises(TypeError, match="read-only"):
        m.get_function("spill")(1, 1, (a,))


# ------------------------------------------------------------------ element width
def test_element_size_mismatch_warns_once(mod):
    x = np.arange(64, dtype=np.float64)
    y = np.zeros(64, np.float32)
    argsmod._warned.clear()
    with pytest.warns(ptxjit.PtxjitWarning, match=r"argument 0 .*float64 array \(8-byte elements\).*4-byte \.f32"):
        _copy(mod, x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _copy(mod, x, y)  # once only


def test_matching_element_size_does_not_warn(mod):
    argsmod._warned.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _copy(mod, np.ones(64, np.float32), np.zeros(64, np.float32))
        _copy(mod, np.ones(64, np.int32), np.zeros(64, np.uint32))  # same width: no verdict on kind


# ------------------------------------------------------------------ dynamic shared memory
def test_dynamic_shared_memory_missing_is_refused(mod):
    x = np.ones(256, np.float32)
    out = np.zeros(1, np.float32)
    with pytest.raises(ValueError, match=r"dyn_sum.*dynamic shared memory.*shared_mem="):
        mod.get_function("dyn_sum")(2, 128, (x, out, 256))
    mod.get_function("dyn_sum")(2, 128, (x, out, 256), shared_mem=128 * 4)
    assert out[0] == 256


def test_dynamic_shared_memory_too_small_for_constant_offsets(mod):
    out = np.zeros(1, np.int32)
    k = mod.get_function("dyn_fixed")
    with pytest.raises(ValueError, match=r"at least 64 bytes .*shared_mem=16"):
        k(1, 32, (out,), shared_mem=16)
    k(1, 32, (out,), shared_mem=64)
    assert out[0] == 3


def test_kernel_without_dynamic_shared_accepts_zero(demo):
    x = np.ones(256, np.float32)
    out = np.zeros(1, np.float32)
    demo.get_function("sum_reduce")(1, 256, (x, out, 256))
    assert out[0] == 256


# ------------------------------------------------------------------ CUDA's launch limits
@pytest.mark.parametrize("grid, block, match", [
    (2 ** 31, 32, r"grid\.x = 2147483648 exceeds CUDA's limit of 2147483647"),
    ((1, 65536), 32, r"grid\.y = 65536 exceeds CUDA's limit of 65535"),
    ((1, 1, 65536), 32, r"grid\.z = 65536"),
    ((2 ** 40, 2 ** 40), 32, r"grid\.x"),
    (2 ** 100, 32, r"grid\.x"),
    (1, (1, 1, 65), r"block\.z = 65 exceeds CUDA's limit of 64"),
    (1, 1025, r"block\.x = 1025"),
    (1, (1, 1025), r"block\.y = 1025"),
    (1, (32, 32, 2), r"2048 threads; CUDA's limit is 1024"),
    (1, (2 ** 40, 2 ** 40), r"block\.x"),
])
def test_launch_limits(mod, grid, block, match):
    x = np.ones(64, np.float32)
    y = np.zeros(64, np.float32)
    with pytest.raises(ValueError, match=match):
        mod.get_function("copy_scale")(grid, block, (x, y, 2.0, 64))
    assert not y.any()


def test_largest_legal_shapes_are_accepted(mod):
    x = np.ones(64, np.float32)
    y = np.zeros(64, np.float32)
    k = mod.get_function("copy_scale")
    k((1, 65535, 1), 1, (x, y, 2.0, 64))
    k(1, (1024, 1, 1), (x, y, 2.0, 64))
    k((1, 1, 65535), (1, 1, 64), (x, y, 2.0, 64))
    assert (y == 2).all()


def test_shared_memory_limit(mod):
    x = np.ones(64, np.float32)
    out = np.zeros(1, np.float32)
    k = mod.get_function("dyn_sum")
    with pytest.raises(ValueError, match=r"exceed the limit of 232448 bytes \(227 KB\)"):
        k(1, 64, (x, out, 64), shared_mem=1 << 20)
    with pytest.raises(ValueError, match="227 KB"):
        k(1, 64, (x, out, 64), shared_mem=argsmod.MAX_SHARED_PER_BLOCK + 1)
    k(1, 64, (x, out, 64), shared_mem=argsmod.MAX_SHARED_PER_BLOCK)
    assert out[0] == 64


@pytest.mark.parametrize("grid", [0, -1, (1, 0), 1.5, "4", (1, 2, 3, 4), ()])
def test_bad_grid_types_and_values(mod, grid):
    with pytest.raises((TypeError, ValueError)):
        mod.get_function("copy_scale")(grid, 32, (np.ones(4, np.float32), np.zeros(4, np.float32), 1.0, 4))


def test_packed_access_does_not_warn():
    # __half2 / char4 style: 2-byte elements moved as .u32 words is deliberate, not a mismatch
    ptx = """
.version 7.0
.target sm_80
.address_size 64
.visible .entry copy32(.param .u64 dst, .param .u64 src)
{
    .reg .b64 %rd<5>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [dst];
    ld.param.u64 %rd2, [src];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    ld.global.u32 %r1, [%rd4];
    st.global.u32 [%rd3], %r1;
    ret;
}
"""
    k = ptxjit.Module(ptx).get_function("copy32")
    argsmod._warned.clear()
    a = np.array([1.5, -2.0], np.float16)
    b = np.zeros(2, np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k(1, 1, (b, a))
    assert b.tolist() == [1.5, -2.0]
    with pytest.warns(ptxjit.PtxjitWarning, match="float64 array"):  # wider elements: misread
        k(1, 1, (np.zeros(2), np.ones(2)))


BIG_STATIC_SHARED = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry big_static(.param .u64 out)
{
    .shared .align 4 .b8 buf[%d];
    .reg .b32 %%r<2>;
    mov.u32 %%r1, %%tid.x;
    st.shared.u32 [buf], %%r1;
    ret;
}
"""


def test_static_shared_memory_over_48_kb_is_refused_as_ptxas_refuses_it():
    """ptxas: "Entry function 'big_static' uses too much shared data (0xea60 bytes, 0xc000 max)"."""
    ok = ptxjit.Module(BIG_STATIC_SHARED % (48 * 1024)).get_function("big_static")
    ok(1, 32, (np.zeros(1, np.uint32),))  # exactly 48 KB: allowed
    k = ptxjit.Module(BIG_STATIC_SHARED % 60000).get_function("big_static")
    with pytest.raises(ValueError, match=r"declares 60000 bytes of static shared memory; CUDA allows at most 49152"):
        k(1, 32, (np.zeros(1, np.uint32),))
