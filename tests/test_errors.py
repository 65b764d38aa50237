"""Bad input gets a clear error naming the place; the process survives and keeps working."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from tests.ptxsnip import snippet_kernel

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def errmod() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA / "errors.ptx")


def test_syntax_error_names_file_line_col():
    ptx = snippet_kernel("    add.s32 %r1, %r2 %r3;", [("u64", "out")])
    with pytest.raises(ptxjit.PTXSyntaxError) as ei:
        ptxjit.Module(ptx, "bad.ptx")
    msg = str(ei.value)
    line = next(i for i, t in enumerate(ptx.splitlines(), 1) if "add.s32" in t)
    assert f"bad.ptx:{line}:" in msg
    assert "expected" in msg and "%r3" in msg


def test_unexpected_character_and_eof():
    with pytest.raises(ptxjit.PTXSyntaxError, match=r"x\.ptx:1:1"):
        ptxjit.Module("# not ptx", "x.ptx")
    with pytest.raises(ptxjit.PTXSyntaxError, match="end of file"):
        ptxjit.Module(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() {\n ret;\n", "y.ptx")


def test_unsupported_instruction_is_refused_at_load():
    body = "    tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex0, {%f5, %f6}];"
    ptx = snippet_kernel(body, [("u64", "out")])
    with pytest.raises(ptxjit.UnsupportedInstructionError) as ei:
        ptxjit.Module(ptx, "tex.ptx")
    line = next(i for i, t in enumerate(ptx.splitlines(), 1) if "tex.2d" in t)
    assert f"tex.ptx:{line}:" in str(ei.value)
    assert "tex.2d.v4.f32.f32" in str(ei.value)


def test_unsupported_modifier_combination():
    ptx = snippet_kernel("    atom.global.max.f16 %h1, [%rd1], %h2;", [("u64", "out")])
    with pytest.raises(ptxjit.UnsupportedInstructionError, match="f16"):
        ptxjit.Module(ptx, "a.ptx")


def test_undeclared_register_and_unknown_label():
    with pytest.raises(ptxjit.PTXValidationError, match="%zz9"):
        ptxjit.Module(snippet_kernel("    mov.u32 %zz9, 1;", [("u64", "out")]))
    with pytest.raises(ptxjit.PTXValidationError, match="unknown label"):
        ptxjit.Module(snippet_kernel("    bra $L_nowhere;", [("u64", "out")]))


def test_unknown_kernel_lists_kernels(errmod):
    with pytest.raises(KeyError) as ei:
        errmod.get_function("nope")
    assert "trap_at" in str(ei.value) and "check_positive" in str(ei.value)


def test_wrong_argument_count_and_types(errmod):
    k = errmod.get_function("trap_at")
    out = np.zeros(64, np.int32)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        k(1, 64, (out, 0))
    with pytest.raises(TypeError, match="trap_at_param_1"):
        k(1, 64, (out, 1.5, 0))
    with pytest.raises(TypeError, match="trap_at_param_2.*out of range"):
        k(1, 64, (out, 0, 2**40))
    with pytest.raises(TypeError, match="trap_at_param_1.*pointer"):
        k(1, 64, (out, out, 0))
    with pytest.raises(TypeError, match="trap_at_param_0"):
        k(1, 64, ("hello", 0, 0))
    with pytest.raises(ValueError, match="1024"):
        k(1, 2048, (out, 0, 0))
    with pytest.raises(TypeError):
        k((1, 2, 3, 4), 64, (out, 0, 0))


def test_trap_names_kernel_block_thread_and_line(errmod):
    k = errmod.get_function("trap_at")
    out = np.zeros(4 * 64, np.int32)
    with pytest.raises(ptxjit.KernelTrap) as ei:
        k(4, 64, (out, 2, 17))
    e = ei.value
    assert e.kernel == "trap_at" and e.cta == (2, 0, 0) and e.thread == (17, 0, 0)
    assert "errors.ptx:" in str(e) and "trap" in str(e)
    # the CUDA source line from .loc (the __trap() in errors.cu), then the PTX line
    assert "errors.cu:7:" in str(e) and "(PTX " in str(e)
    # the process and the module keep working after a trap
    out[:] = 0
    k(4, 64, (out, 99, 0))
    assert (out == 1).all()


def test_assert_failure_reports_message(errmod):
    k = errmod.get_function("check_positive")
    v = np.ones(100, np.int32)
    k(1, 128, (v, 100))
    v[37] = -5
    with pytest.raises(ptxjit.KernelTrap) as ei:
        k(1, 128, (v, 100))
    assert "v[i] > 0" in str(ei.value)
    assert ei.value.thread == (37, 0, 0)
    assert "errors.cu" in str(ei.value)


def test_struct_by_value_and_small_scalars(errmod):
    out = np.zeros(1, np.float64)
    pair = struct.pack("<ifd", 3, 0.5, 0.25)
    errmod.get_function("by_value")(1, 1, (pair, out))
    assert out[0] == 3.75
    with pytest.raises(TypeError, match="16 bytes"):
        errmod.get_function("by_value")(1, 1, (b"\0" * 8, out))
    f = np.zeros(4, np.float32)
    errmod.get_function("scalars")(1, 1, (-7, 65535, -(2**40), 1.5, f))
    np.testing.assert_array_equal(f, np.array([-7, 65535, -(2.0**40), 1.5], np.float32))
    with pytest.raises(TypeError, match="scalars_param_0.*out of range"):
        errmod.get_function("scalars")(1, 1, (300, 0, 0, 0.0, f))


def test_validation_error_names_the_cuda_line_first():
    """A load-time error in PTX compiled with -lineinfo names the .cu line its .loc gives, then the PTX line."""
    ptx = (Path(__file__).parent / "data" / "errors.ptx").read_text()
    bad = ptx.replace("\ttrap;", "\tadd.s32 %r1, %r2;", 1)
    assert bad != ptx
    with pytest.raises(ptxjit.PTXValidationError) as ei:
        ptxjit.Module(bad, "errors.ptx")
    msg = str(ei.value)
    assert "errors.cu:7:" in msg and "(PTX errors.ptx:" in msg and "add.s32" in msg


def test_call_with_wrong_argument_count_is_refused_at_load():
    """A call that passes fewer arguments than the callee has parameters is refused at load with its place,
    as ptxas 13 refuses it ("Call has wrong number of parameters"), not failed at launch."""
    ptx = (".version 8.0\n.target sm_80\n.address_size 64\n"
           ".func (.param .b32 r) f(.param .b32 a)\n{\n.reg .b32 %r<2>;\nld.param.b32 %r1, [a];\n"
           "st.param.b32 [r], %r1;\nret;\n}\n"
           ".visible .entry k()\n{\n{\n.param .b32 p0;\n.param .b32 r0;\nst.param.b32 [p0], 1;\n"
           "call.uni (r0), f, ();\n}\nret;\n}\n")
    with pytest.raises(ptxjit.PTXValidationError, match=r"bad\.ptx:17:1: call to 'f' passes 0 argument"):
        ptxjit.Module(ptx, "bad.ptx")


def test_address_offset_beyond_any_memory_traps_instead_of_aborting():
    """An address offset of 2**63-1 ([%rd+9223372036854775807]) is beyond any memory: the access traps at
    launch with its place, and the translation does not make LLVM assert and abort the process."""
    ptx = (".version 8.0\n.target sm_80\n.address_size 64\n"
           ".visible .entry k(.param .u64 p, .param .u32 n)\n{\n.reg .b64 %rd<3>;\n.reg .f64 %fd<3>;\n"
           ".reg .b32 %r<3>;\n.reg .pred %p<2>;\nld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\n"
           "setp.eq.u32 %p1, %r1, 0;\n@%p1 bra DONE;\nld.global.f64 %fd1, [%rd1+9223372036854775807];\n"
           "st.global.f64 [%rd1], %fd1;\nDONE:\nret;\n}\n")
    mod = ptxjit.Module(ptx, "bigoff.ptx")
    a = np.ones(4)
    mod.get_function("k")(1, 1, (a, 0))  # the access is not reached: runs normally
    with pytest.raises(ptxjit.KernelTrap, match=r"illegal address.*bigoff\.ptx:14"):
        mod.get_function("k")(1, 1, (a, 1))
    np.testing.assert_array_equal(a, np.ones(4))


def test_huge_shift_literal_in_thread_index_arithmetic():
    """shl by a 32-bit literal (1 << 4294967295 in the thread-index analysis): PTX clamps the shift, so the
    result is 0 -- computed, not refused, and no internal error."""
    from tests.ptxsnip import snippet_kernel

    body = """
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 4294967295;
    bar.sync 0;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
