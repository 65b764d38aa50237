"""Real-kernel corpus: half/bfloat16 arithmetic, math library, integer intrinsics and integer math.

References are computed with NumPy / exact Python integers; bfloat16 rounding is emulated bit-exactly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.corpus_util import cdiv, kernel

M32 = 2**32 - 1
M64 = 2**64 - 1


def s32(v: int) -> int:
    v &= M32
    return v - 2**32 if v >> 31 else v


def s64(v: int) -> int:
    v &= M64
    return v - 2**64 if v >> 63 else v


# ------------------------------------------------------------------------------------- half / bf16
def f16(x) -> np.ndarray:
    """Round float64 values to float16 (numpy rounds double -> half directly, RNE)."""
    return np.asarray(x, np.float64).astype(np.float16)


def bf16_to_f32(bits) -> np.ndarray:
    return (np.asarray(bits, np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def f64_to_bf16(x) -> np.ndarray:
    """Round float64 to bfloat16 bits, round-to-nearest-even, in one step (normal range, no NaN)."""
    u = np.asarray(x, np.float64).view(np.uint64).copy()
    lsb = (u >> np.uint64(45)) & np.uint64(1)
    u = (u + np.uint64(2**44 - 1) + lsb) & ~np.uint64(2**45 - 1)
    f = u.view(np.float64).astype(np.float32)  # exact: at most 8 significant bits remain
    return (f.view(np.uint32) >> np.uint32(16)).astype(np.uint16)


def random_bf16(rng, n, lo=-4.0, hi=4.0) -> np.ndarray:
    return f64_to_bf16(rng.uniform(lo, hi, n))


HALF = [("ptx", "halfprec"), ("ptx", "halfprec_sm90")]
HALF_IDS = ["sm80", "sm90"]


@pytest.mark.parametrize("src", HALF, ids=HALF_IDS)
def test_half_ops(src):
    rng = np.random.default_rng(700)
    n = 1000
    a = rng.uniform(-4, 4, n).astype(np.float16)
    b = rng.uniform(-4, 4, n).astype(np.float16)
    b[:5] = a[:5]  # equal operands for the comparison
    out = np.zeros((6, n), np.float16)
    gt = np.full(n, 7, np.uint8)
    f = np.zeros(n, np.float32)
    kernel(src[1], "half_ops", src[0])(cdiv(n, 128), 128, (a, b, out, gt, f, n))
    ad, bd = a.astype(np.float64), b.astype(np.float64)
    exp = np.stack([f16(ad + bd), f16(ad - bd), f16(ad * bd), f16(ad * bd + 0.5),
                    np.maximum(a, b), np.minimum(a, b)])
    np.testing.assert_array_equal(out.view(np.uint16), exp.view(np.uint16))
    np.testing.assert_array_equal(gt, (a > b).astype(np.uint8))
    np.testing.assert_array_equal(f, a.astype(np.float32) * b.astype(np.float32))


@pytest.mark.parametrize("src", HALF, ids=HALF_IDS)
def test_half_convert(src):
    rng = np.random.default_rng(701)
    vals = [0.0, -0.0, 1.0, 65504.0, 65519.0, 65520.0, 1e6, -1e6, np.inf, -np.inf, 6e-8, 2.98e-8, 3e-8,
            1e-10, -1e-5, 1.00048828125, 1.000732421875, 2049.0, 2051.0]
    x = np.concatenate([np.array(vals, np.float32), rng.standard_normal(500).astype(np.float32) * 100,
                        rng.standard_normal(200).astype(np.float32) * 1e-5])
    n = len(x)
    h = np.zeros(n, np.float16)
    back = np.zeros(n, np.float32)
    kernel(src[1], "half_convert", src[0])(cdiv(n, 128), 128, (x, h, back, n))
    with np.errstate(over="ignore"):
        exp = x.astype(np.float16)
    np.testing.assert_array_equal(h.view(np.uint16), exp.view(np.uint16))
    np.testing.assert_array_equal(back, exp.astype(np.float32))


@pytest.mark.parametrize("src", HALF, ids=HALF_IDS)
def test_half2_ops(src):
    rng = np.random.default_rng(702)
    n2 = 500
    a, b, c = (rng.uniform(-3, 3, (n2, 2)).astype(np.float16) for _ in range(3))
    out = np.zeros((4, n2, 2), np.float16)
    lowhigh = np.zeros(n2, np.float32)
    kernel(src[1], "half2_ops", src[0])(cdiv(n2, 64), 64, (a, b, c, out, lowhigh, n2))
    ad, bd, cd = (v.astype(np.float64) for v in (a, b, c))
    exp = np.stack([f16(ad + bd), f16(ad * bd), f16(ad * bd + cd), a[:, ::-1]])
    np.testing.assert_array_equal(out.view(np.uint16), exp.view(np.uint16))
    np.testing.assert_array_equal(lowhigh, a[:, 0].astype(np.float32) + b[:, 1].astype(np.float32))


@pytest.mark.parametrize("src", HALF, ids=HALF_IDS)
def test_bf16_ops(src):
    rng = np.random.default_rng(703)
    n = 1000
    a, b, c = random_bf16(rng, n), random_bf16(rng, n), random_bf16(rng, n)
    out = np.zeros((4, n), np.uint16)
    f = np.zeros(n, np.float32)
    kernel(src[1], "bf16_ops", src[0])(cdiv(n, 128), 128, (a, b, c, out, f, n))
    ad, bd, cd = (bf16_to_f32(v).astype(np.float64) for v in (a, b, c))
    exp = np.stack([f64_to_bf16(ad + bd), f64_to_bf16(ad * bd), f64_to_bf16(ad * bd + cd),
                    f64_to_bf16(ad * 3.0)])
    np.testing.assert_array_equal(out, exp)
    np.testing.assert_array_equal(f, bf16_to_f32(a) + bf16_to_f32(b))


@pytest.mark.parametrize("src", HALF, ids=HALF_IDS)
def test_bf162_ops(src):
    rng = np.random.default_rng(704)
    n2 = 400
    a = random_bf16(rng, 2 * n2, -100, 100)
    b = random_bf16(rng, 2 * n2, -0.01, 0.01)
    out = np.zeros((2, 2 * n2), np.uint16)
    kernel(src[1], "bf162_ops", src[0])(cdiv(n2, 128), 128, (a, b, out, n2))
    ad, bd = bf16_to_f32(a).astype(np.float64), bf16_to_f32(b).astype(np.float64)
    np.testing.assert_array_equal(out, np.stack([f64_to_bf16(ad + bd), f64_to_bf16(ad * bd)]))


# ------------------------------------------------------------------------------------- math library
def test_math_f32():
    rng = np.random.default_rng(800)
    n = 2000
    x = rng.uniform(-10, 10, n).astype(np.float32)
    y = rng.uniform(-3, 3, n).astype(np.float32)
    out = np.zeros((9, n), np.float32)
    kernel("mathlib", "math_f32")(cdiv(n, 256), 256, (x, y, out, n))
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    logarg = (np.abs(x) + np.float32(0.01)).astype(np.float64)  # the argument is rounded to f32 first
    powbase = (np.abs(x) + np.float32(0.5)).astype(np.float64)
    erf = np.array([math.erf(v) for v in yd])
    exp = [np.sin(xd), np.cos(xd), np.exp(yd), np.log(logarg), powbase**yd, erf, np.tanh(yd), None,
           np.arctan2(xd, yd)]
    names = ["sinf", "cosf", "expf", "logf", "powf", "erff", "tanhf", "sqrtf", "atan2f"]
    for k, (name, e) in enumerate(zip(names, exp, strict=True)):
        if e is None:
            continue
        np.testing.assert_allclose(out[k], e, rtol=2e-6, atol=1e-37, err_msg=name)
    np.testing.assert_array_equal(out[7], np.sqrt(np.abs(x)))  # sqrt.rn is correctly rounded


def test_math_f64():
    rng = np.random.default_rng(801)
    n = 1500
    x = rng.uniform(-20, 20, n)
    out = np.zeros((5, n))
    kernel("mathlib", "math_f64")(cdiv(n, 128), 128, (x, out, n))
    exp = [np.sin(x), np.cos(x), np.exp(x * 0.5), np.log(np.abs(x) + 1e-3)]
    for k, (name, e) in enumerate(zip(["sin", "cos", "exp", "log"], exp, strict=True)):
        np.testing.assert_allclose(out[k], e, rtol=1e-14, atol=1e-300, err_msg=name)
    np.testing.assert_array_equal(out[4], np.sqrt(np.abs(x)))


def test_math_exact_f32():
    rng = np.random.default_rng(802)
    n = 1000
    x = rng.uniform(-10, 10, n).astype(np.float32)
    x[:8] = [0.5, 1.5, 2.5, -0.5, -2.5, 0.0, -0.0, 1 / 6]  # x*3 hits round-half-even ties
    y = rng.uniform(0.1, 3, n).astype(np.float32) * rng.choice([-1, 1], n).astype(np.float32)
    out = np.zeros((9, n), np.float32)
    kernel("mathlib", "math_exact_f32")(cdiv(n, 256), 256, (x, y, out, n))
    x3 = x * np.float32(3)
    exp = np.stack([x / y, np.rint(x3), np.floor(x3), np.ceil(x3), np.trunc(x3), np.minimum(x, y),
                    np.maximum(x, y), np.copysign(x, y), -np.abs(x)])
    np.testing.assert_array_equal(out.view(np.uint32)[:, 8:], exp.view(np.uint32)[:, 8:])
    np.testing.assert_array_equal(out, exp)
    assert out[1, :5].tolist() == [2.0, 4.0, 8.0, -2.0, -8.0]


def test_float_int_conversions():
    rng = np.random.default_rng(803)
    n = 1000
    x = rng.uniform(-1000, 1000, n).astype(np.float32)
    x[:8] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e-3, -0.999]
    d = rng.uniform(-5, 5, n)
    io = np.zeros((6, n), np.int64)
    fo = np.zeros((3, n), np.float32)
    kernel("mathlib", "float_int_convert")(cdiv(n, 128), 128, (x, d, io, fo, n))
    xd = x.astype(np.float64)
    i = np.arange(n)
    exp_i = np.stack([np.trunc(xd), np.rint(xd), np.floor(xd), np.ceil(xd), np.trunc(np.abs(xd)),
                      np.trunc(d * 1e9)]).astype(np.int64)
    np.testing.assert_array_equal(io, exp_i)
    exp_f = np.stack([d.astype(np.float32), (i * 7 - 100).astype(np.float32),
                      np.array([float(k * 123456789) for k in range(n)]).astype(np.float32)])
    np.testing.assert_array_equal(fo, exp_f)


# ---------------------------------------------------------------------------------- integer intrinsics
def _brev(x: int, bits: int) -> int:
    return int(format(x, f"0{bits}b")[::-1], 2)


def _ffs(x: int) -> int:
    return (x & -x).bit_length()


def _byte_perm(x: int, y: int, s: int) -> int:
    b = (y << 32) | x
    r = 0
    for k in range(4):
        sel = (s >> (4 * k)) & 7
        r |= ((b >> (8 * sel)) & 0xFF) << (8 * k)
    return r


def _mul24(a: int, b: int, signed: bool) -> int:
    a &= 0xFFFFFF
    b &= 0xFFFFFF
    if signed:
        a = a - (1 << 24) if a >> 23 else a
        b = b - (1 << 24) if b >> 23 else b
    return (a * b) & M32


def _intrinsics_ref(x, y, z, p, q):
    sh = z & 31
    cat = (y << 32) | x
    r32 = [
        _brev(x, 32), 32 - x.bit_length(), _ffs(x), bin(x).count("1"), _byte_perm(x, y, z & 0x7777),
        ((cat << sh) >> 32) & M32, (cat >> sh) & M32,
        ((s32(x) * s32(y)) >> 32) & M32, (x * y) >> 32,
        (abs(s32(x) - s32(y)) + (z & 0xFFFF)) & M32, (abs(x - y) + (z & 0xFFFF)) & M32,
        ((cat << min(z, 32)) >> 32) & M32, (cat >> min(z, 32)) & M32,
        (64 - p.bit_length()) + 100 * _ffs(q) + 10000 * bin(p).count("1"),
    ]
    r64 = [
        _brev(p, 64), ((s64(p) * s64(q)) >> 64) & M64, (p * q) >> 64,
        ((p << (z & 63)) | (q >> (y & 63))) & M64, (s64(p) >> (x & 63)) & M64,
        (s32(_mul24(x, y, True)) + _mul24(y, z, False)) & M64,
    ]
    return r32, r64


INTRINSICS = [("ptx", "intrinsics"), ("ptx_nvrtc", "intrinsics")]


@pytest.mark.parametrize("src", INTRINSICS, ids=["nvcc", "nvrtc12"])
def test_int_intrinsics(src):
    rng = np.random.default_rng(900)
    n = 400
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    c = rng.integers(0, 70, n).astype(np.uint32)  # shift counts incl. >= 32 (clamp vs wrap)
    a[:6] = [0, 1, 0x80000000, M32, 0x00010000, 0xF0F0F0F0]
    b[:6] = [0, M32, 1, M32, 0x12345678, 0]
    p = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
    q = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(3)
    p[:3] = [0, 1, 2**63]
    q[:3] = [0, 2**63, 5]
    o32 = np.zeros((14, n), np.uint32)
    o64 = np.zeros((6, n), np.uint64)
    kernel(src[1], "int_intrinsics", src[0])(cdiv(n, 128), 128, (a, b, c, p, q, o32, o64, n))
    e32 = np.zeros((14, n), np.uint32)
    e64 = np.zeros((6, n), np.uint64)
    for i in range(n):
        r32, r64 = _intrinsics_ref(int(a[i]), int(b[i]), int(c[i]), int(p[i]), int(q[i]))
        e32[:, i] = r32
        e64[:, i] = r64
    names32 = ["brev", "clz", "ffs", "popc", "byte_perm", "funnelshift_l", "funnelshift_r", "mulhi",
               "umulhi", "sad", "usad", "funnelshift_lc", "funnelshift_rc", "clzll/ffsll/popcll"]
    for k, name in enumerate(names32):
        np.testing.assert_array_equal(o32[k], e32[k], err_msg=name)
    for k, name in enumerate(["brevll", "mul64hi", "umul64hi", "shifts64", "sar64", "mul24"]):
        np.testing.assert_array_equal(o64[k], e64[k], err_msg=name)


# -------------------------------------------------------------------------------------- integer math
def _tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _tmod(a: int, b: int) -> int:
    return a - b * _tdiv(a, b)


def test_int_divmod_negative():
    rng = np.random.default_rng(1000)
    n = 1000
    a = rng.integers(-(2**31) + 1, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-1000, 1000, n).astype(np.int32)
    b[b == 0] = -7
    a[:8] = [-7, 7, -1, 1, -15, 15, -(2**31) + 1, 2**31 - 1]
    b[:8] = [2, -2, 3, -3, 4, -4, 7, -7]
    out = np.zeros((6, n), np.int32)
    kernel("intmath", "int_divmod")(cdiv(n, 128), 128, (a, b, out, n))
    exp = np.zeros((6, n), np.int32)
    for i in range(n):
        x, y = int(a[i]), int(b[i])
        exp[:, i] = [_tdiv(x, y), _tmod(x, y), _tdiv(x, 7), _tmod(x, 7), _tdiv(x, -3), _tmod(x, 16)]
    np.testing.assert_array_equal(out, exp)


def test_uint_divmod():
    rng = np.random.default_rng(1001)
    n = 1000
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(1, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b[: n // 2] = rng.integers(1, 100, n // 2).astype(np.uint32)
    out = np.zeros((4, n), np.uint32)
    kernel("intmath", "uint_divmod")(cdiv(n, 128), 128, (a, b, out, n))
    np.testing.assert_array_equal(out, np.stack([a // b, a % b, a // 10, a % 10]))


def test_int64_math():
    rng = np.random.default_rng(1002)
    n = 800
    a = rng.integers(-(2**63) + 1, 2**63 - 1, n, dtype=np.int64)
    b = rng.integers(-(2**63) + 1, 2**63 - 1, n, dtype=np.int64)
    b[: n // 2] = rng.integers(-(2**20), 2**20, n // 2)
    b[b == 0] = 3
    a[:4] = [-7, 7, -(2**62), 2**62]
    b[:4] = [2, -2, 3, -(2**40)]
    out = np.zeros((8, n), np.int64)
    uout = np.zeros((3, n), np.uint64)
    kernel("intmath", "int64_math")(cdiv(n, 128), 128, (a, b, out, uout, n))
    exp = np.zeros((8, n), np.int64)
    uexp = np.zeros((3, n), np.uint64)
    for i in range(n):
        x, y = int(a[i]), int(b[i])
        ux, uy = x & M64, y & M64
        exp[:, i] = [s64(x * y), _tdiv(x, y), _tmod(x, y), s64(x + y), s64(x - y), x >> 5, ux >> 7, min(x, y)]
        uexp[:, i] = [ux // uy, ux % uy, (ux * uy + 12345) & M64]
    np.testing.assert_array_equal(out, exp)
    np.testing.assert_array_equal(uout, uexp)


def test_int_widen_and_shifts():
    rng = np.random.default_rng(1003)
    n = 800
    a = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    a[0], b[0] = -(2**31), -(2**31)
    out = np.zeros((5, n), np.int64)
    kernel("intmath", "int_widen")(cdiv(n, 128), 128, (a, b, out, n))
    exp = np.zeros((5, n), np.int64)
    for i in range(n):
        x, y = int(a[i]), int(b[i])
        ux, uy = x & M32, y & M32
        sh = y & 31
        short_x = (x & 0xFFFF) - 0x10000 if x & 0x8000 else x & 0xFFFF
        exp[:, i] = [x * y, ux * uy if ux * uy < 2**63 else ux * uy - 2**64, short_x + (y & 0xFF),
                     s32(abs(x)) + max(x, y) - min(x, y), s32(x << sh) ^ (ux >> sh)]
    np.testing.assert_array_equal(out, exp)
