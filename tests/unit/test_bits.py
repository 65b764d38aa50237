"""PTX bit-manipulation and logic instructions against a Python-int model of the PTX ISA semantics.

popc, clz, bfind (.shiftamt), brev, bfe, bfi, fns, szext, prmt (generic + the six modes), shf (.l/.r,
.wrap/.clamp), shl/shr (shift amounts >= width clamp), and/or/xor/not/cnot on .b16/.b32/.b64/.pred, lop3,
bmsk.  Where an H100 departs from the ISA text the model follows the hardware and names the golden case
(../shared/gpu-golden/isa); the bit-manipulation cases of the golden set are replayed at the end.
"""

from __future__ import annotations

import pytest

from tests.markers import golden_needs
from tests.unit.goldenutil import golden_cases, replay_case
from tests.unit.intutil import (
    check,
    edge_values,
    elementwise,
    mask,
    operands,
    pairs,
    random_values,
    s,
    u,
)

# ----------------------------------------------------------------------------------------------------------
# reference model
# ----------------------------------------------------------------------------------------------------------


def popc(x: int) -> int:
    return bin(x).count("1")


def clz(x: int, w: int) -> int:
    return w - x.bit_length()


def bfind(x: int, w: int, signed: bool, shiftamt: bool) -> int:
    if signed and (x >> (w - 1)) & 1:
        x = ~x & mask(w)
    if x == 0:
        return 0xFFFFFFFF
    i = x.bit_length() - 1
    return (w - 1 - i) if shiftamt else i


def brev(x: int, w: int) -> int:
    return int(format(x, f"0{w}b")[::-1], 2)


def _field_args(pos: int, ln: int, w: int) -> tuple[int, int]:
    """bfe/bfi's pos and len: the ISA keeps bits 0-7 of each, which the H100 does for the 32-bit forms;
    the 64-bit forms use the whole 32-bit values (golden isa_bfe_u64, isa_bfe_s64, isa_bfi_b64: pos 0x100
    extracts nothing, len 0x101 is not len 1)."""
    return (pos & 0xFF, ln & 0xFF) if w == 32 else (pos, ln)


def bfe(a: int, pos: int, ln: int, w: int, signed: bool) -> int:
    msb = w - 1
    pos, ln = _field_args(pos, ln, w)
    sbit = 0 if (not signed or ln == 0) else (a >> min(pos + ln - 1, msb)) & 1
    d = 0
    for i in range(w):
        bit = (a >> (pos + i)) & 1 if (i < ln and pos + i <= msb) else sbit
        d |= bit << i
    return d


def bfi(a: int, b: int, pos: int, ln: int, w: int) -> int:
    msb = w - 1
    pos, ln = _field_args(pos, ln, w)
    f = b
    i = 0
    while i < ln and pos + i <= msb:
        f = (f & ~(1 << (pos + i))) | (((a >> i) & 1) << (pos + i))
        i += 1
    return f & mask(w)


# byte index picked for d.b0, d.b1, d.b2, d.b3 by each mode and selector c[1:0] (PTX ISA prmt table)
PRMT_MODES = {
    "f4e": [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]],
    "b4e": [[0, 7, 6, 5], [1, 0, 7, 6], [2, 1, 0, 7], [3, 2, 1, 0]],
    "rc8": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]],
    "ecl": [[0, 1, 2, 3], [1, 1, 2, 3], [2, 2, 2, 3], [3, 3, 3, 3]],
    "ecr": [[0, 0, 0, 0], [0, 1, 1, 1], [0, 1, 2, 2], [0, 1, 2, 3]],
    "rc16": [[0, 1, 0, 1], [2, 3, 2, 3], [0, 1, 0, 1], [2, 3, 2, 3]],
}


def prmt(a: int, b: int, c: int, mode: str | None) -> int:
    src = (b << 32) | a

    def byte(k):
        return (src >> (8 * k)) & 0xFF

    d = 0
    if mode is None:
        for i in range(4):
            ctl = (c >> (4 * i)) & 0xF
            v = byte(ctl & 7)
            if ctl & 8:
                v = 0xFF if v & 0x80 else 0
            d |= v << (8 * i)
    else:
        for i, k in enumerate(PRMT_MODES[mode][c & 3]):
            d |= byte(k) << (8 * i)
    return d


