"""cvt: conversions between all integer, float and half types with PTX rounding and saturation."""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr, is_float_type, type_size
from ptxjit.lower.function import FnLowering
from ptxjit.lower.rules.floating import arith_nan, directed, ftz, intr, saturate
from ptxjit.lower.rules.half import decode, encode, fmt_of
from ptxjit.lower.rules.registry import rule
from ptxjit.lower.types import F32, F64, I32, I64, const_int, lltype

HALF = ("f16", "bf16")
INT_ROUND = {"rni": "llvm.roundeven", "rzi": "llvm.trunc", "rmi": "llvm.floor", "rpi": "llvm.ceil"}
FLOAT_ROUND = ("rn", "rz", "rm", "rp", "rna")


def _check_cvt(ins: Instr) -> str | None:
    ts = ins.types()
    if len(ts) != 2:
        return "cvt needs a destination and a source type"
    dt, st = ts
    if dt in ("f16x2", "bf16x2"):
        return None if st == "f32" else f"cvt to .{dt} from .{st}"
    if dt == "tf32" and st != "f32" or st == "tf32":
        return "tf32 conversions other than cvt.tf32.f32 are not supported"
    return None


def _ival(v: ll.Value) -> ll.IntType:
    return v.type


@rule("cvt", family="convert", check=_check_cvt)
def lower_cvt(lw: FnLowering, ins: Instr) -> None:
    """cvt.frnd/irnd[.ftz][.sat][.relu].dtype.atype: every integer/float/half combination."""
    b = lw.b
    dt, st = ins.types()
    d_op, a_op = ins.operands[0], ins.operands[1]
    sat = ins.has("sat")
    flush = ins.has("ftz")
    fmode = next((m for m in ins.mods if m in FLOAT_ROUND), "rn")
    imode = next((m for m in ins.mods if m in INT_ROUND), None)

    if dt == "tf32":
        lw.write(d_op, _f32_to_tf32(lw, lw.read(a_op, "f32"), fmode, ins.has("satfinite")), "b32")
        return

    if dt in ("f16x2", "bf16x2"):
        fmt = fmt_of(dt)
        hi = encode(lw, lw.read(a_op, st), fmt, fmode, relu=ins.has("relu"))
        lo = encode(lw, lw.read(ins.operands[2], st), fmt, fmode, relu=ins.has("relu"))
        v = b.or_(b.zext(lo, I32), b.shl(b.zext(hi, I32), const_int(I32, 16)))
        lw.write(d_op, v, "b32")
        return

    # read the source as a value: int (iN) or float (f32/f64; halves decoded to f64)
    if st in HALF:
        src = decode(lw, lw.read(a_op, "b16"), fmt_of(st))
        src_float = True
    else:
        src = lw.read(a_op, st)
        src_float = is_float_type(st)
        if src_float and flush:
            src = ftz(lw, src)

    if dt in HALF:
        if not src_float:
            src = b.sitofp(src, F64) if st.startswith("s") else b.uitofp(src, F64)
        if imode is not None:
            src = intr(lw, INT_ROUND[imode], [src])
        if sat:
            src = saturate(lw, src)
        lw.write(d_op, encode(lw, src, fmt_of(dt), fmode if fmode != "rna" else "rn", relu=ins.has("relu")),
                 "b16")
        return

    if is_float_type(dt):
        ft = lltype(dt)
        if not src_float:
            v = _int_to_float(lw, src, st.startswith("s"), ft, fmode)
        else:
            v = _float_to_float(lw, src, ft, fmode)
            if imode is not None:
                v = intr(lw, INT_ROUND[imode], [v])
            v = arith_nan(lw, v)
        if flush:
            v = ftz(lw, v)
        if sat:
            v = saturate(lw, v)
        lw.write(d_op, v, dt)
        return

    # integer destination
    it = ll.IntType(8 * type_size(dt))
    if src_float:
        if imode is not None:
            src = intr(lw, INT_ROUND[imode], [src])
        name = "llvm.fptosi.sat" if dt.startswith("s") else "llvm.fptoui.sat"
        fn = lw.cg.intrinsic(f"{name}.i{it.width}.{_fsuffix(src.type)}", it, [src.type], exact=True)
        lw.write(d_op, b.call(fn, [src]), dt)
        return
    lw.write(d_op, _int_to_int(lw, src, st, dt, sat), dt)


