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
from ptxjit.lower.rules import fpbits
from ptxjit.lower.types import F32, F64, I16, I32, I64, const_int
from ptxjit.passes import approx_fold

NAN32 = 0x7FFFFFFF


def _c32(v: int) -> ll.Constant:
    return const_int(I32, v & 0xFFFFFFFF)


def _c64(v: int) -> ll.Constant:
    return const_int(I64, v & 0xFFFFFFFFFFFFFFFF)


def _table(lw: FnLowering, name: str) -> ll.GlobalVariable:
    """The coefficient table as an internal constant array of i64, two per segment: C0, then C1 in the high
    and C2 in the low 32 bits (each fits: |C1| < 2**23, |C2| < 2**18), so that a vector of arguments
    gathers twice, not three times."""
    mod = lw.cg.llmod
    gname = f"__ptxjit_mufu_{name}"
    if gname in mod.globals:
        return mod.globals[gname]
    rows = getattr(T, name.upper())
    assert all(-(1 << 31) <= c < 1 << 31 for row in rows for c in row[1:])
    arr = ll.ArrayType(I64, 2 * len(rows))
    gv = ll.GlobalVariable(mod, arr, gname)
    gv.initializer = ll.Constant(arr, [_c64(w) for c0, c1, c2 in rows for w in (c0, (c1 << 32) | (c2 & 0xFFFFFFFF))])
    gv.global_constant = True
    gv.linkage = "internal"
    return gv


def table_load(lw: FnLowering, p: ll.Value) -> ll.Value:
    """A load from a coefficient table, with alias scopes that let LLVM vectorize the region loop around
    it: the table is constant, so it aliases no store of the kernel.  Unmarked, the (gather) load
    joined every global store's alias set and LLVM, unable to bound the gather's addresses, left the
    loop scalar (softmax's div.full: "cannot identify array bounds").  Its scope is 'local', which
    global stores and the runtime's buffers exclude (as the warp-exchange buffer's, lower/rules/sync.py
    _xbuf_access); it excludes the runtime's buffers and shared memory."""
    inst = lw.b.load(p)
    inst.set_metadata("alias.scope", lw.cg.scopes("local"))
    inst.set_metadata("noalias", lw.cg.scopes("internal", "shared"))
    return inst


def _trunc_square(lw: FnLowering, t: ll.Value, nb: int, cut: int) -> ll.Value:
    """t*t summing only the partial-product bits of columns >= cut (what the hardware squarer keeps).

    As t*t minus what the squarer drops, D: with l = t's low s = (cut - 1) // 2 + 1 bits, every partial
    product of two bits of l (and each of their squares) lies in a column below cut, so l*l is dropped
    whole; every bit j >= s has no square below cut, and drops its products with the bits i < cut - 1 - j
    (columns i + j + 1 < cut), (t & (2**(cut-1-j) - 1)) << (j + 1) where bit j is set.  About 5 operations
    per such bit and two multiplications, where the sum over every partial-product row took 7 per bit
    of t (ex2: 17 bits)."""
    b = lw.b
    s = (cut - 1) // 2 + 1
    low = b.and_(t, _c64((1 << min(s, nb)) - 1))
    drop = _mul32(lw, low, low)
    for j in range(s, min(nb, cut - 1)):
        bit = b.and_(b.lshr(t, _c64(j)), _c64(1))
        part = b.shl(b.and_(t, _c64((1 << (cut - 1 - j)) - 1)), _c64(j + 1))
        drop = b.add(drop, b.and_(part, b.sub(_c64(0), bit)))  # (all ones when bit j is set)
    return b.sub(_mul32(lw, t, t), drop)


