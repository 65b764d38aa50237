"""f16 / bf16 (and packed x2) arithmetic and exact software conversions.

Half values live in registers as bit patterns.  Arithmetic decodes each lane to f64 (exact),
computes there (sums and products of halves are exact in f64) and rounds once to the half
format, so results are correctly rounded without depending on host half-precision support.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.types import F32, F64, I1, I16, I32, I64, const_int


@dataclass(frozen=True)
class HalfFormat:
    mbits: int
    ebits: int
    canon_nan: int

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def max_finite(self) -> float:
        return (2.0 - 2.0 ** -self.mbits) * 2.0 ** self.bias


F16 = HalfFormat(10, 5, 0x7FFF)
BF16 = HalfFormat(7, 8, 0x7FFF)


def fmt_of(t: str) -> HalfFormat:
    return BF16 if t.startswith("bf16") else F16


def float_to_bits16(v: float, t: str) -> int:
    """Host-side conversion of a literal to f16/bf16 bits (round to nearest even)."""
    if t.startswith("bf16"):
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        if v != v:
            return 0x7FFF
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
    import numpy as np

    return int(np.array(v, dtype=np.float16).view(np.uint16))


def _pow2(lw: FnLowering, k: ll.Value) -> ll.Value:
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
                  _pow2(lw, b.sub(exp, const_int(I64, fmt.bias + m))))
    special = b.select(b.icmp_unsigned("==", man, const_int(I64, 0)), ll.Constant(F64, float("inf")),
                       ll.Constant(F64, float("nan")))
    v = b.select(b.icmp_unsigned("==", exp, const_int(I64, 0)), sub,
                 b.select(b.icmp_unsigned("==", exp, const_int(I64, (1 << e) - 1)), special, norm))
    return b.select(sign, b.fneg(v), v)


def encode(lw: FnLowering, x: ll.Value, fmt: HalfFormat, mode: str = "rn", relu: bool = False,
           flush: bool = False) -> ll.Value:
    """f64 -> half bit pattern (i16), rounded once with `mode` (rn/rz/rm/rp)."""
    b = lw.b
    if x.type == F32:
        x = b.fpext(x, F64)
    m = fmt.mbits
    xb = b.bitcast(x, I64)
    neg = b.icmp_signed("<", xb, const_int(I64, 0))
    ax = _fabs(lw, x)
    nan = b.fcmp_unordered("uno", x, x)
    e = b.sub(b.and_(b.lshr(xb, const_int(I64, 52)), const_int(I64, 0x7FF)), const_int(I64, 1023))
    e = b.select(b.icmp_signed("<", e, const_int(I64, fmt.emin)), const_int(I64, fmt.emin), e)
    e = b.select(b.icmp_signed(">", e, const_int(I64, 1000)), const_int(I64, 1000), e)
    q = b.sub(e, const_int(I64, m))
    scaled = b.fmul(ax, _pow2(lw, b.sub(const_int(I64, 0), q)))
    if mode == "rn":
        rs = _round(lw, "llvm.roundeven", scaled)
    elif mode == "rz":
        rs = _round(lw, "llvm.trunc", scaled)
    else:
        up = neg if mode == "rm" else b.not_(neg)
        rs = b.select(up, _round(lw, "llvm.ceil", scaled), _round(lw, "llvm.floor", scaled))
    mag = b.fmul(rs, _pow2(lw, q))
    inf = ll.Constant(F64, float("inf"))
    maxf = ll.Constant(F64, fmt.max_finite)
    finite_in = b.fcmp_ordered("<", ax, inf)
    over = b.and_(finite_in, b.fcmp_ordered(">", mag, maxf))
    if mode == "rn":
        to_inf = const_int(I1, 1)
    elif mode == "rz":
        to_inf = const_int(I1, 0)
    elif mode == "rm":
        to_inf = neg
    else:
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
        enc = b.select(b.icmp_unsigned("<", enc, const_int(I64, 1 << m)), const_int(I64, 0), enc)
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


def lower_half_arith(lw: FnLowering, ins: Instr) -> None:
    """add/sub/mul/fma/neg/abs/min/max on f16, bf16, f16x2, bf16x2 (.rn, .ftz, .sat, .relu)."""
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
        if op == "neg":
            out.append(b.xor(args[0], const_int(I16, 0x8000)))
            continue
        if op == "abs":
            out.append(b.and_(args[0], const_int(I16, 0x7FFF)))
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
        elif op in ("fma", "mad"):
            r = _fma_round_to_odd(lw, *vals)
        else:  # min / max
            name = {"min": "llvm.minimumnum", "max": "llvm.maximumnum"}[op]
            if ins.has("NaN"):
                name = {"min": "llvm.minimum", "max": "llvm.maximum"}[op]
            r = b.call(lw.cg.intrinsic(name, F64, [F64, F64]), vals)
        if ins.has("sat"):
            from ptxjit.lower.rules.floating import saturate

            r = saturate(lw, r)
        out.append(encode(lw, r, fmt, "rn", relu=ins.has("relu"), flush=flush))
    lw.write(ins.operands[0], _pack(lw, out), rt)


def _fma_round_to_odd(lw: FnLowering, a: ll.Value, c: ll.Value, d: ll.Value) -> ll.Value:
    """a*c + d rounded to odd in f64, so that the one later rounding to a half format is exact
    (f64 keeps more than two extra bits; the product of halves is exact in f64)."""
    from ptxjit.lower.rules.floating import _two_sum, next_toward

    b = lw.b
    s, e = _two_sum(lw, b.fmul(a, c), d)
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
        x = b.fptrunc(decode(lw, v, fmt), F32)
        if ins.opcode == "tanh":
            r = b.call(lw.cg.extern_function("tanhf", F32, [F32]), [x])
        else:
            name = {"sin": "llvm.sin", "cos": "llvm.cos", "lg2": "llvm.log2", "ex2": "llvm.exp2"}[ins.opcode]
            r = b.call(lw.cg.intrinsic(name, F32, [F32]), [x])
        out.append(encode(lw, r, fmt))
    lw.write(ins.operands[0], _pack(lw, out), rt)


def half_lanes_as_f64(lw: FnLowering, op, t: str) -> list[ll.Value]:
    """Read a half operand and decode its lane(s) to f64 (used by setp/cvt)."""
    packed = t.endswith("x2")
    v = lw.read(op, "b32" if packed else "b16")
    return [decode(lw, x, fmt_of(t)) for x in _lanes(lw, v, packed)]


def pack_halves(lw: FnLowering, lanes: list[ll.Value]) -> ll.Value:
    return _pack(lw, lanes)