def shf(a: int, b: int, c: int, left: bool, clamp: bool) -> int:
    n = min(c, 32) if clamp else c & 31
    v = (b << 32) | a
    return ((v << n) >> 32) & mask(32) if left else (v >> n) & mask(32)


def shift(x: int, n: int, w: int, op: str) -> int:
    """shl / shr.u (and .b) / shr.s with PTX's clamping of the (unsigned 32-bit) amount to the width."""
    n = min(n, w)
    if op == "shl":
        return (x << n) & mask(w)
    if op == "shr.s":
        return u(s(x, w) >> n, w)
    return x >> n


SHIFT_AMOUNTS = [0, 1, 2, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256, 257, 0x10000,
                 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0xFFFFFFE0, 0x100000001 & mask(32)]

POS_LEN = [0, 1, 2, 7, 8, 15, 16, 24, 30, 31, 32, 33, 40, 48, 63, 64, 65, 100, 200, 255, 256, 257, 0x1FF,
           0x120, 0xFFFFFFFF, 0x80000010]


def width(t: str) -> int:
    return int(t[1:])


# ----------------------------------------------------------------------------------------------------------
# popc / clz / bfind / brev
# ----------------------------------------------------------------------------------------------------------


def _one_bit_and_edges(w: int, seed: int) -> list[int]:
    vals = edge_values(w) + [1 << i for i in range(w)] + [mask(w) >> i for i in range(w)]
    vals += [u(-(1 << i), w) for i in range(w)]
    return vals + random_values(w, 200, seed)


@pytest.mark.parametrize("t", ["b32", "b64"])
@pytest.mark.parametrize("op", ["popc", "clz"])
def test_popc_clz(op, t):
    w = width(t)
    a = _one_bit_and_edges(w, 100)
    ins = [(t, a)]
    (got,) = elementwise(f"{op}.{t} {{d}}, {{a}};", ins, ["u32"])
    exp = [popc(x) if op == "popc" else clz(x, w) for x in a]
    check(got, exp, ins, f"{op}.{t}")


@pytest.mark.parametrize("shiftamt", [False, True])
@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_bfind(t, shiftamt):
    w = width(t)
    a = _one_bit_and_edges(w, 101)
    ins = [(t, a)]
    template = f"bfind{'.shiftamt' if shiftamt else ''}.{t} {{d}}, {{a}};"
    (got,) = elementwise(template, ins, ["u32"])
    exp = [bfind(x, w, t[0] == "s", shiftamt) for x in a]
    check(got, exp, ins, template)


def test_bfind_no_bit_found_examples():
    """0 (unsigned / signed) and -1 (signed) have no qualifying bit: 0xFFFFFFFF, also with .shiftamt."""
    template = ("bfind.u32 {d}, {a};\n    bfind.shiftamt.s32 {d2}, {a};")
    ins = [("u32", [0, 0xFFFFFFFF, 1, 0x80000000, 0x7FFFFFFF, 0xFFFFFFFE])]
    d, d2 = elementwise(template, ins, ["u32", "u32"])
    assert d == [0xFFFFFFFF, 31, 0, 31, 30, 31]
    assert d2 == [0xFFFFFFFF, 0xFFFFFFFF, 31, 1, 1, 31]


@pytest.mark.parametrize("t", ["b32", "b64"])
def test_brev(t):
    w = width(t)
    a = _one_bit_and_edges(w, 102)
    ins = [(t, a)]
    (got,) = elementwise(f"brev.{t} {{d}}, {{a}};", ins, [t])
    check(got, [brev(x, w) for x in a], ins, f"brev.{t}", width=w)


# ----------------------------------------------------------------------------------------------------------
# bfe / bfi
# ----------------------------------------------------------------------------------------------------------

_BF_SOURCES = [0xF0E1D2C3B4A59687, 0x8000000000000001, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFF7FFFFFFF,
               0x00000000FFFFFFFF,
               0x5555555555555555, 0x0, 0xFFFFFFFFFFFFFFFF, 0x0000000080000000]


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_bfe(t):
    w = width(t)
    pos, ln = pairs(POS_LEN)
    a = [_BF_SOURCES[i % len(_BF_SOURCES)] & mask(w) for i in range(len(pos))]
    # random fields: in-range positions and lengths, random sources
    rp = [x % (w + 8) for x in random_values(32, 300, 103)]
    rl = [x % (w + 8) for x in random_values(32, 300, 104)]
    a += random_values(w, 300, 105)
    pos += rp
    ln += rl
    ins = [(t, a), ("u32", pos), ("u32", ln)]
    template = f"bfe.{t} {{d}}, {{a}}, {{b}}, {{c}};"
    (got,) = elementwise(template, ins, [t])
    exp = [bfe(x, p, n, w, t[0] == "s") for x, p, n in zip(a, pos, ln, strict=True)]
    check(got, exp, ins, template, width=w)