def _mul32(lw: FnLowering, a: ll.Value, c: ll.Value, signed: bool = False) -> ll.Value:
    """a*c (i64) for operands that fit in 32 bits (signed or not), said so to LLVM: as 32-bit values
    widened, which it multiplies with one 32x32->64 vector multiply (vpmuludq/vpmuldq) where a plain i64
    multiply became vpmullq and a loop that the scheduler left partly scalar (nbody's rsqrt: 69 vs 40 ms)."""
    b = lw.b
    ext = b.sext if signed else b.zext
    return b.mul(ext(b.trunc(a, I32), I64), ext(b.trunc(c, I32), I64))


def interp(lw: FnLowering, name: str, u: ll.Value) -> ll.Value:
    """The unit's significand Y (i64) for the fixed-point argument u (i64, segment bits above nb)."""
    return lw.b.ashr(interp_sum(lw, name, u), _c64(T.PARAMS[name][2]))


def interp_sum(lw: FnLowering, name: str, u: ll.Value) -> ll.Value:
    """C0 + C1*t + C2*(sq(t) >> cut): Y before its >> frac (i64)."""
    b = lw.b
    nb, cut, frac = T.PARAMS[name]
    gv = _table(lw, name)
    seg = b.lshr(u, _c64(nb))
    t = b.and_(u, _c64((1 << nb) - 1))
    base = b.shl(seg, _c64(1))

    def word(k: int) -> ll.Value:
        p = b.gep(gv, [const_int(I32, 0), b.add(base, _c64(k))], inbounds=True)
        return table_load(lw, p)

    c12 = word(1)
    c1, c2 = b.ashr(c12, _c64(32)), b.sext(b.trunc(c12, I32), I64)
    sq = b.lshr(_trunc_square(lw, t, nb, cut), _c64(cut))  # < 2**(2*nb - cut): fits in 32 bits
    return b.add(word(0), b.add(_mul32(lw, c1, t, True), _mul32(lw, c2, sq, True)))


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


# ---------------------------------------------------------------------------------------------
# f64: MUFU.RCP64H / MUFU.RSQ64H take the high word of the double (20 mantissa bits; the low word
# is ignored, even for NaN detection) and run it through the f32 tables with the mantissa << 3;
# the 24-bit significand is truncated to the high word's 20 bits and the low word is zero.
# Exact on all of mufu/ rcp|rsqrt_approx_ftz_f64_* and isa/ rcp.approx.ftz.f64, rsqrt.approx.ftz.f64.

def _fields64(lw: FnLowering, x: ll.Value) -> tuple[ll.Value, ll.Value, ll.Value]:
    """(sign, biased exponent, top 20 mantissa bits) of f64 bits x (i64)."""
    b = lw.b
    h = b.lshr(x, _c64(32))
    return b.lshr(h, _c64(31)), b.and_(b.lshr(h, _c64(20)), _c64(0x7FF)), b.and_(h, _c64(0xFFFFF))


def rcp64h(lw: FnLowering, x: ll.Value) -> ll.Value:
    """rcp.approx.ftz.f64 on the bits x (i64 -> i64)."""
    b = lw.b
    s, e, m = _fields64(lw, x)
    y = interp(lw, "rcp", b.shl(m, _c64(3)))
    r = b.add(b.shl(b.sub(_c64(2045), e), _c64(20)), b.sub(b.lshr(y, _c64(3)), _c64(1 << 20)))
    r = _sel(lw, b.icmp_signed("<", r, _c64(1 << 20)), 0, r)
    r = _sel(lw, _eq(lw, e, 0), 0x7FF00000, r)
    r = _sel(lw, _eq(lw, e, 0x7FF), 0, r)
    r = b.or_(r, b.shl(s, _c64(31)))
    nan = b.and_(_eq(lw, e, 0x7FF), b.icmp_unsigned("!=", m, _c64(0)))
    r = b.select(nan, _c64(NAN32), r)
    return b.shl(r, _c64(32))


