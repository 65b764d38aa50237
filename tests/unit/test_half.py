"""Half precision (f16, f16x2) and bfloat16 (bf16, bf16x2) instructions.

References: the exact rounding model in floatutil (Fraction based, formats F16 / BF16), cross-checked by
numpy.float16 where numpy is exact (conversions).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tests.unit.floatutil import (
    BF16,
    F16,
    F32,
    F64,
    TF32,
    assert_bits_equal,
    d2b,
    elementwise,
    f2b,
    is_nan,
    is_zero,
    model_add,
    model_fma,
    model_mul,
    model_sub,
    round_fraction,
    sign_of,
    to_fraction,
)
from tests.unit.goldenutil import golden_test

H_SPECIAL = [
    0x0000, 0x8000, 0x3C00, 0xBC00, 0x3800, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE01, 0x0001, 0x8001,
    0x03FF, 0x0400, 0x3C01, 0x2E66, 0x4200, 0x63D0, 0xB555, 0x1400, 0x0200,
]
BF_SPECIAL = [
    0x0000, 0x8000, 0x3F80, 0xBF80, 0x3F00, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x0001, 0x8001,
    0x007F, 0x0080, 0x3F81, 0x3DCD, 0x4040, 0x447A, 0xBEAB, 0x0C00,
]


def _pairs16(vals):
    v = np.array(vals, dtype=np.uint16)
    return np.repeat(v, len(v)), np.tile(v, len(v))


def _random_f16(n, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-16, 14, n))).astype(np.float16)
    return x.view(np.uint16)


def _random_bf16(n, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-60, 60, n))).astype(np.float32)
    return (x.view(np.uint32) >> 16).astype(np.uint16)


def _inputs16(fmt, seed):
    sp = H_SPECIAL if fmt is F16 else BF_SPECIAL
    a, b = _pairs16(sp)
    rnd = _random_f16 if fmt is F16 else _random_bf16
    return np.concatenate([a, rnd(300, seed)]), np.concatenate([b, rnd(300, seed + 1)])


MODELS = {"add": model_add, "sub": model_sub, "mul": model_mul}


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("rnd", ["", ".rn"])
def test_f16_binary(op, rnd):
    a, b = _inputs16(F16, 10)
    (d,) = elementwise(f"{op}{rnd}.f16 {{d}}, {{a}}, {{b}};", [("b16", a), ("b16", b)], ["b16"])
    exp = [MODELS[op](F16, int(x), int(y)) for x, y in zip(a, b, strict=True)]
    assert_bits_equal(F16, d, exp, [a, b], f"{op}{rnd}.f16")


def test_f16_fma():
    a, b = _inputs16(F16, 20)
    c = np.roll(b, 13)
    # c close to -a*b so that the fused single rounding matters
    x, y = _random_f16(200, 21), _random_f16(200, 22)
    prod = x.view(np.float16).astype(np.float32) * y.view(np.float16).astype(np.float32)
    with np.errstate(over="ignore"):
        z = (-prod).astype(np.float16)
    a, b, c = np.concatenate([a, x]), np.concatenate([b, y]), np.concatenate([c, z.view(np.uint16)])
    (d,) = elementwise("fma.rn.f16 {d}, {a}, {b}, {c};", [("b16", a), ("b16", b), ("b16", c)], ["b16"])
    exp = [model_fma(F16, int(p), int(q), int(r)) for p, q, r in zip(a, b, c, strict=True)]
    assert_bits_equal(F16, d, exp, [a, b, c], "fma.rn.f16")


def _pack(lo, hi):
    return (lo.astype(np.uint32) | (hi.astype(np.uint32) << 16)).astype(np.uint32)


def _unpack(x):
    x = x.astype(np.uint32)
    return (x & 0xFFFF).astype(np.uint16), (x >> 16).astype(np.uint16)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "fma"])
@pytest.mark.parametrize("fmt_name", ["f16x2", "bf16x2"])
def test_packed_x2(op, fmt_name):
    fmt = F16 if fmt_name == "f16x2" else BF16
    a, b = _inputs16(fmt, 30)
    c = np.roll(b, 7)
    n = len(a) // 2
    A, B, C = _pack(a[:n], a[n:2 * n]), _pack(b[:n], b[n:2 * n]), _pack(c[:n], c[n:2 * n])
    if op == "fma":
        tmpl = f"fma.rn.{fmt_name} {{d}}, {{a}}, {{b}}, {{c}};"
        ins = [("x2", A), ("x2", B), ("x2", C)]
    else:
        tmpl = f"{op}.rn.{fmt_name} {{d}}, {{a}}, {{b}};"
        ins = [("x2", A), ("x2", B)]
    target = "sm_90" if (fmt is BF16 and op != "fma") else None
    (d,) = elementwise(tmpl, ins, ["x2"], target=target)
    lo, hi = _unpack(d)
    got = np.concatenate([lo, hi])
    aa, bb, cc = a[:2 * n], b[:2 * n], c[:2 * n]
    if op == "fma":
        exp = [model_fma(fmt, int(p), int(q), int(r)) for p, q, r in zip(aa, bb, cc, strict=True)]
    else:
        exp = [MODELS[op](fmt, int(p), int(q)) for p, q in zip(aa, bb, strict=True)]
    assert_bits_equal(fmt, got, exp, [aa, bb], f"{op}.{fmt_name}")


def test_bf16_fma_scalar():
    a, b = _inputs16(BF16, 40)
    c = np.roll(a, 5)
    (d,) = elementwise("fma.rn.bf16 {d}, {a}, {b}, {c};", [("b16", a), ("b16", b), ("b16", c)], ["b16"])
    exp = [model_fma(BF16, int(p), int(q), int(r)) for p, q, r in zip(a, b, c, strict=True)]
    assert_bits_equal(BF16, d, exp, [a, b, c], "fma.rn.bf16")


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_bf16_scalar_sm90(op):
    a, b = _inputs16(BF16, 41)
    (d,) = elementwise(f"{op}.rn.bf16 {{d}}, {{a}}, {{b}};", [("b16", a), ("b16", b)], ["b16"],
                       target="sm_90")
    exp = [MODELS[op](BF16, int(x), int(y)) for x, y in zip(a, b, strict=True)]
    assert_bits_equal(BF16, d, exp, [a, b], f"{op}.rn.bf16")


def _neg_abs_model(fmt, op: str, x: int, flush: bool = False) -> int:
    """neg/abs flip/clear the sign bit, but a NaN becomes 0x7fff and .ftz flushes a subnormal first
    (golden isa_neg_f16(0x7e00) = 0x7fff, isa_abs_bf16(0x7f81) = 0x7fff, isa_neg_ftz_f16x2(0x00010000) =
    0x80008000)."""
    if is_nan(fmt, x):
        return 0x7FFF
    if flush and (x & fmt.exp_mask) == 0:
        x &= fmt.sign_bit
    return x ^ 0x8000 if op == "neg" else x & 0x7FFF


@pytest.mark.parametrize("ftz", ["", ".ftz"])
def test_f16_neg_abs(ftz):
    a = np.concatenate([np.array(H_SPECIAL, dtype=np.uint16), np.arange(0, 65536, 61, dtype=np.uint16)])
    for op in ("neg", "abs"):
        (d,) = elementwise(f"{op}{ftz}.f16 {{d}}, {{a}};", [("b16", a)], ["b16"])
        want = [_neg_abs_model(F16, op, int(x), bool(ftz)) for x in a]
        assert_bits_equal(F16, d, want, [a], f"{op}{ftz}.f16")
        n = len(a) // 2
        A = _pack(a[:n], a[n:2 * n])
        (d2,) = elementwise(f"{op}{ftz}.f16x2 {{d}}, {{a}};", [("x2", A)], ["x2"])
        lo, hi = _unpack(d2)
        assert_bits_equal(F16, np.concatenate([lo, hi]), want[:2 * n], [a[:2 * n]], f"{op}{ftz}.f16x2")


def _model_minmax16(fmt, op, a, b, nan_variant=False):
    an, bn = is_nan(fmt, a), is_nan(fmt, b)
    if an and bn:
        return None
    if an or bn:
        return None if nan_variant else (b if an else a)
    if is_zero(fmt, a) and is_zero(fmt, b):
        return (a | b) if op == "min" else (a & b)  # -0 < +0
    fa, fb = _value(fmt, a), _value(fmt, b)
    if op == "min":
        return a if fa <= fb else b
    return a if fa >= fb else b


def _value(fmt, b):
    if (b & fmt.exp_mask) == fmt.exp_mask:
        return float("-inf") if sign_of(fmt, b) else float("inf")
    return to_fraction(fmt, b)


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("variant", ["", ".NaN"])
def test_f16_min_max(op, variant):
    a, b = _inputs16(F16, 50)
    (d,) = elementwise(f"{op}{variant}.f16 {{d}}, {{a}}, {{b}};", [("b16", a), ("b16", b)], ["b16"])
    exp = [_model_minmax16(F16, op, int(x), int(y), variant == ".NaN") for x, y in zip(a, b, strict=True)]
    assert_bits_equal(F16, d, exp, [a, b], f"{op}{variant}.f16")
    n = len(a) // 2
    A, B = _pack(a[:n], a[n:2 * n]), _pack(b[:n], b[n:2 * n])
    (d2,) = elementwise(f"{op}{variant}.f16x2 {{d}}, {{a}}, {{b}};", [("x2", A), ("x2", B)], ["x2"])
    lo, hi = _unpack(d2)
    assert_bits_equal(F16, np.concatenate([lo, hi]), exp[:2 * n], [a[:2 * n], b[:2 * n]], f"{op}.f16x2")


@pytest.mark.parametrize("ftz", [False, True])
@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("op", ["min", "max"])
def test_f16_min_max_xorsign_abs(op, nan, ftz):
    """.xorsign.abs: min/max of |a| and |b| with the sign bit sign(a) ^ sign(b); a NaN result is 0x7fff
    without that sign (golden isa_min_xorsign_abs_f16(0x0000, 0xbc00) = 0x8000)."""
    from tests.unit.floatutil import ftz_in

    a, b = _inputs16(F16, 52)
    mods = (".ftz" if ftz else "") + (".NaN" if nan else "") + ".xorsign.abs"
    (d,) = elementwise(f"{op}{mods}.f16 {{d}}, {{a}}, {{b}};", [("b16", a), ("b16", b)], ["b16"], target="sm_90")
    want = []
    for x, y in zip(a, b, strict=True):
        x, y = int(x), int(y)
        if ftz:
            x, y = ftz_in(F16, x), ftz_in(F16, y)
        r = _model_minmax16(F16, op, x & 0x7FFF, y & 0x7FFF, nan)
        want.append(0x7FFF if r is None else r | ((x ^ y) & 0x8000))
    assert_bits_equal(F16, d, want, [a, b], f"{op}{mods}.f16")
    if not ftz:
        (e,) = elementwise(f"{op}{mods}.bf16 {{d}}, {{a}}, {{b}};", [("b16", a), ("b16", b)], ["b16"],
                           target="sm_90")
        want = []
        for x, y in zip(a, b, strict=True):
            r = _model_minmax16(BF16, op, int(x) & 0x7FFF, int(y) & 0x7FFF, nan)
            want.append(0x7FFF if r is None else r | ((int(x) ^ int(y)) & 0x8000))
        assert_bits_equal(BF16, e, want, [a, b], f"{op}{mods}.bf16")


@pytest.mark.parametrize("op", ["min", "max"])
def test_bf16_min_max(op):
    a, b = _inputs16(BF16, 51)
    (d,) = elementwise(f"{op}.bf16 {{d}}, {{a}}, {{b}};", [("b16", a), ("b16", b)], ["b16"])
    exp = [_model_minmax16(BF16, op, int(x), int(y)) for x, y in zip(a, b, strict=True)]
    assert_bits_equal(BF16, d, exp, [a, b], f"{op}.bf16")


CMP = {
    "eq": lambda x, y, u: (not u) and x == y,
    "ne": lambda x, y, u: (not u) and x != y,
    "lt": lambda x, y, u: (not u) and x < y,
    "le": lambda x, y, u: (not u) and x <= y,
    "gt": lambda x, y, u: (not u) and x > y,
    "ge": lambda x, y, u: (not u) and x >= y,
    "equ": lambda x, y, u: u or x == y,
    "neu": lambda x, y, u: u or x != y,
    "ltu": lambda x, y, u: u or x < y,
    "geu": lambda x, y, u: u or x >= y,
    "num": lambda x, y, u: not u,
    "nan": lambda x, y, u: u,
}


def _cmp(fmt, op, a, b):
    u = is_nan(fmt, a) or is_nan(fmt, b)
    if u:
        return CMP[op](0, 0, True)
    return CMP[op](_value(fmt, a), _value(fmt, b), False)


def test_setp_f16_all_comparisons():
    # one kernel: bit k of the result is setp.<op k>.f16
    a, b = _pairs16(H_SPECIAL)
    ops = list(CMP)
    lines = ["mov.u32 {d}, 0;"]
    for k, op in enumerate(ops):
        lines += [f"setp.{op}.f16 %p3, {{a}}, {{b}};", f"selp.u32 %r31, {1 << k}, 0, %p3;",
                  "or.b32 {d}, {d}, %r31;"]
    (p,) = elementwise("\n    ".join(lines), [("b16", a), ("b16", b)], ["u32"])
    for x, y, got in zip(a, b, p, strict=True):
        want = sum(int(_cmp(F16, op, int(x), int(y))) << k for k, op in enumerate(ops))
        assert int(got) == want, (hex(int(x)), hex(int(y)), hex(want), hex(int(got)))


@pytest.mark.parametrize("op", ["lt", "eq", "geu", "nan"])
def test_setp_f16x2_two_predicates(op):
    a, b = _pairs16(H_SPECIAL)
    n = len(a) // 2
    A, B = _pack(a[:n], a[n:2 * n]), _pack(b[:n], b[n:2 * n])
    p, q = elementwise(f"setp.{op}.f16x2 {{d}}|{{d2}}, {{a}}, {{b}};", [("x2", A), ("x2", B)],
                       ["pred", "pred"])
    exp_lo = [int(_cmp(F16, op, int(x), int(y))) for x, y in zip(a[:n], b[:n], strict=True)]
    exp_hi = [int(_cmp(F16, op, int(x), int(y))) for x, y in zip(a[n:2 * n], b[n:2 * n], strict=True)]
    assert [int(v) for v in p] == exp_lo  # first predicate: lower halves
    assert [int(v) for v in q] == exp_hi


def test_setp_bf16():
    a, b = _pairs16(BF_SPECIAL)
    (p,) = elementwise("setp.ltu.bf16 {d}, {a}, {b};", [("b16", a), ("b16", b)], ["pred"], target="sm_90")
    exp = [int(_cmp(BF16, "ltu", int(x), int(y))) for x, y in zip(a, b, strict=True)]
    assert [int(v) for v in p] == exp


def test_set_f16_forms():
    a, b = _pairs16(H_SPECIAL)
    (r,) = elementwise("set.lt.u32.f16 {d}, {a}, {b};", [("b16", a), ("b16", b)], ["u32"])
    (h,) = elementwise("set.ge.f16.f16 {d}, {a}, {b};", [("b16", a), ("b16", b)], ["b16"])
    lt = [_cmp(F16, "lt", int(x), int(y)) for x, y in zip(a, b, strict=True)]
    ge = [_cmp(F16, "ge", int(x), int(y)) for x, y in zip(a, b, strict=True)]
    assert [int(v) for v in r] == [0xFFFFFFFF if t else 0 for t in lt]
    assert [int(v) for v in h] == [0x3C00 if t else 0 for t in ge]
    n = len(a) // 2
    A, B = _pack(a[:n], a[n:2 * n]), _pack(b[:n], b[n:2 * n])
    (x2,) = elementwise("set.lt.f16x2.f16x2 {d}, {a}, {b};", [("x2", A), ("x2", B)], ["x2"])
    (u2,) = elementwise("set.lt.u32.f16x2 {d}, {a}, {b};", [("x2", A), ("x2", B)], ["x2"])
    for i in range(n):
        lo, hi = lt[i], lt[n + i]
        assert int(x2[i]) == (0x3C00 if lo else 0) | ((0x3C00 if hi else 0) << 16)
        assert int(u2[i]) == (0xFFFF if lo else 0) | ((0xFFFF if hi else 0) << 16)


# ----------------------------------------------------------------------------------------------------------
# conversions
# ----------------------------------------------------------------------------------------------------------


def _f32_inputs(seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(600) * np.exp2(rng.integers(-30, 20, 600))).astype(np.float32).view(np.uint32)
    specials = [0.0, -0.0, 1.0, 65504.0, 65519.99, 65520.0, -65520.0, 1e10, -1e10, 5.960464477539063e-08,
                2.98023223876953125e-08, 2.98023223876953126e-08, 1e-10, -1e-10, 1.00048828125, 1.00146484375,
                float("inf"), float("-inf"), 3.3895313892515355e38, 3.4e38, 1e-39, 0.1, -0.3]
    sp = [f2b(v) for v in specials] + [0x7FC00000, 0xFFC00001, 0x7F800001, 0x3F807FFF, 0x3F808000,
                                       0x3F818000, 0x7F7FFFFF, 0x00000001, 0x80800000]
    return np.concatenate([np.array(sp, dtype=np.uint32), x, rng.integers(0, 2**32, 200, dtype=np.uint64)
                           .astype(np.uint32)])


def _cvt_model(fmt, x, mode, src_fmt=F32):
    if is_nan(src_fmt, x):
        return None
    if (x & src_fmt.exp_mask) == src_fmt.exp_mask:
        return fmt.inf | (fmt.sign_bit if sign_of(src_fmt, x) else 0)
    return round_fraction(fmt, to_fraction(src_fmt, x), mode, sign_of(src_fmt, x))


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_cvt_f16_f32(mode):
    x = _f32_inputs(60)
    (d,) = elementwise(f"cvt.{mode}.f16.f32 {{d}}, {{a}};", [("f32", x)], ["b16"])
    exp = [_cvt_model(F16, int(v), mode) for v in x]
    assert_bits_equal(F16, d, exp, [x], f"cvt.{mode}.f16.f32")
    if mode == "rn":  # numpy's float32 -> float16 cast is correctly rounded: an independent second opinion
        with np.errstate(over="ignore", invalid="ignore"):
            ref = x.view(np.float32).astype(np.float16).view(np.uint16)
        ok = ~np.isnan(x.view(np.float32))
        assert np.array_equal(d[ok], ref[ok])


def test_cvt_f16_from_f64_and_back():
    vals = [0.0, -0.0, 1.0 / 3.0, 65504.0, 65520.0, 1e-8, -2.9802322387695312e-08, 1e300, 0.1]
    x = np.array([d2b(v) for v in vals] + [0x7FF8000000000000], dtype=np.uint64)
    (d,) = elementwise("cvt.rn.f16.f64 {d}, {a};", [("f64", x)], ["b16"])
    # an f64 NaN keeps its sign and top payload bits, quieted (golden isa_cvt_rn_f16_f64(NaN) = 0x7e00)
    exp = [0x7E00 if is_nan(F64, int(v)) else _cvt_model(F16, int(v), "rn", F64) for v in x]
    assert_bits_equal(F16, d, exp, [x], "cvt.rn.f16.f64")
    h = np.array(H_SPECIAL + [0x7C01, 0xFFFF], dtype=np.uint16)
    (w,) = elementwise("cvt.f64.f16 {d}, {a};", [("b16", h)], ["f64"])
    # widening keeps the payload too, quieted (golden isa_cvt_f64_f16(0x7e01) = 0x7ff8040000000000)
    exp = [(int(v) & 0x8000) << 48 | 0x7FF8000000000000 | (int(v) & 0x3FF) << 42 if is_nan(F16, int(v))
           else d2b(float(np.uint16(v).view(np.float16))) for v in h]
    assert_bits_equal(F64, w, exp, [h], "cvt.f64.f16")


def test_cvt_f32_from_f16_exact():
    h = np.concatenate([np.array(H_SPECIAL, dtype=np.uint16), np.arange(0, 65536, 97, dtype=np.uint16)])
    (d,) = elementwise("cvt.f32.f16 {d}, {a};", [("b16", h)], ["f32"])
    exp = [None if is_nan(F16, int(v)) else f2b(float(np.uint16(v).view(np.float16))) for v in h]
    assert_bits_equal(F32, d, exp, [h], "cvt.f32.f16")


@pytest.mark.parametrize("mode", ["rn", "rz"])
def test_cvt_bf16_f32(mode):
    x = _f32_inputs(70)
    (d,) = elementwise(f"cvt.{mode}.bf16.f32 {{d}}, {{a}};", [("f32", x)], ["b16"])
    exp = [_cvt_model(BF16, int(v), mode) for v in x]
    assert_bits_equal(BF16, d, exp, [x], f"cvt.{mode}.bf16.f32")


def test_cvt_bf16_rn_manual_rne():
    # round-to-nearest-even done by hand on the upper 16 bits
    x = np.array([0x3F808000, 0x3F818000, 0x3F808001, 0x3F80FFFF, 0x7F7FFFFF, 0xBF808000, 0x00008000],
                 dtype=np.uint32)
    (d,) = elementwise("cvt.rn.bf16.f32 {d}, {a};", [("f32", x)], ["b16"])
    want = []
    for v in (int(t) for t in x):
        hi, lo = v >> 16, v & 0xFFFF
        if lo > 0x8000 or (lo == 0x8000 and hi & 1):
            hi += 1
        want.append(hi)
    assert [int(t) for t in d] == want


def test_cvt_f32_from_bf16():
    h = np.concatenate([np.array(BF_SPECIAL, dtype=np.uint16), np.arange(0, 65536, 101, dtype=np.uint16)])
    (d,) = elementwise("cvt.f32.bf16 {d}, {a};", [("b16", h)], ["f32"], target="sm_90")
    # a plain shift, NaNs included, signalling ones too (golden isa_cvt_f32_bf16(0x7f81) = 0x7f810000)
    exp = [int(v) << 16 for v in h]
    assert_bits_equal(F32, d, exp, [h], "cvt.f32.bf16")


def test_bf16_to_f32_by_shift_on_sm80():
    # the sm_80 idiom: place the bf16 bits in the upper half of a 32-bit register
    h = np.array(BF_SPECIAL, dtype=np.uint16)
    (d,) = elementwise("mov.b32 {d}, {{%h0, {a}}};", [("b16", h)], ["u32"], pre="    mov.b16 %h0, 0;")
    assert [int(v) for v in d] == [int(v) << 16 for v in h]


@pytest.mark.parametrize("ty,fmt", [("f16x2", F16), ("bf16x2", BF16)])
def test_cvt_x2_from_two_f32(ty, fmt):
    x = _f32_inputs(80)
    y = np.roll(x, 17)
    (d,) = elementwise(f"cvt.rn.{ty}.f32 {{d}}, {{a}}, {{b}};", [("f32", x), ("f32", y)], ["x2"])
    lo, hi = _unpack(d)
    # the first source lands in the upper half
    assert_bits_equal(fmt, hi, [_cvt_model(fmt, int(v), "rn") for v in x], [x], f"cvt.rn.{ty}.f32 (hi)")
    assert_bits_equal(fmt, lo, [_cvt_model(fmt, int(v), "rn") for v in y], [y], f"cvt.rn.{ty}.f32 (lo)")


def test_cvt_relu_f16x2():
    vals = [1.5, -1.5, 0.25, -1e-3, 70000.0, -70000.0, 3.0, -0.5]
    x = np.array([f2b(v) for v in vals], dtype=np.uint32)
    y = x[::-1].copy()
    (d,) = elementwise("cvt.rn.relu.f16x2.f32 {d}, {a}, {b};", [("f32", x), ("f32", y)], ["x2"])
    lo, hi = _unpack(d)

    def relu(v):
        r = _cvt_model(F16, int(v), "rn")
        return 0 if r & 0x8000 else r

    assert [int(t) for t in hi] == [relu(v) for v in x]
    assert [int(t) for t in lo] == [relu(v) for v in y]


def test_model_sanity():
    assert round_fraction(F16, to_fraction(F32, f2b(65520.0))) == 0x7C00
    assert round_fraction(F16, to_fraction(F32, f2b(65519.99))) == 0x7BFF
    assert round_fraction(BF16, to_fraction(F32, 0x3F808000)) == 0x3F80
    assert round_fraction(BF16, to_fraction(F32, 0x3F818000)) == 0x3F82


# ----------------------------------------------------------------------------------------------------------
# f16 <-> integer, f16 round-to-integral, tf32
# ----------------------------------------------------------------------------------------------------------

H_INT_INPUTS = np.array(H_SPECIAL + [0x3E00, 0xBE00, 0x4100, 0xC100, 0x3A00, 0xBA00, 0x5BFF, 0x7800, 0xF800,
                                     0x4B00, 0x57FF, 0x3BFF, 0xBBFF], dtype=np.uint16)


def _f16_to_int(raw, mode, lo, hi):
    if is_nan(F16, raw):
        # 0x8000000000000000 into a 64-bit destination (unsigned too), 0 into narrower ones (golden
        # isa_cvt_rni_u64_f16, isa_cvt_rni_s32_f16)
        return 1 << 63 if hi >= 2**63 - 1 else 0
    if (raw & F16.exp_mask) == F16.exp_mask:
        return lo if sign_of(F16, raw) else hi
    v = to_fraction(F16, raw)
    fl = v.numerator // v.denominator
    if mode == "rzi":
        r = fl if v >= 0 or fl == v else fl + 1
    elif mode == "rmi":
        r = fl
    elif mode == "rpi":
        r = fl if fl == v else fl + 1
    else:
        rem = v - fl
        r = fl + 1 if (rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl % 2)) else fl
    return min(max(r, lo), hi)


@pytest.mark.parametrize("mode", ["rni", "rzi", "rmi", "rpi"])
@pytest.mark.parametrize("dst,kind,lo,hi", [("s32", "s32", -(2**31), 2**31 - 1), ("u32", "u32", 0, 2**32 - 1),
                                            ("s16", "b16", -(2**15), 2**15 - 1), ("u64", "u64", 0, 2**64 - 1),
                                            ("s64", "s64", -(2**63), 2**63 - 1)])
def test_cvt_f16_to_int(mode, dst, kind, lo, hi):
    x = H_INT_INPUTS
    (d,) = elementwise(f"cvt.{mode}.{dst}.f16 {{d}}, {{a}};", [("b16", x)], [kind])
    bits = 16 if kind == "b16" else (32 if dst[1:] == "32" else 64)
    want = [_f16_to_int(int(v), mode, lo, hi) & ((1 << bits) - 1) for v in x]
    got = [int(v) & ((1 << bits) - 1) for v in d]
    bad = [(hex(int(v)), w, g) for v, w, g in zip(x, want, got, strict=True) if w != g]
    assert not bad, f"cvt.{mode}.{dst}.f16: {bad[:10]}"


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
@pytest.mark.parametrize("src,kind", [("s32", "s32"), ("u32", "u32"), ("s64", "s64"), ("u64", "u64")])
def test_cvt_int_to_f16(mode, src, kind):
    vals = [0, 1, -1, 2047, 2049, 2051, 4097, 65504, 65519, 65520, 65536, 100000, -65520, -70000, 12345,
            -12345, 2**31 - 1, -(2**31), 2**40 + 3, 1025, -2049]
    dt = {"s32": np.int32, "u32": np.uint32, "s64": np.int64, "u64": np.uint64}[src]
    bits = int(src[1:])
    raw = np.array([v & ((1 << bits) - 1) for v in vals], dtype=np.uint64).astype(dt)
    (d,) = elementwise(f"cvt.{mode}.f16.{src} {{d}}, {{a}};", [(kind, raw)], ["b16"])
    want = []
    for r in raw:
        v = int(r)
        if src[0] == "s" and v >= 1 << (bits - 1):
            v -= 1 << bits
        want.append(round_fraction(F16, Fraction(v), mode))
    assert_bits_equal(F16, d, want, [raw], f"cvt.{mode}.f16.{src}")


@pytest.mark.parametrize("mode", ["rni", "rzi", "rmi", "rpi"])
def test_cvt_f16_round_to_integral(mode):
    x = H_INT_INPUTS
    (d,) = elementwise(f"cvt.{mode}.f16.f16 {{d}}, {{a}};", [("b16", x)], ["b16"])
    want = []
    for v in (int(t) for t in x):
        if is_nan(F16, v):
            want.append(None)
        elif (v & F16.exp_mask) == F16.exp_mask:
            want.append(v)
        else:
            big = 2**40
            r = _f16_to_int(v, mode, -big, big)
            want.append(round_fraction(F16, Fraction(r), "rn", sign_of(F16, v)))
    assert_bits_equal(F16, d, want, [x], f"cvt.{mode}.f16.f16")


def test_cvt_rna_tf32():
    rng = np.random.default_rng(90)
    x = (rng.standard_normal(500) * np.exp2(rng.integers(-60, 60, 500))).astype(np.float32).view(np.uint32)
    # exact ties (low 13 bits == 0x1000) must round away from zero
    ties = np.array([0x3F801000, 0xBF801000, 0x3F803000, 0x40000FFF, 0x40001001], dtype=np.uint32)
    sp = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x3F800000], dtype=np.uint32)
    x = np.concatenate([x, ties, sp])
    (d,) = elementwise("cvt.rna.tf32.f32 {d}, {a};", [("f32", x)], ["b32"])
    want = []
    for v in (int(t) for t in x):
        if (v & 0x7F800000) == 0x7F800000:
            want.append(v)
        else:
            want.append(round_fraction(TF32, to_fraction(F32, v), "rna", sign_of(F32, v)) << 13)
    assert_bits_equal(F32, d, want, [x], "cvt.rna.tf32.f32")


@pytest.mark.parametrize("instr", ["add.ftz.f16", "mul.ftz.f16", "sub.rn.ftz.f16", "fma.rn.ftz.f16",
                                   "add.ftz.f16x2", "fma.rn.ftz.f16x2"])
def test_f16_ftz(instr):
    from tests.unit.floatutil import ftz_in

    sub = [0x0001, 0x8001, 0x03FF, 0x0200, 0x8200]
    norm = [0x3C00, 0xBC00, 0x0400, 0x8400, 0x0401, 0x1000, 0x0000, 0x8000, 0x2000, 0x4200, 0x3BFF, 0x3BFE,
            0x08C3, 0x36B8]
    a, b = _pairs16(sub + norm)
    c = np.roll(b, 3)
    op = instr.split(".")[0]
    packed = instr.endswith("x2")
    ins = [a, b, c] if op == "fma" else [a, b]
    if packed:
        n = len(a) // 2
        ins_p = [("x2", _pack(v[:n], v[n:2 * n])) for v in ins]
        (dd,) = elementwise(f"{instr} {{d}}, " + ", ".join("{" + k + "}" for k in "abc"[:len(ins)]) + ";",
                            ins_p, ["x2"])
        lo, hi = _unpack(dd)
        d = np.concatenate([lo, hi])
        a, b, c = a[:2 * n], b[:2 * n], c[:2 * n]
    else:
        (d,) = elementwise(f"{instr} {{d}}, " + ", ".join("{" + k + "}" for k in "abc"[:len(ins)]) + ";",
                           [("b16", v) for v in ins], ["b16"])
    exp = []
    for i in range(len(a)):
        x, y, z = ftz_in(F16, int(a[i])), ftz_in(F16, int(b[i])), ftz_in(F16, int(c[i]))
        if op == "fma":
            r = model_fma(F16, x, y, z)
            ex = to_fraction(F16, x) * to_fraction(F16, y) + to_fraction(F16, z) if all(
                (v & F16.exp_mask) != F16.exp_mask for v in (x, y, z)) else None
        else:
            r = MODELS[op](F16, x, y)
            ex = None
            if all((v & F16.exp_mask) != F16.exp_mask for v in (x, y)):
                fx, fy = to_fraction(F16, x), to_fraction(F16, y)
                ex = {"add": fx + fy, "sub": fx - fy, "mul": fx * fy}[op]
        if ex is not None and ex != 0 and _tiny_after_rounding(F16, ex):
            r = 0x8000 if ex < 0 else 0
        exp.append(r)
    assert_bits_equal(F16, d, exp, [a, b, c], instr)


def _tiny_after_rounding(fmt, v: Fraction) -> bool:
    """.ftz flushes a result that is below 2**emin after rounding to the format's precision with an
    unbounded exponent (golden isa_mul_ftz_f16: 0x0400 * 0x3bff = (1 - 2**-11) * 2**-14 -> 0, while
    isa_mul_ftz_sat_f16x2: 0x08c3 * 0x36b8 = 0.99977 * 2**-14 -> 0x0400)."""
    a = abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    scaled = a / Fraction(2) ** (e - fmt.man)
    n, rem = divmod(scaled.numerator, scaled.denominator)
    if 2 * rem > scaled.denominator or (2 * rem == scaled.denominator and n % 2):
        n += 1
    return n * Fraction(2) ** (e - fmt.man) < Fraction(2) ** fmt.emin


@pytest.mark.parametrize("instr", ["add.sat.f16", "mul.rn.sat.f16", "fma.rn.sat.f16", "add.sat.f16x2"])
def test_f16_sat(instr):
    vals = [0x0000, 0x8000, 0x3400, 0x3A00, 0x3C00, 0xBC00, 0x3E00, 0x4000, 0xB800, 0x7C00, 0xFC00, 0x7E00,
            0x3BFF]
    a, b = _pairs16(vals)
    c = np.roll(b, 4)
    op = instr.split(".")[0]
    ins = [a, b, c] if op == "fma" else [a, b]
    operands = ", ".join("{" + k + "}" for k in "abc"[:len(ins)])
    if instr.endswith("x2"):
        n = len(a) // 2
        (dd,) = elementwise(f"{instr} {{d}}, {operands};", [("x2", _pack(v[:n], v[n:2 * n])) for v in ins],
                            ["x2"])
        lo, hi = _unpack(dd)
        d = np.concatenate([lo, hi])
        a, b, c = a[:2 * n], b[:2 * n], c[:2 * n]
    else:
        (d,) = elementwise(f"{instr} {{d}}, {operands};", [("b16", v) for v in ins], ["b16"])
    want = []
    for i in range(len(a)):
        x, y, z = int(a[i]), int(b[i]), int(c[i])
        r = model_fma(F16, x, y, z) if op == "fma" else MODELS[op](F16, x, y)
        if r is None or is_nan(F16, r) or r & 0x8000:
            want.append(0)  # NaN and every negative result, -0 included, give +0 (golden isa_add_sat_f16)
        else:
            want.append(min(r, 0x3C00))  # encodings of non-negative values order like the values
    assert_bits_equal(F16, d, want, [a, b, c], instr)


@pytest.mark.parametrize("instr,fmt", [("fma.rn.relu.f16", F16), ("fma.rn.relu.bf16", BF16),
                                       ("fma.rn.relu.f16x2", F16), ("fma.rn.relu.bf16x2", BF16)])
def test_fma_relu(instr, fmt):
    a, b = _inputs16(fmt, 95)
    c = np.roll(a, 9)
    if instr.endswith("x2"):
        n = len(a) // 2
        ins = [("x2", _pack(v[:n], v[n:2 * n])) for v in (a, b, c)]
        (dd,) = elementwise(f"{instr} {{d}}, {{a}}, {{b}}, {{c}};", ins, ["x2"])
        lo, hi = _unpack(dd)
        d = np.concatenate([lo, hi])
        a, b, c = a[:2 * n], b[:2 * n], c[:2 * n]
    else:
        (d,) = elementwise(f"{instr} {{d}}, {{a}}, {{b}}, {{c}};", [("b16", a), ("b16", b), ("b16", c)],
                           ["b16"])
    want = []
    for x, y, z in zip(a, b, c, strict=True):
        r = model_fma(fmt, int(x), int(y), int(z))
        if r is not None and r & fmt.sign_bit:
            r = 0  # .relu clamps negative results (and -0) to +0; NaN stays NaN
        want.append(r)
    assert_bits_equal(fmt, d, want, [a, b, c], instr)


def test_bf16_neg_abs():
    a = np.concatenate([np.array(BF_SPECIAL, dtype=np.uint16), np.arange(0, 65536, 67, dtype=np.uint16)])
    for op in ("neg", "abs"):
        (d,) = elementwise(f"{op}.bf16 {{d}}, {{a}};", [("b16", a)], ["b16"], target="sm_90")
        want = [_neg_abs_model(BF16, op, int(x)) for x in a]
        assert_bits_equal(BF16, d, want, [a], f"{op}.bf16")
        n = len(a) // 2
        (d2,) = elementwise(f"{op}.bf16x2 {{d}}, {{a}};", [("x2", _pack(a[:n], a[n:2 * n]))], ["x2"],
                            target="sm_90")
        lo, hi = _unpack(d2)
        assert_bits_equal(BF16, np.concatenate([lo, hi]), want[:2 * n], [a[:2 * n]], f"{op}.bf16x2")


# ----------------------------------------------------------------------------------------------------------
# the H100's own results
# ----------------------------------------------------------------------------------------------------------

test_golden_half_arith = golden_test(
    r"^isa_(add|sub|mul|fma|neg|abs|min|max)_.*(f16|bf16|f16x2|bf16x2)$",
    "half-precision add/sub/mul/fma/neg/abs/min/max (approximate ex2/tanh: test_approx.py)")
