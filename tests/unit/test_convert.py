"""cvt between integer and floating-point types, plus mov-based pack/unpack.

Each kernel applies many `cvt` variants to one input per thread and stores every result into its own 8-byte
slot of a sentinel-filled output (narrow results are stored with their natural width, so the untouched
upper bytes of the slot must keep the sentinel).  Expectations: Python integers, fractions.Fraction and the
exact rounding model in floatutil.
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
    f2b,
    ftz_in,
    ftz_out,
    is_inf,
    is_nan,
    is_subnormal,
    launch,
    round_fraction,
    sign_of,
    to_fraction,
)
from tests.unit.goldenutil import golden_test

INT_TYPES = ["u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64"]
SENT = 0xA5A5A5A5A5A5A5A5


def _bits(t: str) -> int:
    return int(t[1:])


def _range(t: str) -> tuple[int, int]:
    n = _bits(t)
    return (0, (1 << n) - 1) if t[0] == "u" else (-(1 << (n - 1)), (1 << (n - 1)) - 1)


def _interpret(raw: int, t: str) -> int:
    n = _bits(t)
    v = raw & ((1 << n) - 1)
    if t[0] == "s" and v >> (n - 1):
        v -= 1 << n
    return v


def _store_type(t: str) -> str:
    if t in ("f32", "f64"):
        return t
    return f"b{_bits(t)}"


def _reg_kind(t: str) -> str:
    """Register used for a value of PTX type t (narrow integers live in 32-bit registers)."""
    return {"f32": "%f", "f64": "%fd"}.get(t, "%rd" if t in ("u64", "s64", "b64") else "%r")


def _expected_slot(value_bits: int, width: int) -> int:
    mask = (1 << width) - 1
    return (SENT & ~mask) | (value_bits & mask)


def run_multi(variants, inputs: np.ndarray, in_kind: str):
    """variants: list of (opcode-with-types, dst_type, src_type).  Returns out[n, len(variants)] (uint64).

    in_kind: 'u64' (integer bit patterns), 'f32' or 'f64' (float bit patterns, given as uint32/uint64).
    """
    n = len(inputs)
    k = len(variants)
    lines = [
        "    ld.param.u64 %rd40, [out];",
        "    ld.param.u64 %rd41, [inp];",
        "    mov.u32 %r60, %tid.x;",
        "    mov.u32 %r61, %ctaid.x;",
        "    mov.u32 %r62, %ntid.x;",
        "    mad.lo.s32 %r63, %r61, %r62, %r60;",
        "    ld.param.u32 %r59, [n];",
        "    setp.ge.u32 %p15, %r63, %r59;",
        "    @%p15 bra $L_done;",
        f"    mul.wide.u32 %rd42, %r63, {8 * k};",
        "    add.s64 %rd43, %rd40, %rd42;",
    ]
    if in_kind == "u64":
        lines += ["    mul.wide.u32 %rd44, %r63, 8;", "    add.s64 %rd45, %rd41, %rd44;",
                  "    ld.global.u64 %rd1, [%rd45];", "    ld.global.u32 %r1, [%rd45];"]
        srcs = {"%rd": "%rd1", "%r": "%r1"}
    elif in_kind == "f32":
        lines += ["    mul.wide.u32 %rd44, %r63, 4;", "    add.s64 %rd45, %rd41, %rd44;",
                  "    ld.global.f32 %f1, [%rd45];"]
        srcs = {"%f": "%f1"}
    else:
        lines += ["    mul.wide.u32 %rd44, %r63, 8;", "    add.s64 %rd45, %rd41, %rd44;",
                  "    ld.global.f64 %fd1, [%rd45];"]
        srcs = {"%fd": "%fd1"}
    for j, (op, dst_t, src_t) in enumerate(variants):
        dk = _reg_kind(dst_t)
        dst = {"%rd": "%rd2", "%r": "%r2", "%f": "%f2", "%fd": "%fd2"}[dk]
        src = srcs[_reg_kind(src_t)]
        lines.append(f"    {op} {dst}, {src};")
        lines.append(f"    st.global.{_store_type(dst_t)} [%rd43+{8 * j}], {dst};")
    lines.append("$L_done:")
    out = np.full(n * k, SENT, dtype=np.uint64)
    inp = np.ascontiguousarray(inputs)
    params = [("u64", "out"), ("u64", "inp"), ("u32", "n")]
    launch("\n".join(lines), params, [out, inp, np.uint32(n)], grid=(n + 63) // 64, block=64)
    return out.reshape(n, k)


def _check(out, variants, inputs, expect_fn):
    bad = []
    for j, v in enumerate(variants):
        for i, x in enumerate(inputs):
            want = expect_fn(v, int(x))
            got = int(out[i, j])
            if isinstance(want, tuple):  # ("nan", width): any NaN of that width, upper bytes untouched
                _, fmt = want
                w = fmt.bits
                ok = (got & ~((1 << w) - 1)) == (SENT & ~((1 << w) - 1)) and is_nan(fmt, got & ((1 << w) - 1))
                want_s = "NaN"
            elif isinstance(want, list):  # any of several encodings is acceptable
                ok = got in want
                want_s = " or ".join(hex(w) for w in want)
            else:
                ok = got == want
                want_s = hex(want)
            if not ok:
                bad.append(f"{v[0]} input={hex(int(x))}: expected {want_s}, got {hex(got)}")
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:25])


# ----------------------------------------------------------------------------------------------------------
# integer <-> integer
# ----------------------------------------------------------------------------------------------------------

INT_INPUTS = np.array([
    0, 1, 0x7F, 0x80, 0xFF, 0x100, 0x17F, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x18000, 0x7FFFFFFF, 0x80000000,
    0xFFFFFFFF, 0x100000000, 0x180000000, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF,
    0x123456789ABCDEF0, 0xFEDCBA9876543210, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFF80000000, 0xFFFFFFFFFFFF8000,
    0xFFFFFFFFFFFFFF80, 0x00000000FFFFFF80, 0x0000000080000001,
], dtype=np.uint64)


def _sat_possible(dst: str, src: str) -> bool:
    dlo, dhi = _range(dst)
    slo, shi = _range(src)
    return not (dlo <= slo and shi <= dhi)


def _int_variants():
    vs = []
    for d in INT_TYPES:
        for s in INT_TYPES:
            vs.append((f"cvt.{d}.{s}", d, s))
            if _sat_possible(d, s):
                vs.append((f"cvt.sat.{d}.{s}", d, s))
    return vs


def _expect_int(v, raw):
    op, d, s = v
    x = _interpret(raw, s)
    if ".sat." in op:
        lo, hi = _range(d)
        x = min(max(x, lo), hi)
    n = _bits(d)
    return _expected_slot(x & ((1 << n) - 1), n)


def test_cvt_int_to_int_all_pairs():
    variants = _int_variants()
    out = run_multi(variants, INT_INPUTS, "u64")
    _check(out, variants, INT_INPUTS, _expect_int)


def test_cvt_int_sign_extension_spot():
    variants = [("cvt.s64.s8", "s64", "s8"), ("cvt.u64.s16", "u64", "s16"), ("cvt.s32.u8", "s32", "u8"),
                ("cvt.u64.u32", "u64", "u32"), ("cvt.s64.s32", "s64", "s32")]
    inp = np.array([0x80, 0xFFFF, 0x1FF, 0x180000000], dtype=np.uint64)
    out = run_multi(variants, inp, "u64")
    assert int(out[0, 0]) == 0xFFFFFFFFFFFFFF80  # s8 0x80 = -128 sign-extended
    assert int(out[1, 1]) == 0xFFFFFFFFFFFFFFFF  # s16 -1 -> u64
    assert int(out[2, 2]) == _expected_slot(0xFF, 32)  # u8 zero-extends
    assert int(out[3, 3]) == 0x80000000  # u32 zero-extends
    assert int(out[3, 4]) == 0xFFFFFFFF80000000


# ----------------------------------------------------------------------------------------------------------
# float -> integer
# ----------------------------------------------------------------------------------------------------------

F2I_VALUES = [
    0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 3.7, -3.7, 127.5, 128.0, -128.5, -129.0, 255.5,
    256.0, 32767.5, 65535.4, 65536.0, 2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0,
    4294967040.0, 4294967296.0, 9.223372036854775807e18, -9.223372036854775808e18, 1.8446744073709552e19,
    1.0e10, -1.0e10, 1.0e30, -1.0e30, float("inf"), float("-inf"), 1.0e-40, -1.0e-40, 0.99999994, -0.99999994,
]
F2I_F64_EXTRA = [2147483647.0, 2147483647.5, -2147483648.5, -2147483649.0, 4294967295.0, 4294967295.9,
                 9007199254740993.0, -1.5e300, 1e-310]


def _round_int(v: Fraction, mode: str) -> int:
    fl = math.floor(v)
    if mode == "rzi":
        return math.trunc(v)
    if mode == "rmi":
        return fl
    if mode == "rpi":
        return math.ceil(v)
    rem = v - fl
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl % 2 == 1):
        return fl + 1
    return fl


def _expect_f2i(fmt):
    def f(v, raw):
        op, d, _ = v
        mode = op.split(".")[1]
        n = _bits(d)
        lo, hi = _range(d)
        if is_nan(fmt, raw):
            # the H100 gives 0x80...0 of the destination width, unsigned too, from an f64 source or into a
            # 64-bit destination, and 0 otherwise (golden isa_cvt_rni_u8_f64, isa_cvt_rni_u64_f32,
            # isa_cvt_rni_u32_f32)
            x = 1 << (n - 1) if fmt is F64 or n == 64 else 0
        elif is_inf(fmt, raw):
            x = lo if sign_of(fmt, raw) else hi
        else:
            x = min(max(_round_int(to_fraction(fmt, raw), mode), lo), hi)
        return _expected_slot(x & ((1 << n) - 1), n)
    return f


@pytest.mark.parametrize("src", ["f32", "f64"])
def test_cvt_float_to_int(src):
    fmt = F32 if src == "f32" else F64
    vals = F2I_VALUES + (F2I_F64_EXTRA if src == "f64" else [])
    nan = 0x7FC00000 if src == "f32" else 0x7FF8000000000000
    nnan = 0xFFC00001 if src == "f32" else 0xFFF8000000000001
    bits = [f2b(v) if src == "f32" else d2b(v) for v in vals] + [nan, nnan]
    inp = np.array(bits, dtype=np.uint32 if src == "f32" else np.uint64)
    variants = [(f"cvt.{m}.{d}.{src}", d, src) for m in ("rni", "rzi", "rmi", "rpi") for d in INT_TYPES]
    out = run_multi(variants, inp, src)
    _check(out, variants, inp, _expect_f2i(fmt))


def test_cvt_float_to_int_ftz_and_sat_forms():
    inp = np.array([f2b(v) for v in (2.5, -7.5, 1e20, -1e20, 1.0e-40)] + [0x7FC00000], dtype=np.uint32)
    variants = [("cvt.rni.ftz.s32.f32", "s32", "f32"), ("cvt.rzi.sat.u16.f32", "u16", "f32"),
                ("cvt.rmi.ftz.sat.s8.f32", "s8", "f32")]
    out = run_multi(variants, inp, "f32")
    _check(out, variants, inp, _expect_f2i(F32))


# ----------------------------------------------------------------------------------------------------------
# integer -> float
# ----------------------------------------------------------------------------------------------------------

I2F_INPUTS = np.concatenate([INT_INPUTS, np.array([
    0x1000001, 0x1000003, 0xFFFFFF7F, 0x7FFFFFBF, 0x20000000000001, 0x20000000000003, 0x8000000000000401,
    0xFFFFFFFFFFFFFC01, 0x7FFFFFFFFFFFFDFF, 0xFF000001, 0x3, 0xFFFFFFFD,
], dtype=np.uint64)])


def _expect_i2f(v, raw):
    op, d, s = v
    mode = op.split(".")[1]
    fmt = F32 if d == "f32" else F64
    x = _interpret(raw, s)
    return _expected_slot(round_fraction(fmt, Fraction(x), mode), fmt.bits)


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
@pytest.mark.parametrize("dst", ["f32", "f64"])
def test_cvt_int_to_float(dst, mode):
    variants = [(f"cvt.{mode}.{dst}.{s}", dst, s) for s in INT_TYPES]
    out = run_multi(variants, I2F_INPUTS, "u64")
    _check(out, variants, I2F_INPUTS, _expect_i2f)


# ----------------------------------------------------------------------------------------------------------
# float <-> float
# ----------------------------------------------------------------------------------------------------------

F32_VALUES = [0.0, -0.0, 1.0, -1.5, 0.1, 3.4e38, -3.4e38, float("inf"), float("-inf"), 2.5, -2.5, 0.5, -0.5,
              1.0e-40, -1.0e-40, 0.75, 1.25, 123456.5, -0.49999997, 8388607.5, 16777215.0, 1.5e-45, 0.999]
F32_BITS = np.array([f2b(v) for v in F32_VALUES] + [0x7FC00000, 0xFFC00123, 0x00800000, 0x007FFFFF],
                    dtype=np.uint32)


def _expect_ff(src_fmt):
    def f(v, raw):
        op, d, _ = v
        dst_fmt = F32 if d == "f32" else F64
        parts = op.split(".")
        ftz = "ftz" in parts
        sat = "sat" in parts
        mode = next((p for p in parts if p in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi")), "rn")
        x = ftz_in(src_fmt, raw) if ftz else raw
        if is_nan(src_fmt, x):
            if sat:
                return _expected_slot(0, dst_fmt.bits)
            nb = _gpu_cvt_nan(op, src_fmt, dst_fmt, x)
            return nb if isinstance(nb, tuple) else _expected_slot(nb, dst_fmt.bits)
        if is_inf(src_fmt, x):
            r = dst_fmt.inf | (dst_fmt.sign_bit if sign_of(src_fmt, x) else 0)
        else:
            val = to_fraction(src_fmt, x)
            if mode.endswith("i"):
                val = Fraction(_round_int(val, mode))
                r = round_fraction(dst_fmt, val, "rn", sign_of(src_fmt, x))
            else:
                r = round_fraction(dst_fmt, val, mode, sign_of(src_fmt, x))
        if ftz:
            r = ftz_out(dst_fmt, r)
        if sat:
            if r & dst_fmt.sign_bit:  # -0 included: .sat never returns -0 (golden isa_cvt_sat_f32_f32(-0) = 0)
                r = 0
            elif not is_inf(dst_fmt, r) and to_fraction(dst_fmt, r) <= 1:
                pass
            else:
                r = round_fraction(dst_fmt, Fraction(1))
        return _expected_slot(r, dst_fmt.bits)
    return f


def _gpu_cvt_nan(op: str, src, dst, x: int) -> int | tuple:
    """The NaN an H100 cvt returns for NaN input x: conversions through the f64 unit keep the sign and the
    payload's top bits, quieted; the f32 arithmetic forms give the canonical 0x7fffffff."""
    parts = op.split(".")
    if src is F64 or (dst is F64 and "ftz" not in parts):
        man = x & src.man_mask
        man = man >> (src.man - dst.man) if src.man > dst.man else \
            man << (dst.man - src.man)
        quiet = 1 << (dst.man - 1)
        return (dst.sign_bit if sign_of(src, x) else 0) | dst.exp_mask | quiet | man  # golden isa_cvt_rn_f32_f64
    if dst is F64:
        return 0x7FFFFFFFE0000000  # .ftz canonicalizes in f32 first (golden isa_cvt_ftz_f64_f32)
    if parts == ["cvt", "f32", "f32"]:
        return x  # a plain cvt.f32.f32 moves the bits on the H100, NaN payloads too (golden isa_cvt_f32_f32)
    return 0x7FFFFFFF


