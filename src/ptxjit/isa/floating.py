"""Floating-point instructions: f32/f64 (PTX ISA §9.7.3) and half precision f16/bf16 and their
packed x2 forms (§9.7.4).  The integer forms of add/sub/mul/mad/min/max/abs/neg are in integer.py;
the index merges both into one InstrSpec per opcode."""

from __future__ import annotations

from ptxjit.isa.spec import (
    FTZ,
    RND,
    RND_REQ,
    SAT,
    Match,
    d,
    form,
    mods,
    req,
    s,
    spec,
    srcs,
    types,
)

F16 = "f16 f16x2"
BF16 = "bf16 bf16x2"
RN = mods("rounding", "rn")
RN_REQ = req("rounding", "rn")
APPROX = req("approx", "approx")
NAN = mods("nan", "NaN")
XORSIGN = mods("xorsign", "xorsign")
ABS = mods("abs", "abs")
RELU = mods("relu", "relu")


def _xorsign(m: Match) -> str | None:
    if m.has("xorsign") != m.has("abs"):
        return ".xorsign and .abs go together (ptxas: '.abs' requires '.xorsign')"
    return None


def _not_sat_relu(m: Match) -> str | None:
    if m.has("sat") and m.has("relu"):
        return ".sat and .relu cannot be combined"
    return None


def _arith(name: str):
    """add/sub/mul: f32 {.rnd}{.ftz}{.sat}; f64 {.rnd}; f16 {.rn}{.ftz}{.sat}; bf16 {.rn}."""
    ops = (d(), *srcs("a b"))
    return spec(name, "float",
                form(types("f32"), [RND, FTZ, SAT], ops),
                form(types("f64"), [RND], ops),
                form(types(F16), [RN, FTZ, SAT], ops),
                form(types(BF16), [RN], ops))


def _three_inputs(m: Match, ops: list, ctx) -> str | None:
    if len(ops) == 4 and ctx is not None and (ctx.sm is not None and ctx.sm < 100 or
                                               ctx.version is not None and ctx.version < (8, 8)):
        return f"{m.types[0]} min/max with three inputs needs .target sm_100 and PTX ISA 8.8"
    return None


def _minmax(name: str):
    ops = (d(), *srcs("a b"))
    mods_f = [FTZ, NAN, XORSIGN, ABS]
    return spec(name, "float",
                form(types("f32"), mods_f, (*ops, s("c", optional=True)), check=_xorsign,
                     operand_check=_three_inputs),
                form(types("f64"), [], ops),
                form(types(F16), mods_f, ops, check=_xorsign),
                form(types(BF16), [NAN, XORSIGN, ABS], ops, check=_xorsign))


def _unary_approx_f32(name: str):
    return spec(name, "float", form(types("f32"), [APPROX, FTZ], (d(), s("a"))))


SPECS = [
    _arith("add"), _arith("sub"), _arith("mul"),
    spec("fma", "float",
         form(types("f32"), [RND_REQ, FTZ, SAT], (d(), *srcs("a b c"))),
         form(types("f64"), [RND_REQ], (d(), *srcs("a b c"))),
         form(types(F16), [RN_REQ, FTZ, SAT, RELU], (d(), *srcs("a b c")), check=_not_sat_relu),
         form(types(BF16), [RN_REQ, RELU], (d(), *srcs("a b c"))),
         form(types(F16 + " " + BF16), [RN_REQ, req("oob", "oob"), RELU], (d(), *srcs("a b c")))),
    spec("mad", "float",
         form(types("f32"), [RND_REQ, FTZ, SAT], (d(), *srcs("a b c"))),
         form(types("f64"), [RND_REQ], (d(), *srcs("a b c")))),
    spec("div", "float",
         form(types("f32"), [req("mode", "approx full rn rz rm rp"), FTZ], (d(), *srcs("a b"))),
         form(types("f64"), [RND_REQ], (d(), *srcs("a b")))),
    spec("abs", "float",
         form(types("f32 " + F16), [FTZ], (d(), s("a"))),
         form(types("f64 " + BF16), [], (d(), s("a")))),
    spec("neg", "float",
         form(types("f32 " + F16), [FTZ], (d(), s("a"))),
         form(types("f64 " + BF16), [], (d(), s("a")))),
    _minmax("min"), _minmax("max"),
    spec("rcp", "float",
         form(types("f32"), [req("mode", "approx rn rz rm rp"), FTZ], (d(), s("a"))),
         form(types("f64"), [RND_REQ], (d(), s("a"))),
         form(types("f64"), [APPROX, req("ftz", "ftz")], (d(), s("a")))),
    spec("sqrt", "float",
         form(types("f32"), [req("mode", "approx rn rz rm rp"), FTZ], (d(), s("a"))),
         form(types("f64"), [RND_REQ], (d(), s("a")))),
    spec("rsqrt", "float", form(types("f32 f64"), [APPROX, FTZ], (d(), s("a")))),
    _unary_approx_f32("sin"), _unary_approx_f32("cos"), _unary_approx_f32("lg2"),
    spec("ex2", "float",
         form(types("f32"), [APPROX, FTZ], (d(), s("a"))),
         form(types(F16), [APPROX], (d(), s("a"))),
         form(types(BF16), [APPROX, req("ftz", "ftz")], (d(), s("a")))),
    spec("tanh", "float", form(types("f32 " + F16 + " " + BF16), [APPROX], (d(), s("a")))),
    spec("testp", "float", form(types("f32 f64"), [mods("op", "finite infinite number notanumber normal subnormal")],
                                (d("pred"), s("a", kinds="reg")))),
    spec("copysign", "float", form(types("f32 f64"), [], (d(), *srcs("a b")))),
]
