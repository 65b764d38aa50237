"""PTX integer arithmetic instructions against a Python-int reference model of the PTX ISA semantics.

Covers add/sub (.sat), mul (.lo/.hi/.wide), mad (.lo/.hi/.wide), the carry chains (add.cc, addc, sub.cc,
subc, mad.lo.cc, madc), mul24/mad24, div/rem, abs, neg, min/max, sad, dp4a and dp2a, plus immediate operands.
Expectations are computed with Python ints and explicit masking (tests/unit/intutil.py), never by ptxjit.
Division by zero is undefined in PTX; the H100 gives all ones for div and rem alike (golden isa_div_*,
isa_rem_*), which ptxjit follows.  The integer cases of the H100 golden set are replayed at the end.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests.markers import golden_needs
from tests.unit.goldenutil import GOLDEN, available, golden_cases, replay_case
from tests.unit.intutil import (
    check,
    edge_values,
    elementwise,
    mask,
    operands,
    pairs,
    random_values,
    s,
    tdiv,
    trem,
    u,
    val,
)

INT_TYPES = ["s16", "u16", "s32", "u32", "s64", "u64"]


def width(t: str) -> int:
    return int(t[1:])


def binop(template: str, t: str, model, seed: int, n_random: int = 300, out: str | None = None,
          a_vals=None, b_vals=None):
    """Run a two-operand instruction over edge pairs + random values and compare with `model(a, b)`."""
    w = width(t)
    if a_vals is None:
        a_vals, b_vals = operands(w, n_random, seed)
    ins = [(t, a_vals), (t, b_vals)]
    out = out or t
    (got,) = elementwise(template, ins, [out])
    wo = width(out)
    exp = [u(model(val(x, t), val(y, t)), wo) for x, y in zip(a_vals, b_vals, strict=True)]
    check(got, exp, ins, template, width=wo)


def binop2(op1: str, op2: str, t: str, model1, model2, seed: int, n_random: int = 300, a_vals=None,
           b_vals=None):
    """Two instructions in one kernel (kernel compilation dominates the run time): {d} = op1, {d2} = op2."""
    w = width(t)
    if a_vals is None:
        a_vals, b_vals = operands(w, n_random, seed)
    ins = [(t, a_vals), (t, b_vals)]
    template = f"{op1} {{d}}, {{a}}, {{b}};\n    {op2} {{d2}}, {{a}}, {{b}};"
    d, d2 = elementwise(template, ins, [t, t])
    for got, op, model in ((d, op1, model1), (d2, op2, model2)):
        exp = [u(model(val(x, t), val(y, t)), w) for x, y in zip(a_vals, b_vals, strict=True)]
        check(got, exp, ins, op, width=w)


# ----------------------------------------------------------------------------------------------------------
# add / sub
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", INT_TYPES)
def test_add_sub(t):
    binop2(f"add.{t}", f"sub.{t}", t, lambda a, b: a + b, lambda a, b: a - b, seed=11)


@pytest.mark.parametrize("op", ["add", "sub"])
def test_add_sub_sat_s32(op):
    def model(a, b):
        r = a + b if op == "add" else a - b
        return max(-(1 << 31), min((1 << 31) - 1, r))

    binop(f"{op}.sat.s32 {{d}}, {{a}}, {{b}};", "s32", model, seed=12)


# ----------------------------------------------------------------------------------------------------------
# mul / mad
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", INT_TYPES)
def test_mul_lo_hi(t):
    w = width(t)
    # .hi: bits [2w-1:w] of the exact product (an arithmetic shift of the signed / unsigned product)
    binop2(f"mul.lo.{t}", f"mul.hi.{t}", t, lambda a, b: a * b, lambda a, b: (a * b) >> w, seed=13)


@pytest.mark.parametrize("t", ["s16", "u16", "s32", "u32"])
def test_mul_wide(t):
    out = t[0] + str(2 * width(t))
    binop(f"mul.wide.{t} {{d}}, {{a}}, {{b}};", t, lambda a, b: a * b, seed=14, out=out)


def _ternary(template, tin, tc, tout, model, seed, n_random=300, model2=None):
    """Three-operand instruction(s): {d} checked against `model`, and {d2} against `model2` if given."""
    wi, wc = width(tin), width(tc)
    a, b = operands(wi, n_random, seed)
    c = [edge_values(wc)[i % len(edge_values(wc))] for i in range(len(a) - n_random)]
    c += random_values(wc, n_random, seed + 7)
    ins = [(tin, a), (tin, b), (tc, c)]
    models = [model] if model2 is None else [model, model2]
    outs = elementwise(template, ins, [tout] * len(models))
    wo = width(tout)
    for k, (got, m) in enumerate(zip(outs, models, strict=True)):
        exp = [u(m(val(x, tin), val(y, tin), val(z, tc)), wo) for x, y, z in zip(a, b, c, strict=True)]
        check(got, exp, ins, template + (" (d2)" if k else " (d)"), width=wo)


@pytest.mark.parametrize("t", INT_TYPES)
def test_mad_lo_hi(t):
    w = width(t)
    _ternary(f"mad.lo.{t} {{d}}, {{a}}, {{b}}, {{c}};\n    mad.hi.{t} {{d2}}, {{a}}, {{b}}, {{c}};", t, t, t,
             lambda a, b, c: a * b + c, seed=15, model2=lambda a, b, c: ((a * b) >> w) + c)


@pytest.mark.parametrize("t", ["s16", "u16", "s32", "u32"])
def test_mad_wide(t):
    t2 = t[0] + str(2 * width(t))
    _ternary(f"mad.wide.{t} {{d}}, {{a}}, {{b}}, {{c}};", t, t2, t2, lambda a, b, c: a * b + c, seed=16)


def test_mad_hi_sat_s32():
    def model(a, b, c):
        return max(-(1 << 31), min((1 << 31) - 1, ((a * b) >> 32) + c))

    _ternary("mad.hi.sat.s32 {d}, {a}, {b}, {c};", "s32", "s32", "s32", model, seed=17)


# ----------------------------------------------------------------------------------------------------------
# carry chains
# ----------------------------------------------------------------------------------------------------------

_WIDE = [0, 1, 0xFFFFFFFF, 0x100000000, 0xFFFFFFFFFFFFFFFF, 0x8000000000000000, 0x7FFFFFFFFFFFFFFF,
         0xFFFFFFFF00000000, 0x00000000FFFFFFFF, 0x123456789ABCDEF0, 0xFFFFFFFE00000001]


def _wide_operands(w: int, seed: int, n_random: int = 200):
    """Pairs of 2w-bit values (edge cases built from w-bit limbs + random)."""
    limbs = [0, 1, mask(w), mask(w) - 1, 1 << (w - 1), (1 << (w - 1)) - 1]
    edges = sorted({(hi << w) | lo for hi in limbs for lo in limbs} | {x & mask(2 * w) for x in _WIDE})
    a, b = pairs(edges)
    a += random_values(2 * w, n_random, seed)
    b += random_values(2 * w, n_random, seed + 1)
    return a, b


@pytest.mark.parametrize("w", [32, 64])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_carry_chain_double_width(op, w):
    """2w-bit add/sub from w-bit halves: {op}.cc on the low limbs, {op}c on the high limbs."""
    t = f"u{w}"
    a, b = _wide_operands(w, seed=20 + w)
    ins = [(t, [x & mask(w) for x in a]), (t, [x >> w for x in a]),
           (t, [x & mask(w) for x in b]), (t, [x >> w for x in b])]
    template = f"{op}.cc.{t} {{d}}, {{a}}, {{c}};\n    {op}c.{t} {{d2}}, {{b}}, {{e}};"
    lo, hi = elementwise(template, ins, [t, t])
    got = [(h << w) | l_ for l_, h in zip(lo, hi, strict=True)]
    exp = [u(x + y if op == "add" else x - y, 2 * w) for x, y in zip(a, b, strict=True)]
    check(got, exp, ins, template, width=2 * w)


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_carry_out_value(op, t):
    """The carry (borrow) flag itself: {op}.cc then {op}c of 0 and 0 materialises CC.CF."""
    w = width(t)
    a, b = operands(w, 200, seed=30)
    ins = [(t, a), (t, b)]
    template = f"{op}.cc.{t} {{d}}, {{a}}, {{b}};\n    {op}c.{t} {{d2}}, 0, 0;"
    d, d2 = elementwise(template, ins, [t, t])
    if op == "add":
        exp_d = [u(x + y, w) for x, y in zip(a, b, strict=True)]
        exp_c = [(x + y) >> w for x, y in zip(a, b, strict=True)]  # unsigned carry out: 0 or 1
    else:
        exp_d = [u(x - y, w) for x, y in zip(a, b, strict=True)]
        exp_c = [u(-1, w) if x < y else 0 for x, y in zip(a, b, strict=True)]  # 0 - (0 + borrow)
    check(d, exp_d, ins, template + " (d)", width=w)
    check(d2, exp_c, ins, template + " (carry)", width=w)


# the 64-bit operands {a} and {b} split into 32-bit limbs: a = %r21:%r20, b = %r23:%r22 (high:low)
SPLIT_AB_LIMBS = """    cvt.u32.u64 %r20, {a};
    shr.u64 %rd20, {a}, 32;
    cvt.u32.u64 %r21, %rd20;
    cvt.u32.u64 %r22, {b};
    shr.u64 %rd21, {b}, 32;
    cvt.u32.u64 %r23, %rd21;
