"""Operand and declaration forms of the PTX ISA ("Addresses as Operands", "Arrays as Operands",
"Array Declarations"), each as ptxas 13.0 (-arch sm_90) reads it.

What ptxas accepts must load and compute what the GPU computes: the address arithmetic of an array
element `arr[i]` below is what ptxas emits for sm_90 (read from its SASS and from cubins it emits
identically for `arr[i]` and `arr+k`): the subscript steps by the size of the array's scalar type
(4 for a .v4 .f32 array; a 2-D array takes one flat subscript), is computed in 32-bit unsigned
arithmetic (the index register's low 32 bits plus the constant, times the size, modulo 2**32) and
is zero-extended onto the array's address; an unsized array (`[]`) is indexed in bytes.  What
ptxas refuses raises a PTXSyntaxError naming file:line:col.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.errors import PTXError, PTXSyntaxError

DATA = Path(__file__).parent / "data"
HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
N = 16  # elements of the u32 arrays the kernels write


def run_forms(space: str, bodies: list[str]) -> list[np.ndarray]:
    """Run each body against its own u32 array `a` of N words in `space` (zeroed first), all in one
    kernel, and return each array's final contents.  Registers: %r0..%r9 (b32), %rd0..%rd9 (b64),
    %rs0..%rs3 (b16), %p0..%p3."""
    decls, code = [], []
    for i, body in enumerate(bodies):
        name = f"a{i}"
        decls.append(f".{space} .align 16 .u32 {name}[{N}];\n")
        body = body.replace("{s}", space).replace("a[", f"{name}[").replace("a+", f"{name}+")
        code.append(body.replace("a + ", f"{name} + ") + "\n")
    zero = "".join(f"st.{space}.v4.u32 [a{i}+{16 * w}], {{0, 0, 0, 0}};\n"
                   for i in range(len(bodies)) for w in range(N // 4))
    copy = "".join(f"ld.{space}.v4.u32 {{%r6, %r7, %r8, %r9}}, [a{i}+{16 * w}];\n"
                   f"st.global.v4.u32 [%rd0+{16 * (i * N // 4 + w)}], {{%r6, %r7, %r8, %r9}};\n"
                   for i in range(len(bodies)) for w in range(N // 4))
    glob = "".join(decls) if space == "global" else ""
    text = (HEAD + glob + ".visible .entry k(.param .u64 out)\n{\n.reg .b32 %r<10>;\n.reg .b64 %rd<10>;\n"
            ".reg .b16 %rs<4>;\n.reg .pred %p<4>;\n" + ("" if glob else "".join(decls))
            + "ld.param.u64 %rd0, [out];\n" + zero + "".join(code) + copy + "ret;\n}\n")
    out = np.zeros((len(bodies), N), np.uint32)
    ptxjit.Module(text, "t.ptx").get_function("k")(1, 1, (out,))
    return list(out)


# ---------------------------------------------------------------- the tinygrad reduction
def test_shared_reduction_through_array_element_addresses():
    # tinygrad's PTX renderer reduces through shared memory this way: the address of local0[0]
    # (64-bit and 32-bit) plus the thread's byte offset
    text = HEAD + """