def test_cvt_f32_to_f64():
    variants = [("cvt.f64.f32", "f64", "f32"), ("cvt.ftz.f64.f32", "f64", "f32"),
                ("cvt.sat.f64.f32", "f64", "f32")]
    out = run_multi(variants, F32_BITS, "f32")
    _check(out, variants, F32_BITS, _expect_ff(F32))


F64_VALUES = [0.0, -0.0, 1.0, 0.1, -0.1, 1.0 / 3.0, -2.0 / 3.0, 3.4028235677973366e38, 3.4028235e38 * 2,
              -1e39, 1e-39, -1e-39, 1e-46, 7e-46, -7e-46, 1.401298464324817e-45, 2.5, -3.5, 1e300, -1e300,
              float("inf"), float("-inf"), 1.0000000596046448, 1.0000000596046450, -1.0000000596046448,
              16777217.0, 0.49999999999999994, 123456.5, 1e-320, 0.75, 1.75]
F64_BITS = np.array([d2b(v) for v in F64_VALUES] + [0x7FF8000000000000, 0xFFF0000000000001], dtype=np.uint64)


def test_cvt_f64_to_f32_rounding_modes():
    variants = [(f"cvt.{m}{f}{s}.f32.f64", "f32", "f64") for m in ("rn", "rz", "rm", "rp")
                for f in ("", ".ftz") for s in ("", ".sat")]
    out = run_multi(variants, F64_BITS, "f64")
    _check(out, variants, F64_BITS, _expect_ff(F64))


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_cvt_round_to_integral(ty):
    fmt = F32 if ty == "f32" else F64
    inp = F32_BITS if ty == "f32" else F64_BITS
    variants = [(f"cvt.{m}.{ty}.{ty}", ty, ty) for m in ("rni", "rzi", "rmi", "rpi")]
    if ty == "f32":
        variants += [(f"cvt.{m}.ftz.f32.f32", ty, ty) for m in ("rni", "rmi")]
    out = run_multi(variants, inp, ty)
    _check(out, variants, inp, _expect_ff(fmt))


