"""cvt to and from the 8-bit float pairs .e4m3x2 / .e5m2x2, and cvt.pack.sat.

The fp8 model follows the OCP 8-bit floating point specification (v1.0) with exact fractions: every code's
value is enumerated from its fields, and a number is rounded by picking the nearest finite code (ties to
the even code) -- a different method from ptxjit's scaling and rounding.  .satfinite clamps to the largest
finite value (E4M3: 448, E5M2: 57344) and a NaN gives 0x7f; the H100 agrees on every golden case
(shared/gpu-golden/isa, replayed in test_golden_fp8_and_pack).
"""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np
import pytest

from tests.unit.floatutil import elementwise, f2b
from tests.unit.goldenutil import golden_test


class Fp8:
    def __init__(self, name: str, ebits: int, mbits: int, has_inf: bool) -> None:
        self.name, self.ebits, self.mbits, self.has_inf = name, ebits, mbits, has_inf
        self.bias = (1 << (ebits - 1)) - 1
        # value of every non-negative code (None: NaN or infinity)
        self.values: dict[int, Fraction | None] = {c: self._value(c) for c in range(0x80)}
        self.finite = sorted((v, c) for c, v in self.values.items() if v is not None)
        self.max = self.finite[-1][0]

    def _value(self, code: int) -> Fraction | None:
        e, m = code >> self.mbits, code & ((1 << self.mbits) - 1)
        top = (1 << self.ebits) - 1
        if self.has_inf and e == top:
            return None  # E5M2: infinity (m == 0) or NaN
        if not self.has_inf and e == top and m == (1 << self.mbits) - 1:
            return None  # E4M3: S.1111.111 is the only NaN; there is no infinity
        if e == 0:
            return Fraction(m, 1 << self.mbits) * Fraction(2) ** (1 - self.bias)
        return (1 + Fraction(m, 1 << self.mbits)) * Fraction(2) ** (e - self.bias)

    def encode(self, x: Fraction | float, relu: bool = False) -> int:
        """Round to nearest even, saturating to the largest finite value (.rn.satfinite[.relu])."""
        if isinstance(x, float) and x != x:
            return 0x7F
        neg = (x < 0) or (isinstance(x, float) and x == 0 and struct.pack("<d", x)[7] & 0x80)
        if relu and neg:
            return 0
        a = self.max if isinstance(x, float) and abs(x) == float("inf") else min(abs(Fraction(x)), self.max)
        best = min(self.finite, key=lambda vc: (abs(vc[0] - a), vc[1] & 1))
        return best[1] | (0x80 if neg else 0)

    def decode(self, code: int) -> float:
        v = self.values[code & 0x7F]
        if v is None:
            if self.has_inf and code & 0x7F == 0x7C:
                return float("-inf") if code & 0x80 else float("inf")
            return float("nan")
        return -float(v) if code & 0x80 else float(v)


E4M3 = Fp8("e4m3", 4, 3, has_inf=False)
E5M2 = Fp8("e5m2", 5, 2, has_inf=True)
FMTS = {"e4m3x2": E4M3, "e5m2x2": E5M2}


def test_model_sanity():
    assert E4M3.max == 448 and E5M2.max == 57344
    assert E4M3.encode(Fraction(464)) == 0x7E  # the tie above 448 would round to 480, which saturates
    assert E4M3.encode(Fraction(1, 1024)) == 0x00  # half the smallest subnormal 2**-9: ties to even (0)
    assert E4M3.encode(Fraction(3, 1024)) == 0x02  # 1.5 * 2**-9 ties to 2 * 2**-9
    assert E5M2.encode(float("-inf")) == 0xFB and E5M2.encode(float("nan")) == 0x7F
    assert E4M3.encode(-0.0) == 0x80 and E4M3.encode(-0.0, relu=True) == 0
    assert E4M3.decode(0x7F) != E4M3.decode(0x7F) and E4M3.decode(0x7E) == 448.0
    assert E5M2.decode(0x7C) == float("inf") and E5M2.decode(0x01) == 2.0**-16


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _f16(bits: int) -> float:
    return float(np.uint16(bits).view(np.float16))


def _f16_bits(v: float) -> int:
    return int(np.array(v, dtype=np.float16).view(np.uint16))