.visible .entry r(.param .u64 data, .param .u64 out)
{
.reg .b32 %r<12>;
.reg .b64 %rd<8>;
.reg .f32 %f<4>;
.reg .pred %p<2>;
.shared .align 4 .b8 local0[64];
ld.param.u64 %rd1, [data];
ld.param.u64 %rd2, [out];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.f32 %f1, [%rd4];
mov.u64 %rd5, local0[0];
add.s64 %rd6, %rd5, %rd3;
st.shared.f32 [%rd6], %f1;
bar.sync 0;
setp.ne.u32 %p1, %r1, 0;
@%p1 bra DONE;
mov.u32 %r2, local0[4];
ld.shared.f32 %f2, [local0+0];
mov.u32 %r3, 1;
LOOP:
ld.shared.f32 %f3, [%r2];
add.f32 %f2, %f2, %f3;
add.u32 %r2, %r2, 4;
add.u32 %r3, %r3, 1;
setp.lt.u32 %p1, %r3, 16;
@%p1 bra LOOP;
st.global.f32 [%rd2], %f2;
DONE:
ret;
}
"""
    x = np.random.default_rng(7).random(16, dtype=np.float32)
    out = np.zeros(1, np.float32)
    ptxjit.Module(text, "t.ptx").get_function("r")(1, 16, (x, out))
    acc = np.float32(0)
    for v in x:  # the kernel's order of additions
        acc = np.float32(acc + v)
    assert out[0] == acc


# ---------------------------------------------------------------- where each form points
_FORMS = [
    # (body, the element it writes 0x55 to)
    ("mov.u64 %rd1, a[3];\nst.{s}.u32 [%rd1], 0x55;", 3),
    ("mov.b64 %rd1, a[3];\nst.{s}.u32 [%rd1], 0x55;", 3),
    ("mov.u64 %rd1, a[(1+1)*2];\nst.{s}.u32 [%rd1], 0x55;", 4),
    ("mov.u64 %rd1, a[WARP_SZ/8];\nst.{s}.u32 [%rd1], 0x55;", 4),
    ("mov.u64 %rd1, a+12;\nst.{s}.u32 [%rd1], 0x55;", 3),
    ("mov.u64 %rd1, a + 12;\nst.{s}.u32 [%rd1], 0x55;", 3),
    ("st.{s}.u32 a[5], 0x55;", 5),
    ("st.{s}.u32 [a+20], 0x55;", 5),
    ("st.{s}.u32 [a + 20], 0x55;", 5),
    ("st.{s}.u32 [a+24-4], 0x55;", 5),
    ("st.{s}.u32 [a+-4+24], 0x55;", 5),
    ("st.volatile.{s}.u32 a[6], 0x55;", 6),
    ("mov.u32 %r1, 0x55;\nst.{s}.v2.u32 a[6], {%r1, %r1};", (6, 7)),
    ("mov.u32 %r1, 7;\nst.{s}.u32 a[%r1], 0x55;", 7),
    ("mov.u32 %r1, 7;\nmov.u64 %rd1, a[%r1];\nst.{s}.u32 [%rd1], 0x55;", 7),
    ("mov.u64 %rd2, 2;\nst.{s}.u32 a[%rd2+6], 0x55;", 8),
    ("mov.u32 %r1, 10;\nst.{s}.u32 a[%r1+-1], 0x55;", 9),
    ("mov.u16 %rs1, 11;\nst.{s}.u32 a[%rs1], 0x55;", 11),
    # the index register's low 32 bits, times 4, modulo 2**32
    ("mov.u64 %rd2, 0x100000002;\nst.{s}.u32 a[%rd2], 0x55;", 2),
    ("mov.u32 %r1, 0x40000001;\nst.{s}.u32 a[%r1], 0x55;", 1),
    ("st.{s}.u32 a[0x100000003], 0x55;", 3),
    # a guarded store with a register subscript stores nothing when the guard is false
    ("mov.u32 %r1, 4;\nsetp.eq.u32 %p1, %r1, 5;\n@%p1 st.{s}.u32 a[%r1], 0x55;\n"
     "@!%p1 st.{s}.u32 a[%r1+8], 0x55;", 12),
]


def _expected(where: int | tuple[int, ...]) -> np.ndarray:
    e = np.zeros(N, np.uint32)
    e[list(where) if isinstance(where, tuple) else where] = 0x55
    return e


# every form in shared memory; in .global and .local the constant, register and wrapping subscripts.
# Six forms to a kernel keeps each compile to a few seconds.
_OTHER_SPACES = (0, 4, 6, 13, 14, 15, 16, 19, 20, 21)
_CASES = [("shared", tuple(range(k, min(k + 6, len(_FORMS))))) for k in range(0, len(_FORMS), 6)]
_CASES += [(space, chunk) for space in ("global", "local") for chunk in (_OTHER_SPACES[:5], _OTHER_SPACES[5:])]


@pytest.mark.parametrize("space,chunk", _CASES, ids=[f"{sp}-{c[0]}-{c[-1]}" for sp, c in _CASES])
def test_array_element_forms_write_where_ptxas_points(space, chunk):
    forms = [_FORMS[i] for i in chunk]
    outs = run_forms(space, [body for body, _ in forms])
    for (body, where), out in zip(forms, outs, strict=True):
        np.testing.assert_array_equal(out, _expected(where), err_msg=body)


_SHARED_FORMS = [
    ("mov.u32 %r1, a[3];\nst.shared.u32 [%r1], 0x55;", 3),          # a 32-bit shared address
    ("mov.u32 %r2, 14;\nmov.u32 %r1, a[%r2];\nst.shared.u32 [%r1], 0x55;", 14),
    ("cvta.shared.u64 %rd1, a[3];\nst.u32 [%rd1], 0x55;", 3),         # to a generic address
    ("mov.u32 %r2, 13;\ncvta.shared.u64 %rd1, a[%r2];\nst.u32 [%rd1], 0x55;", 13),
    ("cvta.shared.u64 %rd1, a+8;\nst.u32 [%rd1], 0x55;", 2),
]


def test_array_element_in_mov_u32_and_cvta():
    outs = run_forms("shared", [body for body, _ in _SHARED_FORMS])
    for (body, where), out in zip(_SHARED_FORMS, outs, strict=True):
        np.testing.assert_array_equal(out, _expected(where), err_msg=body)


def test_element_size_is_the_scalar_type_and_two_d_arrays_take_a_flat_subscript():
    # .v4 .f32 steps by 4 bytes, .b8 by 1, .u16 by 2, a .u32 [4][4] array by 4 per flat element
    text = HEAD + """.visible .entry k(.param .u64 out)
{
.reg .b32 %r<5>;
.reg .b64 %rd<4>;
.shared .align 16 .v4 .f32 v[4];
.shared .align 16 .b8 b[64];
.shared .align 16 .u16 h[32];
.shared .align 16 .u32 m[4][4];
ld.param.u64 %rd0, [out];
mov.u64 %rd1, v[3];
st.shared.u32 [%rd1], 0x11;
mov.u64 %rd1, b[8];
st.shared.u32 [%rd1], 0x22;
st.shared.u32 h[8], 0x33;
mov.u64 %rd1, m[5];
st.shared.u32 [%rd1], 0x44;
ld.shared.u32 %r1, [v+12];
ld.shared.u32 %r2, [b+8];
ld.shared.u32 %r3, [h+16];
ld.shared.u32 %r4, [m+20];
st.global.v4.u32 [%rd0], {%r1, %r2, %r3, %r4};
ret;
}
"""
    out = np.zeros(4, np.uint32)
    ptxjit.Module(text, "t.ptx").get_function("k")(1, 1, (out,))
    np.testing.assert_array_equal(out, [0x11, 0x22, 0x33, 0x44])


def test_negative_subscripts_wrap_as_on_the_gpu():
    # sm_90 SASS: g[-1] of a .u32 global array is g + 0xFFFFFFFC (the 32-bit offset zero-extended);
    # a shared address is 32 bits, so s[-1] is s - 4
    text = HEAD + """.global .align 4 .u32 g[4];
