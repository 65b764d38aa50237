"""Float results the H100 defines bit for bit where IEEE 754 leaves a choice (NaN bits, tininess).

Everything here works on the integer bits: LLVM treats NaN payloads as unspecified and folds float
selects between NaNs away, so a NaN rule written with float operations silently disappears.
Each rule cites the golden case (../shared/gpu-golden/isa) it was read from.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.lower.types import F32, F64, I32, I64, const_int

F32_CANON_NAN = 0x7FFFFFFF


def _int_type(t: ll.Type) -> ll.IntType:
    return I32 if t == F32 else I64


def _masks(t: ll.Type) -> tuple[int, int, int]:
    """(magnitude mask, infinity bits, quiet bit) of f32 or f64."""
    if t == F32:
        return 0x7FFFFFFF, 0x7F800000, 0x00400000
    return 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000, 0x0008000000000000


def bits_is_nan(b: ll.IRBuilder, bits: ll.Value, t: ll.Type) -> ll.Value:
    mag, inf, _ = _masks(t)
    it = _int_type(t)
    return b.icmp_unsigned(">", b.and_(bits, ll.Constant(it, mag)), ll.Constant(it, inf))


def f64_nan_result(b: ll.IRBuilder, r: ll.Value, operands: list[ll.Value]) -> ll.Value:
    """f64 add/sub/mul/fma/min/max with NaN operands return the NaN operand of highest priority,
    quieted, sign and payload kept; `operands` lists them from highest priority down. Golden:
    isa_add_f64 (0, 0xfff0…0123) -> 0xfff8…0123; isa_fma_rn_f64 priority b > c > a (a NaN and c NaN
    -> c's NaN); isa_min_f64 (NaN, NaN') -> NaN' quieted. Invalid operations (inf - inf) give
    0xfff8000000000000 on the GPU as on x86, so r's own NaN is kept when no operand is a NaN."""
    _, _, quiet = _masks(F64)
    rb = b.bitcast(r, I64)
    pick = rb
    for v in reversed(operands):
        vb = b.bitcast(v, I64)
        pick = b.select(bits_is_nan(b, vb, F64), b.or_(vb, ll.Constant(I64, quiet)), pick)
    return b.bitcast(b.select(bits_is_nan(b, rb, F64), pick, rb), F64)


def f64_abs_neg(b: ll.IRBuilder, x: ll.Value, op: str) -> ll.Value:
    """abs/neg.f64 leave a NaN's sign alone and quiet it (isa_abs_f64: 0xfff0…0123 -> 0xfff8…0123;
    isa_neg_f64: 0x7ff8… -> 0x7ff8…)."""
    _, _, quiet = _masks(F64)
    xb = b.bitcast(x, I64)
    sign = ll.Constant(I64, 1 << 63)
    done = b.and_(xb, ll.Constant(I64, ~(1 << 63) & ((1 << 64) - 1))) if op == "abs" else b.xor(xb, sign)
    res = b.select(bits_is_nan(b, xb, F64), b.or_(xb, ll.Constant(I64, quiet)), done)
    return b.bitcast(res, F64)


def f32_abs_neg(b: ll.IRBuilder, x: ll.Value, op: str) -> ll.Value:
    """abs/neg.f32 of a NaN give the canonical 0x7FFFFFFF (isa_abs_f32, isa_neg_f32)."""
    xb = b.bitcast(x, I32)
    done = b.and_(xb, ll.Constant(I32, 0x7FFFFFFF)) if op == "abs" else b.xor(xb, ll.Constant(I32, 1 << 31))
    res = b.select(bits_is_nan(b, xb, F32), ll.Constant(I32, F32_CANON_NAN), done)
    return b.bitcast(res, F32)


def xorsign_abs_minmax(b: ll.IRBuilder, minmax: ll.Value, a: ll.Value, c: ll.Value) -> ll.Value:
    """min/max.xorsign.abs: `minmax` is min/max(|a|, |c|) (NaN rule already applied); the result
    takes the sign sign(a) xor sign(c) -- a NaN operand's sign bit counts -- and a NaN result is
    the canonical NaN (isa_min_xorsign_abs_f32: (0, 0xffc00000) -> 0x80000000;
    isa_max_NaN_xorsign_abs_f32: (0, NaN) -> 0x7fffffff)."""
    t = a.type
    it = _int_type(t)
    width = it.width
    sign_bit = ll.Constant(it, 1 << (width - 1))
    sign = b.and_(b.xor(b.bitcast(a, it), b.bitcast(c, it)), sign_bit)
    mb = b.bitcast(minmax, it)
    res = b.or_(mb, sign)
    canon = F32_CANON_NAN if t == F32 else 0x7FFFFFFFFFFFFFFF
    res = b.select(bits_is_nan(b, mb, t), ll.Constant(it, canon), res)
    return b.bitcast(res, t)


def flush_tiny_before_rounding(b: ll.IRBuilder, r: ll.Value, exact: ll.Value,
                               below: ll.Value | None = None) -> ll.Value:
    """f32 `.ftz`: a result whose exact value is below 2^-126 in magnitude is ±0 even when rounding
    would reach the smallest normal (isa_mul_rn_ftz_f32: 1.1754944e-38 * 0.99999994 -> +0;
    isa_div_rp_ftz_f32; isa_mad_rm_ftz_f32). `exact` is an f64 close to the exact result (exact when
    it is that small); `below`, when given, says the exact value is smaller in magnitude than
    `exact` (for when `exact` itself rounded to 2^-126)."""
    eb = b.bitcast(exact, I64)
    mag = b.and_(eb, ll.Constant(I64, 0x7FFFFFFFFFFFFFFF))
    min_normal = ll.Constant(I64, 0x3810000000000000)  # 2^-126 as f64
    # an exact zero keeps r (its sign follows the rounding mode's rule for exact zeros)
    tiny = b.and_(b.icmp_unsigned("<", mag, min_normal), b.icmp_unsigned("!=", mag, ll.Constant(I64, 0)))
    if below is not None:
        tiny = b.or_(tiny, b.and_(b.icmp_unsigned("==", mag, min_normal), below))
    neg = b.icmp_signed("<", eb, ll.Constant(I64, 0))
    zero = b.select(neg, const_int(I32, 1 << 31), const_int(I32, 0))
    return b.bitcast(b.select(tiny, zero, b.bitcast(r, I32)), F32)
