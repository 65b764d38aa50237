"""Video instructions (PTX ISA §9.7.16): scalar vadd/vsub/vabsdiff/vmin/vmax/vshl/vshr/vmad/vset and
the SIMD vadd2/vadd4/... forms.  ptxjit has no rules for them yet; the table still describes them so
that valid PTX is told apart from invalid PTX.

Operand byte/half selectors (`%r1.b0`, `%r2.h1`) are resolved by the matcher to the register."""

from __future__ import annotations

from ptxjit.isa.spec import SAT, d, form, mods, req, s, spec, types

U_S = "u32 s32"
# a/b (and d) take byte/half selectors (%r1.b0, %r2.h1, SIMD %r1.h10); c does not
# classes from the type suffixes .dtype.atype.btype (as ptxas sees them: its .f16x2 quirk applies)
A = s("a", "T1", "reg imm sel")
B = s("b", "T2", "reg imm sel")
C = s("c", "T0")
DSEL = d("T0", "reg sel")
OP2 = mods("op2", "add min max")
VTYPES = types(U_S, U_S, U_S)


def _scalar(name: str):
    """vop.dtype.atype.btype{.sat} d, a, b;  vop...{.sat}.op2 d, a, b, c;  vop... d.dsel, a, b, c."""
    return spec(name, "video",
                form(VTYPES, [SAT], (d("T0"), A, B)),
                form(VTYPES, [SAT, req("op2", "add min max")], (d("T0"), A, B, C)),
                form(VTYPES, [SAT], (DSEL, A, B, C), note="merge form: d.dsel"))


def _shift(name: str):
    """vshl/vshr.dtype.atype.u32{.sat}.mode d, a, b{, c} with .op2 or a .dsel merge."""
    t = types(U_S, U_S, "u32")
    return spec(name, "video",
                form(t, [SAT, req("mode", "clamp wrap")], (d("T0"), A, B)),
                form(t, [SAT, req("mode", "clamp wrap"), OP2], (d("T0"), A, B, C)),
                form(t, [SAT, req("mode", "clamp wrap")], (DSEL, A, B, C), note="merge form: d.dsel"))


def _simd(name: str):
    """vop2/vop4.dtype.atype.btype{.sat} d, a, b, c;  vop2/vop4.dtype.atype.btype.add d, a, b, c."""
    return spec(name, "video",
                form(VTYPES, [SAT], (DSEL, A, B, C)),
                form(VTYPES, [req("op2", "add")], (DSEL, A, B, C)))


def _vset(name: str, simd: bool):
    cmp = req("cmp", "eq ne lt le gt ge")
    t = types(U_S, U_S)
    # vset has no .dtype: a and b take .atype/.btype, d and c are .u32
    a, b = s("a", "T0", "reg imm sel"), s("b", "T1", "reg imm sel")
    ops3 = (d("u32"), a, b)
    ops4 = (d("u32", "reg sel"), a, b, s("c", "u32"))
    if simd:
        return spec(name, "video", form(t, [cmp], ops4), form(t, [cmp, req("op2", "add")], ops4))
    return spec(name, "video", form(t, [cmp], ops3), form(t, [cmp, req("op2", "add min max")], ops4),
                form(t, [cmp], ops4, note="merge form: d.dsel"))


SPECS = [
    *(_scalar(n) for n in ("vadd", "vsub", "vabsdiff", "vmin", "vmax")),
    _shift("vshl"), _shift("vshr"),
    spec("vmad", "video",
         form(VTYPES, [SAT, mods("scale", "shr7 shr15"), mods("po", "po")],
              (d("T0"), s("a", "T1", "reg imm sel minus"), s("b", "T2", "reg imm sel minus"),
               s("c", "T0", "reg imm minus")))),
    _vset("vset", False),
    *(_simd(f"{n}{k}") for n in ("vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax") for k in (2, 4)),
    _vset("vset2", True), _vset("vset4", True),
]
