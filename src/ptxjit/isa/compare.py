"""Comparison and selection: setp, set, selp, slct (PTX ISA §9.7.7, half precision §9.7.4.x)."""

from __future__ import annotations

from ptxjit.isa.spec import FTZ, Match, d, form, kind_of, mods, req, s, spec, types

CMP_S = "eq ne lt le gt ge"
CMP_U = CMP_S + " lo ls hi hs"
CMP_F = CMP_S + " equ neu ltu leu gtu geu num nan"
CMP = req("cmp", " ".join(dict.fromkeys((CMP_U + " " + CMP_F).split())))
BOOL = req("boolop", "and or xor")
INTS = "b16 b32 b64 u16 u32 u64 s16 s32 s64"
FLOATS = "f32 f64 f16 f16x2 bf16 bf16x2"


def _cmp_fits(t: str, cmp: str) -> str | None:
    k = kind_of(t)
    allowed = {"b": "eq ne", "s": CMP_S, "u": CMP_U, "f": CMP_F}.get(k, CMP_F).split()
    if cmp not in allowed:
        return f".{cmp} does not compare .{t} values (ptxas: mismatch between instruction type and " \
            f"comparison qualifier); .{t} takes {' '.join('.' + c for c in allowed)}"
    return None


def _setp_check(m: Match) -> str | None:
    t = m.types[-1]
    why = _cmp_fits(t, m.get("cmp") or "")
    if why:
        return why
    if m.has("ftz") and t not in ("f32", "f16", "f16x2"):
        return f".ftz is not allowed with .{t}"
    return None


_SRC_TYPES = INTS + " " + FLOATS
_SET_DTYPES = "u32 s32 f32 u16 s16 f16 bf16 f16x2 bf16x2"


# a predicate source (setp/set's combine operand c, selp's c) is a register, negated or not, or an integer
# immediate, non-zero being true: ptxas folds `selp.b32 d, a, b, 2` to a


def _setp_forms():
    out = []
    for tys in (INTS + " f32 f64 f16x2 bf16x2", "f16 bf16"):
        # ptxas: "Predicate output not allowed" for a p|q pair with scalar .f16/.bf16
        dk = "reg pair sink" if "f16x2" in tys else "reg sink"
        base = (d("pred", dk), s("a"), s("b"))
        out.append(form(types(tys), [CMP, FTZ], base, check=_setp_check))
        out.append(form(types(tys), [CMP, BOOL, FTZ], (*base, s("c", "pred")), check=_setp_check))
    return out


SPECS = [
    spec("setp", "compare", *_setp_forms()),
    spec("set", "compare",
         form(types(_SET_DTYPES, _SRC_TYPES), [CMP, FTZ], (d("T0"), s("a", "T1"), s("b", "T1")),
              check=_setp_check),
         form(types(_SET_DTYPES, _SRC_TYPES), [CMP, BOOL, FTZ],
              (d("T0"), s("a", "T1"), s("b", "T1"), s("c", "pred")), check=_setp_check)),
    spec("selp", "compare", form(types(INTS + " f32 f64"), [], (d(), s("a"), s("b"), s("c", "pred")))),
    spec("slct", "compare",
         form(types(INTS + " f32 f64", "s32"), [], (d("T0"), s("a", "T0"), s("b", "T0"), s("c", "T1"))),
         form(types(INTS + " f32 f64", "f32"), [FTZ], (d("T0"), s("a", "T0"), s("b", "T0"), s("c", "T1")))),
]

__all__ = ["SPECS", "mods"]