def rsq64h(lw: FnLowering, x: ll.Value) -> ll.Value:
    """rsqrt.approx.ftz.f64 on the bits x (i64 -> i64)."""
    b = lw.b
    s, e, m = _fields64(lw, x)
    ue = b.sub(e, _c64(1023))
    u = b.or_(b.shl(b.and_(ue, _c64(1)), _c64(23)), b.shl(m, _c64(3)))
    y = _sel(lw, _eq(lw, u, 0), 1 << 24, interp(lw, "rsqrt", u))
    k = b.ashr(ue, _c64(1))
    r = b.add(b.shl(b.sub(_c64(1022), k), _c64(20)), b.sub(b.lshr(y, _c64(3)), _c64(1 << 20)))
    r = _sel(lw, _eq(lw, e, 0), b.or_(_c64(0x7FF00000), b.shl(s, _c64(31))), r)
    r = _sel(lw, _eq(lw, e, 0x7FF), 0, r)
    nan = b.or_(b.and_(_eq(lw, e, 0x7FF), b.icmp_unsigned("!=", m, _c64(0))),
                b.and_(_eq(lw, s, 1), b.icmp_unsigned("!=", e, _c64(0))))
    r = b.select(nan, _c64(NAN32), r)
    return b.shl(r, _c64(32))


def _fma64(lw: FnLowering, a: ll.Value, c: ll.Value, d: ll.Value) -> ll.Value:
    return lw.b.call(lw.cg.intrinsic("llvm.fma", F64, [F64, F64, F64]), [a, c, d])


def rsqrt_f64(lw: FnLowering, x: ll.Value) -> ll.Value:
    """rsqrt.approx.f64 (i64 -> i64): the RSQ64H seed y0 refined once with a third-order step,
        e = fma(-x, y0*y0, 1);  y = fma(y0*e, fma(e, 0.375, 0.5), y0)
    (y0*y0 is exact); subnormal x runs on x*2**54 and the result is scaled by 2**27.  Negative x
    gives 0xfff8000000000000, NaN x itself quieted, +-0 -> +-inf, +inf -> +0.  Exact on isa/."""
    b = lw.b
    ax = b.and_(x, _c64(0x7FFFFFFFFFFFFFFF))
    sub = b.and_(b.icmp_unsigned("<", ax, _c64(1 << 52)), b.icmp_unsigned("!=", ax, _c64(0)))
    xv = b.bitcast(x, F64)
    xs = b.select(sub, b.fmul(xv, ll.Constant(F64, 2.0**54)), xv)
    y0 = b.bitcast(rsq64h(lw, b.bitcast(xs, I64)), F64)
    e = _fma64(lw, b.fneg(xs), b.fmul(y0, y0), ll.Constant(F64, 1.0))
    y = _fma64(lw, b.fmul(y0, e), _fma64(lw, e, ll.Constant(F64, 0.375), ll.Constant(F64, 0.5)), y0)
    y = b.select(sub, b.fmul(y, ll.Constant(F64, 2.0**27)), y)
    r = b.bitcast(y, I64)
    r = b.select(b.icmp_unsigned(">=", ax, _c64(0x7FF0000000000000)), _c64(0), r)  # +inf (NaN below)
    r = b.select(_eq(lw, ax, 0), b.or_(_c64(0x7FF0000000000000), x), r)
    neg = b.and_(b.icmp_signed("<", x, _c64(0)), b.icmp_unsigned("!=", ax, _c64(0)))
    r = b.select(neg, _c64(0xFFF8000000000000), r)
    nan = b.icmp_unsigned(">", ax, _c64(0x7FF0000000000000))
    return b.select(nan, b.or_(x, _c64(1 << 51)), r)


def lower_f64(lw: FnLowering, ins: Instr) -> None:
    """rcp.approx.ftz.f64, rsqrt.approx(.ftz).f64 (called from floating.py)."""
    x = lw.b.bitcast(lw.read(ins.operands[1], "f64"), I64)
    if ins.opcode == "rcp":
        r = lw.outlined("mufu_rcp64h", I64, [x], rcp64h)
    elif ins.opcode == "rsqrt":
        r = lw.outlined("mufu_rsq64h", I64, [x], rsq64h) if ins.has("ftz") else \
            lw.outlined("rsqrt_f64", I64, [x], rsqrt_f64)
    else:
        raise lw.unsupported("approx f64 form")
    lw.write(ins.operands[0], lw.b.bitcast(r, F64), "f64")