"""


def test_carry_chain_three_limbs():
    """96-bit add through add.cc / addc.cc / addc: the carry must propagate through the middle limb."""
    a, b = _wide_operands(32, seed=33, n_random=100)
    tops = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF]
    c = [tops[i % 5] | (tops[(i // 5) % 5] << 32) for i in range(len(a))]  # (top limb of a, top limb of b)
    ins = [("u64", a), ("u64", b), ("u64", c)]
    pre = SPLIT_AB_LIMBS + """    cvt.u32.u64 %r24, {c};
    shr.u64 %rd22, {c}, 32;
    cvt.u32.u64 %r25, %rd22;
    add.cc.u32 %r30, %r20, %r22;
    addc.cc.u32 %r31, %r21, %r23;
    addc.u32 {d2}, %r24, %r25;
    cvt.u64.u32 %rd23, %r30;
    cvt.u64.u32 %rd24, %r31;
    shl.b64 %rd24, %rd24, 32;"""
    lo, top = elementwise("or.b64 {d}, %rd23, %rd24;", ins, ["u64", "u32"], pre=pre)
    full_a = [((z & mask(32)) << 64) | x for x, z in zip(a, c, strict=True)]
    full_b = [((z >> 32) << 64) | y for y, z in zip(b, c, strict=True)]
    exp = [u(x + y, 96) for x, y in zip(full_a, full_b, strict=True)]
    check(lo, [e & mask(64) for e in exp], ins, "96-bit add, low 64 bits", width=64)
    check(top, [e >> 64 for e in exp], ins, "96-bit add, top limb")


def test_mad_cc_chain_64x64_to_128():
    """The PTX ISA's extended-precision multiply idiom (mad.lo.cc / madc.hi.cc / addc on 32-bit limbs)."""
    a, b = _wide_operands(32, seed=40, n_random=300)
    ins = [("u64", a), ("u64", b)]
    pre = SPLIT_AB_LIMBS + """    mul.lo.u32     %r30, %r20, %r22;
    mul.hi.u32     %r31, %r20, %r22;
    mad.lo.cc.u32  %r31, %r21, %r22, %r31;
    madc.hi.u32    %r32, %r21, %r22, 0;
    mad.lo.cc.u32  %r31, %r20, %r23, %r31;
    madc.hi.cc.u32 %r32, %r20, %r23, %r32;
    addc.u32       %r33, 0, 0;
    mad.lo.cc.u32  %r32, %r21, %r23, %r32;
    madc.hi.u32    %r33, %r21, %r23, %r33;
    cvt.u64.u32 %rd22, %r30;
    cvt.u64.u32 %rd23, %r31;
    shl.b64 %rd23, %rd23, 32;
    cvt.u64.u32 %rd24, %r32;
    cvt.u64.u32 %rd25, %r33;
    shl.b64 %rd25, %rd25, 32;"""
    template = "or.b64 {d}, %rd22, %rd23;\n    or.b64 {d2}, %rd24, %rd25;"
    lo, hi = elementwise(template, ins, ["u64", "u64"], pre=pre)
    exp = [x * y for x, y in zip(a, b, strict=True)]
    check(lo, [e & mask(64) for e in exp], ins, "128-bit product, low half", width=64)
    check(hi, [e >> 64 for e in exp], ins, "128-bit product, high half", width=64)


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
@pytest.mark.parametrize("mode", ["lo", "hi"])
def test_mad_cc_and_madc_carry(mode, t):
    """mad.{mode}.cc sets CC.CF from the addition; madc.{mode} consumes it (carry-in from add.cc of a+b)."""
    w = width(t)
    a, b = operands(w, 150, seed=41)
    c = [(x ^ (y >> 1)) & mask(w) for x, y in zip(a, b, strict=True)]
    ins = [(t, a), (t, b), (t, c)]
    # d  = part(a*b) + c ; d2 = carry out of that addition
    template = f"mad.{mode}.cc.{t} {{d}}, {{a}}, {{b}}, {{c}};\n    addc.{t} {{d2}}, 0, 0;"
    d, d2 = elementwise(template, ins, [t, t])
    exp_d, exp_c = [], []
    for x, y, z in zip(a, b, c, strict=True):
        prod = val(x, t) * val(y, t)
        part = u(prod >> w if mode == "hi" else prod, w)
        exp_d.append(u(part + z, w))
        exp_c.append((part + z) >> w)
    check(d, exp_d, ins, template + " (d)", width=w)
    check(d2, exp_c, ins, template + " (carry)", width=w)
    # madc with a carry-in produced by add.cc (a + c carries out when the unsigned sum overflows)
    scratch = "%rd20" if w == 64 else "%r20"
    template = f"add.cc.{t} {scratch}, {{a}}, {{c}};\n    madc.{mode}.{t} {{d}}, {{a}}, {{b}}, {{c}};"
    (d,) = elementwise(template, ins, [t])
    exp = []
    for x, y, z in zip(a, b, c, strict=True):
        cin = (x + z) >> w
        prod = val(x, t) * val(y, t)
        part = u(prod >> w if mode == "hi" else prod, w)
        exp.append(u(part + z + cin, w))
    check(d, exp, ins, template, width=w)