.visible .entry k(.param .u64 out)
{
.reg .b64 %rd<6>;
.shared .align 4 .u32 pad[8];
.shared .align 4 .u32 s[4];
ld.param.u64 %rd0, [out];
mov.u64 %rd1, g[-1];
mov.u64 %rd2, g;
sub.u64 %rd1, %rd1, %rd2;
mov.u64 %rd3, s[-1];
mov.u64 %rd4, s;
sub.u64 %rd3, %rd3, %rd4;
st.global.v2.u64 [%rd0], {%rd1, %rd3};
ret;
}
"""
    out = np.zeros(2, np.uint64)
    ptxjit.Module(text, "t.ptx").get_function("k")(1, 1, (out,))
    assert out.tolist() == [0xFFFFFFFC, (1 << 64) - 4]


def test_unsized_array_is_indexed_in_bytes():
    # ptxas emits the same code for dyn[8] and dyn+8 of an `.extern .shared .u32 dyn[]`
    text = HEAD + """.extern .shared .align 16 .u32 dyn[];
.visible .entry k(.param .u64 out)
{
.reg .b32 %r<4>;
.reg .b64 %rd<4>;
ld.param.u64 %rd0, [out];
st.shared.u32 [dyn], 0;
st.shared.u32 [dyn+4], 0;
st.shared.u32 [dyn+8], 0;
st.shared.u32 dyn[8], 0x55;
ld.shared.u32 %r1, [dyn+8];
st.global.u32 [%rd0], %r1;
ld.shared.u32 %r1, [dyn+32];
ret;
}
"""
    out = np.zeros(1, np.uint32)
    ptxjit.Module(text, "t.ptx").get_function("k")(1, 1, (out,), shared_mem=64)
    assert out[0] == 0x55


def test_loads_of_const_and_global_elements():
    text = HEAD + """.const .align 4 .u32 ctab[8] = {10, 11, 12, 13, 14, 15, 16, 17};