# ---------------------------------------------------------------------------------------------
# div.approx / div.full .f32: the quotient is a * MUFU.RCP(b), one f32 multiply, no refinement.
#   div.full: |b| > 2**126 first scales a and b by 0.25 (so 1/b stays normal);
#   non-ftz (both): subnormal b runs as (a * rcp(b * 2**24)) * 2**24.
# Exact on all 4,096 rows of each isa_div_{approx,full}{,_ftz}_f32.

def _fmul_bits(lw: FnLowering, x: ll.Value, y: ll.Value, ftz: bool) -> ll.Value:
    """FMUL(.FTZ) on f32 bits (i32): NaN results canonical; .ftz flushes subnormal inputs and products
    whose exact value is below 2**-126."""

    b = lw.b
    if ftz:
        x, y = (b.select(_eq(lw, b.and_(v, _c32(0x7F800000)), 0), b.and_(v, _c32(0x80000000)), v) for v in (x, y))
    xv, yv = b.bitcast(x, F32), b.bitcast(y, F32)
    r = b.bitcast(b.fmul(xv, yv), I32)
    if ftz:
        exact = b.fmul(b.fpext(xv, F64), b.fpext(yv, F64))
        r = b.bitcast(fpbits.flush_tiny_before_rounding(b, b.bitcast(r, F32), exact), I32)
        r = b.select(_eq(lw, b.and_(r, _c32(0x7F800000)), 0), b.and_(r, _c32(0x80000000)), r)
    nan = b.icmp_unsigned(">", _abs_bits(lw, r), _c32(0x7F800000))
    return b.select(nan, _c32(NAN32), r)


def div_f32(lw: FnLowering, a: ll.Value, d: ll.Value, full: bool, ftz: bool) -> ll.Value:
    """div.approx / div.full (.ftz) .f32 on bits (i32, i32 -> i32)."""
    b = lw.b
    if full:
        big = b.icmp_unsigned(">", _abs_bits(lw, d), _c32(0x7E800000))  # |d| > 2**126 (incl. inf, NaN)
        q = _c32(0x3E800000)  # 0.25
        a = b.select(big, _fmul_bits(lw, a, q, ftz), a)
        d = b.select(big, _fmul_bits(lw, d, q, ftz), d)
    if ftz:
        return _fmul_bits(lw, a, rcp_ftz(lw, d), True)
    two24 = _c32(0x4B800000)
    sub = _subnormal(lw, d)
    r = rcp_ftz(lw, b.select(sub, _fmul_bits(lw, d, two24, False), d))
    p = _fmul_bits(lw, a, r, False)
    return b.select(sub, _fmul_bits(lw, p, two24, False), p)


def lower_div(lw: FnLowering, ins: Instr) -> None:
    """Entry point for div.approx / div.full .f32 (called from floating.lower_float_arith)."""
    b = lw.b
    a = b.bitcast(lw.read(ins.operands[1], "f32"), I32)
    known = approx_fold.imm_bits(ins.operands[2])
    fold = None if known is None else approx_fold.folded_divisor(known, ins.has("full"), ins.has("ftz"))
    if fold is not None:  # ptxas: a (scaled) times the correctly rounded reciprocal of the immediate
        scale, rcp = fold
        if scale != 0x3F800000:
            a = _fmul_bits(lw, a, _c32(scale), ins.has("ftz"))
        r = _fmul_bits(lw, a, _c32(rcp), ins.has("ftz"))
    else:
        d = b.bitcast(lw.read(ins.operands[2], "f32"), I32)
        full, ftz = ins.has("full"), ins.has("ftz")
        r = lw.outlined(f"div_{'full' if full else 'approx'}{'_ftz' if ftz else ''}_f32", I32, [a, d],
                     lambda lw_, x, y: div_f32(lw_, x, y, full, ftz))
    lw.write(ins.operands[0], b.bitcast(r, F32), "f32")


