"""Video instructions against a Python-int model: scalar vadd/vsub/vabsdiff/vmin/vmax/vshl/vshr/vmad/vset
(operand selectors, .sat, secondary .add/.min/.max, destination merge) and the SIMD vadd2 ... vset4 forms
(lane selectors, masks, .sat, .add), plus a replay of every video case of the H100 golden set.

The model is the PTX ISA's pseudo-code, corrected where an H100 computes otherwise (sm_90 emulates video
instructions in software; the golden cases in ../shared/gpu-golden/isa named below show each deviation).
"""

from __future__ import annotations

import pytest

from tests.markers import golden_needs
from tests.unit.goldenutil import golden_cases, replay_case
from tests.unit.intutil import check, elementwise, operands, random_values, s

M32 = (1 << 32) - 1

# ----------------------------------------------------------------------------------------------------------
# reference model
# ----------------------------------------------------------------------------------------------------------

SEL = {"": (0, 32), "b0": (0, 8), "b1": (8, 8), "b2": (16, 8), "b3": (24, 8), "h0": (0, 16), "h1": (16, 16)}


def part(v: int, signed: bool, sel: str) -> int:
    """partSelectSignExtend: the selected byte / half-word (or the word), sign- or zero-extended."""
    off, w = SEL[sel]
    x = (v >> off) & ((1 << w) - 1)
    return s(x, w) if signed else x


def clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


def merge(dsel: str, v: int, c: int) -> int:
    off, w = SEL[dsel]
    m = ((1 << w) - 1) << off
    return ((v << off) & m) | (c & ~m & M32)


def post(op: str, dt: str, t: int, c: int | None, dsel: str, sat: bool, op2: str | None) -> int:
    """Saturation, then the secondary operation or the merge into c, of the exact intermediate `t`."""
    signed = dt == "s32"
    # the H100 keeps a 34-bit intermediate (isa_vshl_s32_s32_u32_sat_clamp) ...
    v = s(t, 34)
    if op2 in ("min", "max") and not sat and op == "vshl":
        v = s(t, 64)  # ... but compares a vshl result as 64 bits (isa_vshl_s32_u32_u32_clamp_max)
    if sat:
        # unsigned .sat clamps at 0 only and wraps above (isa_vadd_u32_s32_u32_sat)
        v = clamp(v, -(1 << 31), (1 << 31) - 1) if signed else (0 if v < 0 else v & M32)
    if op2 == "add":
        return (v + c) & M32
    if op2 is not None:
        if not sat and op in ("vadd", "vsub"):  # wrapped to 32 bits first (isa_vadd_s32_s32_s32_min)
            v = s(v, 32) if signed else v & M32
        cc = s(c, 32) if signed else c
        return (min(v, cc) if op2 == "min" else max(v, cc)) & M32
    if dsel:
        return merge(dsel, 0 if sat else v, c)  # .sat writes 0 (isa_vadd_s32_s32_s32_sat_h0h1_dh1)
    return v & M32


def vop(op: str, dt: str, at: str, bt: str, a: int, b: int, c: int | None = None, asel: str = "",
        bsel: str = "", dsel: str = "", sat: bool = False, op2: str | None = None) -> int:
    ta, tb = part(a, at == "s32", asel), part(b, bt == "s32", bsel)
    t = {"vadd": ta + tb, "vsub": ta - tb, "vabsdiff": abs(ta - tb), "vmin": min(ta, tb), "vmax": max(ta, tb)}[op]
    return post(op, dt, t, c, dsel, sat, op2)


def vshift(op: str, dt: str, at: str, a: int, b: int, c: int | None = None, asel: str = "", dsel: str = "",
           sat: bool = False, op2: str | None = None, clamp_mode: bool = True) -> int:
    ta = part(a, at == "s32", asel)
    n = min(b, 32) if clamp_mode else b & 31
    return post(op, dt, ta << n if op == "vshl" else ta >> n, c, dsel, sat, op2)


def vmad(at: str, bt: str, a: int, b: int, c: int, asel: str = "", bsel: str = "", na: bool = False,
         nb: bool = False, nc: bool = False, po: bool = False, sat: bool = False, scale: int = 0) -> int:
    signed = at == "s32" or bt == "s32" or (na != nb) or nc
    # both a and b take the signedness of the result (isa_vmad_s32_u32_s32_sat)
    ta, tb = part(a, signed, asel), part(b, signed, bsel)
    m128 = (1 << 128) - 1
    tmp, lsb = (ta * tb) & m128, 0
    if po:
        lsb = 1
    elif na != nb:
        tmp, lsb = ~tmp & m128, 1
    elif nc:
        c, lsb = ~c & M32, 1
    tmp = (tmp + (s(c, 32) & m128) + lsb) & m128  # c is always sign-extended (isa_vmad_u32_u32_u32_shr7_b1b2)
    r = s(tmp, 128) >> scale
    if sat:
        r = clamp(r, -(1 << 31), (1 << 31) - 1) if signed else clamp(r, 0, M32)
    return r & M32