def test_cvt_round_to_integral_keeps_sign_of_zero():
    inp = np.array([f2b(v) for v in (-0.3, -0.5, 0.3, -0.7)], dtype=np.uint32)
    variants = [("cvt.rni.f32.f32", "f32", "f32"), ("cvt.rzi.f32.f32", "f32", "f32"),
                ("cvt.rpi.f32.f32", "f32", "f32")]
    out = run_multi(variants, inp, "f32")
    low = [[int(out[i, j]) & 0xFFFFFFFF for j in range(3)] for i in range(4)]
    assert low[0] == [0x80000000, 0x80000000, 0x80000000]
    assert low[1] == [0x80000000, 0x80000000, 0x80000000]
    assert low[2][0] == 0 and low[2][1] == 0 and low[2][2] == f2b(1.0)
    assert low[3][0] == f2b(-1.0) and low[3][2] == 0x80000000


def test_cvt_f32_f32_ftz_and_sat():
    variants = [("cvt.ftz.f32.f32", "f32", "f32"), ("cvt.sat.f32.f32", "f32", "f32"),
                ("cvt.ftz.sat.f32.f32", "f32", "f32"), ("cvt.f32.f32", "f32", "f32")]
    out = run_multi(variants, F32_BITS, "f32")
    _check(out, variants, F32_BITS, _expect_ff(F32))
    # a subnormal input survives the plain conversion but is flushed with .ftz
    i = list(F32_BITS).index(0x007FFFFF)
    assert int(out[i, 0]) & 0xFFFFFFFF == 0 and int(out[i, 3]) & 0xFFFFFFFF == 0x007FFFFF
    assert is_subnormal(F32, 0x007FFFFF)