# ---------------------------------------------------------------------------------------------
# sin / cos .approx.f32 (MUFU.SIN / MUFU.COS), bit for bit.  The GPU computes p = FMUL.RZ(|x|,
# 0x3e22f983 = 1/2pi in f32), takes p in fixed point with 25 fraction bits (truncated) modulo one turn,
# n; cos adds a quarter turn.  The top two bits of n are the quadrant q, the low 23 bits r the offset;
# odd quadrants use the ones' complement of r (sin(pi) -> exactly 0 although p < 1/2).  The unit's
# quarter-wave table (64 segments over r', the "sin" table) gives |sin(2*pi*r'/2**25)| in fixed point
# with 37 fraction bits, which is truncated to f32 and negated for q >= 2 (and for negative x in sin).

def sincos_f32(lw: FnLowering, x: ll.Value, cos: bool) -> ll.Value:
    """sin/cos.approx(.ftz).f32 on the bits x (i32 -> i32).  Subnormal x reduces to n = 0 with or
    without .ftz, so both forms are the same."""
    b = lw.b
    ax = _abs_bits(lw, x)
    p = b.fmul(b.fpext(b.bitcast(ax, F32), F64), ll.Constant(F64, float.fromhex("0x1.45f306p-3")))  # exact
    p32 = b.fptrunc(p, F32)
    up = b.fcmp_ordered(">", b.fpext(p32, F64), p)  # round toward zero
    p32 = b.bitcast(b.sub(b.bitcast(p32, I32), b.zext(up, I32)), F32)
    pc = b.fpext(p32, F64)
    pc = b.select(b.fcmp_ordered("<", pc, ll.Constant(F64, 2.0**23)), pc, ll.Constant(F64, 0.0))
    n = b.and_(b.fptoui(b.fmul(pc, ll.Constant(F64, 2.0**25)), I64), _c64((1 << 25) - 1))
    if cos:
        n = b.and_(b.add(n, _c64(1 << 23)), _c64((1 << 25) - 1))
    q = b.lshr(n, _c64(23))
    r = b.and_(n, _c64((1 << 23) - 1))
    odd = _eq(lw, b.and_(q, _c64(1)), 1)
    r = b.select(odd, b.sub(_c64((1 << 23) - 1), r), r)
    sv = b.uitofp(interp(lw, "sin", r), F64)  # Y < 2**38: exact
    v32 = b.fptrunc(sv, F32)
    up = b.fcmp_ordered(">", b.fpext(v32, F64), sv)  # the value * 2**-37 truncated to f32
    v = b.sub(b.bitcast(v32, I32), b.zext(up, I32))
    v = b.bitcast(b.fmul(b.bitcast(v, F32), ll.Constant(F32, 2.0**-37)), I32)  # exact (power of two)
    neg = b.icmp_unsigned(">=", q, _c64(2))
    if not cos:
        neg = b.xor(neg, b.icmp_signed("<", x, _c32(0)))
    v = b.or_(v, b.select(neg, _c32(0x80000000), _c32(0)))  # zeros too: sin(pi) = +0, sin(2pi) = -0
    return b.select(b.icmp_unsigned(">=", ax, _c32(0x7F800000)), _c32(NAN32), v)


# ---------------------------------------------------------------------------------------------
# lg2.approx(.ftz).f32 (MUFU.LG2), bit for bit.  The unit adds the unbiased exponent as an integer to
# the "lg2" table's log2(1.m) (64 segments over the 23-bit mantissa), forms the sum in fixed point with
# 36 fraction bits, rounded toward zero from the table's frac extra bits (visible only for negative
# results, just below 1), and truncates it to f32.  x = 1 gives exactly 0 (the table's value there is
# 7377 * 2**-36: lg2(0.5) = -0.9999999).  +-0 (and flushed subnormals) -> -inf, +inf -> +inf, negative
# or NaN -> NaN.  The non-ftz form runs subnormal x as lg2(x * 2**24) - 24 (f32 add, round to nearest).
# Exact on every isa/ row of lg2.approx(.ftz).f32 and all of mufu/ lg2_approx_ftz_f32_1_2.

