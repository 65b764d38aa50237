"""Integer arithmetic, bit manipulation and logic instructions (PTX ISA 8.x §9.7.1, §9.7.7-9.7.8)."""

from __future__ import annotations

from ptxjit.isa.spec import (
    CC,
    INT16_64,
    SAT,
    Match,
    d,
    form,
    mods,
    op,
    req,
    s,
    spec,
    srcs,
    types,
)

SIMD16 = "u16x2 s16x2"


def _sat_s32(m: Match) -> str | None:
    if m.has("sat") and m.types[0] != "s32":
        return f".sat is allowed only with .s32, not .{m.types[0]}"
    return None


def _cc_types(m: Match) -> str | None:
    if m.has("cc") and m.types[0] not in ("u32", "s32", "u64", "s64"):
        return f".cc needs a 32- or 64-bit integer type, not .{m.types[0]}"
    return None


def _relu(m: Match) -> str | None:
    if m.has("relu") and m.types[0] not in ("s32", "s16x2"):
        return f".relu is allowed only with .s32 and .s16x2, not .{m.types[0]}"
    return None


def _mad_mode(m: Match) -> str | None:
    mode = m.get("mode")
    if mode == "wide" and m.types[0] not in ("u16", "u32", "s16", "s32"):
        return f".wide needs a 16- or 32-bit type, not .{m.types[0]}"
    if m.has("sat") and (mode != "hi" or m.types[0] != "s32"):
        return ".sat is allowed only as mad.hi.sat.s32"
    if m.has("cc") and (mode == "wide" or m.types[0] not in ("u32", "s32", "u64", "s64")):
        return ".cc needs .hi or .lo with a 32- or 64-bit type"
    return None


def _mul_mode(m: Match) -> str | None:
    if m.get("mode") == "wide" and m.types[0] not in ("u16", "u32", "s16", "s32"):
        return f".wide needs a 16- or 32-bit type, not .{m.types[0]}"
    return None


def _mad24(m: Match) -> str | None:
    if m.has("sat") and (m.get("mode") != "hi" or m.types[0] != "s32"):
        return ".sat is allowed only as mad24.hi.sat.s32"
    return None


MODE_HLW = req("mode", "hi lo wide")
MODE_HL = req("mode", "hi lo")
CLAMP = req("mode", "clamp wrap")