# ----------------------------------------------------------------------------------------------------------
# 64-bit integers -> bf16 with directed rounding, tf32
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
@pytest.mark.parametrize("src", ["u64", "s64"])
def test_cvt_int64_to_bf16_rounds_once(mode, src):
    """One rounding from the exact integer: rounding through the nearest f64 first is off by one ulp for
    integers just beyond a bf16 rounding boundary (golden isa_cvt_rz_bf16_u64)."""
    from tests.unit.floatutil import BF16, elementwise

    base = [1 << 60, 3 << 58, 0x5F000000_00000000, 1 << 40]
    vals = []
    for v in base:
        half_ulp = v >> 9  # half a bf16 ulp at v (8 significant bits)
        vals += [v, v + 1, v - 1, v + half_ulp, v + half_ulp + 1, v + half_ulp - 1, v - (half_ulp >> 1)]
    vals += [0, 1, 255, 257, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0x8000000000000001, 0x80000000000000FF]
    raw = np.array([v & 0xFFFFFFFFFFFFFFFF for v in vals] + [(-v) & 0xFFFFFFFFFFFFFFFF for v in vals],
                   dtype=np.uint64)
    (d,) = elementwise(f"cvt.{mode}.bf16.{src} {{d}}, {{a}};", [("u64", raw)], ["b16"], target="sm_90")
    want = [round_fraction(BF16, Fraction(_interpret(int(r), src)), mode) for r in raw]
    assert_bits_equal(BF16, d, want, [raw], f"cvt.{mode}.bf16.{src}")