LG2_FRAC_BITS = 36


def lg2_ftz(lw: FnLowering, x: ll.Value) -> ll.Value:
    """lg2.approx.ftz.f32 on the bits x (i32 -> i32)."""
    b = lw.b
    s, e, m = _fields(lw, x)
    frac = T.PARAMS["lg2"][2]
    v = b.add(b.shl(b.sub(e, _c64(127)), _c64(LG2_FRAC_BITS + frac)), interp_sum(lw, "lg2", m))
    neg = b.icmp_signed("<", v, _c64(0))
    mag = b.lshr(b.select(neg, b.sub(_c64(0), v), v), _c64(frac))  # toward zero
    mag = _sel(lw, b.and_(_eq(lw, e, 127), _eq(lw, m, 0)), 0, mag)  # lg2(1) = 0
    mv = b.uitofp(mag, F64)  # < 2**45: exact
    v32 = b.fptrunc(mv, F32)
    up = b.fcmp_ordered(">", b.fpext(v32, F64), mv)  # truncated to f32
    r = b.sub(b.bitcast(v32, I32), b.zext(up, I32))
    r = b.bitcast(b.fmul(b.bitcast(r, F32), ll.Constant(F32, 2.0**-LG2_FRAC_BITS)), I32)  # exact
    r = b.or_(r, b.select(neg, _c32(0x80000000), _c32(0)))
    r = b.select(b.icmp_unsigned("==", e, _c64(0)), _c32(0xFF800000), r)
    r = b.select(b.icmp_unsigned("==", x, _c32(0x7F800000)), _c32(0x7F800000), r)
    nan = b.or_(b.and_(_eq(lw, e, 255), b.icmp_unsigned("!=", m, _c64(0))),
                b.and_(_eq(lw, s, 1), b.icmp_unsigned("!=", e, _c64(0))))
    return b.select(nan, _c32(NAN32), r)


def lg2_f32(lw: FnLowering, x: ll.Value, ftz: bool) -> ll.Value:
    """lg2.approx(.ftz).f32 on the bits x (i32 -> i32)."""
    if ftz:
        return lg2_ftz(lw, x)
    b = lw.b
    sub = _subnormal(lw, x)
    xs = b.bitcast(b.fmul(b.bitcast(x, F32), ll.Constant(F32, 2.0**24)), I32)
    r = lg2_ftz(lw, b.select(sub, xs, x))
    rs = b.bitcast(b.fsub(b.bitcast(r, F32), ll.Constant(F32, 24.0)), I32)
    return b.select(b.and_(sub, b.icmp_unsigned("!=", r, _c32(NAN32))), rs, r)


# ---------------------------------------------------------------------------------------------
# tanh.approx.f32 (MUFU.TANH), bit for bit.  |x| < 2**-8 (subnormals included) returns x itself, |x| >= 8
# (inf included) +-1, NaN the canonical NaN.  In between, |x|'s octave 2**e picks 2**S segments (TANH_SEGS:
# one per octave below 2**-5, two up to 2**-3, four up to 1, 8 in [1, 2), 16 in [2, 4), 8 in [4, 8)) of the
# "tanh" table; the 17 mantissa bits below the segment bits are the offset t (lower bits are ignored).
# The table's sum (before >> frac) is fixed point with frac bits below the ulp of 2**min(e, -1), truncated
# to f32 (results just below the octave keep one more bit), with x's sign.  Fitted to dense H100 samples
# of [2**-12, 8) (every 2nd / 4th ulp: every offset of every segment; tools/mufu/gpu/tanh_dense.npz) and
# exact on all of them, their negations and every isa/ row of the f32, f16(x2) and bf16(x2) forms.