CMP = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
       "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}


def vset(at: str, bt: str, cmp: str, a: int, b: int, c: int | None = None, asel: str = "", bsel: str = "",
         dsel: str = "", op2: str | None = None) -> int:
    t = int(CMP[cmp](part(a, at == "s32", asel), part(b, bt == "s32", bsel)))
    if op2 == "add":
        return (t + c) & M32
    if op2 in ("min", "max"):
        return (min(t, s(c, 32)) if op2 == "min" else max(t, s(c, 32))) & M32
    return merge(dsel, t, c) if dsel else t


def simd(op: str, n: int, dt: str | None, at: str, bt: str, a: int, b: int, c: int, asel: str = "",
         bsel: str = "", mask: str = "", sat: bool = False, add: bool = False, cmp: str = "") -> int:
    """vop2 (n=2, half-word lanes) / vop4 (n=4, byte lanes); selectors as written (.h10, .b7531)."""
    w = 32 // n
    fm = (1 << w) - 1
    src = a | (b << 32)  # lanes 0..n-1 are a's, n..2n-1 b's
    asel = asel or "".join(str(k) for k in range(n - 1, -1, -1))
    bsel = bsel or "".join(str(k) for k in range(2 * n - 1, n - 1, -1))
    lanes_on = {int(ch) for ch in mask} if mask else set(range(n))

    def ext(sel: str, signed: bool) -> list[int]:
        out = []
        for i in range(n):
            x = (src >> (w * int(sel[n - 1 - i]))) & fm  # the selector names lanes from the top down
            out.append(s(x, w) if signed else x)
        return out

    va, vb = ext(asel, at == "s32"), ext(bsel, bt == "s32")
    t = []
    for x, y in zip(va, vb, strict=True):
        if op == "vset":
            r = int(CMP[cmp](x, y))
        else:
            r = {"vadd": x + y, "vsub": x - y, "vabsdiff": abs(x - y), "vmin": min(x, y), "vmax": max(x, y),
                 "vavrg": (x + y + 1) >> 1 if x + y >= 0 else (x + y) >> 1}[op]
        if sat:
            r = clamp(r, -(1 << (w - 1)), (1 << (w - 1)) - 1) if dt == "s32" else clamp(r, 0, fm)
        t.append(r)
    if add:
        return (c + sum(t[i] for i in lanes_on)) & M32
    # lanes outside the mask keep c's (isa_vadd2_u32_u32_u32_sel)
    return sum(((t[i] & fm) if i in lanes_on else (c >> (w * i)) & fm) << (w * i) for i in range(n))


def test_model_isa_examples():
    """The model against hand-worked values (the PTX ISA examples' shapes)."""
    assert vop("vadd", "s32", "s32", "s32", 0x7FFFFFFF, 1, sat=True) == 0x7FFFFFFF
    assert vop("vadd", "u32", "u32", "u32", 0x80, 0x80, asel="b0", bsel="b0") == 0x100
    assert vop("vsub", "s32", "s32", "s32", 0x00FF, 0, asel="b0") == 0xFFFFFFFF  # 0xFF as s8 is -1
    assert vop("vabsdiff", "u32", "u32", "u32", 3, 10) == 7
    assert vop("vmax", "u32", "u32", "u32", 1, 2, 0xAABBCCDD, dsel="b1") == 0xAABB02DD
    assert vshift("vshr", "s32", "s32", 0x80000000, 4) == 0xF8000000
    assert vmad("u32", "u32", 3, 4, 5) == 17
    assert vmad("s32", "s32", 3, 4, 5, na=True) == u32(-12 + 5)
    assert vset("u32", "u32", "lt", 1, 2) == 1
    assert simd("vadd", 2, "u32", "u32", "u32", 0x00010002, 0x00030004, 0) == 0x00040006
    assert simd("vavrg", 4, "u32", "u32", "u32", 0x01020304, 0x01010101, 0) == 0x01020203
    assert simd("vmax", 2, "s32", "s32", "s32", 0xFFFF0001, 0x00010000, 0x12345678, mask="1") == 0x00015678