.global .align 4 .u32 gtab[4] = {20, 21, 22, 23};
.visible .entry k(.param .u64 out)
{
.reg .b32 %r<8>;
.reg .b64 %rd<4>;
ld.param.u64 %rd0, [out];
ld.const.u32 %r1, ctab[2];
ld.const.u32 %r2, [ctab+28];
mov.u32 %r5, 5;
ld.const.u32 %r3, ctab[%r5];
ld.global.u32 %r4, gtab[3];
ldu.global.u32 %r6, gtab[%r5+-4];
st.global.v4.u32 [%rd0], {%r1, %r2, %r3, %r4};
st.global.u32 [%rd0+16], %r6;
ret;
}
"""
    out = np.zeros(5, np.uint32)
    ptxjit.Module(text, "t.ptx").get_function("k")(1, 1, (out,))
    np.testing.assert_array_equal(out, [12, 17, 15, 23, 21])


def test_a_variable_as_the_subscript_is_its_address():
    # ptxas emits the same code for s[pad] and `mov.u64 %rd, pad; ... s[%rd]`
    decls = ".shared .align 4 .u32 pad[4];\n.shared .align 4 .u32 s[64];\n"
    body = ("mov.u64 %rd1, s[pad];\nmov.u64 %rd2, pad;\nmov.u64 %rd3, s;\nshl.b64 %rd2, %rd2, 2;\n"
            "add.u64 %rd3, %rd3, %rd2;\nsub.u64 %rd1, %rd1, %rd3;\nst.global.u64 [%rd0], %rd1;\nret;\n")
    text = HEAD + decls + (".visible .entry k(.param .u64 out)\n{\n.reg .b64 %rd<4>;\n"
                           "ld.param.u64 %rd0, [out];\n" + body + "}\n")
    out = np.ones(1, np.uint64)
    ptxjit.Module(text, "t.ptx").get_function("k")(1, 1, (out,))
    assert out[0] == 0


def test_var_plus_offset_in_initializers_and_generic():
    # `.global .u64 p = arr + 8` and generic(arr)+8: arr[1] is no initializer (ptxas: syntax error)
    text = HEAD + """.global .align 8 .u64 arr[4] = {5, 6, 7, 8};
.global .align 8 .u64 pp[2] = {generic(arr)+8, generic(arr) + 16};
.visible .entry k(.param .u64 out)
{
.reg .b64 %rd<6>;
ld.param.u64 %rd0, [out];
ld.global.u64 %rd1, [pp];
ld.u64 %rd2, [%rd1];
ld.global.u64 %rd1, [pp+8];
ld.u64 %rd3, [%rd1];
st.global.v2.u64 [%rd0], {%rd2, %rd3};
ret;
}
"""
    out = np.zeros(2, np.uint64)
    ptxjit.Module(text, "t.ptx").get_function("k")(1, 1, (out,))
    np.testing.assert_array_equal(out, [6, 7])
    with pytest.raises(PTXSyntaxError, match=r"t.ptx:5:21: .*expected"):
        ptxjit.Module(HEAD + ".global .u64 arr[4];\n.global .u64 p = arr[1];\n", "t.ptx")


# ---------------------------------------------------------------- var+offset as an integer operand
def test_variable_plus_offset_is_an_integer_operand():
    # ptxas takes `var+K` wherever an integer immediate goes (add, sub, mul, mad, setp, selp, and, max,
    # cvt, a stored value) and emits the same code as for the register holding `mov.u64 %rd, var+K`;
    # a bare `var` (and a function's address) it refuses there
    text = HEAD + """.global .align 8 .u64 g[4];