SPECS = [
    spec("add", "integer",
         form(types(INT16_64), [SAT, CC], (d(), *srcs("a b")), check=lambda m: _sat_s32(m) or _cc_types(m)),
         form(types(SIMD16), [], (d(), *srcs("a b")))),
    spec("sub", "integer",
         form(types(INT16_64), [SAT, CC], (d(), *srcs("a b")), check=lambda m: _sat_s32(m) or _cc_types(m)),
         form(types(SIMD16), [], (d(), *srcs("a b")))),
    spec("addc", "integer", form(types("u32 s32 u64 s64"), [CC], (d(), *srcs("a b")))),
    spec("subc", "integer", form(types("u32 s32 u64 s64"), [CC], (d(), *srcs("a b")))),
    spec("mul", "integer",
         form(types(INT16_64), [req("mode", "hi lo")], (d(), *srcs("a b"))),
         form(types("u16 u32 s16 s32"), [req("mode", "wide")], (d("W0"), *srcs("a b")), check=_mul_mode)),
    spec("mad", "integer",
         form(types(INT16_64), [MODE_HL, SAT, CC], (d(), *srcs("a b c")), check=_mad_mode),
         form(types("u16 u32 s16 s32"), [req("mode", "wide")], (d("W0"), *srcs("a b"), s("c", "W0")))),
    spec("madc", "integer", form(types("u32 s32 u64 s64"), [MODE_HL, CC], (d(), *srcs("a b c")))),
    spec("mul24", "integer", form(types("u32 s32"), [MODE_HL], (d(), *srcs("a b")))),
    spec("mad24", "integer", form(types("u32 s32"), [MODE_HL, SAT], (d(), *srcs("a b c")), check=_mad24)),
    spec("sad", "integer", form(types(INT16_64), [], (d(), *srcs("a b c")))),
    spec("div", "integer", form(types(INT16_64), [], (d(), *srcs("a b")))),
    spec("rem", "integer", form(types(INT16_64), [], (d(), *srcs("a b")))),
    spec("abs", "integer", form(types("s16 s32 s64"), [], (d(), s("a")))),
    spec("neg", "integer", form(types("s16 s32 s64"), [], (d(), s("a")))),
    spec("min", "integer",
         form(types(INT16_64 + " " + SIMD16), [mods("relu", "relu")], (d(), *srcs("a b")), check=_relu)),
    spec("max", "integer",
         form(types(INT16_64 + " " + SIMD16), [mods("relu", "relu")], (d(), *srcs("a b")), check=_relu)),
    # bit manipulation
    spec("popc", "bits", form(types("b32 b64"), [], (d("u32"), s("a")))),
    spec("clz", "bits", form(types("b32 b64"), [], (d("u32"), s("a")))),
    spec("bfind", "bits", form(types("u32 u64 s32 s64"), [mods("shiftamt", "shiftamt")], (d("u32"), s("a")))),
    spec("fns", "bits", form(types("b32"), [], (d(), s("mask"), s("base", "u32"), s("offset", "s32")))),
    spec("brev", "bits", form(types("b32 b64"), [], (d(), s("a")))),
    spec("bfe", "bits", form(types("u32 u64 s32 s64"), [], (d(), s("a"), s("b", "u32"), s("c", "u32")))),
    spec("bfi", "bits", form(types("b32 b64"), [], (d("T", ), s("a"), s("b"), s("c", "u32"), s("d", "u32")))),
    spec("szext", "bits", form(types("u32 s32"), [CLAMP], (d(), s("a"), s("b", "u32")))),
    spec("bmsk", "bits", form(types("b32"), [CLAMP], (d(), s("a", "u32"), s("b", "u32")))),
    # a and b have the .atype/.btype (ptxas's .f16x2-register quirk applies to them); d and c are 32-bit
    spec("dp4a", "integer", form(types("u32 s32", "u32 s32"), [], (d("u32"), s("a", "T0"), s("b", "T1"),
                                                                    s("c", "u32")))),
    spec("dp2a", "integer", form(types("u32 s32", "u32 s32"), [MODE_HL], (d("u32"), s("a", "T0"),
                                                                          s("b", "T1"), s("c", "u32")))),
    # logic and shifts
    spec("and", "logic", form(types("pred b16 b32 b64"), [], (d(), *srcs("a b")))),
    spec("or", "logic", form(types("pred b16 b32 b64"), [], (d(), *srcs("a b")))),
    spec("xor", "logic", form(types("pred b16 b32 b64"), [], (d(), *srcs("a b")))),
    spec("not", "logic", form(types("pred b16 b32 b64"), [], (d(), s("a")))),
    spec("cnot", "logic", form(types("b16 b32 b64"), [], (d(), s("a")))),
    spec("lop3", "logic",
         form(types("b32"), [], (d(), *srcs("a b c"), s("immLut", "u32", "imm"))),
         form(types("b32"), [req("boolop", "or and")],
              (d("T", "reg pair sink"), *srcs("a b c"), s("immLut", "u32", "imm"), s("q", "pred")))),
    spec("shf", "bits", form(types("b32"), [req("dir", "l r"), CLAMP], (d(), s("a"), s("b"), s("c", "u32")))),
    spec("shl", "bits", form(types("b16 b32 b64"), [], (d(), s("a"), s("b", "u32")))),
    spec("shr", "bits", form(types("b16 b32 b64 " + INT16_64), [], (d(), s("a"), s("b", "u32")))),
    spec("prmt", "bits", form(types("b32"), [mods("mode", "f4e b4e rc8 ecl ecr rc16")], (d(), *srcs("a b c")))),
]

# Keep `op` importable for sibling modules that build operands from this one.
__all__ = ["SPECS", "op"]