def _tanh_octaves(lw: FnLowering) -> ll.GlobalVariable:
    """[first global segment, offset shift 23 - nb - S] per octave of tanh's table (i64 constants)."""
    mod = lw.cg.llmod
    gname = "__ptxjit_mufu_tanh_octaves"
    if gname in mod.globals:
        return mod.globals[gname]
    vals, base = [], 0
    for s in T.TANH_SEGS:
        vals += [base, 23 - T.PARAMS["tanh"][0] - s]
        base += 1 << s
    arr = ll.ArrayType(I64, len(vals))
    gv = ll.GlobalVariable(mod, arr, gname)
    gv.initializer = ll.Constant(arr, [_c64(v) for v in vals])
    gv.global_constant = True
    gv.linkage = "internal"
    return gv


def tanh_f32(lw: FnLowering, x: ll.Value) -> ll.Value:
    """tanh.approx.f32 on the bits x (i32 -> i32)."""
    b = lw.b
    nb, _, frac = T.PARAMS["tanh"]
    a = _abs_bits(lw, x)
    mid = b.and_(b.icmp_unsigned(">=", a, _c32(0x3B800000)), b.icmp_unsigned("<", a, _c32(0x41000000)))
    am = b.zext(b.select(mid, a, _c32(0x3F800000)), I64)
    e = b.sub(b.lshr(am, _c64(23)), _c64(127))
    k = b.sub(e, _c64(T.TANH_E0))
    gv = _tanh_octaves(lw)

    def octave(j: int) -> ll.Value:
        idx = b.add(b.shl(k, _c64(1)), _c64(j))
        return table_load(lw, b.gep(gv, [const_int(I32, 0), idx], inbounds=True))

    u = b.lshr(b.and_(am, _c64(0x7FFFFF)), octave(1))
    seg = b.add(octave(0), b.lshr(u, _c64(nb)))
    v = interp_sum(lw, "tanh", b.or_(b.shl(seg, _c64(nb)), b.and_(u, _c64((1 << nb) - 1))))
    vf = b.uitofp(v, F64)  # < 2**41: exact
    v32 = b.fptrunc(vf, F32)
    up = b.fcmp_ordered(">", b.fpext(v32, F64), vf)  # truncated to f32
    r = b.sub(b.bitcast(v32, I32), b.zext(up, I32))
    oexp = b.select(b.icmp_signed("<", e, _c64(-1)), e, _c64(-1))
    scale = b.trunc(b.shl(b.sub(_c64(23 + frac), oexp), _c64(23)), I32)
    r = b.sub(r, scale)  # * 2**-(23 + frac - oexp): exact, the result is normal
    r = b.select(mid, r, b.select(b.icmp_unsigned(">=", a, _c32(0x41000000)), _c32(0x3F800000), a))
    r = b.or_(r, b.and_(x, _c32(0x80000000)))
    return b.select(b.icmp_unsigned(">", a, _c32(0x7F800000)), _c32(NAN32), r)


def lower_f32(lw: FnLowering, ins: Instr) -> None:
    """Entry point for rcp/rsqrt/sqrt/ex2/sin/cos/tanh/lg2 .approx f32 (called from floating.py)."""
    known = approx_fold.imm_bits(ins.operands[1])
    value = None if known is None or ins.opcode == "tanh" else approx_fold.folded(ins.opcode, known, ins.has("ftz"))
    if value is not None:  # ptxas folds an immediate argument to the correctly rounded result
        lw.write(ins.operands[0], lw.b.bitcast(_c32(value), F32), "f32")
        return
    x = lw.b.bitcast(lw.read(ins.operands[1], "f32"), I32)
    op, ftz = ins.opcode, ins.has("ftz")
    r = lw.outlined(f"mufu_{op}{'_ftz' if ftz else ''}_f32", I32, [x], lambda lw_, v: _unit_f32(lw_, op, v, ftz))
    lw.write(ins.operands[0], lw.b.bitcast(r, F32), "f32")


