"""cvt and cvt.pack (PTX ISA §9.7.9.21-22): scalar conversions between every integer and float type,
packing two f32 into f16x2/bf16x2/fp8x2, unpacking fp8x2, and saturating integer packs.

ptxas's rounding rules, probed: int <- int takes no rounding; int <- float needs an integer rounding
(.rni/.rzi/.rmi/.rpi); float <- int and narrowing float <- float need a float rounding (.rn/.rz/...);
widening float <- float takes none; float <- same float takes only an integer rounding."""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.isa.spec import (
    FTZ,
    SAT,
    SREG,
    Match,
    OperandSpec,
    bits,
    d,
    form,
    kind_of,
    mods,
    req,
    s,
    spec,
    types,
)
from ptxjit.isa.special import special_type

INTS = "u8 u16 u32 u64 s8 s16 s32 s64"
FLOATS = "f16 bf16 f32 f64"
IRND = ("rni", "rzi", "rmi", "rpi")
FRND = ("rn", "rz", "rm", "rp", "rna", "rs")
ROUND = mods("rounding", " ".join(IRND + FRND))
RELU = mods("relu", "relu")
SATFINITE = mods("satfinite", "satfinite")
F8X2 = "e4m3x2 e5m2x2 e2m3x2 e3m2x2"
RN = req("rounding", "rn")


def _scalar_check(m: Match) -> str | None:
    dt, at = m.types
    rnd = m.get("rounding")
    dk, ak = kind_of(dt), kind_of(at)
    if dk != "f" and ak != "f":
        if rnd:
            return f"an integer-to-integer cvt takes no rounding modifier (.{rnd})"
    elif dk != "f":
        if rnd not in IRND:
            return f"cvt.{dt}.{at} needs an integer rounding modifier (.rni, .rzi, .rmi or .rpi)" + \
                (f", not .{rnd}" if rnd else "")
    elif ak != "f" or bits(dt) < bits(at) or (bits(dt) == bits(at) and dt != at):
        if rnd not in FRND:
            return f"cvt.{dt}.{at} needs a floating rounding modifier (.rn, .rz, .rm or .rp)" + \
                (f", not .{rnd}" if rnd else "")
    elif rnd and rnd not in IRND:
        return f"cvt.{dt}.{at} widens exactly and takes no .{rnd} (only .rni/.rzi/.rmi/.rpi when the types are equal)"
    elif rnd and dt != at:
        return f"cvt.{dt}.{at} widens exactly and takes no rounding modifier"
    if (m.has("relu") or m.has("satfinite")) and dt not in ("f16", "bf16", "tf32"):
        return ".relu/.satfinite apply only to conversions to .f16/.bf16/.tf32"
    return None


def _cvt_operands(m: Match, ops: list, ctx) -> str | None:
    # ptxas: "Special register argument not allowed" unless the conversion is integer to integer
    a = ops[1] if len(ops) > 1 else None
    if isinstance(a, ir.Reg) and special_type(a.name) is not None and "f" in (kind_of(m.types[0]),
                                                                              kind_of(m.types[1])):
        return f"a special register ({a.name}) can be converted only to an integer type"
    # a conversion from or to .bf16 takes registers of exactly the types' sizes (no wider register)
    if "bf16" in m.types and ctx is not None and not ctx.lenient:
        for i, (x, t) in enumerate(zip(ops, m.types, strict=False)):
            rt = ctx.regs.get(x.name) if isinstance(x, ir.Reg) else None
            if rt is not None and bits(rt) != bits(t):
                return f"operand {i + 1} of cvt.{'.'.join(m.types)} must be a {bits(t)}-bit register " \
                    f"(no wider register with .bf16), got {x.name} (.{rt})"
    return None


def _src(cls: str) -> OperandSpec:
    return s("a", cls, "reg imm sreg", relaxed=True)


SPECS = [
    spec("cvt", "convert",
         form(types(INTS + " " + FLOATS, INTS + " " + FLOATS), [ROUND, FTZ, SAT, RELU, SATFINITE],
              (d("T0", relaxed=True), _src("T1")), check=_scalar_check, operand_check=_cvt_operands),
         form(types("tf32", "f32"), [req("rounding", "rna rn rz rs"), RELU, SATFINITE], (d("T0"), s("a", "f32"))),
         # two f32 -> packed pair (d takes a in its upper half)
         form(types("f16x2 bf16x2", "f32"), [req("rounding", "rn rz rs"), RELU, SATFINITE],
              (d("T0", relaxed=True), _src("f32"), s("b", "f32", relaxed=True), s("rbits", "u32", optional=True))),
         # ptxas: '.satfinite' modifier required for the fp8/fp6/fp4 destinations
         form(types(F8X2 + " e2m1x2", "f32"), [req("rounding", "rn rs"), req("satfinite", "satfinite"), RELU],
              (d("T0"), s("a", "f32"), s("b", "f32"))),
         form(types("ue8m0x2", "f32"), [req("rounding", "rz rp"), SATFINITE], (d("T0"), s("a", "f32"), s("b", "f32"))),
         form(types(F8X2 + " e2m1x2", "f16x2 bf16x2"), [RN, req("satfinite", "satfinite"), RELU],
              (d("T0"), s("a", "T1"))),
         form(types("ue8m0x2", "bf16x2"), [req("rounding", "rz rp"), SATFINITE], (d("T0"), s("a", "T1"))),
         # packed fp8/fp6/fp4 pair -> f16x2 / bf16x2
         form(types("f16x2", F8X2 + " e2m1x2"), [RN, RELU], (d("T0"), s("a", "T1"))),
         form(types("bf16x2", "ue8m0x2"), [], (d("T0"), s("a", "T1"))),
         # fp8x4 etc. from f32x4 (sm_100a): d, {a, b, c, e}, rbits
         form(types("e4m3x4 e5m2x4 e2m3x4 e3m2x4 e2m1x4", "f32"), [req("rounding", "rs"), SATFINITE, RELU],
              (d("T0"), s("a", "f32", "vec", vec=4), s("rbits", "u32")))),
]


def _pack_check(m: Match) -> str | None:
    if len(m.types) == 3 and m.types[0] not in ("u8", "s8", "u4", "s4", "u2", "s2"):
        return f"cvt.pack with a third operand packs into .u8/.s8/.u4/.s4/.u2/.s2, not .{m.types[0]}"
    return None


# cvt.pack is `cvt` with a .pack modifier; it is part of the same InstrSpec.
SPECS[0].forms += (
    form(types("u16 s16", "s32"), [req("pack", "pack"), req("sat", "sat")],
         (d("u32"), s("a", "T1", relaxed=True), s("b", "T1", relaxed=True))),
    form(types("u8 s8 u4 s4 u2 s2", "s32", "b32"), [req("pack", "pack"), req("sat", "sat")],
         (d("u32"), s("a", "T1", relaxed=True), s("b", "T1", relaxed=True), s("c", "T2")), check=_pack_check),
)

__all__ = ["SPECS", "SAT", "SREG"]