.visible .entry k(.param .u64 out)
{
.reg .b32 %r<8>;
.reg .b64 %rd<16>;
.reg .pred %p<3>;
.shared .align 8 .u64 s[4];
ld.param.u64 %rd0, [out];
mov.u64 %rd1, 1000;
mov.u64 %rd2, g+8;
add.u64 %rd3, %rd1, g+8;
sub.u64 %rd4, g+8, %rd1;
mul.lo.u64 %rd5, %rd1, s+8;
mad.lo.u64 %rd6, %rd1, 3, g+16;
setp.eq.u64 %p1, %rd2, g+8;
selp.b64 %rd7, %rd1, s+16, %p1;
and.b64 %rd8, %rd1, g+24;
max.u64 %rd9, %rd1, s+16;
cvt.u32.u64 %r1, g+8;
mov.u32 %r2, 7;
add.u32 %r3, %r2, s+8;
mov.u64 %rd10, s+16;
mov.u64 %rd11, g+24;
add.u64 %rd12, %rd1, g+0;
sub.u64 %rd12, %rd12, %rd2;
st.global.v2.u64 [%rd0], {%rd2, %rd3};
st.global.v2.u64 [%rd0+16], {%rd4, %rd5};
st.global.v2.u64 [%rd0+32], {%rd6, %rd7};
st.global.v2.u64 [%rd0+48], {%rd8, %rd9};
st.global.v2.u32 [%rd0+64], {%r1, %r3};
st.global.v2.u64 [%rd0+72], {%rd10, %rd11};
st.global.u64 [%rd0+88], g+16;
st.global.u64 [%rd0+96], %rd12;
ret;
}
"""
    out = np.zeros(13, np.uint64)
    ptxjit.Module(text, "t.ptx").get_function("k")(1, 1, (out,))
    g8, s16, g24 = int(out[0]), int(out[9]), int(out[10])
    s8, g16, m = s16 - 8, g8 + 8, 1 << 64
    assert g24 == g8 + 16
    assert out[:8].tolist() == [g8, (1000 + g8) % m, (g8 - 1000) % m, 1000 * s8 % m, (3000 + g16) % m, 1000,
                                1000 & g24, max(1000, s16)]
    assert out[8:9].view(np.uint32).tolist() == [g8 & 0xFFFFFFFF, (7 + s8) & 0xFFFFFFFF]
    assert out[11] == g16
    assert out[12] == (1000 - 8) % m  # (g+0) + 1000 - (g+8)
    for bad in ("add.u64 %rd1, %rd1, g;", "add.u64 %rd1, %rd1, k+4;", "add.f32 %f1, %f1, g+4;",
                "add.u64 g+4, %rd1, 1;"):
        with pytest.raises(PTXError, match=r"t.ptx:9:1: "):
            ptxjit.Module(HEAD + ".global .u64 g[4];\n.visible .entry k()\n{\n.reg .b64 %rd<2>;\n"
                          ".reg .f32 %f<2>;\n" + bad + "\nret;\n}\n", "t.ptx")


# ---------------------------------------------------------------- what ptxas refuses
@pytest.mark.parametrize("line,col,match", [
    ("mov.u64 %rd1, m[1][2];", 19, "'m' takes one subscript"),             # ptxas: syntax error near '['
    ("ld.shared.u32 %r1, [s[4]];", 22, "expected"),              # ptxas: syntax error near '['
    ("ld.shared.u32 %r1, [s[4]+4];", 22, "expected"),
    ("mov.u64 %rd1, s[4]+4;", 19, "expected"),                   # ptxas: syntax error near '+'
    ("mov.u64 %rd1, s-8;", 16, "expected"),                      # ptxas: syntax error near '-'
    ("mov.u64 %rd1, x[0];", 15, "indexing on non-array 'x'"),    # ptxas: Indexing on non-array
    ("mov.u64 %rd1, out[0];", 15, "indexing on non-array 'out'"),
    ("mov.u64 %rd1, k[0];", 15, "indexing on non-array 'k'"),
    ("mov.u64 %rd1, nosuch[0];", 15, "indexing on non-array 'nosuch'"),
    ("mov.u64 %rd1, s[%p1];", 17, "array index '%p1' is a .pred register"),
    ("mov.u64 %rd1, s[%f1];", 17, "array index '%f1' is a .f32 register"),
    ("mov.u64 %rd1, s[%rd1-4];", 21, "expected"),                 # ptxas: syntax error near '-'
    ("mov.u64 %rd1, s[4+%rd1];", 19, "expected"),                 # ptxas: syntax error near '%rd1'
    ("mov.u64 %rd1, s[%rd1+%rd1];", 22, "expected"),
    ("mov.u64 %rd1, s[1.0];", 17, "found a float"),               # ptxas: integer constant expected
    ("mov.u64 %rd1, s[];", 17, "expected"),
    # ptxas: Arguments mismatch - the element form is an operand of ld/st/mov/cvta only
    ("add.u64 %rd1, s[4], 1;", 15, "operand of ld, st, mov and cvta only"),
    ("setp.eq.u64 %p1, %rd1, s[4];", 24, "operand of ld, st, mov and cvta only"),
    ("atom.shared.add.u32 %r1, s[4], 1;", 26, "operand of ld, st, mov and cvta only"),
    ("red.shared.add.u32 s[4], 1;", 20, "operand of ld, st, mov and cvta only"),
    ("cvta.to.shared.u64 %rd1, s[4];", 26, "operand of ld, st, mov and cvta only"),
    ("prefetch.global.L1 g[4];", 20, "operand of ld, st, mov and cvta only"),
    ("st.shared.u32 [s+4], s[2];", 22, "the address operand of st, not its value"),
    ("ld.shared.u32 s[1], [s+4];", 15, "the address operand of ld, not its destination"),
    # ptxas: syntax error near '-' (the offset is written [base+-4])
    ("ld.shared.u32 %r1, [s-4];", 22, r"expected '\+' or '\]'"),
    ("ld.global.u32 %r1, [%rd1-4];", 25, r"expected '\+' or '\]'"),
])
def test_forms_ptxas_refuses_are_syntax_errors(line, col, match):
    text = (HEAD + ".global .u32 g[8];\n.visible .entry k(.param .u64 out)\n{\n.reg .b32 %r<4>;\n"
            ".reg .b64 %rd<4>;\n.reg .f32 %f<2>;\n.reg .pred %p<2>;\n.shared .u32 s[16];\n"
            ".shared .u32 m[4][4];\n.shared .u32 x;\n" + line + "\nret;\n}\n")
    with pytest.raises(PTXSyntaxError, match=rf"t.ptx:14:{col}: .*{match}"):
        ptxjit.Module(text, "t.ptx")


# ---------------------------------------------------------------- declarations mid-body
def test_declarations_in_the_middle_of_the_body_and_in_blocks():
    text = HEAD + """.visible .entry k(.param .u64 p)
{
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [p];
.reg .b32 %r<4>;
mov.u32 %r1, %tid.x;
.shared .align 4 .u32 buf[32];
mul.wide.u32 %rd2, %r1, 4;
mov.u64 %rd3, buf;
add.u64 %rd3, %rd3, %rd2;
st.shared.u32 [%rd3], %r1;
bar.sync 0;
{
.reg .b32 %t<2>;
.local .align 4 .u32 scratch[4];
xor.b32 %t0, %r1, 31;
st.local.u32 [scratch+4], %t0;
ld.local.u32 %t1, [scratch+4];
.shared .align 4 .u32 inner[32];
ld.shared.u32 %t0, buf[%t1];
mul.lo.u32 %t0, %t0, 3;
st.shared.u32 inner[%r1], %t0;
bar.sync 0;
ld.shared.u32 %r2, inner[%t1];
}
.reg .b64 %re<8>;
add.u64 %re5, %rd1, %rd2;
st.global.u32 [%re5], %r2;
ret;
}
"""
    out = np.zeros(32, np.uint32)
    ptxjit.Module(text, "t.ptx").get_function("k")(1, 32, (out,))
    np.testing.assert_array_equal(out, np.arange(32, dtype=np.uint32) * 3)


def test_declarations_mid_body_in_a_func_a_loop_block_and_a_call_block():
    text = HEAD + """.func (.param .b32 ret) f(.param .b32 x)
{
.reg .b32 %a<3>;
ld.param.b32 %a1, [x];
.local .align 4 .b32 tmp[2];
st.local.b32 tmp[1], %a1;
.reg .b32 %b<2>;
ld.local.b32 %b1, [tmp+4];
add.s32 %b1, %b1, 1;
st.param.b32 [ret], %b1;
ret;
}
.visible .entry k(.param .u64 p)
{
.reg .b64 %rd<4>;
ld.param.u64 %rd1, [p];
.reg .b32 %r<6>;
mov.u32 %r1, 0;
mov.u32 %r2, 0;
LOOP:
{
.local .align 4 .u32 acc[2];
.reg .pred %q;
st.local.u32 acc[1], %r1;
ld.local.u32 %r3, [acc+4];
add.u32 %r2, %r2, %r3;
add.u32 %r1, %r1, 1;
setp.lt.u32 %q, %r1, 10;
@%q bra LOOP;
}
{
.param .b32 a0;
.param .b32 r0;
st.param.b32 [a0], %r2;
call (r0), f, (a0);
ld.param.b32 %r4, [r0];
}
st.global.u32 [%rd1], %r4;
ret;
}
"""
    out = np.zeros(1, np.uint32)
    ptxjit.Module(text, "t.ptx").get_function("k")(1, 1, (out,))
    assert out[0] == sum(range(10)) + 1


def test_nvcc_inline_asm_blocks_with_declarations_and_element_operands():
    # tests/data/midbody_decls.cu: `{ .reg/.local/.shared ...; }` blocks nvcc pastes mid-body
    m = ptxjit.Module((DATA / "midbody_decls.ptx").read_text(), "midbody_decls.ptx")
    x = np.random.default_rng(3).integers(-50, 50, 128).astype(np.int32)
    out = np.zeros(128, np.int32)
    m.get_function("_Z11clamp_countPKiPiii")(2, 64, (x, out, np.int32(-20), np.int32(30)))
    s = np.clip(x, -20, 30) * 3
    np.testing.assert_array_equal(out, s + 1000 * s[np.arange(128) ^ 1])


# ---------------------------------------------------------------- literals past int()'s limit
_LONG = 5000  # digits; Python refuses int() of decimal strings over 4,300 digits


@pytest.mark.parametrize("lit", ["1" + "0" * _LONG, "9" * _LONG + "U", "0x" + "f" * _LONG, "0" + "7" * _LONG,
                                 "0b" + "1" * _LONG, "0x" + "0" * _LONG + "1f"])
def test_huge_literals_are_overflow_errors(lit):
    small = lit.startswith("0x" + "0" * 10)  # leading zeros: the value is 0x1f
    text = HEAD + f".visible .entry k()\n{{\n.reg .b64 %rd<2>;\nmov.u64 %rd1, {lit};\nret;\n}}\n"
    if small:
        ptxjit.Module(text, "t.ptx")
        return
    with pytest.raises(PTXSyntaxError, match=r"t.ptx:7:15: .*integer constant overflow"):
        ptxjit.Module(text, "t.ptx")


@pytest.mark.parametrize("where", ["reg_count", "array_dim", "loc", "initializer", "expression", "address"])
def test_huge_literals_everywhere_are_overflow_errors(where):
    big = "1" + "0" * _LONG
    decl, body = "", ""
    if where == "reg_count":
        body = f".reg .b32 %q<{big}>;"
    elif where == "array_dim":
        decl = f".global .u32 arr[{big}];"
    elif where == "loc":
        body = f".loc 1 {big} 1"
    elif where == "initializer":
        decl = f".global .u64 v = {big};"
    elif where == "expression":
        body = f"mov.u64 %rd1, (1 + {big}) * 2;"
    else:
        body = f"ld.global.u64 %rd1, [%rd1+{big}];"
    text = HEAD + decl + f"\n.visible .entry k()\n{{\n.reg .b64 %rd<2>;\n{body}\nret;\n}}\n"
    with pytest.raises(PTXSyntaxError, match=r"t.ptx:\d+:\d+: .*(integer constant overflow|must be between)"):
        ptxjit.Module(text, "t.ptx")


def test_register_with_a_huge_number_in_a_large_range_is_a_clear_error():
    text = HEAD + (".visible .entry k()\n{\n.reg .b64 %rd<2000>;\nmov.u64 %rd1" + "0" * _LONG
                   + ", 1;\nret;\n}\n")
    with pytest.raises(PTXError, match=r"t.ptx:7:1: .*not declared"):
        ptxjit.Module(text, "t.ptx")