# ----------------------------------------------------------------------------------------------------------
# mul24 / mad24
# ----------------------------------------------------------------------------------------------------------


def _mul24_vals(seed):
    e24 = [0, 1, 2, 0x7FFFFF, 0x800000, 0xFFFFFF, 0x400000, 0x123456, 0xABCDEF, 0x3FF, 0x800001]
    a, b = pairs(e24)
    a += random_values(24, 200, seed)
    b += random_values(24, 200, seed + 1)
    return a, b


@pytest.mark.parametrize("t", ["u32", "s32"])
@pytest.mark.parametrize("mode", ["lo", "hi"])
def test_mul24(mode, t):
    """24x24-bit product (operands given as 24-bit values, sign-extended to 32 bits for .s32)."""
    a, b = _mul24_vals(50)
    if t == "s32":
        a = [u(s(x, 24), 32) for x in a]
        b = [u(s(x, 24), 32) for x in b]

    def model(x, y):
        p = x * y
        return p >> 16 if mode == "hi" else p  # t<47..16> / t<31..0> of the 48-bit product

    binop(f"mul24.{mode}.{t} {{d}}, {{a}}, {{b}};", t, model, seed=0, a_vals=a, b_vals=b)


@pytest.mark.parametrize("t", ["u32", "s32"])
def test_mul24_lo_ignores_high_byte(t):
    """Bits 31..24 of the operands are ignored (CUDA __mul24 / __umul24: 'least significant 24 bits')."""
    a, b = _mul24_vals(51)
    junk = [0xFF000000, 0x5A000000, 0x80000000, 0x01000000]
    a2 = [x | junk[i % 4] for i, x in enumerate(a)]
    b2 = [x | junk[(i + 1) % 4] for i, x in enumerate(b)]

    def ext(x):
        return s(x, 24) if t == "s32" else x & mask(24)

    ins = [(t, a2), (t, b2)]
    (got,) = elementwise(f"mul24.lo.{t} {{d}}, {{a}}, {{b}};", ins, [t])
    check(got, [u(ext(x) * ext(y), 32) for x, y in zip(a2, b2, strict=True)], ins, f"mul24.lo.{t}")