def _tf32_model(x: int, mode: str, relu: bool) -> int:
    """tf32 rounding of f32 bits x; NaN -> 0x7fffe000 for .rn/.rz (golden isa_cvt_rn_tf32_f32)."""
    from tests.unit.floatutil import TF32

    if is_nan(F32, x):
        return 0x7FFFE000
    if relu and sign_of(F32, x):
        return 0
    if is_inf(F32, x):
        return x
    return round_fraction(TF32, to_fraction(F32, x), mode, sign_of(F32, x)) << 13


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("mode", ["rn", "rz"])
def test_cvt_tf32_rn_rz(mode, relu):
    from tests.unit.floatutil import elementwise

    rng = np.random.default_rng(31)
    x = (rng.standard_normal(400) * np.exp2(rng.integers(-140, 127, 400))).astype(np.float32).view(np.uint32)
    sp = [0, 0x80000000, 0x3F801000, 0x3F803000, 0xBF801000, 0x3F800FFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
          0xFF800000, 0x7FC00000, 0xFFC12345, 0x7F800001, 0x007FFFFF, 0x80001000, 0x00003000]
    x = np.concatenate([np.array(sp, dtype=np.uint32), x])
    op = f"cvt.{mode}{'.relu' if relu else ''}.tf32.f32"
    (d,) = elementwise(f"{op} {{d}}, {{a}};", [("f32", x)], ["b32"], target="sm_90")
    want = [_tf32_model(int(v), mode, relu) for v in x]
    assert_bits_equal(F32, d, want, [x], op)


