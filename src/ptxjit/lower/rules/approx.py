"""PTX's approximate instructions, bit for bit as an H100 computes them.

The GPU's multifunction unit (MUFU) evaluates a piecewise quadratic in fixed point: the reduced
argument's top bits pick a segment, its low `nb` bits t are the offset, and

    Y = (C0 + C1*t + C2*(sq(t) >> cut)) >> frac

where sq(t) is t*t from a truncated squarer (only partial-product columns >= cut are summed) and Y
is the result's significand (ulp 1).  The per-segment integer coefficients were fitted exactly to
dense H100 samples (tools/mufu/derive.py -> ptxjit/lower/mufu_tables.py).  Around the unit, the
instruction's exponent handling and special values are done in integer arithmetic here; the
non-.ftz forms wrap the unit with the scalings the GPU's software sequences use for subnormals.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr
from ptxjit.lower import mufu_tables as T
from ptxjit.lower.function import FnLowering
from ptxjit.lower.types import F32, I32, I64, const_int

NAN32 = 0x7FFFFFFF


def _c32(v: int) -> ll.Constant:
    return const_int(I32, v & 0xFFFFFFFF)


def _c64(v: int) -> ll.Constant:
    return const_int(I64, v & 0xFFFFFFFFFFFFFFFF)


def _table(lw: FnLowering, name: str) -> ll.GlobalVariable:
    """The coefficient table as an internal constant array [C0, C1, C2, C0, ...] of i64."""
    mod = lw.cg.llmod
    gname = f"__ptxjit_mufu_{name}"
    if gname in mod.globals:
        return mod.globals[gname]
    rows = getattr(T, name.upper())
    arr = ll.ArrayType(I64, 3 * len(rows))
    gv = ll.GlobalVariable(mod, arr, gname)
    gv.initializer = ll.Constant(arr, [_c64(c) for row in rows for c in row])
    gv.global_constant = True
    gv.linkage = "internal"
    return gv


def _trunc_square(lw: FnLowering, t: ll.Value, nb: int, cut: int) -> ll.Value:
    """t*t summing only the partial-product bits of columns >= cut (what the hardware squarer keeps)."""
    b = lw.b
    acc = _c64(0)
    for i in range(nb):
        bit = b.and_(b.lshr(t, _c64(i)), _c64(1))
        mask = b.sub(_c64(0), bit)  # all ones when bit i is set
        lo = max(i + 1, cut - 1 - i)  # partners j > i with column i + j + 1 >= cut
        if lo < nb:
            row = b.shl(b.and_(t, _c64(~((1 << lo) - 1))), _c64(i + 1))
            acc = b.add(acc, b.and_(row, mask))
        if 2 * i >= cut:
            acc = b.add(acc, b.and_(_c64(1 << (2 * i)), mask))
    return acc


def interp(lw: FnLowering, name: str, u: ll.Value) -> ll.Value:
    """The unit's significand Y (i64) for the fixed-point argument u (i64, segment bits above nb)."""
    b = lw.b
    nb, cut, frac = T.PARAMS[name]
    gv = _table(lw, name)
    seg = b.lshr(u, _c64(nb))
    t = b.and_(u, _c64((1 << nb) - 1))
    base = b.mul(seg, _c64(3))

    def coef(k: int) -> ll.Value:
        p = b.gep(gv, [const_int(I32, 0), b.add(base, _c64(k))], inbounds=True)
        return b.load(p)

    sq = b.lshr(_trunc_square(lw, t, nb, cut), _c64(cut))
    s = b.add(coef(0), b.add(b.mul(coef(1), t), b.mul(coef(2), sq)))
    return b.ashr(s, _c64(frac))


def _fields(lw: FnLowering, x: ll.Value) -> tuple[ll.Value, ll.Value, ll.Value]:
    """(sign bit, biased exponent, mantissa) of f32 bits x, as i64."""
    b = lw.b
    x64 = b.zext(x, I64)
    return (b.lshr(x64, _c64(31)), b.and_(b.lshr(x64, _c64(23)), _c64(0xFF)), b.and_(x64, _c64(0x7FFFFF)))