@pytest.mark.parametrize("t", ["u32", "s32"])
@pytest.mark.parametrize("mode", ["lo", "hi"])
def test_mad24(mode, t):
    a, b = _mul24_vals(52)
    if t == "s32":
        a = [u(s(x, 24), 32) for x in a]
        b = [u(s(x, 24), 32) for x in b]
    c = [0xFFFFFFFF, 1, 0x80000000, 0x7FFFFFFF, 0] * (len(a) // 5) + [0] * (len(a) % 5)
    ins = [(t, a), (t, b), (t, c)]
    (got,) = elementwise(f"mad24.{mode}.{t} {{d}}, {{a}}, {{b}}, {{c}};", ins, [t])
    exp = []
    for x, y, z in zip(a, b, c, strict=True):
        p = val(x, t) * val(y, t)
        exp.append(u((p >> 16 if mode == "hi" else p) + z, 32))
    check(got, exp, ins, f"mad24.{mode}.{t}")


# ----------------------------------------------------------------------------------------------------------
# div / rem
# ----------------------------------------------------------------------------------------------------------


def _div_operands(t, seed):
    w = width(t)
    a, b = operands(w, 300, seed)
    keep = [(x, y) for x, y in zip(a, b, strict=True) if y != 0]
    if t[0] == "s":  # signed overflow (MIN / -1) is tested separately
        keep = [(x, y) for x, y in keep if not (x == 1 << (w - 1) and y == mask(w))]
    # small divisors with mixed signs
    for x in [7, -7, 8, -8, 100, -100, 1 << (w - 2), -(1 << (w - 2))]:
        for y in [1, -1, 2, -2, 3, -3, 7, -7, 9, -9]:
            keep.append((u(x, w), u(y, w)))
    return [x for x, _ in keep], [y for _, y in keep]


@pytest.mark.parametrize("t", INT_TYPES)
def test_div_rem(t):
    a, b = _div_operands(t, seed=60)
    binop2(f"div.{t}", f"rem.{t}", t, tdiv, trem, seed=0, a_vals=a, b_vals=b)


def test_div_rem_signed_truncation_examples():
    """Hand-checked values: truncation toward zero, remainder takes the dividend's sign."""
    cases = [(7, 2, 3, 1), (-7, 2, -3, -1), (7, -2, -3, 1), (-7, -2, 3, -1), (-1, 2, 0, -1), (1, -2, 0, 1),
             (-(1 << 31), 2, -(1 << 30), 0), (-(1 << 31), 3, -715827882, -2),
             ((1 << 31) - 1, -1, -(1 << 31) + 1, 0)]
    a = [x for x, *_ in cases]
    b = [y for _, y, *_ in cases]
    ins = [("s32", a), ("s32", b)]
    q, r = elementwise("div.s32 {d}, {a}, {b};\n    rem.s32 {d2}, {a}, {b};", ins, ["s32", "s32"])
    check(q, [u(c[2], 32) for c in cases], ins, "div.s32")
    check(r, [u(c[3], 32) for c in cases], ins, "rem.s32")


_OVERFLOW_SCRIPT = textwrap.dedent("""
    import sys
    from tests.unit.intutil import elementwise
    w = int(sys.argv[1])
    t = f"s{w}"
    mn = 1 << (w - 1)
    ins = [(t, [mn, mn, 5]), (t, [-1, -1, -1])]
    body = "div.{0} {{d}}, {{a}}, {{b}};\\n    rem.{0} {{d2}}, {{a}}, {{b}};".format(t)
    q, r = elementwise(body, ins, [t, t])
    print(" ".join(hex(x) for x in q + r))
""")


@pytest.mark.parametrize("w", [32, 64])
def test_div_signed_overflow_does_not_trap(w):
    """MIN / -1: the GPU wraps (quotient MIN, remainder 0).  A CPU `idiv` traps (SIGFPE) on it, so this runs
    in a subprocess: a crash fails this test instead of killing the test session."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.getcwd() + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, "-c", _OVERFLOW_SCRIPT, str(w)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert res.returncode == 0, f"MIN/-1 kernel crashed (rc={res.returncode}):\n{res.stderr[-2000:]}"
    mn = 1 << (w - 1)
    exp = [mn, mn, u(-5, w), 0, 0, 0]
    assert res.stdout.split() == [hex(x) for x in exp]


# ----------------------------------------------------------------------------------------------------------
# abs / neg / min / max / sad
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", ["s16", "s32", "s64"])
def test_abs_neg(t):
    w = width(t)
    (a,) = operands(w, 200, seed=70, count=1)
    ins = [(t, a)]
    d, d2 = elementwise(f"abs.{t} {{d}}, {{a}};\n    neg.{t} {{d2}}, {{a}};", ins, [t, t])
    check(d, [u(abs(val(x, t)), w) for x in a], ins, f"abs.{t}", width=w)  # abs(MIN) == MIN (wraps)
    check(d2, [u(-val(x, t), w) for x in a], ins, f"neg.{t}", width=w)  # -MIN == MIN (wraps)


@pytest.mark.parametrize("t", INT_TYPES)
def test_min_max(t):
    binop2(f"min.{t}", f"max.{t}", t, min, max, seed=71)


@pytest.mark.parametrize("t", INT_TYPES)
def test_sad(t):
    def model(a, b, c):
        return c + (b - a if a < b else a - b)

    _ternary(f"sad.{t} {{d}}, {{a}}, {{b}}, {{c}};", t, t, t, model, seed=72)


# ----------------------------------------------------------------------------------------------------------
# dp4a / dp2a
# ----------------------------------------------------------------------------------------------------------


def _bytes(x, signed):
    return [s((x >> (8 * i)) & 0xFF, 8) if signed else (x >> (8 * i)) & 0xFF for i in range(4)]


def _halves(x, signed):
    return [s((x >> (16 * i)) & 0xFFFF, 16) if signed else (x >> (16 * i)) & 0xFFFF for i in range(2)]


def _dp_operands(seed):
    e = [0, 1, 0x7F7F7F7F, 0x80808080, 0xFFFFFFFF, 0x01FF7F80, 0x80007FFF, 0x12345678, 0xFEDCBA98]
    a, b = pairs(e)
    c = [[0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000][i % 5] for i in range(len(a))]
    a += random_values(32, 200, seed)
    b += random_values(32, 200, seed + 1)
    c += random_values(32, 200, seed + 2)
    return a, b, c


@pytest.mark.parametrize("atype,btype", [("u32", "u32"), ("s32", "s32"), ("u32", "s32"), ("s32", "u32")])
def test_dp4a(atype, btype):
    a, b, c = _dp_operands(80)
    ctype = "u32" if atype == btype == "u32" else "s32"
    ins = [(atype, a), (btype, b), (ctype, c)]
    template = f"dp4a.{atype}.{btype} {{d}}, {{a}}, {{b}}, {{c}};"
    (got,) = elementwise(template, ins, [ctype])
    exp = []
    for x, y, z in zip(a, b, c, strict=True):
        va, vb = _bytes(x, atype == "s32"), _bytes(y, btype == "s32")
        exp.append(u(val(z, ctype) + sum(p * q for p, q in zip(va, vb, strict=True)), 32))
    check(got, exp, ins, template)


@pytest.mark.parametrize("mode", ["lo", "hi"])
@pytest.mark.parametrize("atype,btype", [("u32", "u32"), ("s32", "s32"), ("u32", "s32"), ("s32", "u32")])
def test_dp2a(mode, atype, btype):
    a, b, c = _dp_operands(81)
    ctype = "u32" if atype == btype == "u32" else "s32"
    ins = [(atype, a), (btype, b), (ctype, c)]
    template = f"dp2a.{mode}.{atype}.{btype} {{d}}, {{a}}, {{b}}, {{c}};"
    (got,) = elementwise(template, ins, [ctype])
    sel = 0 if mode == "lo" else 2
    exp = []
    for x, y, z in zip(a, b, c, strict=True):
        va, vb = _halves(x, atype == "s32"), _bytes(y, btype == "s32")
        exp.append(u(val(z, ctype) + va[0] * vb[sel] + va[1] * vb[sel + 1], 32))
    check(got, exp, ins, template)


# ----------------------------------------------------------------------------------------------------------
# immediate operands
# ----------------------------------------------------------------------------------------------------------

_IMM_CASES = [
    ("add.s32 {d}, {a}, -1;", "s32", lambda a: a - 1),
    ("add.u32 {d}, {a}, 0xFFFFFFFF;", "u32", lambda a: a + 0xFFFFFFFF),
    ("add.u32 {d}, {a}, 010;", "u32", lambda a: a + 8),  # octal literal
    ("add.u32 {d}, {a}, 0b101;", "u32", lambda a: a + 5),  # binary literal
    ("sub.s32 {d}, 100, {a};", "s32", lambda a: 100 - a),
    ("mul.lo.s32 {d}, {a}, -3;", "s32", lambda a: a * -3),
    ("mul.hi.u32 {d}, {a}, 0x80000000;", "u32", lambda a: (a * 0x80000000) >> 32),
    ("add.u64 {d}, {a}, 0xFFFFFFFFFFFFFFFF;", "u64", lambda a: a + mask(64)),
    ("add.s64 {d}, {a}, -4294967296;", "s64", lambda a: a - (1 << 32)),
    ("mul.lo.u64 {d}, {a}, 0x100000001;", "u64", lambda a: a * 0x100000001),
    ("div.s32 {d}, {a}, -7;", "s32", lambda a: tdiv(a, -7)),
    ("rem.u32 {d}, {a}, 10;", "u32", lambda a: a % 10),
    ("min.s32 {d}, {a}, -5;", "s32", lambda a: min(a, -5)),
    ("max.u32 {d}, {a}, 1000;", "u32", lambda a: max(a, 1000)),
    ("mad.lo.s32 {d}, {a}, 3, -9;", "s32", lambda a: 3 * a - 9),
]


@pytest.mark.parametrize("template,t,model", _IMM_CASES, ids=[c[0].split()[0] + f"_{i}" for i, c in
                                                               enumerate(_IMM_CASES)])
def test_immediate_operands(template, t, model):
    w = width(t)
    (a,) = operands(w, 100, seed=90, count=1)
    ins = [(t, a)]
    (got,) = elementwise(template, ins, [t])
    check(got, [u(model(val(x, t)), w) for x in a], ins, template, width=w)


# ----------------------------------------------------------------------------------------------------------
# carry flag lifetime and register aliasing
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["add", "sub"])
def test_carry_survives_unrelated_instructions_and_branch(op):
    """CC.CF set by {op}.cc must survive non-.cc arithmetic and a (uniform) branch before {op}c reads it."""
    a, b = _wide_operands(32, seed=95, n_random=100)
    ins = [("u32", [x & mask(32) for x in a]), ("u32", [x >> 32 for x in a]),
           ("u32", [x & mask(32) for x in b]), ("u32", [x >> 32 for x in b])]
    template = (f"{op}.cc.u32 {{d}}, {{a}}, {{c}};\n"
                "    add.u32 %r20, {a}, {c};\n    mul.lo.u32 %r21, %r20, 3;\n    sub.u32 %r22, %r21, {e};\n"
                "    bra.uni $L_next;\n$L_next:\n"
                f"    {op}c.u32 {{d2}}, {{b}}, {{e}};")
    lo, hi = elementwise(template, ins, ["u32", "u32"])
    got = [(h << 32) | l_ for l_, h in zip(lo, hi, strict=True)]
    exp = [u(x + y if op == "add" else x - y, 64) for x, y in zip(a, b, strict=True)]
    check(got, exp, ins, template, width=64)


@pytest.mark.parametrize("op", ["add", "sub"])
def test_carry_chain_three_limbs_sub_and_add(op):
    """96-bit {op} with the middle limb in {op}c.cc (carry in and carry out on one instruction)."""
    a, b = _wide_operands(32, seed=96, n_random=100)
    tops = [0, 1, 0xFFFFFFFF, 0x80000000]
    c = [tops[i % 4] | (tops[(i // 4) % 4] << 32) for i in range(len(a))]
    ins = [("u64", a), ("u64", b), ("u64", c)]
    pre = f"""    mov.b64 {{{{%r20, %r21}}}}, {{a}};
    mov.b64 {{{{%r22, %r23}}}}, {{b}};
    mov.b64 {{{{%r24, %r25}}}}, {{c}};
    {op}.cc.u32 %r30, %r20, %r22;
    {op}c.cc.u32 %r31, %r21, %r23;
    {op}c.u32 {{d2}}, %r24, %r25;"""
    lo, top = elementwise("mov.b64 {d}, {{%r30, %r31}};", ins, ["u64", "u32"], pre=pre)
    full_a = [((z & mask(32)) << 64) | x for x, z in zip(a, c, strict=True)]
    full_b = [((z >> 32) << 64) | y for y, z in zip(b, c, strict=True)]
    exp = [u(x + y if op == "add" else x - y, 96) for x, y in zip(full_a, full_b, strict=True)]
    check(lo, [e & mask(64) for e in exp], ins, f"96-bit {op}, low 64 bits", width=64)
    check(top, [e >> 64 for e in exp], ins, f"96-bit {op}, top limb")


_ALIAS_CASES = [
    ("add.s32 {a}, {a}, {a};", lambda a, b, c: (2 * a, b)),
    ("sub.s32 {b}, {a}, {b};", lambda a, b, c: (a, a - b)),
    ("mul.hi.s32 {a}, {a}, {b};", lambda a, b, c: ((s(a, 32) * s(b, 32)) >> 32, b)),
    ("mad.lo.s32 {a}, {b}, {a}, {a};", lambda a, b, c: (b * a + a, b)),
    ("mad.hi.u32 {b}, {a}, {b}, {b};", lambda a, b, c: (a, ((a * b) >> 32) + b)),
    ("div.u32 {b}, {a}, {b};", lambda a, b, c: (a, a // b)),
    ("rem.s32 {a}, {a}, {b};", lambda a, b, c: (trem(s(a, 32), s(b, 32)), b)),
    ("sad.s32 {a}, {b}, {a}, {a};", lambda a, b, c: (a + abs(s(b, 32) - s(a, 32)), b)),
    ("min.s32 {a}, {b}, {a};\n    max.u32 {b}, {b}, {c};",
     lambda a, b, c: (min(s(a, 32), s(b, 32)), max(b, c))),
    ("dp4a.s32.s32 {a}, {a}, {a}, {a};",
     lambda a, b, c: (s(a, 32) + sum(s((a >> (8 * i)) & 0xFF, 8) ** 2 for i in range(4)), b)),
    ("mad.lo.cc.u32 {a}, {a}, {b}, {a};\n    addc.u32 {b}, {b}, {b};",
     lambda a, b, c: ((a * b + a) & mask(32), 2 * b + (((a * b & mask(32)) + a) >> 32))),
    ("mul24.lo.u32 {a}, {b}, {a};", lambda a, b, c: ((a & mask(24)) * (b & mask(24)), b)),
]


@pytest.mark.parametrize("template,model", _ALIAS_CASES, ids=[f"alias{i}_" + c[0].split()[0] for i, c in
                                                              enumerate(_ALIAS_CASES)])
def test_destination_aliases_source(template, model):
    """The destination register is also a source: every source must be read before the write."""
    a, b = operands(32, 150, seed=97)
    keep = [i for i, y in enumerate(b) if y != 0]
    a = [a[i] for i in keep]
    b = [b[i] for i in keep]
    c = [(x * 0x9E3779B9) & mask(32) for x in a]
    ins = [("u32", a), ("u32", b), ("u32", c)]
    d, d2 = elementwise(template + "\n    mov.b32 {d}, {a};\n    mov.b32 {d2}, {b};", ins, ["u32", "u32"])
    exp = [model(x, y, z) for x, y, z in zip(a, b, c, strict=True)]
    check(d, [u(e[0], 32) for e in exp], ins, template + " (a)")
    check(d2, [u(e[1], 32) for e in exp], ins, template + " (b)")


def test_16bit_immediates():
    (a,) = operands(16, 100, seed=98, count=1)
    ins = [("s16", a)]
    template = "add.s16 {d}, {a}, -1;\n    mul.lo.u16 {d2}, {a}, 0x101;"
    d, d2 = elementwise(template, ins, ["s16", "u16"])
    check(d, [u(x - 1, 16) for x in a], ins, "add.s16 a, -1", width=16)
    check(d2, [u(x * 0x101, 16) for x in a], ins, "mul.lo.u16 a, 0x101", width=16)


# ----------------------------------------------------------------------------------------------------------
# forms fixed or added to match the H100
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_div_rem_by_zero_all_ones(t):
    """x / 0 and x % 0 are all ones on the H100 (isa_div_s32 ..., isa_rem_s32 ...: rem is not the dividend)."""
    w = width(t)
    a = edge_values(w)
    ins = [(t, a), (t, [0] * len(a))]
    d, d2 = elementwise(f"div.{t} {{d}}, {{a}}, {{b}};\n    rem.{t} {{d2}}, {{a}}, {{b}};", ins, [t, t])
    check(d, [mask(w)] * len(a), ins, f"div.{t} by 0", width=w)
    check(d2, [mask(w)] * len(a), ins, f"rem.{t} by 0", width=w)


def test_mad24_hi_sat_s32():
    """.sat saturates the 32-bit addition of the product's bits 47..16 and c (isa_mad24_hi_sat_s32)."""
    a, b = _mul24_vals(53)
    a = [u(s(x, 24), 32) | (0xFF000000 if i % 3 == 0 else 0) for i, x in enumerate(a)]  # junk in bits 31..24
    b = [u(s(x, 24), 32) for x in b]
    cs = [0x80000000, 0x7FFFFFFF, 0xFFFFFFFF, 1, 0x80000001, 0x7FFF0000]
    c = [cs[i % len(cs)] for i in range(len(a))]
    ins = [("s32", a), ("s32", b), ("s32", c)]
    (got,) = elementwise("mad24.hi.sat.s32 {d}, {a}, {b}, {c};", ins, ["s32"])
    exp = [u(max(-(1 << 31), min((1 << 31) - 1, s(((s(x, 24) * s(y, 24)) >> 16) & mask(32), 32) + s(z, 32))), 32)
           for x, y, z in zip(a, b, c, strict=True)]
    check(got, exp, ins, "mad24.hi.sat.s32")


def _minmax16x2(x: int, y: int, signed: bool, op, relu: bool) -> int:
    r = 0
    for k in range(2):
        hx, hy = (x >> (16 * k)) & 0xFFFF, (y >> (16 * k)) & 0xFFFF
        vx, vy = (s(hx, 16), s(hy, 16)) if signed else (hx, hy)
        m = op(vx, vy)
        if relu:
            m = max(m, 0)
        r |= u(m, 16) << (16 * k)
    return r


@pytest.fixture
def sm90(monkeypatch):
    """Snippet kernels for .target sm_90 (the packed 16-bit min/max need it)."""
    import tests.ptxsnip

    monkeypatch.setattr(tests.ptxsnip, "HEADER", tests.ptxsnip.HEADER.replace("sm_80", "sm_90"))


@pytest.mark.parametrize("t", ["s16x2", "u16x2", "relu.s16x2"])
def test_min_max_16x2(t, sm90):
    """Per 16-bit half; .relu clamps each signed half at 0 (isa_min_s16x2 ... isa_max_relu_s16x2)."""
    halves = [0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x8001, 0x1234, 0xFFFE]
    words = [lo | (hi << 16) for lo in halves for hi in halves]
    a, b = pairs(words)
    a += random_values(32, 200, 80)
    b += random_values(32, 200, 81)
    ins = [("b32", a), ("b32", b)]
    d, d2 = elementwise(f"min.{t} {{d}}, {{a}}, {{b}};\n    max.{t} {{d2}}, {{a}}, {{b}};", ins, ["b32", "b32"])
    signed, relu = "s16" in t, t.startswith("relu")
    check(d, [_minmax16x2(x, y, signed, min, relu) for x, y in zip(a, b, strict=True)], ins, f"min.{t}")
    check(d2, [_minmax16x2(x, y, signed, max, relu) for x, y in zip(a, b, strict=True)], ins, f"max.{t}")


# ----------------------------------------------------------------------------------------------------------
# the H100 golden set: every integer arithmetic case (compare/select cases are test_compare's)
# ----------------------------------------------------------------------------------------------------------

_ARITH = re.compile(r"^isa_(add|sub|addc|subc|mul|mad|madc|mul24|mad24|sad|div|rem|abs|neg|min|max|dp4a|dp2a)_")


def _int_cases() -> list[str]:
    if not available():
        return []
    variants = json.loads((GOLDEN / "layout.json").read_text())["variants"]
    return [c for c in golden_cases(_ARITH.pattern) if variants.get(c, {}).get("group") == "int"]


GOLDEN_INT = _int_cases()


@golden_needs("isa")
@pytest.mark.parametrize("case", GOLDEN_INT or ["absent"])
def test_golden(case):
    assert replay_case(case) == []