def test_bfe_sign_replication_examples():
    """Hand-checked: field 0b1000 at bit 4 of 0x80 -> s32 sign-extends, u32 does not; pos beyond msb ->
    replicated sign of bit 31 (s32) / 0 (u32); len 0 -> 0."""
    cases = [  # (a, pos, len, u32 result, s32 result)
        (0x80, 4, 4, 0x8, 0xFFFFFFF8),
        (0x80, 4, 5, 0x8, 0x8),
        (0x80000000, 31, 1, 1, 0xFFFFFFFF),
        (0x80000000, 32, 8, 0, 0xFFFFFFFF),
        (0x80000000, 28, 8, 0x8, 0xFFFFFFF8),
        (0x7FFFFFFF, 40, 4, 0, 0),
        (0xFFFFFFFF, 0, 0, 0, 0),
        (0x12345678, 8, 0x108, 0x56, 0x56),  # len is taken mod 256
        (0x12345678, 0x104, 8, 0x67, 0x67),  # pos is taken mod 256
    ]
    ins = [("u32", [c[0] for c in cases]), ("u32", [c[1] for c in cases]), ("u32", [c[2] for c in cases])]
    d, d2 = elementwise("bfe.u32 {d}, {a}, {b}, {c};\n    bfe.s32 {d2}, {a}, {b}, {c};", ins, ["u32", "u32"])
    assert [hex(x) for x in d] == [hex(c[3]) for c in cases]
    assert [hex(x) for x in d2] == [hex(c[4]) for c in cases]


@pytest.mark.parametrize("t", ["b32", "b64"])
def test_bfi(t):
    w = width(t)
    pos, ln = pairs(POS_LEN)
    a = [_BF_SOURCES[i % len(_BF_SOURCES)] & mask(w) for i in range(len(pos))]
    b = [_BF_SOURCES[(i * 5 + 3) % len(_BF_SOURCES)] & mask(w) for i in range(len(pos))]
    a += random_values(w, 300, 106)
    b += random_values(w, 300, 107)
    pos += [x % (w + 8) for x in random_values(32, 300, 108)]
    ln += [x % (w + 8) for x in random_values(32, 300, 109)]
    ins = [(t, a), (t, b), ("u32", pos), ("u32", ln)]
    template = f"bfi.{t} {{d}}, {{a}}, {{b}}, {{c}}, {{e}};"
    (got,) = elementwise(template, ins, [t])
    exp = [bfi(x, y, p, n, w) for x, y, p, n in zip(a, b, pos, ln, strict=True)]
    check(got, exp, ins, template, width=w)


@pytest.mark.parametrize("t,pos,ln", [("u32", 8, 8), ("s32", 20, 12), ("s32", 0, 1), ("u64", 36, 20),
                                      ("s64", 60, 10), ("u32", 31, 5)])
def test_bfe_immediate_fields(t, pos, ln):
    w = width(t)
    (a,) = operands(w, 100, seed=110, count=1)
    ins = [(t, a)]
    template = f"bfe.{t} {{d}}, {{a}}, {pos}, {ln};"
    (got,) = elementwise(template, ins, [t])
    check(got, [bfe(x, pos, ln, w, t[0] == "s") for x in a], ins, template, width=w)


def test_bfi_immediate_fields():
    a, b = operands(32, 100, seed=111)
    ins = [("b32", a), ("b32", b)]
    template = "bfi.b32 {d}, {a}, {b}, 4, 12;\n    bfi.b32 {d2}, {a}, {b}, 28, 8;"
    d, d2 = elementwise(template, ins, ["b32", "b32"])
    check(d, [bfi(x, y, 4, 12, 32) for x, y in zip(a, b, strict=True)], ins, "bfi.b32 pos 4 len 12")
    check(d2, [bfi(x, y, 28, 8, 32) for x, y in zip(a, b, strict=True)], ins, "bfi.b32 pos 28 len 8")


