"""PTX comparison and selection instructions: setp (all CmpOps, BoolOp combine, p|q), set, selp, slct, and
predicate logic / guards.

Integer expectations use Python ints; floating-point expectations use Python floats (every f32 is exactly
representable as a Python float, so comparisons are exact), with NaN handled by the ordered / unordered rules
of the PTX ISA: eq ne lt le gt ge are false when either operand is NaN; equ neu ltu leu gtu geu are true when
either operand is NaN; num = neither is NaN; nan = either is NaN.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from tests.unit.goldenutil import golden_test
from tests.unit.intutil import (
    check,
    check_predicate_mask,
    edge_values,
    elementwise,
    operands,
    pairs,
    predicate_mask,
    random_values,
    val,
)

INF = float("inf")
NAN32 = [0x7FC00000, 0xFFC00001, 0x7F800001]  # quiet, negative quiet with payload, signalling
NAN64 = [0x7FF8000000000000, 0xFFF8000000000123, 0x7FF0000000000001]

F32_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -1e30, INF, -INF, 0x00000001, 0x80000001,
              0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800001] + NAN32
F64_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e300, -1e300, INF, -INF, 0x0000000000000001,
              0x8000000000000001, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x3FF0000000000001,
              float.fromhex("0x1.000002p0"), float.fromhex("0x1.000001p0")] + NAN64


def to_float(kind: str, x) -> float:
    """Raw bits (int) or a Python float -> the Python float value it denotes."""
    if isinstance(x, float):
        if kind == "f32":
            return struct.unpack("<f", struct.pack("<f", x))[0]
        return x
    if kind == "f32":
        return struct.unpack("<f", struct.pack("<I", x & 0xFFFFFFFF))[0]
    return struct.unpack("<d", struct.pack("<Q", x & 0xFFFFFFFFFFFFFFFF))[0]


def ftz32(x: float) -> float:
    """Flush an f32 subnormal to sign-preserving zero."""
    if x != 0.0 and abs(x) < 2.0 ** -126:
        return math.copysign(0.0, x)
    return x


INT_CMP = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    # unsigned-only spellings (operands are already interpreted as unsigned for .u types)
    "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b,
    "hi": lambda a, b: a > b, "hs": lambda a, b: a >= b,
}


def float_cmp(op: str, a: float, b: float) -> bool:
    unordered = math.isnan(a) or math.isnan(b)
    if op == "num":
        return not unordered
    if op == "nan":
        return unordered
    if op in ("equ", "neu", "ltu", "leu", "gtu", "geu"):
        return True if unordered else INT_CMP[op[:2]](a, b)
    return False if unordered else INT_CMP[op](a, b)


_BOOL = {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y}

SIGNED_OPS = ["eq", "ne", "lt", "le", "gt", "ge"]
UNSIGNED_OPS = SIGNED_OPS + ["lo", "ls", "hi", "hs"]
FLOAT_OPS = SIGNED_OPS + ["equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"]


def _int_cases():
    cases = []
    for t in ["s16", "s32", "s64"]:
        cases += [(op, t) for op in SIGNED_OPS]
    for t in ["u16", "u32", "u64"]:
        cases += [(op, t) for op in UNSIGNED_OPS]
    cases += [(op, t) for t in ["b16", "b32", "b64"] for op in ["eq", "ne"]]
    return cases


# ----------------------------------------------------------------------------------------------------------
# setp
# ----------------------------------------------------------------------------------------------------------


INT_SETP_TYPES = {t: SIGNED_OPS for t in ["s16", "s32", "s64"]}
INT_SETP_TYPES.update({t: UNSIGNED_OPS for t in ["u16", "u32", "u64"]})
INT_SETP_TYPES.update({t: ["eq", "ne"] for t in ["b16", "b32", "b64"]})


@pytest.mark.parametrize("t", sorted(INT_SETP_TYPES))
def test_setp_int(t):
    """setp.{op}.{t} p|q, a, b for every comparison valid on {t} (q is the complement of p)."""
    ops = INT_SETP_TYPES[t]
    w = int(t[1:])
    a, b = operands(w, 100, seed=200, n_edges=18)
    a += [x for x in a[:50]]  # equal operands
    b += [x for x in a[:50]]
    ins = [(t, a), (t, b)]
    templates = [f"setp.{op}.{t} {{p}}|{{q}}, {{a}}, {{b}};" for op in ops]
    got = predicate_mask(templates, ins)
    vt = "u" + t[1:] if t[0] == "b" else t
    exp = []
    for x, y in zip(a, b, strict=True):
        row = []
        for op in ops:
            r = int(INT_CMP[op](val(x, vt), val(y, vt)))
            row.append((r, 1 - r))
        exp.append(row)
    check_predicate_mask(got, exp, [f"setp.{op}.{t}" for op in ops], ins, f"setp.*.{t}")


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_setp_float(t):
    """All 14 float comparisons (ordered, unordered, num, nan) over all pairs of special values incl. NaNs."""
    vals = F32_VALUES if t == "f32" else F64_VALUES
    a, b = pairs(vals)
    ins = [(t, a), (t, b)]
    templates = [f"setp.{op}.{t} {{p}}|{{q}}, {{a}}, {{b}};" for op in FLOAT_OPS]
    got = predicate_mask(templates, ins)
    exp = []
    for x, y in zip(a, b, strict=True):
        row = []
        for op in FLOAT_OPS:
            r = int(float_cmp(op, to_float(t, x), to_float(t, y)))
            row.append((r, 1 - r))
        exp.append(row)
    check_predicate_mask(got, exp, [f"setp.{op}.{t}" for op in FLOAT_OPS], ins, f"setp.*.{t}")


@pytest.mark.parametrize("op", ["eq", "lt", "ge", "neu", "nan"])
def test_setp_ftz_f32(op):
    """.ftz: subnormal operands compare as (sign-preserving) zero."""
    a, b = pairs(F32_VALUES + [0x00000010, 0x80400000])
    ins = [("f32", a), ("f32", b)]
    template = f"setp.{op}.ftz.f32 {{d}}, {{a}}, {{b}};"
    (p,) = elementwise(template, ins, ["pred"])
    exp = [int(float_cmp(op, ftz32(to_float("f32", x)), ftz32(to_float("f32", y)))) for x, y in
           zip(a, b, strict=True)]
    check(p, exp, ins, template)


def _f16_value(h: int) -> float:
    e, m = (h >> 10) & 0x1F, h & 0x3FF
    if e == 0x1F:
        v = float("nan") if m else float("inf")
    else:
        v = (m if e == 0 else m + 1024) * 2.0 ** (max(e, 1) - 25)
    return -v if h & 0x8000 else v


@pytest.mark.parametrize("op", ["eq", "lt", "geu", "nan", "ne", "gt"])
def test_setp_set_ftz_f16(op):
    """.ftz on f16 comparisons: subnormal operands compare as zero (golden isa_setp_eq_ftz_f16(0x0000,
    0x0001) = 1, isa_set_ltu_ftz_u16_f16(0x0000, 0x0001) = 0)."""
    from tests.unit.floatutil import elementwise as f_elementwise

    vals = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x8400, 0x3C00, 0xBC00, 0x7C00, 0x7E00, 0x0200]
    a = [x for x in vals for _ in vals]
    b = [y for _ in vals for y in vals]
    A, B = np.array(a, dtype=np.uint16), np.array(b, dtype=np.uint16)
    p, r = f_elementwise(f"setp.{op}.ftz.f16 {{d}}, {{a}}, {{b}};\n    set.{op}.ftz.u32.f16 {{d2}}, {{a}}, {{b}};",
                         [("b16", A), ("b16", B)], ["pred", "u32"])

    def flush(h: int) -> float:
        return math.copysign(0.0, _f16_value(h)) if (h & 0x7C00) == 0 else _f16_value(h)

    want = [int(float_cmp(op, flush(x), flush(y))) for x, y in zip(a, b, strict=True)]
    assert [int(v) for v in p] == want
    assert [int(v) for v in r] == [0xFFFFFFFF if w else 0 for w in want]
    # and the packed form: one predicate per lane
    n = len(a) // 2
    pa = (A[:n].astype(np.uint32) | (A[n:2 * n].astype(np.uint32) << 16))
    pb = (B[:n].astype(np.uint32) | (B[n:2 * n].astype(np.uint32) << 16))
    lo, hi = f_elementwise(f"setp.{op}.ftz.f16x2 {{d}}|{{d2}}, {{a}}, {{b}};", [("b32", pa), ("b32", pb)],
                           ["pred", "pred"])
    assert [int(v) for v in lo] == want[:n] and [int(v) for v in hi] == want[n:2 * n]


@pytest.mark.parametrize("op,t", [("lt", "s32"), ("hi", "u32"), ("ge", "s64"), ("eq", "u64"), ("ltu", "f32"),
                                  ("num", "f64")])
def test_setp_boolop(op, t):
    """setp.{op}.{boolop}.{t} p|q, a, b, {!}c:  p = (a op b) BOOL c',  q = !(a op b) BOOL c'."""
    if t[0] == "f":
        vals = (F32_VALUES if t == "f32" else F64_VALUES)[::2] + (NAN32 if t == "f32" else NAN64)[:1]
        a, b = pairs(vals)
    else:
        a, b = pairs(edge_values(int(t[1:]))[:14])
    a, b = a + a, b + b
    c = [False] * (len(a) // 2) + [True] * (len(a) - len(a) // 2)
    ins = [(t, a), (t, b), ("pred", c)]
    combos = [(boolop, neg) for boolop in ("and", "or", "xor") for neg in (False, True)]
    templates = [f"setp.{op}.{boolop}.{t} {{p}}|{{q}}, {{a}}, {{b}}, {'!' if neg else ''}{{c}};"
                 for boolop, neg in combos]
    got = predicate_mask(templates, ins)
    exp = []
    for x, y, z in zip(a, b, c, strict=True):
        if t[0] == "f":
            r = int(float_cmp(op, to_float(t, x), to_float(t, y)))
        else:
            r = int(INT_CMP[op](val(x, t), val(y, t)))
        row = []
        for boolop, neg in combos:
            cc = int(z) ^ int(neg)
            row.append((_BOOL[boolop](r, cc), _BOOL[boolop](1 - r, cc)))
        exp.append(row)
    names = [f"setp.{op}.{boolop}.{t} {'!' if neg else ''}c" for boolop, neg in combos]
    check_predicate_mask(got, exp, names, ins, f"setp.{op}.<boolop>.{t}")


def test_setp_sink_destination():
    """'_' may replace one destination of p|q."""
    a, b = pairs([0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF])
    ins = [("s32", a), ("s32", b)]
    template = "setp.lt.s32 _|{d}, {a}, {b};\n    setp.gt.s32 {d2}|_, {a}, {b};"
    q, p = elementwise(template, ins, ["pred", "pred"])
    check(q, [int(not val(x, "s32") < val(y, "s32")) for x, y in zip(a, b, strict=True)], ins, "q of lt")
    check(p, [int(val(x, "s32") > val(y, "s32")) for x, y in zip(a, b, strict=True)], ins, "p of gt")


def test_setp_immediate_operand():
    (a,) = operands(32, 100, seed=201, count=1)
    ins = [("s32", a)]
    template = "setp.lt.s32 {d}, {a}, -5;\n    setp.hi.u32 {d2}, {a}, 0x80000000;"
    p, q = elementwise(template, ins, ["pred", "pred"])
    check(p, [int(val(x, "s32") < -5) for x in a], ins, "setp.lt.s32 a, -5")
    check(q, [int(x > 0x80000000) for x in a], ins, "setp.hi.u32 a, 0x80000000")


# ----------------------------------------------------------------------------------------------------------
# set
# ----------------------------------------------------------------------------------------------------------

_SET_CASES = [("lt", "u32", "s32"), ("lt", "s32", "u32"), ("hs", "u32", "u64"), ("ne", "s32", "s64"),
              ("ge", "u32", "s16"), ("eq", "f32", "s32"), ("gt", "f32", "u32"), ("lt", "u32", "f32"),
              ("ltu", "u32", "f32"), ("nan", "s32", "f64"), ("le", "f32", "f32"), ("geu", "f32", "f64"),
              ("num", "f32", "f32")]


@pytest.mark.parametrize("op,dtype,stype", _SET_CASES)
def test_set(op, dtype, stype):
    """set.{op}.{dtype}.{stype}: true -> 0xFFFFFFFF (integer dtype) / 1.0f (f32 dtype); false -> 0."""
    if stype[0] == "f":
        a, b = pairs((F32_VALUES if stype == "f32" else F64_VALUES)[::2] + [0x7FC00000 if stype == "f32"
                                                                            else 0x7FF8000000000000])
    else:
        a, b = operands(int(stype[1:]), 60, seed=210, n_edges=14)
    ins = [(stype, a), (stype, b)]
    template = f"set.{op}.{dtype}.{stype} {{d}}, {{a}}, {{b}};"
    (got,) = elementwise(template, ins, [dtype])
    true = 0x3F800000 if dtype == "f32" else 0xFFFFFFFF
    exp = []
    for x, y in zip(a, b, strict=True):
        if stype[0] == "f":
            r = float_cmp(op, to_float(stype, x), to_float(stype, y))
        else:
            r = INT_CMP[op](val(x, stype), val(y, stype))
        exp.append(true if r else 0)
    check(got, exp, ins, template)


@pytest.mark.parametrize("boolop", ["and", "or", "xor"])
def test_set_boolop(boolop):
    a, b = pairs([0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 5])
    a, b = a + a, b + b
    c = [False] * (len(a) // 2) + [True] * (len(a) // 2)
    ins = [("s32", a), ("s32", b), ("pred", c)]
    template = f"set.lt.{boolop}.u32.s32 {{d}}, {{a}}, {{b}}, {{c}};\n" \
               f"    set.lt.{boolop}.f32.s32 {{d2}}, {{a}}, {{b}}, !{{c}};"
    d, d2 = elementwise(template, ins, ["u32", "f32"])
    e1, e2 = [], []
    for x, y, z in zip(a, b, c, strict=True):
        r = int(val(x, "s32") < val(y, "s32"))
        e1.append(0xFFFFFFFF if _BOOL[boolop](r, int(z)) else 0)
        e2.append(0x3F800000 if _BOOL[boolop](r, 1 - int(z)) else 0)
    check(d, e1, ins, f"set.lt.{boolop}.u32.s32")
    check(d2, e2, ins, f"set.lt.{boolop}.f32.s32 !c")


# ----------------------------------------------------------------------------------------------------------
# selp / slct
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", ["b16", "s16", "b32", "u32", "s32", "f32", "b64", "u64", "f64"])
def test_selp(t):
    w = int(t[1:])
    a, b = random_values(w, 64, 220), random_values(w, 64, 221)
    if t[0] == "f":  # arbitrary bit patterns (NaN payloads included) must pass through untouched
        a[:3] = NAN32 if w == 32 else NAN64
    c = [bool(x & 1) for x in random_values(8, 64, 222)]
    ins = [(t, a), (t, b), ("pred", c)]
    template = f"selp.{t} {{d}}, {{a}}, {{b}}, {{c}};"
    (got,) = elementwise(template, ins, [t])
    check(got, [x if z else y for x, y, z in zip(a, b, c, strict=True)], ins, template, width=w)


def test_selp_immediates():
    c = [False, True, True, False]
    ins = [("pred", c)]
    template = "selp.s32 {d}, -7, 12, {a};\n    selp.f32 {d2}, 0f3F800000, 0fBF800000, {a};"
    d, d2 = elementwise(template, ins, ["s32", "f32"])
    assert d == [12, 0xFFFFFFF9, 0xFFFFFFF9, 12]
    assert d2 == [0xBF800000, 0x3F800000, 0x3F800000, 0xBF800000]


@pytest.mark.parametrize("dtype", ["b32", "u32", "s32", "f32", "b64", "s64", "f64", "b16"])
def test_slct_s32(dtype):
    """slct.{dtype}.s32 d, a, b, c: d = (c >= 0) ? a : b  (c signed)."""
    w = int(dtype[1:])
    cs = edge_values(32)
    a = random_values(w, len(cs), 230)
    b = random_values(w, len(cs), 231)
    ins = [(dtype, a), (dtype, b), ("s32", cs)]
    template = f"slct.{dtype}.s32 {{d}}, {{a}}, {{b}}, {{c}};"
    (got,) = elementwise(template, ins, [dtype])
    exp = [x if val(z, "s32") >= 0 else y for x, y, z in zip(a, b, cs, strict=True)]
    check(got, exp, ins, template, width=w)


@pytest.mark.parametrize("ftz", [False, True])
@pytest.mark.parametrize("dtype", ["b32", "f32", "u64"])
def test_slct_f32(dtype, ftz):
    """slct.{dtype}.f32: -0.0 counts as >= 0; a NaN c fails c >= 0 (b selected); with .ftz a negative
    subnormal c is flushed to -0.0 (a selected), without it c < 0 (b selected)."""
    w = int(dtype[1:])
    cs = F32_VALUES + [0x80000010, 0x00000010]
    a = random_values(w, len(cs), 232)
    b = random_values(w, len(cs), 233)
    ins = [(dtype, a), (dtype, b), ("f32", cs)]
    template = f"slct{'.ftz' if ftz else ''}.{dtype}.f32 {{d}}, {{a}}, {{b}}, {{c}};"
    (got,) = elementwise(template, ins, [dtype])
    exp = []
    for x, y, z in zip(a, b, cs, strict=True):
        cf = to_float("f32", z)
        if ftz:
            cf = ftz32(cf)
        exp.append(x if cf >= 0.0 else y)
    check(got, exp, ins, template, width=w)


# ----------------------------------------------------------------------------------------------------------
# predicate logic and guards
# ----------------------------------------------------------------------------------------------------------

_P = [False, False, True, True]
_Q = [False, True, False, True]


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_pred_logic_with_negated_operand(op):
    """and/or/xor.pred with a directly computed predicate and not.pred; results drive selp."""
    ins = [("pred", _P), ("pred", _Q)]
    template = (f"not.pred %p5, {{b}};\n    {op}.pred %p6, {{a}}, %p5;\n    selp.u32 {{d}}, 10, 20, %p6;\n"
                f"    {op}.pred {{d2}}, {{a}}, {{b}};")
    d, d2 = elementwise(template, ins, ["u32", "pred"])
    f = _BOOL[op]
    assert d == [10 if f(int(x), int(not y)) else 20 for x, y in zip(_P, _Q, strict=True)]
    assert d2 == [f(int(x), int(y)) for x, y in zip(_P, _Q, strict=True)]


def test_guarded_instructions():
    """@p / @!p guards: only the enabled instruction writes its destination."""
    a = random_values(32, 64, 240)
    b = random_values(32, 64, 241)
    c = [bool(x & 1) for x in random_values(8, 64, 242)]
    ins = [("u32", a), ("u32", b), ("pred", c)]
    template = ("mov.u32 {d}, 0;\n    mov.u32 {d2}, 7;\n    @{c} add.u32 {d}, {a}, {b};\n"
                "    @!{c} sub.u32 {d}, {a}, {b};\n    @{c} mov.u32 {d2}, 99;")
    d, d2 = elementwise(template, ins, ["u32", "u32"])
    check(d, [(x + y) & 0xFFFFFFFF if z else (x - y) & 0xFFFFFFFF for x, y, z in zip(a, b, c, strict=True)],
          ins, "@p add / @!p sub")
    check(d2, [99 if z else 7 for z in c], ins, "@p mov")


def test_guard_from_setp_chain():
    """A predicate computed by setp guards setp with a BoolOp, whose result guards a move."""
    a, b = operands(32, 50, seed=243, n_edges=12)
    ins = [("s32", a), ("s32", b)]
    template = ("setp.lt.s32 %p5, {a}, {b};\n    setp.ne.and.s32 %p6|%p7, {a}, 0, %p5;\n"
                "    mov.u32 {d}, 1;\n    @%p6 mov.u32 {d}, 2;\n    @%p7 mov.u32 {d}, 3;\n"
                "    mov.u32 {d2}, 0;\n    @!%p5 setp.eq.s32 %p8, {b}, 0;\n"
                "    @!%p5 selp.u32 {d2}, 5, 6, %p8;")
    d, d2 = elementwise(template, ins, ["u32", "u32"])
    e1, e2 = [], []
    for x, y in zip(a, b, strict=True):
        lt = val(x, "s32") < val(y, "s32")
        ne = x != 0
        r = 1
        if ne and lt:
            r = 2
        if (not ne) and lt:
            r = 3
        e1.append(r)
        e2.append(0 if lt else (5 if y == 0 else 6))
    check(d, e1, ins, "setp chain (d)")
    check(d2, e2, ins, "setp chain (d2)")


# ----------------------------------------------------------------------------------------------------------
# destination aliasing a source
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("boolop", ["and", "or", "xor"])
def test_setp_boolop_c_aliases_destination(boolop):
    """setp.lt.{boolop}.s32 p|q, a, b, p: both p and q must use the *old* p."""
    a, b = pairs([0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF])
    a, b = a + a, b + b
    c = [False] * (len(a) // 2) + [True] * (len(a) // 2)
    ins = [("s32", a), ("s32", b), ("pred", c)]
    template = (f"mov.pred %p5, {{c}};\n    setp.lt.{boolop}.s32 %p5|%p6, {{a}}, {{b}}, %p5;\n"
                "    mov.pred {d}, %p5;\n    mov.pred {d2}, %p6;")
    p, q = elementwise(template, ins, ["pred", "pred"])
    ep, eq = [], []
    for x, y, z in zip(a, b, c, strict=True):
        r = int(val(x, "s32") < val(y, "s32"))
        ep.append(_BOOL[boolop](r, int(z)))
        eq.append(_BOOL[boolop](1 - r, int(z)))
    check(p, ep, ins, template + " (p)")
    check(q, eq, ins, template + " (q)")


def test_selp_slct_set_destination_aliases_source():
    a, b = operands(32, 60, seed=250, n_edges=12)
    c = [bool(x & 1) for x in random_values(8, len(a), 251)]
    ins = [("u32", a), ("u32", b), ("pred", c)]
    template = ("selp.b32 {a}, {b}, {a}, {c};\n    slct.u32.s32 {b}, {a}, {b}, {b};\n"
                "    set.gt.u32.s32 %r20, {a}, {b};\n    add.u32 {d2}, {b}, %r20;\n    mov.b32 {d}, {a};")
    d, d2 = elementwise(template, ins, ["u32", "u32"])
    e1, e2 = [], []
    for x, y, z in zip(a, b, c, strict=True):
        x1 = y if z else x
        y1 = x1 if val(y, "s32") >= 0 else y
        flag = 0xFFFFFFFF if val(x1, "s32") > val(y1, "s32") else 0
        e1.append(x1)
        e2.append((y1 + flag) & 0xFFFFFFFF)
    check(d, e1, ins, "selp alias")
    check(d2, e2, ins, "slct/set alias")


# ----------------------------------------------------------------------------------------------------------
# the H100's own results
# ----------------------------------------------------------------------------------------------------------

test_golden_compare = golden_test(r"^isa_(setp|set|selp|slct)_", "setp/set/selp/slct")