def test_cvt_rna_satfinite_tf32(monkeypatch):
    """.rna.satfinite: finite overflow and infinities give the largest tf32; the H100 also steps NaNs
    one tf32 ulp down (golden isa_cvt_rna_satfinite_tf32_f32(0x7fc00000) = 0x7fbfe000)."""
    from tests.unit import floatutil
    from tests.unit.floatutil import TF32, elementwise

    build = floatutil.build  # .satfinite on cvt.rna.tf32 needs PTX ISA 8.1
    monkeypatch.setattr(floatutil, "build", lambda *a, **k: build(*a, **k).replace(".version 8.0", ".version 8.1"))

    x = np.array([0x3F800000, 0x3F801000, 0xBF801000, 0x7F7FF000, 0x7F7FEFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
                  0x7FC00000, 0xFFC12345, 0x7F800001, 0x00000001], dtype=np.uint32)
    (d,) = elementwise("cvt.rna.satfinite.tf32.f32 {d}, {a};", [("f32", x)], ["b32"], target="sm_90")
    big = TF32.max_finite << 13
    want = []
    for v in (int(t) for t in x):
        if is_nan(F32, v):
            want.append((v & ~0x1FFF) - 0x2000)
        elif is_inf(F32, v):
            want.append(big | (v & 0x80000000))
        else:
            r = round_fraction(TF32, to_fraction(F32, v), "rna", sign_of(F32, v)) << 13
            want.append(big | (v & 0x80000000) if is_inf(F32, r) else r)
    assert_bits_equal(F32, d, want, [x], "cvt.rna.satfinite.tf32.f32")


# ----------------------------------------------------------------------------------------------------------
# the H100's own results
# ----------------------------------------------------------------------------------------------------------

test_golden_cvt = golden_test(r"^isa_cvt_(?!pack_)(?!.*e[45]m[23]x2)", "cvt (fp8 and cvt.pack: test_fp8.py)")


# ----------------------------------------------------------------------------------------------------------
# mov pack / unpack
# ----------------------------------------------------------------------------------------------------------