def u32(x: int) -> int:
    return x & M32


# ----------------------------------------------------------------------------------------------------------
# kernels
# ----------------------------------------------------------------------------------------------------------


def _values(count: int, seed: int, n_random: int = 300) -> list[list[int]]:
    """Edge values (sign and byte/half boundaries) in every position, plus random words and small values."""
    ops = operands(32, n_random, seed, count=count, n_edges=24)
    small = [x & 0x3F for x in random_values(32, 100, seed + 50)]
    mixed = random_values(32, 100, seed + 60)
    return [o + (small if k == 1 else mixed) for k, o in enumerate(ops)]


def _sel(sel: str) -> str:
    return f".{sel}" if sel else ""


SCALAR_FORMS = [  # (types, .sat, op2, asel, bsel, dsel)
    (("u32", "u32", "u32"), False, None, "", "", ""),
    (("s32", "s32", "s32"), True, None, "", "", ""),
    (("s32", "u32", "s32"), False, None, "", "", ""),
    (("u32", "s32", "u32"), True, None, "", "", ""),
    (("u32", "u32", "u32"), True, "add", "", "", ""),
    (("s32", "s32", "s32"), False, "min", "", "", ""),
    (("s32", "s32", "s32"), True, "max", "", "", ""),
    (("u32", "s32", "u32"), False, "max", "b2", "h0", ""),
    (("s32", "s32", "s32"), False, None, "b3", "b2", ""),
    (("u32", "u32", "u32"), False, None, "b0", "b1", "b2"),
    (("s32", "s32", "s32"), True, None, "h0", "h1", "h1"),
    (("s32", "u32", "s32"), False, None, "h1", "b0", "h0"),
]


def _form_id(f) -> str:
    (dt, at, bt), sat, op2, asel, bsel, dsel = f
    return "_".join(x for x in (dt, at, bt, "sat" if sat else "", op2 or "", asel + bsel, "d" + dsel if dsel else "")
                    if x)


@pytest.mark.parametrize("form", SCALAR_FORMS, ids=_form_id)
@pytest.mark.parametrize("op", ["vadd", "vsub", "vabsdiff", "vmin", "vmax"])
def test_scalar(op, form):
    (dt, at, bt), sat, op2, asel, bsel, dsel = form
    mods = f"{dt}.{at}.{bt}" + (".sat" if sat else "") + (f".{op2}" if op2 else "")
    with_c = bool(op2 or dsel)
    a, b, c = _values(3, seed=100 + SCALAR_FORMS.index(form))
    ins = [("b32", a), ("b32", b)] + ([("b32", c)] if with_c else [])
    tail = ", {c}" if with_c else ""
    template = f"{op}.{mods} {{d}}{_sel(dsel)}, {{a}}{_sel(asel)}, {{b}}{_sel(bsel)}{tail};"
    (got,) = elementwise(template, ins, ["b32"], pre="mov.b32 {d}, {c};" if dsel else "")
    exp = [vop(op, dt, at, bt, x, y, z, asel, bsel, dsel, sat, op2) for x, y, z in zip(a, b, c, strict=True)]
    check(got, exp, ins, template)


SHIFT_FORMS = [  # (dt, at, .sat, clamp?, op2, asel, dsel)
    ("u32", "u32", False, True, None, "", ""),
    ("s32", "s32", False, False, None, "", ""),
    ("s32", "s32", True, True, None, "", ""),
    ("u32", "u32", False, False, "add", "", ""),
    ("s32", "u32", False, True, "max", "", ""),
    ("s32", "s32", False, True, "min", "h1", ""),
    ("u32", "s32", False, True, None, "b2", "b1"),
]


@pytest.mark.parametrize("form", SHIFT_FORMS, ids=lambda f: "_".join(str(x) for x in f if x not in ("", None)))
@pytest.mark.parametrize("op", ["vshl", "vshr"])
def test_shift(op, form):
    dt, at, sat, clamp_mode, op2, asel, dsel = form
    mods = f"{dt}.{at}.u32" + (".sat" if sat else "") + (".clamp" if clamp_mode else ".wrap") + (
        f".{op2}" if op2 else "")
    a, _, c = _values(3, seed=7)
    amounts = [0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 34, 63, 64, 255, 0x80000000, M32]
    b = [amounts[i % len(amounts)] for i in range(len(a))]
    with_c = bool(op2 or dsel)
    ins = [("b32", a), ("u32", b)] + ([("b32", c)] if with_c else [])
    template = f"{op}.{mods} {{d}}{_sel(dsel)}, {{a}}{_sel(asel)}, {{b}}{', {c}' if with_c else ''};"
    (got,) = elementwise(template, ins, ["b32"], pre="mov.b32 {d}, {c};" if dsel else "")
    exp = [vshift(op, dt, at, x, y, z, asel, dsel, sat, op2, clamp_mode) for x, y, z in zip(a, b, c, strict=True)]
    check(got, exp, ins, template)