def _eq(lw: FnLowering, a: ll.Value, v: int) -> ll.Value:
    return lw.b.icmp_unsigned("==", a, _c64(v) if a.type == I64 else _c32(v))


def _sel(lw: FnLowering, c: ll.Value, v: int | ll.Value, other: ll.Value) -> ll.Value:
    if isinstance(v, int):
        v = _c64(v)
    return lw.b.select(c, v, other)


def rcp_ftz(lw: FnLowering, x: ll.Value) -> ll.Value:
    """MUFU.RCP on f32 bits x (i32 -> i32); subnormal arguments and results flush to zero."""
    b = lw.b
    s, e, m = _fields(lw, x)
    y = interp(lw, "rcp", m)
    r = b.add(b.shl(b.sub(_c64(253), e), _c64(23)), b.sub(y, _c64(1 << 23)))
    r = _sel(lw, b.icmp_signed("<", r, _c64(1 << 23)), 0, r)
    r = _sel(lw, _eq(lw, e, 0), 0x7F800000, r)
    r = _sel(lw, _eq(lw, e, 255), 0, r)
    r = b.or_(r, b.shl(s, _c64(31)))
    nan = b.and_(_eq(lw, e, 255), b.icmp_unsigned("!=", m, _c64(0)))
    return b.select(nan, _c32(NAN32), b.trunc(r, I32))


def _root(lw: FnLowering, x: ll.Value, name: str) -> ll.Value:
    """MUFU.RSQ / MUFU.SQRT on f32 bits (ftz)."""
    b = lw.b
    s, e, m = _fields(lw, x)
    ue = b.sub(e, _c64(127))
    u = b.or_(b.shl(b.and_(ue, _c64(1)), _c64(23)), m)
    y = interp(lw, name, u)
    k = b.ashr(ue, _c64(1))
    inf = _eq(lw, e, 255)
    if name == "rsqrt":
        y = _sel(lw, _eq(lw, u, 0), 1 << 24, y)  # powers of 4: exact
        r = b.add(b.shl(b.sub(_c64(126), k), _c64(23)), b.sub(y, _c64(1 << 23)))
        r = _sel(lw, _eq(lw, e, 0), b.or_(_c64(0x7F800000), b.shl(s, _c64(31))), r)
        r = _sel(lw, inf, 0, r)
    else:
        r = b.add(b.shl(b.add(_c64(127), k), _c64(23)), b.sub(y, _c64(1 << 23)))
        r = _sel(lw, _eq(lw, e, 0), b.shl(s, _c64(31)), r)
        r = _sel(lw, inf, 0x7F800000, r)
    nan = b.or_(b.and_(inf, b.icmp_unsigned("!=", m, _c64(0))),
                b.and_(_eq(lw, s, 1), b.icmp_unsigned("!=", e, _c64(0))))
    return b.select(nan, _c32(NAN32), b.trunc(r, I32))


def ex2_ftz(lw: FnLowering, x: ll.Value) -> ll.Value:
    """MUFU.EX2: |x| to fixed point with 23 fraction bits (truncated), negative x as the ones'
    complement (exact when there are no fraction bits), then 2**int * table(fraction)."""
    b = lw.b
    s, e, m = _fields(lw, x)
    sig = b.or_(m, _c64(1 << 23))
    sh = b.sub(e, _c64(127))  # |x| * 2**23 = sig << (e - 127)
    left = b.shl(sig, b.select(b.icmp_signed(">", sh, _c64(0)), sh, _c64(0)))
    neg_sh = b.sub(_c64(0), sh)
    right = b.lshr(sig, b.select(b.icmp_signed(">", neg_sh, _c64(63)), _c64(63), neg_sh))
    mag = b.select(b.icmp_signed(">=", sh, _c64(0)), left, right)
    mag = _sel(lw, _eq(lw, e, 0), 0, mag)
    mag = _sel(lw, b.icmp_unsigned(">=", e, _c64(127 + 9)), 1 << 40, mag)
    whole = _eq(lw, b.and_(mag, _c64(0x7FFFFF)), 0)
    neg = _eq(lw, s, 1)
    fx = b.select(neg, b.select(whole, b.sub(_c64(0), mag), b.xor(mag, _c64(-1))), mag)
    i = b.ashr(fx, _c64(23))
    y = interp(lw, "ex2", b.and_(fx, _c64(0x7FFFFF)))
    r = b.add(b.shl(b.add(i, _c64(127)), _c64(23)), b.sub(y, _c64(1 << 23)))
    r = _sel(lw, b.icmp_signed("<=", i, _c64(-127)), 0, r)
    r = _sel(lw, b.icmp_signed(">=", i, _c64(128)), 0x7F800000, r)
    nan = b.and_(_eq(lw, e, 255), b.icmp_unsigned("!=", m, _c64(0)))
    return b.select(nan, _c32(NAN32), b.trunc(r, I32))


