"""PTX features that Triton's PTX and hand-written PTX use: one-element vector operands, `.reg .v2/.v4`
vector registers, `.func` with several (register) return values, `WARP_SZ`, `cvt.pack`; and `ptxjit info`
never calling a module fully supported while an instruction has no rule.  Expected values are worked out
by hand from the PTX ISA's definitions (NumPy where there is arithmetic)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import ptxjit
from tests.ptxsnip import HEADER, snippet_kernel


def _run(ptx: str, *args, grid=1, block=1) -> None:
    ptxjit.Module(ptx).get_function("k")(grid, block, list(args))


def test_one_element_vector_operands() -> None:
    out = np.zeros(2, np.uint32)
    _run(snippet_kernel("""
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, 7;
    st.global.b32 [%rd1], {%r1};
    ld.global.b32 {%r2}, [%rd1];
    add.u32 %r2, %r2, 1;
    st.global.b32 [%rd1+4], { %r2 };
""", [("u64", "out")]), out)
    assert out.tolist() == [7, 8]


def test_vector_registers() -> None:
    """`.reg .v4 .f32 %v`: elements .x/.y/.z/.w (and .r/.g/.b/.a), the whole register as a vector operand of
    ld/st, ranges `%q<3>` of vector registers."""
    out = np.zeros(8, np.float32)
    x = np.array([1.5, -2.0, 3.25, 8.0], np.float32)
    _run(snippet_kernel("""
    .reg .v4 .f32 %v;
    .reg .v2 .b32 %q<3>;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [x];
    ld.global.v4.f32 %v, [%rd2];
    add.f32 %v.w, %v.w, %v.x;
    mul.f32 %v.g, %v.g, %v.b;
    st.global.v4.f32 [%rd1], %v;
    mov.b32 %q2.x, 11;
    mov.b32 %q2.y, WARP_SZ;
    st.global.v2.b32 [%rd1+16], %q2;
    mov.b32 %q0.r, %q2.g;
    mov.b32 %q0.y, %q2.x;
    st.global.v2.b32 [%rd1+24], %q0;
""", [("u64", "out"), ("u64", "x")]), out, x)
    np.testing.assert_array_equal(out[:4], [1.5, np.float32(-2.0) * np.float32(3.25), 3.25, 9.5])
    assert out[4:].view(np.uint32).tolist() == [11, 32, 32, 11]


def test_warp_sz_is_32() -> None:
    out = np.zeros(2, np.uint32)
    _run(snippet_kernel("""
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, WARP_SZ;
    add.u32 %r2, %r1, WARP_SZ;
    st.global.v2.u32 [%rd1], {%r1, %r2};
""", [("u64", "out")]), out)
    assert out.tolist() == [32, 64]


_TWO = HEADER + """
.func (.reg .b32 s, .reg .b32 t) two(.reg .b32 x, .reg .b32 y)
{
    .reg .pred %p;
    add.u32 s, x, y;
    setp.gt.u32 %p, x, 100;
    @%p bra BIG;
    mul.lo.u32 t, x, 3;
    ret;
BIG:
    mov.u32 t, 0;
    ret;
}
.func (.param .b32 a, .param .b64 b) twoparam(.param .b32 x)
{
    .reg .b32 %t<3>;
    .reg .b64 %w;
    ld.param.b32 %t1, [x];
    add.u32 %t2, %t1, 1;
    mul.wide.u32 %w, %t1, %t1;
    st.param.b32 [a], %t2;
    st.param.b64 [b], %w;
    ret;
}
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, 5;
    call (%r2, %r3), two, (%r1, 10);
    mov.u32 %r4, 200;
    mov.u32 %r5, 77;
    setp.eq.u32 %p1, %r4, 200;
    @!%p1 call (%r4, %r5), two, (%r4, 1);
    call (%r6, _), two, (%r4, %r1);
    {
    .param .b32 p0; .param .b32 q0; .param .b64 q1;
    mov.u32 %r7, 70000;
    st.param.b32 [p0], %r7;
    call (q0, q1), twoparam, (p0);
    ld.param.b32 %r7, [q0];
    ld.param.b64 %rd2, [q1];
    }
    st.global.v4.u32 [%rd1], {%r2, %r3, %r5, %r6};
    st.global.u32 [%rd1+16], %r7;
    st.global.u64 [%rd1+24], %rd2;
    ret;
}
"""


def test_func_with_several_return_values() -> None:
    """`.func (.reg .b32 s, .reg .b32 t) two(.reg .b32 x, .reg .b32 y)` called with registers, an immediate,
    under a false guard (nothing changes) and with a `_` sink; and the `.param` form with two returns."""
    out = np.zeros(8, np.uint32)
    _run(_TWO, out)
    assert out[:5].tolist() == [15, 15, 77, 205, 70001]
    assert int(out[6:8].view(np.uint64)[0]) == 70000 * 70000


def test_reg_parameters_refused_on_kernels_and_predicates() -> None:
    with pytest.raises(ptxjit.PTXSyntaxError, match=r"\.entry parameters must be \.param"):
        ptxjit.Module(HEADER + ".visible .entry k(.reg .b32 x)\n{\n    ret;\n}\n")
    with pytest.raises(ptxjit.PTXSyntaxError, match=r"'p'.*\.pred"):
        ptxjit.Module(HEADER + ".func f(.reg .pred p)\n{\n    ret;\n}\n")


def test_cvt_pack() -> None:
    """cvt.pack.sat: d = {c[15:0], sat(a), sat(b)} for .u8 (PTX ISA), {sat(a), sat(b)} for .s16."""
    out = np.zeros(2, np.uint32)
    _run(snippet_kernel("""
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, 300;
    mov.u32 %r2, -5;
    mov.u32 %r3, 0x11223344;
    cvt.pack.sat.u8.s32.b32 %r4, %r1, %r2, %r3;
    cvt.pack.sat.s16.s32 %r5, %r1, %r2;
    st.global.v2.u32 [%rd1], {%r4, %r5};
""", [("u64", "out")]), out)
    assert out.tolist() == [0x3344 << 16 | 255 << 8 | 0, 300 << 16 | 0xFFFB]


def test_info_never_claims_full_support_without_a_rule(tmp_path, monkeypatch) -> None:
    """Validation fails open on an ISA-table defect; `ptxjit info` still lists an instruction without a rule."""
    from ptxjit import cli
    from ptxjit.lower import validate
    from ptxjit.lower.rules import RULES

    p = tmp_path / "k.ptx"
    p.write_text(snippet_kernel("    ld.param.u64 %rd1, [out];\n    mov.u32 %r1, WARP_SZ;\n"
                                "    st.global.u32 [%rd1], %r1;\n", [("u64", "out")]))
    ok = CliRunner().invoke(cli.main, ["info", str(p)])
    assert ok.exit_code == 0 and "all instructions supported" in ok.output, ok.output

    def broken(ins, ctx=None):
        raise RuntimeError("table defect")

    monkeypatch.setattr(validate, "diagnose", broken)
    monkeypatch.delitem(RULES, "mov")
    r = CliRunner().invoke(cli.main, ["info", str(p)])
    assert "all instructions supported" not in r.output
    assert "mov.u32" in r.output and "no rule" in r.output, r.output