VMAD_FORMS = [  # (dt, at, bt, sat, scale, po, negate a/b/c, asel, bsel)
    ("u32", "u32", "u32", False, 0, False, "", "", ""),
    ("s32", "s32", "s32", False, 0, False, "", "", ""),
    ("s32", "u32", "s32", True, 0, False, "", "", ""),
    ("u32", "u32", "u32", False, 7, False, "", "b1", "b2"),
    ("s32", "s32", "s32", True, 15, False, "", "h1", "h0"),
    ("s32", "s32", "s32", False, 0, False, "a", "", ""),
    ("s32", "s32", "s32", True, 0, False, "c", "", ""),
    ("s32", "s32", "s32", False, 7, False, "ab", "", ""),
    ("u32", "u32", "u32", False, 0, True, "", "", ""),
    ("u32", "u32", "u32", True, 15, True, "", "h1", "b3"),
]


@pytest.mark.parametrize("form", VMAD_FORMS, ids=lambda f: "_".join(str(x) for x in f if x not in ("", None, False, 0)))
def test_vmad(form):
    dt, at, bt, sat, scale, po, neg, asel, bsel = form
    mods = f"{dt}.{at}.{bt}" + (".po" if po else "") + (".sat" if sat else "") + (f".shr{scale}" if scale else "")
    a, b, c = _values(3, seed=11)
    ins = [("b32", a), ("b32", b), ("b32", c)]
    ng = {k: "-" if k in neg else "" for k in "abc"}
    template = (f"vmad.{mods} {{d}}, {ng['a']}{{a}}{_sel(asel)}, {ng['b']}{{b}}{_sel(bsel)}, {ng['c']}{{c}};")
    (got,) = elementwise(template, ins, ["b32"])
    exp = [vmad(at, bt, x, y, z, asel, bsel, "a" in neg, "b" in neg, "c" in neg, po, sat, scale)
           for x, y, z in zip(a, b, c, strict=True)]
    check(got, exp, ins, template)


@pytest.mark.parametrize("cmp", list(CMP))
def test_vset(cmp):
    """Each comparison on u32 and s32 words and on mixed-sign selected bytes, in one kernel."""
    a, b, c = _values(3, seed=13)
    ins = [("b32", a), ("b32", b), ("b32", c)]
    template = (f"vset.u32.s32.{cmp} {{d}}, {{a}}, {{b}};\n"
                f"    vset.s32.u32.{cmp}.add %r20, {{a}}.b3, {{b}}.h0, {{c}};\n"
                f"    vset.s32.s32.{cmp}.max %r21, {{a}}.h1, {{b}}.b1, {{c}};\n"
                f"    mov.b32 {{d2}}, {{c}};\n"
                f"    vset.u32.u32.{cmp} {{d2}}.b1, {{a}}, {{b}}, {{c}};\n"
                "    xor.b32 %r22, %r20, %r21;\n"
                "    xor.b32 {d}, {d}, %r22;")
    d, d2 = elementwise(template, ins, ["b32", "b32"])
    exp = [vset("u32", "s32", cmp, x, y) ^ vset("s32", "u32", cmp, x, y, z, "b3", "h0", op2="add")
           ^ vset("s32", "s32", cmp, x, y, z, "h1", "b1", op2="max") for x, y, z in zip(a, b, c, strict=True)]
    check(d, exp, ins, f"vset .{cmp} word / .add / .max (xor of the three)")
    check(d2, [vset("u32", "u32", cmp, x, y, z, dsel="b1") for x, y, z in zip(a, b, c, strict=True)], ins,
          f"vset.u32.u32.{cmp} d.b1")


SIMD_FORMS = [  # (types, .sat, .add, asel, bsel, mask)
    (("u32", "u32", "u32"), False, False, "", "", ""),
    (("s32", "s32", "s32"), True, False, "", "", ""),
    (("s32", "u32", "s32"), False, True, "", "", ""),
    (("u32", "u32", "u32"), True, False, "sel", "sel", "mask"),
    (("s32", "s32", "s32"), False, True, "sel", "", "mask"),
]
# selectors / masks per lane count
_SELS = {2: ("h10", "h23", "h1", "h01", "h30"), 4: ("b0123", "b7531", "b20", "b4062", "b3333")}