def test_mov_pack_unpack():
    body = """
    ld.param.u64 %rd40, [out];
    ld.param.u64 %rd41, [inp];
    mov.u32 %r60, %tid.x;
    mul.wide.u32 %rd42, %r60, 8;
    add.s64 %rd43, %rd41, %rd42;
    ld.global.u64 %rd1, [%rd43];
    mul.wide.u32 %rd44, %r60, 48;
    add.s64 %rd45, %rd40, %rd44;
    mov.b64 {%r1, %r2}, %rd1;
    st.global.u32 [%rd45], %r1;
    st.global.u32 [%rd45+4], %r2;
    mov.b64 %rd2, {%r2, %r1};
    st.global.u64 [%rd45+8], %rd2;
    mov.b32 {%h1, %h2}, %r1;
    st.global.b16 [%rd45+16], %h1;
    st.global.b16 [%rd45+18], %h2;
    mov.b32 %r3, {%h2, %h1};
    st.global.u32 [%rd45+20], %r3;
    mov.b64 {%h3, %h4, %h5, %h6}, %rd1;
    st.global.b16 [%rd45+24], %h6;
    st.global.b16 [%rd45+26], %h5;
    st.global.b16 [%rd45+28], %h4;
    st.global.b16 [%rd45+30], %h3;
    mov.b64 %rd3, {%h6, %h5, %h4, %h3};
    st.global.u64 [%rd45+32], %rd3;
    cvt.u32.u64 %r4, %rd1;
    st.global.u32 [%rd45+40], %r4;
    shr.u64 %rd4, %rd1, 32;
    cvt.u32.u64 %r5, %rd4;
    st.global.u32 [%rd45+44], %r5;
"""
    vals = np.array([0x0123456789ABCDEF, 0xFFFFFFFF00000000, 0x00000000FFFFFFFF, 0x8000000180000002],
                    dtype=np.uint64)
    out = np.zeros(len(vals) * 6, dtype=np.uint64)
    launch(body, [("u64", "out"), ("u64", "inp")], [out, vals], grid=1, block=len(vals))
    w = out.view(np.uint32).reshape(len(vals), 12)
    h = out.view(np.uint16).reshape(len(vals), 24)
    for i, v in enumerate(int(x) for x in vals):
        lo, hi = v & 0xFFFFFFFF, v >> 32
        assert int(w[i, 0]) == lo and int(w[i, 1]) == hi
        assert int(out[i * 6 + 1]) == (lo << 32) | hi
        assert int(h[i, 8]) == lo & 0xFFFF and int(h[i, 9]) == lo >> 16
        assert int(w[i, 5]) == ((lo & 0xFFFF) << 16) | (lo >> 16)
        q = [(v >> (16 * k)) & 0xFFFF for k in range(4)]
        assert [int(h[i, 12 + k]) for k in range(4)] == q[::-1]
        rev = q[3] | (q[2] << 16) | (q[1] << 32) | (q[0] << 48)
        assert int(out[i * 6 + 4]) == rev
        assert int(w[i, 10]) == lo and int(w[i, 11]) == hi


def test_model_sanity():
    assert _round_int(Fraction(5, 2), "rni") == 2 and _round_int(Fraction(-5, 2), "rni") == -2
    assert _round_int(Fraction(-7, 2), "rmi") == -4 and _round_int(Fraction(-7, 2), "rzi") == -3
    assert round_fraction(F32, Fraction(16777217), "rn") == f2b(16777216.0)
    assert round_fraction(F32, Fraction(16777217), "rp") == f2b(16777218.0)
    assert assert_bits_equal is not None


@pytest.mark.parametrize("cvt,out_dtype,expected", [
    # the H100: add.f32 of a NaN gives the canonical 0x7fffffff (golden isa_add_f32); a plain cvt.f32.f32
    # copies the bits (isa_cvt_f32_f32) and cvt.f64.f32 keeps the payload (isa_cvt_f64_f32)
    ("cvt.f32.f32", np.uint32, 0x7FFFFFFF),
    ("cvt.f64.f32", np.uint64, 0x7FFFFFFFE0000000),
])
def test_cvt_of_an_arithmetic_nan_sees_the_canonical_nan(cvt, out_dtype, expected):
    """An arithmetic result's NaN is canonicalized where its bits are observed, a cvt that copies them
    included: the x86 add keeps the signalling input's payload (0x7fc00001) where the H100 writes
    0x7fffffff, and a cvt read it uncanonicalized before."""
    from tests.ptxsnip import snippet_kernel
    from tests.unit.kernelutil import run_ptx

    dt = "f64" if out_dtype == np.uint64 else "f32"
    d = "%fd1" if dt == "f64" else "%f3"
    ptx = snippet_kernel(f"""
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  ld.global.f32 %f1, [%rd1];
  add.f32 %f2, %f1, %f1;
  {cvt} {d}, %f2;
  st.global.{dt} [%rd2], {d};
""", [("u64", "pin"), ("u64", "pout")])
    x = np.array([0x7F800001], np.uint32).view(np.float32)
    out = np.zeros(1, out_dtype)
    run_ptx(ptx, (x, out))
    assert int(out[0]) == expected, hex(int(out[0]))