"""
    m = ptxjit.Module(snippet_kernel(body, [("u64", "out")]), "hugeshift.ptx")
    out = np.full(64, 7, np.uint32)
    m.get_function("k")(1, 64, (out,))
    np.testing.assert_array_equal(out, 0)


def test_one_element_vector_operands():
    """`ld.global.b32 {%r1}, [a]` / `st.global.b32 [b], {%r2}` without .v1, as Triton writes them: the
    braces hold the one register (before, the store failed at launch with an internal repr)."""
    from tests.ptxsnip import snippet_kernel

    body = """
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
    ld.global.b32 { %r2 }, [ %rd4 + 0 ];
    add.s32 %r3, %r2, 1;
    st.global.b32 [ %rd5 + 0 ], { %r3 };
"""
    m = ptxjit.Module(snippet_kernel(body, [("u64", "a"), ("u64", "b")]), "vec1.ptx")
    a = np.arange(32, dtype=np.int32)
    b = np.zeros(32, np.int32)
    m.get_function("k")(1, 32, (a, b))
    np.testing.assert_array_equal(b, a + 1)


RECURSIVE = """.version 8.0
.target sm_80
.address_size 64
.func (.param .b32 r) sum_to(.param .b32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    ld.param.b32 %r1, [n];
    setp.le.s32 %p1, %r1, LIMIT;
    @%p1 bra BASE;
    add.s32 %r2, %r1, -1;
    {
    .param .b32 a;
    .param .b32 ret;
    st.param.b32 [a], %r2;
    call.uni (ret), sum_to, (a);
    ld.param.b32 %r3, [ret];
    }
    add.s32 %r4, %r3, %r1;
    st.param.b32 [r], %r4;
    ret;
BASE:
    st.param.b32 [r], 0;
    ret;
}
.visible .entry k(.param .u64 out, .param .u32 n)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    {
    .param .b32 a;
    .param .b32 ret;
    st.param.b32 [a], %r1;
    call.uni (ret), sum_to, (a);
    ld.param.b32 %r2, [ret];
    }
    cvta.to.global.u64 %rd2, %rd1;
    st.global.u32 [%rd2], %r2;
    ret;
}
"""


def test_recursion_without_a_base_case_traps_instead_of_crashing():
    """Device functions with fib's base case deleted: device functions are native calls, so endless
    recursion would overflow the worker's stack and kill the process.  Functions on a call cycle check the
    stack on entry (passes/recursion.py) and trap, as a GPU stops
    at its stack limit."""
    k = ptxjit.Module(RECURSIVE.replace("LIMIT", "-2147483648"), "rec.ptx").get_function("k")  # never true
    with pytest.raises(ptxjit.KernelTrap, match=r"recursed too deep: more than 256 KiB .* at rec\.ptx:\d+"):
        k(1, 1, (np.zeros(1, np.uint32), 5))


def test_deep_recursion_within_the_limit_runs():
    """A thousand nested calls (sum 1..1000 by recursion) stay far below the guard's limit."""
    k = ptxjit.Module(RECURSIVE.replace("LIMIT", "0"), "rec.ptx").get_function("k")
    out = np.zeros(1, np.uint32)
    k(1, 1, (out, 1000))
    assert out[0] == 1000 * 1001 // 2


def test_a_label_defined_twice_is_refused_with_both_places():
    """ptxas: "Duplicate definition of label 'L1'" (a branch to it would be ambiguous)."""
    ptx = snippet_kernel("L1:\n    bra L1;\nL1:", [("u64", "p")], name="dup")
    lines = ptx.split("\n")
    first, second = (n + 1 for n, line in enumerate(lines) if line == "L1:")
    with pytest.raises(ptxjit.PTXValidationError, match=rf"dup.ptx:{second}:1: label 'L1' is defined twice in "
                                                         rf"'dup' \(first at dup.ptx:{first}:1\)"):
        ptxjit.Module(ptx, "dup.ptx")