@pytest.mark.parametrize("form", SIMD_FORMS, ids=lambda f: "_".join(
    x for x in ("_".join(f[0]), "sat" if f[1] else "", "add" if f[2] else "", f[3], f[5]) if x))
@pytest.mark.parametrize("op", ["vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax"])
@pytest.mark.parametrize("n", [2, 4])
def test_simd(n, op, form):
    (dt, at, bt), sat, add, asel, bsel, mask = form
    a_s, b_s, m_s, a2_s, b2_s = _SELS[n]
    asel = (a_s if op != "vmin" else a2_s) if asel else ""
    bsel = (b_s if op != "vmax" else b2_s) if bsel else ""
    mask = m_s if mask else ""
    mods = f"{dt}.{at}.{bt}" + (".sat" if sat else "") + (".add" if add else "")
    a, b, c = _values(3, seed=17 + n)
    ins = [("b32", a), ("b32", b), ("b32", c)]
    template = f"{op}{n}.{mods} {{d}}{_sel(mask)}, {{a}}{_sel(asel)}, {{b}}{_sel(bsel)}, {{c}};"
    (got,) = elementwise(template, ins, ["b32"])
    exp = [simd(op, n, dt, at, bt, x, y, z, asel[1:], bsel[1:], mask[1:], sat, add)
           for x, y, z in zip(a, b, c, strict=True)]
    check(got, exp, ins, template)


@pytest.mark.parametrize("n", [2, 4])
def test_simd_vset(n):
    a, b, c = _values(3, seed=19)
    ins = [("b32", a), ("b32", b), ("b32", c)]
    lines, exp = [], [0] * len(a)
    for k, cmp in enumerate(CMP):
        at, bt = ("s32", "s32") if k % 2 else ("u32", "u32")
        add = k in (2, 5)
        mask = _SELS[n][2] if k == 3 else ""
        lines.append(f"vset{n}.{at}.{bt}.{cmp}{'.add' if add else ''} %r2{k}{_sel(mask)}, {{a}}, {{b}}, {{c}};")
        lines.append(f"    {'shf.l.wrap.b32' if k else 'mov.b32'} {{d}}, {'{d}, {d}, 5' if k else '0'};")
        lines.append(f"    xor.b32 {{d}}, {{d}}, %r2{k};")
        for i, (x, y, z) in enumerate(zip(a, b, c, strict=True)):
            prev = ((exp[i] << 5) | (exp[i] >> 27)) & M32 if k else 0
            exp[i] = prev ^ simd("vset", n, None, at, bt, x, y, z, mask=mask[1:], add=add, cmp=cmp)
    (got,) = elementwise("\n    ".join(lines), ins, ["b32"])
    check(got, exp, ins, f"vset{n} (all comparisons folded)")


def test_simd_saturation_byte_patterns():
    """All 0x00/0x7F/0x80/0xFF byte patterns through vadd4/vsub2 with saturation, exhaustively by lane."""
    pats = [0x00, 0x7F, 0x80, 0xFF, 0x01, 0xFE]
    words = [p | (q << 8) | (p << 16) | (q << 24) for p in pats for q in pats]
    a = [x for x in words for _ in words]
    b = [y for _ in words for y in words]
    ins = [("b32", a), ("b32", b), ("b32", [0] * len(a))]
    d, d2 = elementwise("vadd4.s32.s32.s32.sat {d}, {a}, {b}, {c};\n    vsub2.u32.u32.u32.sat {d2}, {a}, {b}, {c};",
                        ins, ["b32", "b32"])
    check(d, [simd("vadd", 4, "s32", "s32", "s32", x, y, 0, sat=True) for x, y in zip(a, b, strict=True)], ins,
          "vadd4.s32.sat")
    check(d2, [simd("vsub", 2, "u32", "u32", "u32", x, y, 0, sat=True) for x, y in zip(a, b, strict=True)], ins,
          "vsub2.u32.sat")


# ----------------------------------------------------------------------------------------------------------
# the H100 golden set
# ----------------------------------------------------------------------------------------------------------

VIDEO = r"^isa_v(add|sub|absdiff|min|max|shl|shr|mad|set|avrg)\d?_"
GOLDEN = golden_cases(VIDEO)


@golden_needs("isa")
@pytest.mark.parametrize("case", GOLDEN or ["absent"])
def test_golden(case):
    assert replay_case(case) == []


@golden_needs("isa")
def test_golden_covers_every_video_case():
    assert len(golden_cases(VIDEO, full=True)) == 163
