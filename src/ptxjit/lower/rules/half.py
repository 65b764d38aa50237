"""f16 / bf16 (and packed x2) arithmetic and exact software conversions.

Half values live in registers as bit patterns.  Arithmetic decodes each lane to f64 (exact),
computes there (sums and products of halves are exact in f64) and rounds once to the half
format, so results are correctly rounded without depending on host half-precision support.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import form_rule
from ptxjit.lower.rules import approx
from ptxjit.lower.rules.floating import next_toward, two_sum
from ptxjit.lower.types import F32, F64, I1, I16, I32, I64, const_int


@dataclass(frozen=True)
class HalfFormat:
    """A small binary float format (f16, bf16; also the fp8 formats, whose E4M3 has no infinity)."""

    mbits: int
    ebits: int
    canon_nan: int
    maxf: float | None = None  # largest finite value where the top exponent holds numbers (E4M3: 448)

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def max_finite(self) -> float:
        if self.maxf is not None:
            return self.maxf
        return (2.0 - 2.0 ** -self.mbits) * 2.0 ** self.bias


F16 = HalfFormat(10, 5, 0x7FFF)
BF16 = HalfFormat(7, 8, 0x7FFF)


def fmt_of(t: str) -> HalfFormat:
    return BF16 if t.startswith("bf16") else F16


def pow2_f64(lw: FnLowering, k: ll.Value) -> ll.Value:
    """2**k as f64 for an i64 exponent k in the normal range."""
    b = lw.b
    return b.bitcast(b.shl(b.add(k, const_int(I64, 1023)), const_int(I64, 52)), F64)


def _fabs(lw: FnLowering, x: ll.Value) -> ll.Value:
    return lw.b.call(lw.cg.intrinsic("llvm.fabs", x.type, [x.type]), [x])


def _round(lw: FnLowering, name: str, x: ll.Value) -> ll.Value:
    return lw.b.call(lw.cg.intrinsic(name, x.type, [x.type]), [x])


def decode(lw: FnLowering, bits: ll.Value, fmt: HalfFormat) -> ll.Value:
    """Half bit pattern (i16) -> exact f64 value."""
    b = lw.b
    x = b.zext(bits, I64)
    m, e = fmt.mbits, fmt.ebits
    exp = b.and_(b.lshr(x, const_int(I64, m)), const_int(I64, (1 << e) - 1))
    man = b.and_(x, const_int(I64, (1 << m) - 1))
    sign = b.icmp_unsigned("!=", b.and_(x, const_int(I64, 0x8000)), const_int(I64, 0))
    sub = b.fmul(b.uitofp(man, F64), ll.Constant(F64, 2.0 ** (fmt.emin - m)))
    norm = b.fmul(b.uitofp(b.or_(man, const_int(I64, 1 << m)), F64),
                  pow2_f64(lw, b.sub(exp, const_int(I64, fmt.bias + m))))
    special = b.select(b.icmp_unsigned("==", man, const_int(I64, 0)), ll.Constant(F64, float("inf")),
                       ll.Constant(F64, float("nan")))
    v = b.select(b.icmp_unsigned("==", exp, const_int(I64, 0)), sub,
                 b.select(b.icmp_unsigned("==", exp, const_int(I64, (1 << e) - 1)), special, norm))
    return b.select(sign, b.fneg(v), v)


def _round_scaled(lw: FnLowering, scaled: ll.Value, mode: str, neg: ll.Value) -> ll.Value:
    """Round a non-negative f64 to an integer value with `mode` (rn/rz/rm/rp; `neg`: the sign of the
    number whose magnitude `scaled` is, which decides the direction of rm/rp)."""
    b = lw.b
    if mode == "rn":
        return _round(lw, "llvm.roundeven", scaled)
    if mode == "rz":
        return _round(lw, "llvm.trunc", scaled)
    up = neg if mode == "rm" else b.not_(neg)
    return b.select(up, _round(lw, "llvm.ceil", scaled), _round(lw, "llvm.floor", scaled))


def _exponent(lw: FnLowering, xb: ll.Value, lo: int) -> ll.Value:
    """floor(log2 |x|) of the f64 with bits xb, clamped to [lo, 1000] (keeps 2**-e within pow2_f64's range)."""
    b = lw.b
    e = b.sub(b.and_(b.lshr(xb, const_int(I64, 52)), const_int(I64, 0x7FF)), const_int(I64, 1023))
    e = b.select(b.icmp_signed("<", e, const_int(I64, lo)), const_int(I64, lo), e)
    return b.select(b.icmp_signed(">", e, const_int(I64, 1000)), const_int(I64, 1000), e)


def encode_magnitude(lw: FnLowering, x: ll.Value, fmt: HalfFormat, mode: str = "rn", satfinite: bool = False,
                     flush: bool = False) -> tuple[ll.Value, ll.Value, ll.Value]:
    """Round f32/f64 `x` once to `fmt` with `mode`: (encoding of the magnitude as i64, x negative, x NaN).

    satfinite: overflow and infinite inputs give the largest finite magnitude.  flush: results that are
    tiny *after* rounding to the format's precision with an unbounded exponent become zero, which is
    the H100's .ftz rule (golden isa_mul_ftz_f16: 0x0400 * 0x3bff = (1 - 2**-11) * 2**-14 -> 0x0000, while
    isa_mul_ftz_sat_f16x2: 0x08c3 * 0x36b8 = 0.99977 * 2**-14 rounds up to 2**-14 and is kept)."""
    b = lw.b
    if x.type == F32:
        x = b.fpext(x, F64)
    m = fmt.mbits
    xb = b.bitcast(x, I64)
    neg = b.icmp_signed("<", xb, const_int(I64, 0))
    ax = _fabs(lw, x)
    nan = b.fcmp_unordered("uno", x, x)
    q = b.sub(_exponent(lw, xb, fmt.emin), const_int(I64, m))
    rs = _round_scaled(lw, b.fmul(ax, pow2_f64(lw, b.sub(const_int(I64, 0), q))), mode, neg)
    mag = b.fmul(rs, pow2_f64(lw, q))
    inf = ll.Constant(F64, float("inf"))
    maxf = ll.Constant(F64, fmt.max_finite)
    if satfinite:
        mag = b.select(b.fcmp_ordered(">", mag, maxf), maxf, mag)
    else:
        over = b.and_(b.fcmp_ordered("<", ax, inf), b.fcmp_ordered(">", mag, maxf))
        to_inf = {"rn": const_int(I1, 1), "rz": const_int(I1, 0), "rm": neg}.get(mode)
        if to_inf is None:
            to_inf = b.not_(neg)
        mag = b.select(over, b.select(to_inf, inf, maxf), mag)
    mb = b.bitcast(mag, I64)
    E = b.sub(b.lshr(mb, const_int(I64, 52)), const_int(I64, 1023))
    is_sub = b.icmp_signed("<", E, const_int(I64, fmt.emin))
    sub_enc = b.fptoui(b.fmul(mag, ll.Constant(F64, 2.0 ** (m - fmt.emin))), I64)
    norm_enc = b.or_(b.shl(b.add(E, const_int(I64, fmt.bias)), const_int(I64, m)),
                     b.and_(b.lshr(mb, const_int(I64, 52 - m)), const_int(I64, (1 << m) - 1)))
    inf_enc = const_int(I64, ((1 << fmt.ebits) - 1) << m)
    enc = b.select(b.fcmp_ordered("==", mag, inf), inf_enc, b.select(is_sub, sub_enc, norm_enc))
    enc = b.select(b.fcmp_ordered("==", mag, ll.Constant(F64, 0.0)), const_int(I64, 0), enc)
    if flush:
        # round to the full precision with an unbounded exponent (below 2**(emin-64) all is tiny anyway)
        qu = b.sub(_exponent(lw, xb, fmt.emin - 64), const_int(I64, m))
        ru = b.fmul(_round_scaled(lw, b.fmul(ax, pow2_f64(lw, b.sub(const_int(I64, 0), qu))), mode, neg),
                    pow2_f64(lw, qu))
        tiny = b.fcmp_ordered("<", ru, ll.Constant(F64, 2.0 ** fmt.emin))
        enc = b.select(tiny, const_int(I64, 0), enc)
    return enc, neg, nan


def encode(lw: FnLowering, x: ll.Value, fmt: HalfFormat, mode: str = "rn", relu: bool = False,
           flush: bool = False, satfinite: bool = False) -> ll.Value:
    """f32/f64 -> half bit pattern (i16), rounded once with `mode` (rn/rz/rm/rp).  NaN gives the
    canonical 0x7fff; .relu turns negative results (-0 included) into +0."""
    b = lw.b
    enc, neg, nan = encode_magnitude(lw, x, fmt, mode, satfinite, flush)
    r = b.or_(enc, b.select(neg, const_int(I64, 0x8000), const_int(I64, 0)))
    if relu:
        r = b.select(neg, const_int(I64, 0), r)
    r = b.select(nan, const_int(I64, fmt.canon_nan), r)
    return b.trunc(r, I16)


def _lanes(lw: FnLowering, v: ll.Value, packed: bool) -> list[ll.Value]:
    if not packed:
        return [v]
    b = lw.b
    return [b.trunc(v, I16), b.trunc(b.lshr(v, const_int(I32, 16)), I16)]


def _pack(lw: FnLowering, lanes: list[ll.Value]) -> ll.Value:
    if len(lanes) == 1:
        return lanes[0]
    b = lw.b
    return b.or_(b.zext(lanes[0], I32), b.shl(b.zext(lanes[1], I32), const_int(I32, 16)))


def check_half(ins: Instr) -> str | None:
    if ins.opcode in ("add", "sub", "mul", "fma", "neg", "abs", "min", "max", "mad"):
        return None
    return f"{ins.opcode} on half types is not supported"


def _is_nan16(lw: FnLowering, h: ll.Value, fmt: HalfFormat) -> ll.Value:
    inf_bits = ((1 << fmt.ebits) - 1) << fmt.mbits
    return lw.b.icmp_unsigned(">", lw.b.and_(h, const_int(I16, 0x7FFF)), const_int(I16, inf_bits))


def _flush16(lw: FnLowering, h: ll.Value, fmt: HalfFormat) -> ll.Value:
    """A subnormal half bit pattern becomes the zero of its sign."""
    b = lw.b
    sub = b.icmp_unsigned("<", b.and_(h, const_int(I16, 0x7FFF)), const_int(I16, 1 << fmt.mbits))
    return b.select(sub, b.and_(h, const_int(I16, 0x8000)), h)


def sat01(lw: FnLowering, x: ll.Value) -> ll.Value:
    """.sat: clamp to [0, 1] with NaN -> +0 and -0 -> +0 (the H100 never returns -0 under .sat: golden
    isa_add_sat_f16 (-0) + (-0) = 0x0000, isa_cvt_sat_f16_f16(-0) = 0x0000)."""
    b = lw.b
    t = x.type
    one = ll.Constant(t, 1.0)
    pos = b.fcmp_ordered(">", x, ll.Constant(t, 0.0))
    return b.select(pos, b.select(b.fcmp_ordered(">", x, one), one, x), ll.Constant(t, 0.0))


def _half_typed(ins: Instr) -> bool:
    ts = ins.types()
    return bool(ts) and ts[-1] in ("f16", "bf16", "f16x2", "bf16x2")


@form_rule("add", "sub", "mul", "mad", "div", "abs", "neg", "min", "max", when=_half_typed, form="f16/bf16",
           check=check_half)
def lower_half_arith(lw: FnLowering, ins: Instr) -> None:
    """add/sub/mul/fma/neg/abs/min/max on f16, bf16, f16x2, bf16x2 (.rn, .ftz, .sat, .relu, .NaN,
    .xorsign.abs), bit-exact with the H100 (NaN results are the canonical 0x7fff)."""
    b = lw.b
    t = ins.types()[-1]
    fmt = fmt_of(t)
    packed = t.endswith("x2")
    rt = "b32" if packed else "b16"
    srcs = [_lanes(lw, lw.read(o, rt), packed) for o in ins.operands[1:]]
    op = ins.opcode
    flush = ins.has("ftz")
    out = []
    for lane in range(2 if packed else 1):
        args = [s[lane] for s in srcs]
        if op in ("neg", "abs"):
            # a sign-bit operation, except that NaN becomes 0x7fff and .ftz flushes subnormals first
            # (golden isa_neg_f16(0x7e00) = 0x7fff, isa_neg_ftz_f16x2(0x00010000) = 0x80008000)
            x = _flush16(lw, args[0], fmt) if flush else args[0]
            r = b.xor(x, const_int(I16, 0x8000)) if op == "neg" else b.and_(x, const_int(I16, 0x7FFF))
            out.append(b.select(_is_nan16(lw, x, fmt), const_int(I16, fmt.canon_nan), r))
            continue
        if op in ("min", "max"):
            out.append(_half_minmax(lw, ins, args, fmt))
            continue
        vals = [decode(lw, a, fmt) for a in args]
        if flush:
            vals = [_flush64(lw, v, fmt) for v in vals]
        if op == "add":
            r = b.fadd(vals[0], vals[1])
        elif op == "sub":
            r = b.fsub(vals[0], vals[1])
        elif op == "mul":
            r = b.fmul(vals[0], vals[1])
        else:  # fma / mad
            r = _fma_round_to_odd(lw, *vals)
        if ins.has("sat"):
            r = sat01(lw, r)
        out.append(encode(lw, r, fmt, "rn", relu=ins.has("relu"), flush=flush))
    lw.write(ins.operands[0], _pack(lw, out), rt)


def _half_minmax(lw: FnLowering, ins: Instr, args: list[ll.Value], fmt: HalfFormat) -> ll.Value:
    """min/max[.ftz][.NaN][.xorsign.abs] of one lane.  -0 < +0; without .NaN a single NaN operand is
    ignored; a NaN result is 0x7fff.  .xorsign.abs: min/max of the magnitudes, with the sign bit
    sign(a) ^ sign(b) unless the result is NaN (golden isa_min_xorsign_abs_f16(0x0000, 0xbc00) = 0x8000)."""
    b = lw.b
    if ins.has("ftz"):
        args = [_flush16(lw, a, fmt) for a in args]
    xorsign = ins.has("xorsign")
    if xorsign:
        sign = b.and_(b.xor(args[0], args[1]), const_int(I16, 0x8000))
        args = [b.and_(a, const_int(I16, 0x7FFF)) for a in args]
    vals = [decode(lw, a, fmt) for a in args]
    op = ins.opcode
    if ins.has("NaN"):
        name = "llvm.minimum" if op == "min" else "llvm.maximum"
    else:
        name = "llvm.minimumnum" if op == "min" else "llvm.maximumnum"
    r = b.call(lw.cg.intrinsic(name, F64, [F64, F64]), vals)
    enc = encode(lw, r, fmt)  # exact: r is one of the operands
    if xorsign:
        enc = b.select(b.fcmp_unordered("uno", r, r), enc, b.or_(enc, sign))
    return enc


def _fma_round_to_odd(lw: FnLowering, a: ll.Value, c: ll.Value, d: ll.Value) -> ll.Value:
    """a*c + d rounded to odd in f64, so that the one later rounding to a half format is exact
    (f64 keeps more than two extra bits; the product of halves is exact in f64)."""
    b = lw.b
    s, e = two_sum(lw, b.fmul(a, c), d)
    z = ll.Constant(F64, 0.0)
    inexact = b.fcmp_ordered("!=", e, z)
    # truncate toward zero: step back when the error points toward zero
    s_neg = b.fcmp_ordered("<", s, z)
    e_neg = b.fcmp_ordered("<", e, z)
    toward_zero = b.and_(inexact, b.xor(s_neg, e_neg))
    t = b.select(toward_zero, next_toward(lw, s, s_neg), s)  # negative values step up toward 0
    odd = b.bitcast(b.or_(b.bitcast(t, I64), const_int(I64, 1)), F64)
    return b.select(inexact, odd, s)


def _flush64(lw: FnLowering, v: ll.Value, fmt: HalfFormat) -> ll.Value:
    b = lw.b
    tiny = ll.Constant(F64, 2.0 ** fmt.emin)
    sub = b.fcmp_ordered("<", _fabs(lw, v), tiny)
    return b.select(sub, b.call(lw.cg.intrinsic("llvm.copysign", F64, [F64, F64]),
                                [ll.Constant(F64, 0.0), v]), v)


def lower_half_unary(lw: FnLowering, ins: Instr) -> None:
    """ex2/tanh/sin/cos .approx on f16/bf16 (x2): computed in f32, rounded once."""
    b = lw.b
    t = ins.types()[-1]
    fmt = fmt_of(t)
    packed = t.endswith("x2")
    rt = "b32" if packed else "b16"
    out = []

    for v in _lanes(lw, lw.read(ins.operands[1], rt), packed):
        if ins.opcode in approx.HALF_UNARY_OPS:
            out.append(approx.half_unary(lw, ins.opcode, v, fmt is BF16))
            continue
        x = b.fptrunc(decode(lw, v, fmt), F32)
        if ins.opcode == "tanh":
            r = b.call(lw.cg.extern_function("tanhf", F32, [F32]), [x])
        else:
            name = {"sin": "llvm.sin", "cos": "llvm.cos", "lg2": "llvm.log2", "ex2": "llvm.exp2"}[ins.opcode]
            r = b.call(lw.cg.intrinsic(name, F32, [F32]), [x])
        out.append(encode(lw, r, fmt))
    lw.write(ins.operands[0], _pack(lw, out), rt)


def half_lanes_as_f64(lw: FnLowering, op, t: str, flush: bool = False) -> list[ll.Value]:
    """Read a half operand and decode its lane(s) to f64 (used by setp/set); flush: subnormals -> zero."""
    packed = t.endswith("x2")
    v = lw.read(op, "b32" if packed else "b16")
    fmt = fmt_of(t)
    return [decode(lw, _flush16(lw, x, fmt) if flush else x, fmt) for x in _lanes(lw, v, packed)]


def pack_halves(lw: FnLowering, lanes: list[ll.Value]) -> ll.Value:
    return _pack(lw, lanes)


@form_rule("fma", when=_half_typed, form="f16/bf16")
def lower_half_fma(lw: FnLowering, ins: Instr) -> None:
    """fma on f16/bf16 and their x2 pairs (lower_half_arith)."""
    lower_half_arith(lw, ins)


@form_rule("sin", "cos", "lg2", "ex2", "tanh", when=_half_typed, form="f16/bf16")
def lower_half_transcendental(lw: FnLowering, ins: Instr) -> None:
    """sin/cos/lg2/ex2/tanh.approx on f16/bf16 and their x2 pairs (lower_half_unary)."""
    lower_half_unary(lw, ins)
