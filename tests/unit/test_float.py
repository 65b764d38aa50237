"""PTX floating-point instructions (f32 / f64) against an exact rational reference model.

Expectations come from tests/unit/floatutil.py (fractions.Fraction + explicit IEEE rounding), from
Python's `math` module, or from hand-written rules quoted from the PTX ISA; never from ptxjit.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tests.unit.floatutil import (
    F32,
    F64,
    assert_bits_equal,
    d2b,
    elementwise,
    f2b,
    f32bits,
    f64bits,
    ftz_in,
    ftz_out,
    is_inf,
    is_nan,
    is_subnormal,
    is_zero,
    model_add,
    model_div,
    model_fma,
    model_mul,
    model_sqrt,
    model_sub,
    round_fraction,
    sign_of,
    to_fraction,
    ulp_diff,
)

INF = float("inf")
QNAN32 = 0x7FC00000
NNAN32 = 0xFFC00001  # negative NaN with a payload
QNAN64 = 0x7FF8000000000000
CANON_NAN32 = 0x7FFFFFFF

SPECIAL32 = [
    0.0, -0.0, 1.0, -1.0, 1.5, -2.5, 3.0, 0.1, -0.3, 7.0e-39, INF, -INF,
    QNAN32, NNAN32,
    0x00000001, 0x80000001, 0x007FFFFF, 0x00400000,  # subnormals
    0x00800000, 0x80800000,  # smallest normals
    0x7F7FFFFF, 0xFF7FFFFF,  # largest finite
    0x3F800001, 1.0e30, -1.0e-30, 65504.0,
]

SPECIAL64 = [
    0.0, -0.0, 1.0, -1.0, 1.5, -2.5, 0.1, -0.3, INF, -INF, QNAN64, 0xFFF8000000000123,
    0x0000000000000001, 0x800FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF,
    1.0e300, -1.0e-300, 0x3FF0000000000001,
]

RNG_SEED = 1234


def _pairs(values, fmt=F32):
    bits = f32bits(values) if fmt is F32 else f64bits(values)
    a = np.repeat(bits, len(bits))
    b = np.tile(bits, len(bits))
    return a, b


def _random32(n, seed, spread=40):
    rng = np.random.default_rng(seed)
    mant = rng.standard_normal(n)
    exp = rng.integers(-spread, spread, n)
    return (mant * np.exp2(exp)).astype(np.float32).view(np.uint32)


def _random64(n, seed, spread=300):
    rng = np.random.default_rng(seed)
    mant = rng.standard_normal(n)
    exp = rng.integers(-spread, spread, n)
    return (mant * np.exp2(exp.astype(np.float64))).view(np.uint64)


def _random_bits32(n, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)


def _binary_inputs32(seed):
    a1, b1 = _pairs(SPECIAL32)
    a2, b2 = _random32(400, seed), _random32(400, seed + 1, spread=3)
    a3, b3 = _random_bits32(300, seed + 2), _random_bits32(300, seed + 3)
    # values of similar magnitude and opposite signs (cancellation, exact zeros)
    a4 = _random32(100, seed + 4, spread=2)
    b4 = (a4.view(np.float32) * np.float32(-1)).view(np.uint32).copy()
    b4[::2] = (a4[::2].view(np.float32) * np.float32(-1.0000001)).view(np.uint32)
    return np.concatenate([a1, a2, a3, a4]), np.concatenate([b1, b2, b3, b4])


def _binary_inputs64(seed):
    a1, b1 = _pairs(SPECIAL64, F64)
    a2, b2 = _random64(300, seed), _random64(300, seed + 1, spread=3)
    a3 = _random64(100, seed + 2, spread=2)
    b3 = (a3.view(np.float64) * -1.0).view(np.uint64)
    return np.concatenate([a1, a2, a3]), np.concatenate([b1, b2, b3])


MODELS2 = {"add": model_add, "sub": model_sub, "mul": model_mul, "div": model_div}


# ----------------------------------------------------------------------------------------------------------
# add / sub / mul / fma / mad, all rounding modes
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("rnd", ["", ".rn", ".rz", ".rm", ".rp"])
def test_f32_add_sub_mul(op, rnd):
    a, b = _binary_inputs32(RNG_SEED)
    (d,) = elementwise(f"{op}{rnd}.f32 {{d}}, {{a}}, {{b}};", [("f32", a), ("f32", b)], ["f32"])
    mode = rnd[1:] or "rn"
    exp = [MODELS2[op](F32, int(x), int(y), mode) for x, y in zip(a, b, strict=True)]
    assert_bits_equal(F32, d, exp, [a, b], f"{op}{rnd}.f32")


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("rnd", [".rn", ".rz", ".rm", ".rp"])
def test_f64_add_sub_mul(op, rnd):
    a, b = _binary_inputs64(RNG_SEED + 10)
    (d,) = elementwise(f"{op}{rnd}.f64 {{d}}, {{a}}, {{b}};", [("f64", a), ("f64", b)], ["f64"])
    exp = [MODELS2[op](F64, int(x), int(y), rnd[1:]) for x, y in zip(a, b, strict=True)]
    assert_bits_equal(F64, d, exp, [a, b], f"{op}{rnd}.f64")


def _fma_inputs32(seed):
    sp = f32bits([0.0, -0.0, 1.0, -1.5, 3.0e-39, INF, -INF, QNAN32, 0x7F7FFFFF, 0x00000001, 0.1])
    a1 = np.repeat(sp, len(sp) ** 2)
    b1 = np.tile(np.repeat(sp, len(sp)), len(sp))
    c1 = np.tile(sp, len(sp) ** 2)
    n = 500
    a2, b2, c2 = _random32(n, seed, 20), _random32(n, seed + 1, 20), _random32(n, seed + 2, 30)
    # a*b + c with c ~= -a*b: exposes the single rounding of a fused multiply-add
    a3, b3 = _random32(200, seed + 3, 3), _random32(200, seed + 4, 3)
    c3 = (-(a3.view(np.float32) * b3.view(np.float32))).view(np.uint32)
    return np.concatenate([a1, a2, a3]), np.concatenate([b1, b2, b3]), np.concatenate([c1, c2, c3])


@pytest.mark.parametrize("instr", ["fma.rn.f32", "mad.rn.f32", "fma.rz.f32", "fma.rm.f32", "fma.rp.f32"])
def test_f32_fma(instr):
    a, b, c = _fma_inputs32(RNG_SEED + 20)
    (d,) = elementwise(f"{instr} {{d}}, {{a}}, {{b}}, {{c}};", [("f32", a), ("f32", b), ("f32", c)], ["f32"])
    mode = instr.split(".")[1]
    exp = [model_fma(F32, int(x), int(y), int(z), mode) for x, y, z in zip(a, b, c, strict=True)]
    assert_bits_equal(F32, d, exp, [a, b, c], instr)


def test_f32_fma_is_fused():
    # (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 exactly; an unfused multiply would round the product first
    x = 1.0 + 2.0**-12
    a = f32bits([x, x, 1.0 + 2.0**-23])
    c = f32bits([-(1.0 + 2.0**-11), -1.0, -(1.0 + 2.0**-22)])
    (d,) = elementwise("fma.rn.f32 {d}, {a}, {b}, {c};", [("f32", a), ("f32", a), ("f32", c)], ["f32"])
    assert int(d[0]) == f2b(2.0**-24)
    assert int(d[1]) == f2b(2.0**-11 + 2.0**-24)
    assert int(d[2]) == f2b(2.0**-46)


@pytest.mark.parametrize("instr", ["fma.rn.f64", "mad.rn.f64", "fma.rz.f64", "fma.rm.f64", "fma.rp.f64"])
def test_f64_fma(instr):
    a, b = _binary_inputs64(RNG_SEED + 30)
    c = np.roll(_binary_inputs64(RNG_SEED + 31)[0], 7)
    a3, b3 = _random64(100, 77, 3), _random64(100, 78, 3)
    c3 = (-(a3.view(np.float64) * b3.view(np.float64))).view(np.uint64)
    a, b, c = np.concatenate([a, a3]), np.concatenate([b, b3]), np.concatenate([c, c3])
    (d,) = elementwise(f"{instr} {{d}}, {{a}}, {{b}}, {{c}};", [("f64", a), ("f64", b), ("f64", c)], ["f64"])
    mode = instr.split(".")[1]
    exp = [model_fma(F64, int(x), int(y), int(z), mode) for x, y, z in zip(a, b, c, strict=True)]
    assert_bits_equal(F64, d, exp, [a, b, c], instr)


def test_f32_directed_rounding_spot_values():
    one, tiny = f2b(1.0), f2b(2.0**-30)
    big = 0x7F7FFFFF
    a = np.array([one, one, one, f2b(-1.0), big, big, 0xFF7FFFFF, f2b(1.0)], dtype=np.uint32)
    b = np.array([tiny, tiny, tiny, f2b(-(2.0**-30)), big, big, 0xFF7FFFFF, f2b(-1.0)], dtype=np.uint32)
    res = {}
    for m in ("rz", "rm", "rp"):
        (res[m],) = elementwise(f"add.{m}.f32 {{d}}, {{a}}, {{b}};", [("f32", a), ("f32", b)], ["f32"])
    assert int(res["rz"][0]) == one and int(res["rm"][0]) == one and int(res["rp"][0]) == one + 1
    assert int(res["rz"][3]) == f2b(-1.0) and int(res["rm"][3]) == f2b(-1.0) + 1
    assert int(res["rp"][3]) == f2b(-1.0)
    assert int(res["rz"][4]) == 0x7F7FFFFF and int(res["rp"][4]) == 0x7F800000
    assert int(res["rm"][4]) == 0x7F7FFFFF
    assert int(res["rm"][6]) == 0xFF800000 and int(res["rp"][6]) == 0xFF7FFFFF
    # x + (-x) is +0 except when rounding toward -inf
    assert int(res["rz"][7]) == 0 and int(res["rp"][7]) == 0 and int(res["rm"][7]) == 0x80000000


# ----------------------------------------------------------------------------------------------------------
# .ftz and .sat
# ----------------------------------------------------------------------------------------------------------


def _tiny_before_rounding(v: Fraction | None) -> bool:
    """.ftz on the H100 flushes a result whose *exact* value is below 2^-126, even when rounding would
    reach 2^-126 (golden isa_mul_rn_ftz_f32: 1.1754944e-38 * 0.99999994 -> +0)."""
    return v is not None and v != 0 and abs(v) < Fraction(2) ** -126


def _exact(op, a, b, c=None):
    vals = [a, b] + ([] if c is None else [c])
    if any(is_nan(F32, v) or is_inf(F32, v) for v in vals):
        return None
    fa, fb = to_fraction(F32, a), to_fraction(F32, b)
    if op == "add":
        return fa + fb
    if op == "mul":
        return fa * fb
    return fa * fb + to_fraction(F32, c)


@pytest.mark.parametrize("instr", ["add.ftz.f32", "add.rn.ftz.f32", "sub.ftz.f32", "mul.ftz.f32",
                                   "mul.rz.ftz.f32", "fma.rn.ftz.f32"])
def test_f32_ftz(instr):
    op = instr.split(".")[0]
    mode = "rz" if ".rz." in instr else "rn"
    sub = [0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000, 0x00800000, 0x80800001]
    norm = [1.0, -1.0, 0.5, 2.0**-100, -(2.0**-30), 2.0**-126 * 1.5, 0.0, -0.0, 3.0, 2.0**100]
    a, b = _pairs(sub + norm)
    rnd = _random32(300, 5, 60)
    a = np.concatenate([a, rnd, f32bits([2.0**-70] * 4)])
    b = np.concatenate([b, np.roll(rnd, 3), f32bits([2.0**-70, -(2.0**-70), 2.0**-60, 2.0**-56])])
    c = np.roll(np.concatenate([_pairs(sub + norm)[1], rnd, f32bits([0.0] * 4)]), 11)
    if op == "fma":
        ins = [("f32", a), ("f32", b), ("f32", c)]
        tmpl = f"{instr} {{d}}, {{a}}, {{b}}, {{c}};"
    else:
        ins = [("f32", a), ("f32", b)]
        tmpl = f"{instr} {{d}}, {{a}}, {{b}};"
    (d,) = elementwise(tmpl, ins, ["f32"])
    keep, exp = [], []
    for i in range(len(a)):
        x, y, z = ftz_in(F32, int(a[i])), ftz_in(F32, int(b[i])), ftz_in(F32, int(c[i]))
        yy = y ^ (0x80000000 if op == "sub" else 0)
        v = _exact(op if op != "sub" else "add", x, yy, z)
        if op == "fma":
            r = model_fma(F32, x, y, z, mode)
        else:
            r = {"add": model_add, "sub": model_sub, "mul": model_mul}[op](F32, x, y, mode)
        keep.append(i)
        exp.append((0x80000000 if v < 0 else 0) if _tiny_before_rounding(v) else ftz_out(F32, r))
    keep = np.array(keep)
    assert_bits_equal(F32, d[keep], exp, [a[keep], b[keep]], instr)
    if op == "mul":
        # 2^-70 * 2^-70 = 2^-140 is subnormal and must be flushed to +0
        assert int(d[len(a) - 4]) == 0


def _sat(b):
    """PTX .sat: clamp to [0, 1]; NaN and -0 -> +0 (golden isa_add_sat_f32: -0 + -0 -> +0).  f32 bits."""
    if b is None or is_nan(F32, b) or sign_of(F32, b):
        return 0
    return min(b, f2b(1.0))  # non-negative encodings order like their values


@pytest.mark.parametrize("instr", ["add.sat.f32", "sub.rn.sat.f32", "mul.sat.f32", "fma.rn.sat.f32",
                                   "add.rz.ftz.sat.f32"])
def test_f32_sat(instr):
    op = instr.split(".")[0]
    vals = [0.0, -0.0, 0.25, 0.75, 1.0, -1.0, 1.5, 2.0, -0.5, INF, -INF, QNAN32, NNAN32, 0x00000001, 0.999]
    a, b = _pairs(vals)
    c = np.roll(b, 5)
    if op == "fma":
        (d,) = elementwise(f"{instr} {{d}}, {{a}}, {{b}}, {{c}};", [("f32", a), ("f32", b), ("f32", c)],
                           ["f32"])
    else:
        (d,) = elementwise(f"{instr} {{d}}, {{a}}, {{b}};", [("f32", a), ("f32", b)], ["f32"])
    mode = "rz" if ".rz." in instr else "rn"
    ftz = ".ftz." in instr
    bad = []
    for i in range(len(a)):
        x, y, z = int(a[i]), int(b[i]), int(c[i])
        if ftz:
            x, y, z = ftz_in(F32, x), ftz_in(F32, y), ftz_in(F32, z)
        r = (model_fma(F32, x, y, z, mode) if op == "fma"
             else {"add": model_add, "sub": model_sub, "mul": model_mul}[op](F32, x, y, mode))
        want = _sat(r)
        if int(d[i]) != want:
            bad.append((hex(x), hex(y), hex(z), hex(want), hex(int(d[i]))))
    assert not bad, f"{instr}: {bad[:10]}"


# ----------------------------------------------------------------------------------------------------------
# division, reciprocal, square root
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rnd", [".rn", ".rz", ".rm", ".rp"])
def test_div_f32_ieee(rnd):
    a, b = _binary_inputs32(RNG_SEED + 40)
    (d,) = elementwise(f"div{rnd}.f32 {{d}}, {{a}}, {{b}};", [("f32", a), ("f32", b)], ["f32"])
    exp = [model_div(F32, int(x), int(y), rnd[1:]) for x, y in zip(a, b, strict=True)]
    assert_bits_equal(F32, d, exp, [a, b], f"div{rnd}.f32")


@pytest.mark.parametrize("rnd", [".rn", ".rz", ".rm", ".rp"])
def test_div_f64_ieee(rnd):
    a, b = _binary_inputs64(RNG_SEED + 41)
    (d,) = elementwise(f"div{rnd}.f64 {{d}}, {{a}}, {{b}};", [("f64", a), ("f64", b)], ["f64"])
    exp = [model_div(F64, int(x), int(y), rnd[1:]) for x, y in zip(a, b, strict=True)]
    assert_bits_equal(F64, d, exp, [a, b], f"div{rnd}.f64")


def _normal_range_pairs(seed, n=600):
    a = _random32(n, seed, 30)
    b = _random32(n, seed + 1, 30)
    return a, b


@pytest.mark.parametrize("instr,max_ulp", [("div.full.f32", 2), ("div.approx.f32", 2),
                                           ("div.full.ftz.f32", 2), ("div.approx.ftz.f32", 2)])
def test_div_approx_f32(instr, max_ulp):
    a, b = _normal_range_pairs(RNG_SEED + 50)
    (d,) = elementwise(f"{instr} {{d}}, {{a}}, {{b}};", [("f32", a), ("f32", b)], ["f32"])
    bad = []
    for x, y, g in zip(a, b, d, strict=True):
        e = model_div(F32, int(x), int(y))
        if e is None or is_nan(F32, int(g)) or ulp_diff(F32, int(g), e) > max_ulp:
            bad.append((hex(int(x)), hex(int(y)), hex(e), hex(int(g))))
    assert not bad, f"{instr}: {bad[:10]}"


def test_div_full_f32_specials():
    a = f32bits([0.0, 1.0, -1.0, INF, QNAN32, 1.0, 0.0, 6.0, -3.0])
    b = f32bits([1.0, 0.0, INF, 2.0, 1.0, QNAN32, 0.0, 3.0, 0.5])
    (d,) = elementwise("div.full.f32 {d}, {a}, {b};", [("f32", a), ("f32", b)], ["f32"])
    exp = [0, 0x7F800000, 0x80000000, 0x7F800000, None, None, None, f2b(2.0), f2b(-6.0)]
    assert_bits_equal(F32, d, exp, [a, b], "div.full.f32")


@pytest.mark.parametrize("rnd", [".rn", ".rz", ".rm", ".rp"])
def test_rcp_f32_ieee(rnd):
    a = np.concatenate([f32bits(SPECIAL32), _random32(500, 60, 60)])
    (d,) = elementwise(f"rcp{rnd}.f32 {{d}}, {{a}};", [("f32", a)], ["f32"])
    one = f2b(1.0)
    exp = [model_div(F32, one, int(x), rnd[1:]) for x in a]
    assert_bits_equal(F32, d, exp, [a], f"rcp{rnd}.f32")


def test_rcp_f64_rn():
    a = np.concatenate([f64bits(SPECIAL64), _random64(300, 61)])
    (d,) = elementwise("rcp.rn.f64 {d}, {a};", [("f64", a)], ["f64"])
    exp = [model_div(F64, d2b(1.0), int(x)) for x in a]
    assert_bits_equal(F64, d, exp, [a], "rcp.rn.f64")


@pytest.mark.parametrize("rnd", [".rn", ".rz", ".rm", ".rp"])
def test_sqrt_f32_ieee(rnd):
    a = np.concatenate([f32bits(SPECIAL32), _random32(500, 70, 60), _random_bits32(300, 71) & 0x7FFFFFFF,
                        f32bits([4.0, 2.0, 0x00000004, 1.0e-40])])
    (d,) = elementwise(f"sqrt{rnd}.f32 {{d}}, {{a}};", [("f32", a)], ["f32"])
    exp = [model_sqrt(F32, int(x), rnd[1:]) for x in a]
    assert_bits_equal(F32, d, exp, [a], f"sqrt{rnd}.f32")


def test_sqrt_f64_rn():
    a = np.concatenate([f64bits(SPECIAL64), _random64(300, 72), _random64(200, 73) & 0x7FFFFFFFFFFFFFFF])
    (d,) = elementwise("sqrt.rn.f64 {d}, {a};", [("f64", a)], ["f64"])
    exp = [model_sqrt(F64, int(x)) for x in a]
    assert_bits_equal(F64, d, exp, [a], "sqrt.rn.f64")


# ----------------------------------------------------------------------------------------------------------
# approximate transcendentals
# ----------------------------------------------------------------------------------------------------------


def _f(b) -> float:
    return float(np.uint32(b).view(np.float32))


# ----------------------------------------------------------------------------------------------------------
# abs / neg / min / max / copysign / testp
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_abs_neg(ty):
    fmt = F32 if ty == "f32" else F64
    vals = SPECIAL32 if ty == "f32" else SPECIAL64
    a = f32bits(vals) if ty == "f32" else f64bits(vals)
    (ab,) = elementwise(f"abs.{ty} {{d}}, {{a}};", [(ty, a)], [ty])
    (ng,) = elementwise(f"neg.{ty} {{d}}, {{a}};", [(ty, a)], [ty])
    quiet = 1 << (fmt.man - 1)
    for x, g, n in zip(a, ab, ng, strict=True):
        x, g, n = int(x), int(g), int(n)
        if is_nan(fmt, x):
            # H100 (isa_abs_f32/isa_neg_f32): f32 NaN -> 0x7fffffff; (isa_abs_f64/isa_neg_f64): f64 NaN is
            # quieted, sign and payload untouched, by abs and neg alike
            want = fmt.canonical_nan if ty == "f32" else x | quiet
            assert (g, n) == (want, want), (hex(x), hex(g), hex(n))
        else:
            assert g == x & ~fmt.sign_bit, (hex(x), hex(g))
            assert n == x ^ fmt.sign_bit, (hex(x), hex(n))


def test_abs_neg_ftz_f32():
    a = f32bits([0x00000005, 0x80000005, -2.0, 0x807FFFFF])
    (ab,) = elementwise("abs.ftz.f32 {d}, {a};", [("f32", a)], ["f32"])
    (ng,) = elementwise("neg.ftz.f32 {d}, {a};", [("f32", a)], ["f32"])
    assert [int(x) for x in ab] == [0, 0, f2b(2.0), 0]
    assert [int(x) for x in ng] == [0x80000000, 0, f2b(2.0), 0]


def _model_minmax(fmt, op, a, b, nan_variant=False):
    an, bn = is_nan(fmt, a), is_nan(fmt, b)
    if an and bn:  # isa_min_f64: (NaN, NaN') -> NaN' quieted; f32: canonical
        return fmt.canonical_nan if fmt.name == "f32" else b | (1 << (fmt.man - 1))
    if an or bn:
        return fmt.canonical_nan if nan_variant else (b if an else a)
    if is_zero(fmt, a) and is_zero(fmt, b):
        # -0.0 is treated as smaller than +0.0
        if op == "min":
            return a | b
        return a & b
    fa = to_fraction(fmt, a) if not is_inf(fmt, a) else (-1 if sign_of(fmt, a) else 1) * Fraction(2) ** 5000
    fb = to_fraction(fmt, b) if not is_inf(fmt, b) else (-1 if sign_of(fmt, b) else 1) * Fraction(2) ** 5000
    if op == "min":
        return a if fa <= fb else b
    return a if fa >= fb else b


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_min_max(op, ty):
    fmt = F32 if ty == "f32" else F64
    a, b = _binary_inputs32(90) if ty == "f32" else _binary_inputs64(90)
    (d,) = elementwise(f"{op}.{ty} {{d}}, {{a}}, {{b}};", [(ty, a), (ty, b)], [ty])
    exp = [_model_minmax(fmt, op, int(x), int(y)) for x, y in zip(a, b, strict=True)]
    assert_bits_equal(fmt, d, exp, [a, b], f"{op}.{ty}")


@pytest.mark.parametrize("op", ["min", "max"])
def test_min_max_signed_zero_and_nan_rules(op):
    a = f32bits([-0.0, 0.0, QNAN32, 2.0, QNAN32, NNAN32, -INF])
    b = f32bits([0.0, -0.0, 2.0, QNAN32, NNAN32, QNAN32, QNAN32])
    (d,) = elementwise(f"{op}.f32 {{d}}, {{a}}, {{b}};", [("f32", a), ("f32", b)], ["f32"])
    z = 0x80000000 if op == "min" else 0
    assert [int(x) for x in d[:4]] == [z, z, f2b(2.0), f2b(2.0)]
    assert is_nan(F32, int(d[4])) and is_nan(F32, int(d[5]))
    assert int(d[6]) == 0xFF800000


@pytest.mark.parametrize("op", ["min", "max"])
def test_min_max_both_nan_is_canonical(op):
    a = f32bits([QNAN32, NNAN32, 0x7F800001])
    b = f32bits([NNAN32, 0x7FC12345, 0xFFC00000])
    (d,) = elementwise(f"{op}.f32 {{d}}, {{a}}, {{b}};", [("f32", a), ("f32", b)], ["f32"])
    assert [hex(int(x)) for x in d] == [hex(CANON_NAN32)] * 3


@pytest.mark.parametrize("op", ["min", "max"])
def test_min_max_nan_variant(op):
    a, b = _binary_inputs32(91)
    (d,) = elementwise(f"{op}.NaN.f32 {{d}}, {{a}}, {{b}};", [("f32", a), ("f32", b)], ["f32"])
    exp = [_model_minmax(F32, op, int(x), int(y), True) for x, y in zip(a, b, strict=True)]
    assert_bits_equal(F32, d, exp, [a, b], f"{op}.NaN.f32")


@pytest.mark.parametrize("op", ["min", "max"])
def test_min_max_ftz(op):
    a = f32bits([0x00000001, 0x80000001, 0x00000002, 1.0])
    b = f32bits([0x00000002, 0x00000001, 0x80000003, 0x00000001])
    (d,) = elementwise(f"{op}.ftz.f32 {{d}}, {{a}}, {{b}};", [("f32", a), ("f32", b)], ["f32"])
    got = [int(x) for x in d]
    assert got[0] == 0 and is_zero(F32, got[1]) and is_zero(F32, got[2])
    assert got[3] == (0 if op == "min" else f2b(1.0))


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_copysign(ty):
    fmt = F32 if ty == "f32" else F64
    a, b = _pairs(SPECIAL32 if ty == "f32" else SPECIAL64, fmt)
    (d,) = elementwise(f"copysign.{ty} {{d}}, {{a}}, {{b}};", [(ty, a), (ty, b)], [ty])
    # PTX: copy the sign of a into the value of b
    for x, y, g in zip(a, b, d, strict=True):
        want = (int(y) & ~fmt.sign_bit) | (int(x) & fmt.sign_bit)
        if is_nan(fmt, int(y)):
            assert is_nan(fmt, int(g))
        else:
            assert int(g) == want, (hex(int(x)), hex(int(y)), hex(int(g)))


TESTP = {
    "finite": lambda f, b: not is_nan(f, b) and not is_inf(f, b),
    "infinite": is_inf,
    "number": lambda f, b: not is_nan(f, b),
    "notanumber": is_nan,
    # zeros count as normal numbers for testp
    "normal": lambda f, b: not is_nan(f, b) and not is_inf(f, b) and not is_subnormal(f, b),
    "subnormal": is_subnormal,
}


def _bitmask_template(lines_for_op, ops):
    """Template that ORs one bit per op into {d} (a u32 output)."""
    t = ["mov.u32 {d}, 0;"]
    for k, op in enumerate(ops):
        t += lines_for_op(op)
        t += [f"selp.u32 %r31, {1 << k}, 0, %p3;", "or.b32 {d}, {d}, %r31;"]
    return "\n    ".join(t)


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_testp(ty):
    fmt = F32 if ty == "f32" else F64
    a = f32bits(SPECIAL32) if ty == "f32" else f64bits(SPECIAL64)
    ops = list(TESTP)
    tmpl = _bitmask_template(lambda op: [f"testp.{op}.{ty} %p3, {{a}};"], ops)
    (d,) = elementwise(tmpl, [(ty, a)], ["u32"])
    for x, got in zip(a, d, strict=True):
        for k, op in enumerate(ops):
            assert (int(got) >> k) & 1 == int(TESTP[op](fmt, int(x))), (op, hex(int(x)))


def test_model_sanity():
    """The reference model agrees with known IEEE results (guards the expectations themselves)."""
    assert round_fraction(F32, Fraction(1, 3)) == f2b(1.0 / 3.0)
    assert model_add(F32, f2b(1.0), f2b(2.0**-24)) == f2b(1.0)
    assert model_add(F32, f2b(1.0), f2b(2.0**-24) + 1) == f2b(1.0) + 1
    assert model_mul(F32, 0x7F7FFFFF, f2b(2.0), "rz") == 0x7F7FFFFF
    assert model_sqrt(F64, d2b(2.0)) == d2b(math.sqrt(2.0))


@pytest.mark.parametrize("instr", ["div.rn.ftz.f32", "sqrt.rn.ftz.f32", "rcp.rn.ftz.f32"])
def test_ieee_ops_with_ftz(instr):
    sub = [0x00000001, 0x80000001, 0x007FFFFF, 0x00400000, 0x80400000]
    norm = [1.0, -1.0, 2.0**-100, 2.0**100, 3.0, 0.0, -0.0, 2.0**-126 * 1.25]
    a, b = _pairs(sub + norm)
    op = instr.split(".")[0]
    if op == "div":
        (d,) = elementwise(f"{instr} {{d}}, {{a}}, {{b}};", [("f32", a), ("f32", b)], ["f32"])
    else:
        (d,) = elementwise(f"{instr} {{d}}, {{a}};", [("f32", a)], ["f32"])
    keep, exp = [], []
    for i in range(len(a)):
        x, y = ftz_in(F32, int(a[i])), ftz_in(F32, int(b[i]))
        if op == "div":
            r = model_div(F32, x, y)
            exact = (None if r is None or is_inf(F32, x) or is_inf(F32, y) or is_zero(F32, y)
                     else to_fraction(F32, x) / to_fraction(F32, y))
        elif op == "rcp":
            r = model_div(F32, f2b(1.0), x)
            exact = None if is_zero(F32, x) or is_nan(F32, x) else 1 / to_fraction(F32, x)
        else:
            r = model_sqrt(F32, x)
            exact = None
        keep.append(i)
        exp.append((0x80000000 if exact < 0 else 0) if _tiny_before_rounding(exact) else ftz_out(F32, r))
    keep = np.array(keep)
    assert_bits_equal(F32, d[keep], exp, [a[keep], b[keep]], instr)


def test_lg2_ex2_subnormal_range():
    x = f32bits([2.0**-140, 2.0**-149, 2.0**-127])
    (lg,) = elementwise("lg2.approx.f32 {d}, {a};", [("f32", x)], ["f32"])
    (lgz,) = elementwise("lg2.approx.ftz.f32 {d}, {a};", [("f32", x)], ["f32"])
    assert [_f(v) for v in lg] == pytest.approx([-140.0, -149.0, -127.0], abs=2.0**-15)
    assert [int(v) for v in lgz] == [0xFF800000] * 3  # subnormal input flushed to zero -> -inf
    e = f32bits([-140.0, -130.5, -149.0])
    (ex,) = elementwise("ex2.approx.f32 {d}, {a};", [("f32", e)], ["f32"])
    (exz,) = elementwise("ex2.approx.ftz.f32 {d}, {a};", [("f32", e)], ["f32"])
    for v, want in zip(ex, [2.0**-140, 2.0**-130.5, 2.0**-149], strict=True):
        assert abs(_f(v) - want) <= want * 2.0**-8
    assert [int(v) for v in exz] == [0, 0, 0]


CMP32 = {
    "eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
    "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y,
}
CMP_OPS = list(CMP32) + [o + "u" for o in CMP32] + ["num", "nan"]


def _cmp_model(fmt, op, x, y):
    un = is_nan(fmt, x) or is_nan(fmt, y)
    if op == "num":
        return not un
    if op == "nan":
        return un
    if op not in CMP32:
        return un or CMP32[op[:-1]](_val(fmt, x), _val(fmt, y))
    return (not un) and CMP32[op](_val(fmt, x), _val(fmt, y))


def _flag_garbage(true_bits):
    """%p3 = (%r30 == true value); bit 31 of {d} records any value that is neither true nor 0."""
    return [f"setp.eq.b32 %p3, %r30, {true_bits};", "setp.ne.b32 %p4, %r30, 0;",
            f"setp.ne.and.b32 %p4, %r30, {true_bits}, %p4;", "selp.u32 %r32, 0x80000000, 0, %p4;",
            "or.b32 {d}, {d}, %r32;"]


@pytest.mark.parametrize("form", ["setp", "set.f32", "set.u32"])
@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_setp_and_set_float(form, ty):
    fmt = F32 if ty == "f32" else F64
    a, b = _pairs(SPECIAL32 if ty == "f32" else SPECIAL64, fmt)
    if form == "setp":
        def lines(op):
            return [f"setp.{op}.{ty} %p3, {{a}}, {{b}};"]
    elif form == "set.f32":
        def lines(op):  # true is 1.0f, false is 0
            head = [f"set.{op}.f32.{ty} %f20, {{a}}, {{b}};", "mov.b32 %r30, %f20;"]
            return head + _flag_garbage("0x3F800000")
    else:
        def lines(op):  # true is 0xffffffff, false is 0
            return [f"set.{op}.u32.{ty} %r30, {{a}}, {{b}};"] + _flag_garbage("0xFFFFFFFF")
    (d,) = elementwise(_bitmask_template(lines, CMP_OPS), [(ty, a), (ty, b)], ["u32"])
    bad = []
    for x, y, got in zip(a, b, d, strict=True):
        want = sum(int(_cmp_model(fmt, op, int(x), int(y))) << k for k, op in enumerate(CMP_OPS))
        if int(got) != want:
            bad.append((hex(int(x)), hex(int(y)), hex(want), hex(int(got))))
    assert not bad, f"{form}.{ty}: {bad[:10]}"


def _val(fmt, b):
    if is_inf(fmt, b):
        return -math.inf if sign_of(fmt, b) else math.inf
    return to_fraction(fmt, b)