def _unit_f32(lw: FnLowering, op: str, x: ll.Value, ftz: bool) -> ll.Value:
    """rcp/rsqrt/sqrt/ex2/sin/cos/tanh/lg2 .approx(.ftz).f32 on the bits x (i32 -> i32)."""
    if op in ("sin", "cos"):
        return sincos_f32(lw, x, op == "cos")
    if op == "tanh":
        return tanh_f32(lw, x)
    if op == "lg2":
        return lg2_f32(lw, x, ftz)
    return f32_unary(lw, op, x, ftz)


# ---------------------------------------------------------------------------------------------
# f16 / bf16 forms: the f32 unit, then the f32 result truncated (round toward zero) to the half
# format; f16 results of 2**16 and above become infinity.  Exact on all 65,536 inputs of every
# isa_ex2_approx_{f16,f16x2,ftz_bf16,ftz_bf16x2} form.

def _half_to_f32_bits(lw: FnLowering, v: ll.Value, bf: bool) -> ll.Value:
    """i16 half bits -> i32 f32 bits (exact)."""
    b = lw.b
    if bf:
        return b.shl(b.zext(v, I32), _c32(16))
    return b.bitcast(b.fpext(b.bitcast(v, ll.HalfType()), F32), I32)


def f32_to_half_rz(lw: FnLowering, r: ll.Value, bf: bool) -> ll.Value:
    """i32 f32 bits -> i16 half bits, truncated; NaN -> 0x7fff; f16: |r| >= 2**16 -> infinity."""
    b = lw.b
    a = _abs_bits(lw, r)
    nan = b.icmp_unsigned(">", a, _c32(0x7F800000))
    if bf:
        h = b.lshr(r, _c32(16))
    else:
        sign = b.and_(b.lshr(r, _c32(16)), _c32(0x8000))
        e = b.lshr(a, _c32(23))
        normal = b.add(b.shl(b.sub(e, _c32(112)), _c32(10)), b.and_(b.lshr(a, _c32(13)), _c32(0x3FF)))
        sig = b.or_(b.and_(a, _c32(0x7FFFFF)), _c32(1 << 23))
        sh = b.sub(_c32(126), e)  # subnormal f16: sig * 2**(e - 150) / 2**-24
        sub = b.lshr(sig, b.select(b.icmp_unsigned(">", sh, _c32(31)), _c32(31), sh))
        sub = b.select(b.icmp_unsigned(">", sh, _c32(24)), _c32(0), sub)
        m = b.select(b.icmp_unsigned(">=", e, _c32(113)), normal, sub)
        m = b.select(b.icmp_unsigned(">=", a, _c32(0x47800000)), _c32(0x7C00), m)
        h = b.or_(m, sign)
    h = b.select(nan, _c32(0x7FFF), h)
    return b.trunc(h, I16)


def half_unary(lw: FnLowering, op: str, v: ll.Value, bf: bool) -> ll.Value:
    """ex2/tanh .approx on one f16/bf16 lane (i16 bits -> i16 bits)."""
    return lw.outlined(f"mufu_{op}_{'bf16' if bf else 'f16'}", v.type, [v],
                    lambda lw_, x: _half_unary(lw_, op, x, bf))


def _half_unary(lw: FnLowering, op: str, v: ll.Value, bf: bool) -> ll.Value:
    x = _half_to_f32_bits(lw, v, bf)
    if op == "ex2":
        return f32_to_half_rz(lw, ex2_ftz(lw, x), bf)
    if op == "tanh":  # the f32 unit truncated the same way
        return f32_to_half_rz(lw, tanh_f32(lw, x), bf)
    raise KeyError(op)


HALF_UNARY_OPS = ("ex2", "tanh")