def _f32_to_tf32(lw: FnLowering, x: ll.Value, mode: str, satfinite: bool) -> ll.Value:
    """Round f32 to tf32 (10 mantissa bits), kept as an f32 bit pattern with the low 13 bits zero."""
    b = lw.b
    bits = b.bitcast(x, I32)
    mag = b.and_(bits, const_int(I32, 0x7FFFFFFF))
    if mode == "rna":  # ties away from zero: add half an ulp to the magnitude
        r = b.add(bits, const_int(I32, 0x1000))
    elif mode == "rz":
        r = bits
    else:  # rn: ties to even
        r = b.add(b.add(bits, const_int(I32, 0xFFF)), b.and_(b.lshr(bits, const_int(I32, 13)), const_int(I32, 1)))
    r = b.and_(r, const_int(I32, ~0x1FFF))
    special = b.icmp_unsigned(">=", mag, const_int(I32, 0x7F800000))
    is_nan = b.icmp_unsigned(">", mag, const_int(I32, 0x7F800000))
    r = b.select(special, bits, r)
    if satfinite:
        sign = b.and_(bits, const_int(I32, 0x80000000))
        inf = b.icmp_unsigned("==", b.and_(r, const_int(I32, 0x7FFFFFFF)), const_int(I32, 0x7F800000))
        r = b.select(inf, b.or_(sign, const_int(I32, 0x7F7FE000)), r)
    return b.select(is_nan, const_int(I32, 0x7FFFFFFF), r)


def _fsuffix(t: ll.Type) -> str:
    return "f32" if t == F32 else "f64"


def _int_to_float(lw: FnLowering, x: ll.Value, signed: bool, ft: ll.Type, mode: str) -> ll.Value:
    """Integer -> f32/f64 with any rounding mode: round to nearest, then correct by the sign of the
    exact error x - r, computed exactly as (hi * 2**32 - r) + lo in f64."""
    b = lw.b
    r = b.sitofp(x, ft) if signed else b.uitofp(x, ft)
    if mode in ("rn", "rna"):
        return r
    x64 = b.sext(x, I64) if signed and x.type.width < 64 else b.zext(x, I64) if x.type.width < 64 else x
    hi = b.ashr(x64, ll.Constant(I64, 32)) if signed else b.lshr(x64, ll.Constant(I64, 32))
    lo = b.and_(x64, ll.Constant(I64, 0xFFFFFFFF))
    hi_f = b.fmul(b.sitofp(hi, F64) if signed else b.uitofp(hi, F64), ll.Constant(F64, 2.0**32))
    r64 = b.fpext(r, F64) if ft == F32 else r
    err = b.fadd(b.fsub(hi_f, r64), b.uitofp(lo, F64))
    z = ll.Constant(F64, 0.0)
    return directed(lw, r, b.fcmp_ordered(">", err, z), b.fcmp_ordered("<", err, z), mode)


def _float_to_float(lw: FnLowering, x: ll.Value, ft: ll.Type, mode: str) -> ll.Value:
    b = lw.b
    if x.type == ft:
        return x
    if ft == F64:
        return b.fpext(x, F64)
    r = b.fptrunc(x, F32)
    if mode in ("rn", "rna"):
        return r
    e = b.fsub(x, b.fpext(r, F64))
    z = ll.Constant(F64, 0.0)
    inf = ll.Constant(F64, float("inf"))
    finite = b.fcmp_ordered("<", intr(lw, "llvm.fabs", [x]), inf)
    pos = b.and_(finite, b.fcmp_ordered(">", e, z))
    neg = b.and_(finite, b.fcmp_ordered("<", e, z))
    return directed(lw, r, pos, neg, mode)


def _int_to_int(lw: FnLowering, v: ll.Value, st: str, dt: str, sat: bool) -> ll.Value:
    b = lw.b
    sw, dw = v.type.width, 8 * type_size(dt)
    s_signed, d_signed = st.startswith("s"), dt.startswith("s")
    if sat:
        # clamp the source value (in its own signedness) to the destination range
        wide = ll.IntType(max(sw, dw) + 1)
        x = b.sext(v, wide) if s_signed else b.zext(v, wide)
        lo = -(1 << (dw - 1)) if d_signed else 0
        hi = (1 << (dw - 1)) - 1 if d_signed else (1 << dw) - 1
        x = b.select(b.icmp_signed("<", x, ll.Constant(wide, lo)), ll.Constant(wide, lo), x)
        x = b.select(b.icmp_signed(">", x, ll.Constant(wide, hi)), ll.Constant(wide, hi), x)
        return b.trunc(x, ll.IntType(dw))
    if sw == dw:
        return v
    if sw > dw:
        return b.trunc(v, ll.IntType(dw))
    return b.sext(v, ll.IntType(dw)) if s_signed else b.zext(v, ll.IntType(dw))