def _scaled(lw: FnLowering, unit, x: ll.Value, cond: ll.Value, pre: float, post: float) -> ll.Value:
    """Where cond: unit(x * pre) * post (f32 multiplies, as the GPU's non-ftz sequences), else unit(x)."""
    b = lw.b
    xs = b.bitcast(b.fmul(b.bitcast(x, F32), ll.Constant(F32, pre)), I32)
    x2 = b.select(cond, xs, x)
    r = unit(lw, x2)
    rs = b.bitcast(b.fmul(b.bitcast(r, F32), ll.Constant(F32, post)), I32)
    # NaN results keep the canonical bits (the multiply could quiet them differently)
    keep = b.or_(b.not_(cond), _eq(lw, r, NAN32))
    return b.select(keep, r, rs)


def _abs_bits(lw: FnLowering, x: ll.Value) -> ll.Value:
    return lw.b.and_(x, _c32(0x7FFFFFFF))


def _subnormal(lw: FnLowering, x: ll.Value) -> ll.Value:
    a = _abs_bits(lw, x)
    return lw.b.and_(lw.b.icmp_unsigned("<", a, _c32(0x00800000)), lw.b.icmp_unsigned("!=", a, _c32(0)))


def f32_unary(lw: FnLowering, op: str, x: ll.Value, ftz: bool) -> ll.Value:
    """rcp/rsqrt/sqrt/ex2 .approx(.ftz).f32 on the bits x (i32 -> i32)."""
    b = lw.b
    if op == "ex2":
        if ftz:
            return ex2_ftz(lw, x)
        # results below 2**-126 (subnormal): h = 2**(x/2), then h*h rounded once (matches the H100)
        xv = b.bitcast(x, F32)
        tiny = b.fcmp_ordered("<", xv, ll.Constant(F32, -126.0))
        xs = b.bitcast(b.fmul(xv, ll.Constant(F32, 0.5)), I32)
        r = ex2_ftz(lw, b.select(tiny, xs, x))
        h = b.bitcast(r, F32)
        return b.select(tiny, b.bitcast(b.fmul(h, h), I32), r)
    if op == "rcp":
        if ftz:
            return rcp_ftz(lw, x)
        big = b.icmp_unsigned(">=", _abs_bits(lw, x), _c32(0x7E800000))  # |x| >= 2**126
        big = b.and_(big, b.icmp_unsigned("<", _abs_bits(lw, x), _c32(0x7F800000)))
        r = _scaled(lw, rcp_ftz, x, big, 2.0**-24, 2.0**-24)
        return b.select(_subnormal(lw, x), _scaled(lw, rcp_ftz, x, _subnormal(lw, x), 2.0**24, 2.0**24), r)
    def unit(lw_: FnLowering, v: ll.Value) -> ll.Value:
        return _root(lw_, v, op)

    if ftz:
        return unit(lw, x)
    post = 2.0**12 if op == "rsqrt" else 2.0**-12
    return _scaled(lw, unit, x, _subnormal(lw, x), 2.0**24, post)


def lower_f32(lw: FnLowering, ins: Instr) -> None:
    """Entry point for rcp/rsqrt/sqrt/ex2 .approx f32 (called from floating.py)."""
    x = lw.b.bitcast(lw.read(ins.operands[1], "f32"), I32)
    r = f32_unary(lw, ins.opcode, x, ins.has("ftz"))
    lw.write(ins.operands[0], lw.b.bitcast(r, F32), "f32")
