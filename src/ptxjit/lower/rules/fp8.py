"""cvt to and from the 8-bit float pairs .e4m3x2 and .e5m2x2 (sm_89+).

E4M3 (OCP "E4M3FN"): 4 exponent bits, bias 7, no infinities, S.1111.111 is NaN, largest 448.
E5M2: 5 exponent bits, bias 15, IEEE-like with infinities and NaNs, largest 57344.

cvt.rn.satfinite[.relu].{e4m3x2,e5m2x2}.f32 d, a, b:  d = fp8(a) << 8 | fp8(b), each rounded once (to
nearest even) from the exact source; overflow and infinities give the largest finite value, NaN gives
0x7f whatever its sign, .relu turns negative results into +0.  From .f16x2 the upper lane goes to the
upper byte.  cvt.rn[.relu].f16x2.{e4m3x2,e5m2x2} d, a widens exactly (NaN -> 0x7fff).  All of this
matches the H100 on every golden case (shared/gpu-golden/isa: isa_cvt_rn_satfinite_e4m3x2_f32 etc.).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.rules.half import F16, HalfFormat, decode, encode, encode_magnitude, pow2_f64
from ptxjit.lower.types import F64, I16, I32, I64, const_int

E4M3 = HalfFormat(3, 4, 0x7F, maxf=448.0)
E5M2 = HalfFormat(2, 5, 0x7F)
FP8_TYPES = ("e4m3x2", "e5m2x2")


def _fmt(t: str) -> HalfFormat:
    return E4M3 if t.startswith("e4m3") else E5M2


def check_cvt_fp8(ins: Instr, dt: str, st: str) -> str | None:
    if dt in FP8_TYPES:
        if st not in ("f32", "f16x2"):
            return f"cvt to .{dt} from .{st} is not supported (only .f32 and .f16x2 sources)"
        if not (ins.has("rn") and ins.has("satfinite")):
            return f"cvt to .{dt} needs .rn.satfinite"
        want = 3 if st == "f32" else 2
        return None if len(ins.operands) == want else f"cvt.{dt}.{st} takes {want - 1} source operand(s)"
    if dt != "f16x2":
        return f"cvt from .{st} to .{dt} is not supported (only to .f16x2)"
    if not ins.has("rn") or ins.has("satfinite"):
        return f"cvt.f16x2.{st} takes .rn (and optionally .relu)"
    return None if len(ins.operands) == 2 else f"cvt.f16x2.{st} takes one source operand"


def encode8(lw: FnLowering, x: ll.Value, fmt: HalfFormat, relu: bool) -> ll.Value:
    """f32/f64 -> fp8 bits in the low byte of an i16 (.rn.satfinite[.relu])."""
    b = lw.b
    enc, neg, nan = encode_magnitude(lw, x, fmt, "rn", satfinite=True)
    r = b.or_(enc, b.select(neg, const_int(I64, 0x80), const_int(I64, 0)))
    if relu:
        r = b.select(neg, const_int(I64, 0), r)
    r = b.select(nan, const_int(I64, fmt.canon_nan), r)
    return b.trunc(r, I16)


def decode8(lw: FnLowering, byte: ll.Value, fmt: HalfFormat) -> ll.Value:
    """fp8 bits (low byte of an i16) -> the exact f64 value."""
    b = lw.b
    x = b.zext(b.and_(byte, const_int(I16, 0xFF)), I64)
    m, e = fmt.mbits, fmt.ebits
    top = (1 << e) - 1
    exp = b.and_(b.lshr(x, const_int(I64, m)), const_int(I64, top))
    man = b.and_(x, const_int(I64, (1 << m) - 1))
    sub = b.fmul(b.uitofp(man, F64), ll.Constant(F64, 2.0 ** (fmt.emin - m)))
    norm = b.fmul(b.uitofp(b.or_(man, const_int(I64, 1 << m)), F64),
                  pow2_f64(lw, b.sub(exp, const_int(I64, fmt.bias + m))))
    v = b.select(b.icmp_unsigned("==", exp, const_int(I64, 0)), sub, norm)
    if fmt is E4M3:  # only S.1111.111 is special
        nan = b.icmp_unsigned("==", b.and_(x, const_int(I64, 0x7F)), const_int(I64, 0x7F))
    else:
        is_top = b.icmp_unsigned("==", exp, const_int(I64, top))
        zero_man = b.icmp_unsigned("==", man, const_int(I64, 0))
        v = b.select(b.and_(is_top, zero_man), ll.Constant(F64, float("inf")), v)
        nan = b.and_(is_top, b.not_(zero_man))
    v = b.select(nan, ll.Constant(F64, float("nan")), v)
    neg = b.icmp_unsigned("!=", b.and_(x, const_int(I64, 0x80)), const_int(I64, 0))
    return b.select(neg, b.fneg(v), v)


def lower_cvt_fp8(lw: FnLowering, ins: Instr, dt: str, st: str) -> None:
    b = lw.b
    relu = ins.has("relu")
    d_op = ins.operands[0]
    if dt in FP8_TYPES:
        fmt = _fmt(dt)
        if st == "f32":
            hi_v, lo_v = lw.read(ins.operands[1], "f32"), lw.read(ins.operands[2], "f32")
        else:
            pair = lw.read(ins.operands[1], "b32")
            lo_v = decode(lw, b.trunc(pair, I16), F16)
            hi_v = decode(lw, b.trunc(b.lshr(pair, const_int(I32, 16)), I16), F16)
        hi, lo = encode8(lw, hi_v, fmt, relu), encode8(lw, lo_v, fmt, relu)
        lw.write(d_op, b.or_(b.shl(hi, const_int(I16, 8)), lo), "b16")
        return
    fmt = _fmt(st)
    pair = lw.read(ins.operands[1], "b16")
    # every fp8 value is exact in f16; NaN gives 0x7fff (golden isa_cvt_rn_f16x2_e4m3x2)
    lo = encode(lw, decode8(lw, pair, fmt), F16, relu=relu)
    hi = encode(lw, decode8(lw, b.lshr(pair, const_int(I16, 8)), fmt), F16, relu=relu)
    lw.write(d_op, b.or_(b.zext(lo, I32), b.shl(b.zext(hi, I32), const_int(I32, 16))), "b32")