# ----------------------------------------------------------------------------------------------------------
# prmt
# ----------------------------------------------------------------------------------------------------------

_PRMT_A = 0x83F27E01  # bytes b0..b3 = 01 7E F2 83 (two with the sign bit set)
_PRMT_B = 0x7F80C455  # bytes b4..b7 = 55 C4 80 7F


def test_prmt_generic_all_selectors():
    """Every 4-bit selector value (byte 0-7, with and without sign replication) in every result byte."""
    sels = []
    for pos in range(4):
        for v in range(16):
            other = [(v + 3 * k + 1) & 0xF for k in range(4)]
            other[pos] = v
            sels.append(sum(x << (4 * k) for k, x in enumerate(other)))
    # bits 16-31 of the selector are ignored
    sels += [x | 0xABCD0000 for x in sels[:16]]
    sels += [0x3210, 0x7654, 0x0123, 0x5410, 0x7632, 0x8888, 0xFFFF, 0x4444, 0xBA98, 0xCCCC]
    a = [_PRMT_A, 0x80808080, 0x7F7F7F7F, 0x12345678] * (len(sels) // 4) + [_PRMT_A] * (len(sels) % 4)
    b = [_PRMT_B, 0x01020304, 0xFFFFFFFF, 0x9ABCDEF0] * (len(sels) // 4) + [_PRMT_B] * (len(sels) % 4)
    a += random_values(32, 200, 120)
    b += random_values(32, 200, 121)
    sels += random_values(32, 200, 122)
    ins = [("b32", a), ("b32", b), ("b32", sels)]
    (got,) = elementwise("prmt.b32 {d}, {a}, {b}, {c};", ins, ["b32"])
    check(got, [prmt(x, y, c, None) for x, y, c in zip(a, b, sels, strict=True)], ins, "prmt.b32")


@pytest.mark.parametrize("mode", sorted(PRMT_MODES))
def test_prmt_modes(mode):
    """Specialised modes: only c[1:0] matters (upper selector bits are garbage here on purpose)."""
    garbage = [0, 0xFFFFFFFC, 0x1230, 0x7654, 0x80000000, 0x44]
    sels = [m | g for g in garbage for m in range(4)]
    a = [_PRMT_A, 0x12345678, 0x80FF7F00][: 3] * len(sels)
    b = [_PRMT_B, 0x9ABCDEF0, 0x01020304][: 3] * len(sels)
    sels = [x for x in sels for _ in range(3)]
    a += random_values(32, 100, 123)
    b += random_values(32, 100, 124)
    sels += random_values(32, 100, 125)
    ins = [("b32", a), ("b32", b), ("b32", sels)]
    template = f"prmt.b32.{mode} {{d}}, {{a}}, {{b}}, {{c}};"
    (got,) = elementwise(template, ins, ["b32"])
    check(got, [prmt(x, y, c, mode) for x, y, c in zip(a, b, sels, strict=True)], ins, template)


def test_prmt_known_idioms():
    """Hand-checked idioms: byte swap, pack low halves, broadcast byte, sign-extend byte 0."""
    a = [0x11223344, 0xAABBCCDD, 0x000000F0]
    b = [0x55667788, 0x01020304, 0x0000007F]
    ins = [("b32", a), ("b32", b)]
    template = ("prmt.b32 {d}, {a}, 0, 0x0123;\n    prmt.b32 {d2}, {a}, {b}, 0x5410;\n"
                "    prmt.b32 %r20, {a}, {b}, 0x8880;")
    d, d2 = elementwise(template, ins, ["b32", "b32"])
    assert [hex(x) for x in d] == ["0x44332211", "0xddccbbaa", "0xf0000000"]
    assert [hex(x) for x in d2] == ["0x77883344", "0x304ccdd", "0x7f00f0"]
    template = "prmt.b32 {d}, {a}, {b}, 0x8880;\n    prmt.b32.b4e {d2}, {a}, {b}, 3;"
    d, d2 = elementwise(template, ins, ["b32", "b32"])
    assert [hex(x) for x in d] == ["0x44", "0xffffffdd", "0xfffffff0"]
    assert [hex(x) for x in d2] == ["0x44332211", "0xddccbbaa", "0xf0000000"]


# ----------------------------------------------------------------------------------------------------------
# shf / shl / shr
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["wrap", "clamp"])
@pytest.mark.parametrize("direction", ["l", "r"])
def test_shf(direction, mode):
    srcs = [0x89ABCDEF, 0x01234567, 0xFFFFFFFF, 0x80000000, 0x00000001, 0]
    ab = [(x, y) for x in srcs for y in srcs]
    a = [x for x, _ in ab for _ in SHIFT_AMOUNTS]
    b = [y for _, y in ab for _ in SHIFT_AMOUNTS]
    c = SHIFT_AMOUNTS * len(ab)
    a += random_values(32, 200, 130)
    b += random_values(32, 200, 131)
    c += [x % 70 for x in random_values(32, 200, 132)]
    ins = [("b32", a), ("b32", b), ("u32", c)]
    template = f"shf.{direction}.{mode}.b32 {{d}}, {{a}}, {{b}}, {{c}};"
    (got,) = elementwise(template, ins, ["b32"])
    exp = [shf(x, y, n, direction == "l", mode == "clamp") for x, y, n in zip(a, b, c, strict=True)]
    check(got, exp, ins, template)


_SHIFTS = [("shl", t) for t in ("b16", "b32", "b64")] + [
    ("shr", t) for t in ("b16", "u16", "s16", "b32", "u32", "s32", "b64", "u64", "s64")]


@pytest.mark.parametrize("op,t", _SHIFTS)
def test_shift(op, t):
    """Shift amount is a .u32 register; amounts >= width give 0 (shl, shr.b/.u) or the sign fill (shr.s)."""
    w = width(t)
    (vals,) = operands(w, 0, seed=0, count=1)
    vals = vals + random_values(w, 20, 140)
    a = [x for x in vals for _ in SHIFT_AMOUNTS]
    n = SHIFT_AMOUNTS * len(vals)
    a += random_values(w, 200, 141)
    n += [x % (w + 4) for x in random_values(32, 200, 142)]
    ins = [(t, a), ("u32", n)]
    template = f"{op}.{t} {{d}}, {{a}}, {{b}};"
    (got,) = elementwise(template, ins, [t])
    kind = "shl" if op == "shl" else ("shr.s" if t[0] == "s" else "shr.u")
    check(got, [shift(x, k, w, kind) for x, k in zip(a, n, strict=True)], ins, template, width=w)


@pytest.mark.parametrize("op,t,amount", [("shl", "b32", 5), ("shl", "b32", 31), ("shr", "s32", 31),
                                         ("shr", "u32", 1), ("shl", "b64", 40), ("shr", "s64", 63),
                                         ("shr", "u64", 33), ("shr", "s16", 15)])
def test_shift_immediate_amount(op, t, amount):
    w = width(t)
    (a,) = operands(w, 100, seed=143, count=1)
    ins = [(t, a)]
    template = f"{op}.{t} {{d}}, {{a}}, {amount};"
    (got,) = elementwise(template, ins, [t])
    kind = "shl" if op == "shl" else ("shr.s" if t[0] == "s" else "shr.u")
    check(got, [shift(x, amount, w, kind) for x in a], ins, template, width=w)


# ----------------------------------------------------------------------------------------------------------
# logic
# ----------------------------------------------------------------------------------------------------------

_LOGIC = {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y}


@pytest.mark.parametrize("t", ["b16", "b32", "b64"])
@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_logic_binary(op, t):
    w = width(t)
    a, b = operands(w, 200, seed=150, n_edges=20)
    ins = [(t, a), (t, b)]
    template = f"{op}.{t} {{d}}, {{a}}, {{b}};"
    (got,) = elementwise(template, ins, [t])
    check(got, [_LOGIC[op](x, y) for x, y in zip(a, b, strict=True)], ins, template, width=w)


@pytest.mark.parametrize("t", ["b16", "b32", "b64"])
@pytest.mark.parametrize("op", ["not", "cnot"])
def test_logic_unary(op, t):
    w = width(t)
    (a,) = operands(w, 200, seed=151, count=1)
    ins = [(t, a)]
    template = f"{op}.{t} {{d}}, {{a}};"
    (got,) = elementwise(template, ins, [t])
    exp = [(~x & mask(w)) if op == "not" else int(x == 0) for x in a]
    check(got, exp, ins, template, width=w)


def test_logic_immediates():
    (a,) = operands(64, 100, seed=152, count=1)
    ins = [("b64", a)]
    template = "and.b64 {d}, {a}, 0xFF00FF00FF00FF00;\n    xor.b64 {d2}, {a}, -1;"
    d, d2 = elementwise(template, ins, ["b64", "b64"])
    check(d, [x & 0xFF00FF00FF00FF00 for x in a], ins, "and.b64 imm", width=64)
    check(d2, [~x & mask(64) for x in a], ins, "xor.b64 -1", width=64)
    (a32,) = operands(32, 100, seed=153, count=1)
    ins = [("b32", a32)]
    d, d2 = elementwise("or.b32 {d}, {a}, 0x80000001;\n    and.b32 {d2}, {a}, 0x0F0F;", ins, ["b32", "b32"])
    check(d, [x | 0x80000001 for x in a32], ins, "or.b32 imm")
    check(d2, [x & 0x0F0F for x in a32], ins, "and.b32 imm")


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_logic_pred(op):
    p = [False, False, True, True]
    q = [False, True, False, True]
    ins = [("pred", p), ("pred", q)]
    template = f"{op}.pred {{d}}, {{a}}, {{b}};\n    not.pred {{d2}}, {{a}};"
    d, d2 = elementwise(template, ins, ["pred", "pred"])
    assert d == [int(_LOGIC[op](int(x), int(y))) for x, y in zip(p, q, strict=True)]
    assert d2 == [int(not x) for x in p]


# ----------------------------------------------------------------------------------------------------------
# destination aliasing a source
# ----------------------------------------------------------------------------------------------------------

_ALIAS_CASES = [
    ("bfi.b32 {b}, {a}, {b}, {c}, {e};", lambda a, b, c, e: (a, bfi(a, b, c, e, 32))),
    ("bfi.b32 {a}, {a}, {b}, {c}, {e};", lambda a, b, c, e: (bfi(a, b, c, e, 32), b)),
    ("bfe.s32 {b}, {a}, {c}, {e};", lambda a, b, c, e: (a, bfe(a, c, e, 32, True))),
    ("bfe.u32 {a}, {a}, {c}, {e};", lambda a, b, c, e: (bfe(a, c, e, 32, False), b)),
    ("prmt.b32 {a}, {a}, {b}, {a};", lambda a, b, c, e: (prmt(a, b, a, None), b)),
    ("prmt.b32.f4e {b}, {a}, {b}, {b};", lambda a, b, c, e: (a, prmt(a, b, b, "f4e"))),
    ("shf.l.wrap.b32 {a}, {a}, {b}, {c};", lambda a, b, c, e: (shf(a, b, c, True, False), b)),
    ("shf.r.clamp.b32 {b}, {a}, {b}, {b};", lambda a, b, c, e: (a, shf(a, b, b, False, True))),
    ("shl.b32 {a}, {a}, {a};", lambda a, b, c, e: (shift(a, a, 32, "shl"), b)),
    ("shr.s32 {b}, {b}, {c};", lambda a, b, c, e: (a, shift(b, c, 32, "shr.s"))),
    ("brev.b32 {a}, {a};\n    popc.b32 {b}, {b};", lambda a, b, c, e: (brev(a, 32), popc(b))),
    ("bfind.s32 {a}, {a};\n    clz.b32 {b}, {b};",
     lambda a, b, c, e: (bfind(a, 32, True, False), clz(b, 32))),
    ("xor.b32 {a}, {a}, {b};\n    xor.b32 {b}, {a}, {b};\n    xor.b32 {a}, {a}, {b};",
     lambda a, b, c, e: (b, a)),
]


@pytest.mark.parametrize("template,model", _ALIAS_CASES, ids=[f"alias{i}_" + c[0].split()[0] for i, c in
                                                              enumerate(_ALIAS_CASES)])
def test_destination_aliases_source(template, model):
    a, b = operands(32, 150, seed=160, n_edges=16)
    c = [POS_LEN[i % len(POS_LEN)] for i in range(len(a))]
    e = [POS_LEN[(i * 7 + 3) % len(POS_LEN)] for i in range(len(a))]
    ins = [("u32", a), ("u32", b), ("u32", c), ("u32", e)]
    d, d2 = elementwise(template + "\n    mov.b32 {d}, {a};\n    mov.b32 {d2}, {b};", ins, ["u32", "u32"])
    exp = [model(w, x, y, z) for w, x, y, z in zip(a, b, c, e, strict=True)]
    check(d, [u(v[0], 32) for v in exp], ins, template + " (a)")
    check(d2, [u(v[1], 32) for v in exp], ins, template + " (b)")


def test_16bit_logic_immediates():
    (a,) = operands(16, 100, seed=161, count=1)
    ins = [("b16", a)]
    template = "and.b16 {d}, {a}, 0xFF00;\n    xor.b16 {d2}, {a}, 0x5A5A;"
    d, d2 = elementwise(template, ins, ["b16", "b16"])
    check(d, [x & 0xFF00 for x in a], ins, "and.b16 imm", width=16)
    check(d2, [x ^ 0x5A5A for x in a], ins, "xor.b16 imm", width=16)


# ----------------------------------------------------------------------------------------------------------
# lop3 / bmsk
# ----------------------------------------------------------------------------------------------------------


def lop3(a: int, b: int, c: int, lut: int) -> int:
    """Bit i of the result is lut[(a_i << 2) | (b_i << 1) | c_i]  (ta = 0xF0, tb = 0xCC, tc = 0xAA)."""
    d = 0
    for i in range(32):
        idx = (((a >> i) & 1) << 2) | (((b >> i) & 1) << 1) | ((c >> i) & 1)
        d |= ((lut >> idx) & 1) << i
    return d


@pytest.mark.parametrize("luts", [(0x00, 0xFF), (0x80, 0xFE), (0x96, 0xE8), (0xCA, 0x1E), (0x3C, 0xB4),
                                  (0x01, 0x6A)])
def test_lop3(luts):
    a, b = operands(32, 150, seed=170, n_edges=14)
    c = [(x * 0x9E3779B9 + 0x5555) & mask(32) for x in range(len(a))]
    ins = [("b32", a), ("b32", b), ("b32", c)]
    l1, l2 = luts
    template = (f"lop3.b32 {{d}}, {{a}}, {{b}}, {{c}}, 0x{l1:02x};\n"
                f"    lop3.b32 {{d2}}, {{a}}, {{b}}, {{c}}, {l2};")
    d, d2 = elementwise(template, ins, ["b32", "b32"])
    check(d, [lop3(x, y, z, l1) for x, y, z in zip(a, b, c, strict=True)], ins, f"lop3 0x{l1:02x}")
    check(d2, [lop3(x, y, z, l2) for x, y, z in zip(a, b, c, strict=True)], ins, f"lop3 0x{l2:02x}")


def bmsk(a: int, b: int, clamp: bool) -> int:
    """bmsk semantics as written in the PTX ISA pseudo-code."""
    m32 = mask(32)
    a1 = a & 0x1F
    mask0 = (m32 << a1) & m32
    b1 = b & 0x1F
    total = a1 + b1
    mask1 = (m32 << total) & m32
    overflow = total >= 32
    if clamp:
        if a >= 32:
            overflow = True
            mask0 = 0
        if b >= 32:
            overflow = True
    if overflow:
        mask1 = 0
    elif b1 == 0:
        mask1 = m32
    return mask0 & ~mask1 & m32


@pytest.mark.parametrize("mode", ["clamp", "wrap"])
def test_bmsk(mode):
    vals = [0, 1, 2, 5, 8, 15, 16, 30, 31, 32, 33, 40, 63, 64, 255, 0xFFFFFFFF]
    a, b = pairs(vals)
    ins = [("b32", a), ("b32", b)]
    template = f"bmsk.{mode}.b32 {{d}}, {{a}}, {{b}};"
    (got,) = elementwise(template, ins, ["b32"])
    check(got, [bmsk(x, y, mode == "clamp") for x, y in zip(a, b, strict=True)], ins, template)


def test_bmsk_isa_example():
    """The PTX ISA's own example: bmsk.wrap.b32 rd, 1, 2 creates 0x00000006."""
    (got,) = elementwise("bmsk.wrap.b32 {d}, 1, 2;\n    add.u32 {d}, {d}, {a};", [("u32", [0])], ["u32"])
    assert got == [6]
    assert bmsk(1, 2, False) == 6


# ----------------------------------------------------------------------------------------------------------
# szext / fns
# ----------------------------------------------------------------------------------------------------------


def szext(a: int, n: int, signed: bool, clamp: bool) -> int:
    """The low n bits of a, sign- or zero-extended; n clamped to 32 or taken mod 32; n = 0 gives 0."""
    n = min(n, 32) if clamp else n & 31
    if n == 0:
        return 0
    x = a & mask(n)
    return u(s(x, n), 32) if signed else x


@pytest.mark.parametrize("mode", ["clamp", "wrap"])
def test_szext(mode):
    amounts = [0, 1, 2, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 255, 0x80000000, 0xFFFFFFFF]
    srcs = edge_values(32)[:20]
    a, n = pairs(srcs, amounts)
    a += random_values(32, 200, 180)
    n += [x % 40 for x in random_values(32, 200, 181)]
    ins = [("b32", a), ("u32", n)]
    template = f"szext.{mode}.s32 {{d}}, {{a}}, {{b}};\n    szext.{mode}.u32 {{d2}}, {{a}}, {{b}};"
    d, d2 = elementwise(template, ins, ["b32", "b32"])
    check(d, [szext(x, y, True, mode == "clamp") for x, y in zip(a, n, strict=True)], ins, f"szext.{mode}.s32")
    check(d2, [szext(x, y, False, mode == "clamp") for x, y in zip(a, n, strict=True)], ins, f"szext.{mode}.u32")


def fns(m: int, base: int, offset: int) -> int:
    """Position of the |offset|-th set bit of m from bit `base` (upwards for offset > 0, downwards for < 0;
    offset 0: base itself if set), 0xFFFFFFFF when there is none (PTX ISA pseudo-code).  offset = INT_MIN
    gives 0 on the H100 (isa_fns_b32)."""
    offset = s(offset, 32)
    if offset == -(1 << 31):
        return 0
    if offset == 0:
        return base if base < 32 and (m >> base) & 1 else 0xFFFFFFFF
    pos, count, inc = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= pos < 32:
        if (m >> pos) & 1:
            if count == 0:
                return pos
            count -= 1
        pos += inc
    return 0xFFFFFFFF


def test_fns():
    masks = [0, 1, 0x80000000, 0xFFFFFFFF, 0x55555555, 0xAAAAAAAA, 0x0F0F0F0F, 0x00FF00FF, 0x10204081,
             0x80000001, 0x7FFFFFFE, 0x10000]
    offsets = [0, 1, 2, 3, 5, 16, 31, 32, 33, -1, -2, -3, -16, -32, -33, 0x7FFFFFFF, -(1 << 31)]
    m, base, off = [], [], []
    for i, x in enumerate(masks):
        for j, o in enumerate(offsets):
            for bse in (0, 1, 15, 16, 31, (i * 7 + j * 3) % 32):
                m.append(x)
                base.append(bse)
                off.append(u(o, 32))
    m += random_values(32, 300, 190)
    base += [x % 32 for x in random_values(32, 300, 191)]
    off += [u(s(x, 32) % 41 - 20, 32) for x in random_values(32, 300, 192)]
    ins = [("b32", m), ("u32", base), ("s32", off)]
    template = "fns.b32 {d}, {a}, {b}, {c};"
    (got,) = elementwise(template, ins, ["b32"])
    check(got, [fns(x, y, z) for x, y, z in zip(m, base, off, strict=True)], ins, template)


def test_fns_isa_examples():
    assert fns(0xFFFF0000, 0, 1) == 16 and fns(0xFFFF0000, 31, u(-1, 32)) == 31
    assert fns(0xFFFF0000, 8, 0) == 0xFFFFFFFF and fns(0x0F, 3, u(-4, 32)) == 0 and fns(0x0F, 3, u(-5, 32)) == M32


M32 = mask(32)


# ----------------------------------------------------------------------------------------------------------
# the H100 golden set
# ----------------------------------------------------------------------------------------------------------

GOLDEN_BITS = golden_cases(r"^isa_(popc|clz|bfind|brev|bfe|bfi|fns|szext|prmt|shf|shl|shr|and|or|xor|not|cnot"
                           r"|lop3|bmsk)_")


@golden_needs("isa")
@pytest.mark.parametrize("case", GOLDEN_BITS or ["absent"])
def test_golden(case):
    assert replay_case(case) == []