def _f32_inputs() -> np.ndarray:
    vals = [0.0, -0.0, 1.0, -1.0, 448.0, 449.0, 464.0, 465.0, 480.0, -464.0, 57344.0, 61440.0, 61439.0,
            -61440.0, 1e30, -1e30, 2.0**-9, 2.0**-10, 3 * 2.0**-10, 2.0**-6, 2.0**-16, 2.0**-17, 3 * 2.0**-17,
            2.0**-14, 1.0625, 1.1875, 1.125, 1.25, 1.375, -1.0625, 0.1, 3.3, 100.0, 240.0, 248.0]
    bits = [f2b(v) for v in vals] + [0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC12345, 0x7F800001, 0x00000001,
                                     0x80000001, 0x007FFFFF]
    rng = np.random.default_rng(8)
    rnd = (rng.standard_normal(600) * np.exp2(rng.integers(-20, 18, 600))).astype(np.float32).view(np.uint32)
    return np.concatenate([np.array(bits, dtype=np.uint32), rnd])


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("ty", ["e4m3x2", "e5m2x2"])
def test_cvt_fp8_from_f32(ty, relu):
    fmt = FMTS[ty]
    a = _f32_inputs()
    b = np.roll(a, 7)
    mod = ".relu" if relu else ""
    (d,) = elementwise(f"cvt.rn.satfinite{mod}.{ty}.f32 {{d}}, {{a}}, {{b}};", [("f32", a), ("f32", b)], ["b16"],
                       target="sm_90")
    bad = []
    for x, y, got in zip(a, b, d, strict=True):
        # the first source lands in the upper byte
        want = fmt.encode(_f32(int(x)), relu) << 8 | fmt.encode(_f32(int(y)), relu)
        if int(got) != want:
            bad.append(f"{hex(int(x))}, {hex(int(y))}: expected {hex(want)}, got {hex(int(got))}")
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:20])


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("ty", ["e4m3x2", "e5m2x2"])
def test_cvt_fp8_from_f16x2_exhaustive(ty, relu):
    """Every f16 value, two per register (the upper lane goes to the upper byte)."""
    fmt = FMTS[ty]
    h = np.arange(65536, dtype=np.uint32)
    pair = (h[:32768] | (h[32768:] << 16)).astype(np.uint32)
    mod = ".relu" if relu else ""
    (d,) = elementwise(f"cvt.rn.satfinite{mod}.{ty}.f16x2 {{d}}, {{a}};", [("b32", pair)], ["b16"],
                       target="sm_90")
    enc = [fmt.encode(_f16(v), relu) for v in range(65536)]
    want = np.array([enc[v] for v in range(32768, 65536)], dtype=np.uint32) << 8 | np.array(enc[:32768])
    bad = np.flatnonzero(d.astype(np.uint32) != want)
    assert len(bad) == 0, [(hex(int(pair[i])), hex(int(want[i])), hex(int(d[i]))) for i in bad[:10]]


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("ty", ["e4m3x2", "e5m2x2"])
def test_cvt_f16x2_from_fp8_exhaustive(ty, relu):
    """Every pair of fp8 codes: the values are exact in f16; NaN gives 0x7fff, .relu turns negatives to +0."""
    fmt = FMTS[ty]
    x = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    mod = ".relu" if relu else ""
    (d,) = elementwise(f"cvt.rn{mod}.f16x2.{ty} {{d}}, {{a}};", [("b16", x)], ["b32"], target="sm_90")

    def widen(code: int) -> int:
        v = fmt.decode(code)
        if v != v:
            return 0x7FFF
        if relu and (code & 0x80):
            return 0
        return _f16_bits(v)

    table = [widen(c) for c in range(256)]
    want = np.array([table[v >> 8] << 16 | table[v & 0xFF] for v in range(65536)], dtype=np.uint32)
    bad = np.flatnonzero(d != want)
    assert len(bad) == 0, [(hex(int(x[i])), hex(int(want[i])), hex(int(d[i]))) for i in bad[:10]]


# ----------------------------------------------------------------------------------------------------------
# cvt.pack.sat
# ----------------------------------------------------------------------------------------------------------

PACK_VALUES = [0, 1, -1, 2, -2, 3, -3, 7, 8, -8, -9, 15, 16, 127, 128, -128, -129, 255, 256, 32767, 32768,
               -32768, -32769, 65535, 65536, 0x7FFFFFFF, -0x80000000, 0x12345678, -0x12345678]


def _pack_model(t: str, a: int, b: int, c: int) -> int:
    n = int(t[1:])
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t[0] == "s" else (0, (1 << n) - 1)
    m = (1 << n) - 1
    ta, tb = min(max(a, lo), hi) & m, min(max(b, lo), hi) & m
    return ((c << (2 * n)) | (ta << n) | tb) & 0xFFFFFFFF


@pytest.mark.parametrize("t", ["u16", "s16", "u8", "s8", "u4", "s4", "u2", "s2"])
def test_cvt_pack_sat(t):
    """cvt.pack.sat: a and b clamped to the type, a above b, c's low bits above both."""
    a = np.repeat(np.array(PACK_VALUES, dtype=np.int64), len(PACK_VALUES))
    b = np.tile(np.array(PACK_VALUES, dtype=np.int64), len(PACK_VALUES))
    c = np.random.default_rng(9).integers(0, 2**32, len(a), dtype=np.uint64).astype(np.uint32)
    a32, b32 = a.astype(np.int32), b.astype(np.int32)
    if t in ("u16", "s16"):
        (d,) = elementwise(f"cvt.pack.sat.{t}.s32 {{d}}, {{a}}, {{b}};", [("s32", a32), ("s32", b32)], ["b32"],
                           target="sm_90")
        want = [_pack_model(t, int(x), int(y), 0) for x, y in zip(a32, b32, strict=True)]
    else:
        (d,) = elementwise(f"cvt.pack.sat.{t}.s32.b32 {{d}}, {{a}}, {{b}}, {{c}};",
                           [("s32", a32), ("s32", b32), ("b32", c)], ["b32"], target="sm_90")
        want = [_pack_model(t, int(x), int(y), int(z)) for x, y, z in zip(a32, b32, c, strict=True)]
    bad = [(int(x), int(y), hex(w), hex(int(g))) for x, y, w, g in zip(a32, b32, want, d, strict=True)
           if int(g) != w]
    assert not bad, bad[:10]


def test_cvt_pack_refuses_bad_forms():
    import ptxjit
    from tests.unit.floatutil import build

    body = "    mov.u32 %r1, 5;\n    cvt.pack.u16.s32 %r2, %r1, %r1;\n"
    with pytest.raises(ptxjit.UnsupportedInstructionError, match=r"\.sat"):
        ptxjit.Module(build(body, [], target="sm_90"))


# ----------------------------------------------------------------------------------------------------------
# the H100's own results
# ----------------------------------------------------------------------------------------------------------

test_golden_fp8_and_pack = golden_test(r"^isa_cvt_(pack_|.*e[45]m[23]x2)", "fp8 / cvt.pack")
