"""cvt: conversions between all integer, float, half, tf32 and fp8 types, and cvt.pack.

The results are bit-exact with an NVIDIA H100, including where the PTX ISA leaves them open (NaN
inputs, out-of-range values); the golden cases cited in comments are in shared/gpu-golden/isa.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend.ir import TYPE_NAMES, Instr, is_float_type, type_size
from ptxjit.isa.special import unsupported_special
from ptxjit.lower.function import FnLowering
from ptxjit.lower.operands import canon_nan
from ptxjit.lower.registry import rule
from ptxjit.lower.rules.floating import arith_nan, directed, ftz, intr
from ptxjit.lower.rules.fp8 import FP8_TYPES, check_cvt_fp8, lower_cvt_fp8
from ptxjit.lower.rules.half import decode, encode, fmt_of, sat01
from ptxjit.lower.types import F32, F64, I16, I32, I64, const_int, lltype

HALF = ("f16", "bf16")
INT_ROUND = {"rni": "llvm.roundeven", "rzi": "llvm.trunc", "rmi": "llvm.floor", "rpi": "llvm.ceil"}
FLOAT_ROUND = ("rn", "rz", "rm", "rp", "rna")
PACK_WIDE = ("u16", "s16")  # cvt.pack.sat.{u16,s16}.s32 d, a, b
PACK_NARROW = ("u8", "s8", "u4", "s4", "u2", "s2")  # cvt.pack.sat.<t>.s32.b32 d, a, b, c
# type names that only cvt uses (the front end does not know them as register types)
CVT_TYPES = TYPE_NAMES | set(FP8_TYPES) | {"u4", "s4", "u2", "s2"}


def cvt_types(ins: Instr) -> list[str]:
    """The type modifiers of a cvt in order, including the fp8 and sub-byte pack types."""
    return [m for m in ins.mods if m in CVT_TYPES]


def _check_cvt(ins: Instr) -> str | None:
    if (why := unsupported_special(ins)) is not None:  # a special register ptxjit cannot read (%pm0)
        return why
    ts = cvt_types(ins)
    if ins.has("pack"):
        return _check_pack(ins, ts)
    if len(ts) != 2:
        return "cvt needs a destination and a source type"
    dt, st = ts
    if ins.has("rs"):
        return "stochastic rounding (.rs) is not supported"
    if dt in FP8_TYPES or st in FP8_TYPES:
        return check_cvt_fp8(ins, dt, st)
    if ins.has("rna") and dt != "tf32":
        return ".rna applies only to cvt.tf32.f32"
    if any(t in ("u4", "s4", "u2", "s2") for t in ts):
        return "sub-byte integer types exist only in cvt.pack"
    if dt in ("f16x2", "bf16x2"):
        return None if st == "f32" and len(ins.operands) == 3 else f"cvt to .{dt} from .{st}"
    if dt == "tf32" and st != "f32" or st == "tf32":
        return "tf32 conversions other than cvt.tf32.f32 are not supported"
    if dt == "tf32" and ins.has("relu") and ins.has("rna"):
        return "cvt.rna.tf32.f32 takes no .relu"
    if (ins.has("relu") or ins.has("satfinite")) and (dt not in HALF + ("tf32",) or st != "f32"):
        return ".relu/.satfinite apply only to cvt.f16/.bf16/.tf32 from .f32"
    return None


def _check_pack(ins: Instr, ts: list[str]) -> str | None:
    if not ins.has("sat"):
        return "cvt.pack needs .sat"
    if ts and ts[0] in PACK_WIDE:
        return None if ts[1:] == ["s32"] and len(ins.operands) == 3 else \
            f"cvt.pack.sat.{ts[0]} takes .s32 sources a, b"
    if ts and ts[0] in PACK_NARROW:
        return None if ts[1:] == ["s32", "b32"] and len(ins.operands) == 4 else \
            f"cvt.pack.sat.{ts[0]} takes .s32 sources a, b and a .b32 c"
    return f"cvt.pack to .{ts[0] if ts else '?'} is not supported"


@rule("cvt", family="convert", check=_check_cvt)
def lower_cvt(lw: FnLowering, ins: Instr) -> None:
    """cvt.frnd/irnd[.ftz][.sat][.relu][.satfinite].dtype.atype for every integer/float/half/tf32/fp8
    combination, and cvt.pack.sat."""
    b = lw.b
    ts = cvt_types(ins)
    if ins.has("pack"):
        _lower_pack(lw, ins, ts[0])
        return
    dt, st = ts
    if dt in FP8_TYPES or st in FP8_TYPES:
        lower_cvt_fp8(lw, ins, dt, st)
        return
    d_op, a_op = ins.operands[0], ins.operands[1]
    sat = ins.has("sat")
    flush = ins.has("ftz")
    fmode = next((m for m in ins.mods if m in FLOAT_ROUND), "rn")
    imode = next((m for m in ins.mods if m in INT_ROUND), None)

    if dt == "tf32":
        v = _f32_to_tf32(lw, lw.read(a_op, "f32"), fmode, ins.has("satfinite"), ins.has("relu"))
        lw.write(d_op, v, "b32")
        return

    if dt in ("f16x2", "bf16x2"):
        fmt = fmt_of(dt)
        kw = {"relu": ins.has("relu"), "satfinite": ins.has("satfinite")}
        def enc(lw_: FnLowering, x: ll.Value) -> ll.Value:
            return encode(lw_, x, fmt, fmode, **kw)
        name = f"cvt_{fmode}{'_relu' if kw['relu'] else ''}{'_satfinite' if kw['satfinite'] else ''}_{dt}_{st}"
        # the first source goes to the upper half
        hi, lo = (lw.outlined(name, I16, [lw.read(o, st)], enc) for o in (a_op, ins.operands[2]))
        lw.write(d_op, b.or_(b.zext(lo, I32), b.shl(b.zext(hi, I32), const_int(I32, 16))), "b32")
        return

    # read the source as a value: int (iN) or float (f32/f64; halves decoded to f64 exactly)
    hbits = None
    if st in HALF:
        hbits = lw.read(a_op, "b16")
        src = decode(lw, hbits, fmt_of(st))
        src_float = True
    else:
        src = lw.read(a_op, st)
        src_float = is_float_type(st)
        # .ftz flushes an f32 source, except for an f16 destination, where the H100 ignores it
        # (golden isa_cvt_rm_ftz_f16_f32(0x80000001) = 0x8001, isa_cvt_rm_ftz_bf16_f32(same) = 0x8000)
        if src_float and flush and dt != "f16":
            src = ftz(lw, src)

    if dt in HALF:
        _lower_to_half(lw, ins, src, src_float, st, dt, fmode, imode, sat)
        return
    if is_float_type(dt):
        _lower_to_float(lw, ins, src, src_float, st, dt, fmode, imode, sat, flush, hbits)
        return

    # integer destination
    it = ll.IntType(8 * type_size(dt))
    if src_float:
        if imode is not None:
            src = intr(lw, INT_ROUND[imode], [src])
        name = "llvm.fptosi.sat" if dt.startswith("s") else "llvm.fptoui.sat"
        fn = lw.cg.intrinsic(f"{name}.i{it.width}.{_fsuffix(src.type)}", it, [src.type], exact=True)
        r = b.call(fn, [src])
        if st == "f64" or it.width == 64:
            # NaN -> 0x80...0 of the destination width, unsigned destinations too, when the source is
            # f64 or the destination 64-bit; 0 otherwise (golden isa_cvt_rni_u8_f64(NaN) = 0x80,
            # isa_cvt_rni_u64_f16(NaN) = 0x8000000000000000, isa_cvt_rni_u32_f32(NaN) = 0)
            nan = b.fcmp_unordered("uno", src, src)
            r = b.select(nan, ll.Constant(it, 1 << (it.width - 1)), r)
        lw.write(d_op, r, dt)
        return
    lw.write(d_op, _int_to_int(lw, src, st, dt, sat), dt)


def _lower_to_half(lw: FnLowering, ins: Instr, src: ll.Value, src_float: bool, st: str, dt: str, fmode: str,
                   imode: str | None, sat: bool) -> None:
    b = lw.b
    fmt = fmt_of(dt)
    if not src_float:
        src = _int_to_f64_odd(lw, src, st.startswith("s"))
    if imode is not None:
        src = intr(lw, INT_ROUND[imode], [src])
    if sat:
        src = sat01(lw, src)
    r = encode(lw, src, fmt, fmode, relu=ins.has("relu"),
               satfinite=ins.has("satfinite"))
    if st == "f64" and not sat:
        # an f64 NaN keeps its sign and top payload bits, quieted (golden isa_cvt_rn_f16_f64(NaN) = 0x7e00,
        # isa_cvt_rn_bf16_f64(0xfff8000000000000) = 0xffc0)
        xb = b.bitcast(src, I64)
        m = fmt.mbits
        q = (((1 << fmt.ebits) - 1) << m) | (1 << (m - 1))
        payload = b.or_(b.and_(b.lshr(xb, const_int(I64, 52 - m)), const_int(I64, (1 << m) - 1)),
                        const_int(I64, q))
        payload = b.or_(payload, b.and_(b.lshr(xb, const_int(I64, 48)), const_int(I64, 0x8000)))
        r = b.select(b.fcmp_unordered("uno", src, src), b.trunc(payload, I16), r)
    lw.write(ins.operands[0], r, "b16")


def _lower_to_float(lw: FnLowering, ins: Instr, src: ll.Value, src_float: bool, st: str, dt: str, fmode: str,
                    imode: str | None, sat: bool, flush: bool, hbits: ll.Value | None) -> None:
    """f32/f64 destinations.  NaN results follow the H100: conversions through the f64 unit keep the
    payload (quieted), f32 <- f16 and the f32 arithmetic forms give the canonical 0x7fffffff."""
    b = lw.b
    ft = lltype(dt)
    if not src_float:
        v = _int_to_float(lw, src, st.startswith("s"), ft, fmode)
    else:
        v = _float_to_float(lw, src, ft, fmode)
        if imode is not None:
            v = intr(lw, INT_ROUND[imode], [v])
        nan = b.fcmp_unordered("uno", src, src)
        if st in HALF and hbits is not None:
            fmt = fmt_of(st)
            if dt == "f64":
                # golden isa_cvt_f64_f16(0x7e01) = 0x7ff8040000000000
                wide = b.zext(hbits, I64)
                man = b.and_(wide, const_int(I64, (1 << fmt.mbits) - 1))
                pay = b.or_(b.shl(man, const_int(I64, 52 - fmt.mbits)), const_int(I64, 0x7FF8000000000000))
                pay = b.or_(pay, b.shl(b.and_(wide, const_int(I64, 0x8000)), const_int(I64, 48)))
                v = b.select(nan, b.bitcast(pay, F64), v)
            elif st == "bf16" and not flush:
                # cvt.f32.bf16 is a plain shift, signalling NaNs included (golden isa_cvt_f32_bf16(0x7f81)
                # = 0x7f810000); with .ftz the NaN is canonical
                raw = b.bitcast(b.shl(b.zext(hbits, I32), const_int(I32, 16)), F32)
                v = b.select(nan, raw, v)
            else:
                v = canon_nan(lw, v)  # golden isa_cvt_f32_f16(NaN) = 0x7fffffff
        elif st == "f32" and dt == "f64" and flush:
            # the .ftz path canonicalizes in f32 first (golden isa_cvt_ftz_f64_f32(NaN) = 0x7fffffffe0000000)
            v = b.select(nan, b.bitcast(const_int(I64, 0x7FFFFFFFE0000000), F64), v)
        elif st == "f32" and dt == "f32" and (imode is not None or flush or sat):
            v = arith_nan(lw, v)  # arithmetic: canonical NaN (a plain cvt.f32.f32 moves the bits)
        # f64 sources and cvt.f64.f32 keep the payload: fptrunc/fpext/round do exactly that
    if flush:
        v = ftz(lw, v)
    if sat:
        v = sat01(lw, v)  # NaN -> 0, -0 -> +0 (golden isa_cvt_sat_f32_f32(-0) = 0)
    lw.write(ins.operands[0], v, dt)


def _lower_pack(lw: FnLowering, ins: Instr, dt: str) -> None:
    """cvt.pack.sat.dt.s32[.b32] d, a, b[, c]: d = c << 2n | sat(a) << n | sat(b) for n-bit dt."""
    b = lw.b
    n = int(dt[1:])
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if dt.startswith("s") else (0, (1 << n) - 1)
    mask = const_int(I32, (1 << n) - 1)

    def clamp(v: ll.Value) -> ll.Value:
        v = b.select(b.icmp_signed("<", v, const_int(I32, lo)), const_int(I32, lo), v)
        v = b.select(b.icmp_signed(">", v, const_int(I32, hi)), const_int(I32, hi), v)
        return b.and_(v, mask)

    ta = clamp(lw.read(ins.operands[1], "s32"))
    tb = clamp(lw.read(ins.operands[2], "s32"))
    d = b.or_(b.shl(ta, const_int(I32, n)), tb)
    if len(ins.operands) == 4 and 2 * n < 32:
        d = b.or_(d, b.shl(lw.read(ins.operands[3], "b32"), const_int(I32, 2 * n)))
    lw.write(ins.operands[0], d, "b32")


def _f32_to_tf32(lw: FnLowering, x: ll.Value, mode: str, satfinite: bool, relu: bool) -> ll.Value:
    """Round f32 to tf32 (10 mantissa bits), kept as an f32 bit pattern with the low 13 bits zero.

    Done on the bits, as the H100 does: .rna adds half an ulp and truncates, NaNs included (golden
    isa_cvt_rna_tf32_f32(0x7fc12345) = 0x7fc12000, (0x7f800001) = 0x7f800000); .rna.satfinite then
    steps every result whose magnitude bits reach 0x7f800000 one ulp down, NaNs too (golden
    isa_cvt_rna_satfinite_tf32_f32(inf) = 0x7f7fe000, (0x7fc00000) = 0x7fbfe000); .rn/.rz give
    0x7fffe000 for NaN (golden isa_cvt_rn_tf32_f32)."""
    b = lw.b
    bits = b.bitcast(x, I32)
    mag = b.and_(bits, const_int(I32, 0x7FFFFFFF))
    is_nan = b.icmp_unsigned(">", mag, const_int(I32, 0x7F800000))
    keep = const_int(I32, ~0x1FFF)
    if mode == "rna":
        r = b.select(is_nan, b.and_(bits, keep), b.and_(b.add(bits, const_int(I32, 0x1000)), keep))
    else:
        if mode == "rz":
            r = b.and_(bits, keep)
        else:  # rn: ties to even (infinities stay: their low bits are zero)
            lsb = b.and_(b.lshr(bits, const_int(I32, 13)), const_int(I32, 1))
            r = b.and_(b.add(b.add(bits, const_int(I32, 0xFFF)), lsb), keep)
        if relu:  # negative results, -0 and -inf included, become +0 (golden isa_cvt_rn_relu_tf32_f32)
            r = b.select(b.icmp_signed("<", bits, const_int(I32, 0)), const_int(I32, 0), r)
    if satfinite:
        over = b.icmp_unsigned(">=", b.and_(r, const_int(I32, 0x7FFFFFFF)), const_int(I32, 0x7F800000))
        if mode != "rna":  # not in the golden set: saturate finite overflow and infinities only
            over = b.and_(over, b.not_(is_nan))
        r = b.select(over, b.sub(r, const_int(I32, 0x2000)), r)
    if mode != "rna":
        r = b.select(is_nan, const_int(I32, 0x7FFFE000), r)
    return r


def _fsuffix(t: ll.Type) -> str:
    return "f32" if t == F32 else "f64"


def _int_to_f64_odd(lw: FnLowering, x: ll.Value, signed: bool) -> ll.Value:
    """Integer -> f64 rounded to odd: exact up to 53 bits, and otherwise keeps a sticky bit so that one
    later rounding to a half format is correctly rounded in every mode (golden isa_cvt_rz_bf16_u64:
    rounding through a nearest f64 first is off by one ulp)."""
    b = lw.b
    r = b.sitofp(x, F64) if signed else b.uitofp(x, F64)
    if x.type.width <= 32:
        return r
    hi = b.ashr(x, ll.Constant(I64, 32)) if signed else b.lshr(x, ll.Constant(I64, 32))
    lo = b.and_(x, ll.Constant(I64, 0xFFFFFFFF))
    hi_f = b.fmul(b.sitofp(hi, F64) if signed else b.uitofp(hi, F64), ll.Constant(F64, 2.0**32))
    err = b.fadd(b.fsub(hi_f, r), b.uitofp(lo, F64))  # x - r, exact (an integer below 2**11)
    z = ll.Constant(F64, 0.0)
    rb = b.bitcast(r, I64)
    # r overshoots x in magnitude: step one ulp toward zero (bits of a sign-magnitude number), then
    # make the last bit sticky
    overshoot = b.xor(b.fcmp_ordered("<", err, z), b.fcmp_ordered("<", r, z))
    t = b.select(overshoot, b.sub(rb, const_int(I64, 1)), rb)
    odd = b.bitcast(b.or_(t, const_int(I64, 1)), F64)
    return b.select(b.fcmp_ordered("!=", err, z), odd, r)


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
