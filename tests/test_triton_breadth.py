"""Triton's library functions through ptxjit.triton, each against a NumPy reference: Philox random numbers
(bit for bit), sort / argmax / argmin, histogram, associative scans with a user combine function, int64
arithmetic, fp16 input and output, libdevice math.  What a Triton user reaches for beyond the corpus
kernels (tests/test_triton.py); one program each, compiled for sm_80.  Skipped without Triton."""

from __future__ import annotations

import math

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install 'ptxjit[triton]')")
tl = pytest.importorskip("triton.language")

from triton.language.extra import libdevice as ld  # noqa: E402

import ptxjit.triton as pt  # noqa: E402

B = 256


# ------------------------------------------------------------------ Philox4x32-10, from Salmon et al. (SC'11)
def _philox4x32(ctr: np.ndarray, key: tuple[int, int], rounds: int = 10) -> np.ndarray:
    """Random123's Philox4x32 on counters ctr (n x 4 uint32) with key (k0, k1): n x 4 uint32."""
    c = [ctr[:, i].astype(np.uint64) for i in range(4)]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    m0, m1, w0, w1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57), np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
    mask = np.uint64(0xFFFFFFFF)
    for _ in range(rounds):
        p0, p1 = m0 * c[0], m1 * c[2]  # 32 x 32 -> 64-bit products
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & mask, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & mask]
        k0, k1 = (k0 + w0) & mask, (k1 + w1) & mask
    return np.stack(c, axis=1).astype(np.uint32)


def test_the_philox_model_meets_random123_s_known_answers():
    """The reference itself, against Random123's published known-answer vectors (kat_vectors)."""
    zero = _philox4x32(np.zeros((1, 4), np.uint32), (0, 0))
    assert [hex(v) for v in zero[0]] == ["0x6627e8d5", "0xe169c58d", "0xbc57ac4c", "0x9b00dbd8"]
    pi = _philox4x32(np.array([[0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344]], np.uint32),
                     (0xA4093822, 0x299F31D0))
    assert [hex(v) for v in pi[0]] == ["0xd16cfe09", "0x94fdcceb", "0x5001e420", "0x24126ea1"]


@triton.jit
def _random(ints, floats, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(ints + offs, tl.randint(seed, offs))
    tl.store(floats + offs, tl.rand(seed, offs))


def test_randint_and_rand_are_philox_bit_for_bit():
    """tl.randint(seed, offset): the first word of Philox4x32-10 on counter (offset, 0, 0, 0) and key (the
    seed's low and high words); tl.rand: that word as int32, complemented when negative, times 2**-31 in
    f32.  Two programs, so offsets past the first block too."""
    seed = 0x1234_5678_9ABC
    ints, floats = np.zeros(2 * B, np.uint32), np.zeros(2 * B, np.float32)
    pt.jit(_random)[(2,)](ints, floats, seed, BLOCK=B)
    ctr = np.zeros((2 * B, 4), np.uint32)
    ctr[:, 0] = np.arange(2 * B)
    want = _philox4x32(ctr, (seed & 0xFFFFFFFF, seed >> 32))[:, 0]
    np.testing.assert_array_equal(ints, want)
    x = want.view(np.int32)
    x = np.where(x < 0, ~x, x)
    np.testing.assert_array_equal(floats, x.astype(np.float32) * np.float32(4.6566127342e-10))


# ------------------------------------------------------------------ sort, argmax, argmin, histogram
@triton.jit
def _order(x, sorted_out, arg_out, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    v = tl.load(x + o)
    tl.store(sorted_out + o, tl.sort(v))
    tl.store(arg_out, tl.argmax(v, 0))
    tl.store(arg_out + 1, tl.argmin(v, 0))


def test_sort_argmax_argmin():
    x = np.random.default_rng(1).permutation(B).astype(np.float32) - 100.5
    s, arg = np.zeros(B, np.float32), np.zeros(2, np.int32)
    pt.jit(_order)[(1,)](x, s, arg, BLOCK=B)
    np.testing.assert_array_equal(s, np.sort(x))
    assert list(arg) == [np.argmax(x), np.argmin(x)]


@triton.jit
def _histogram(x, out, BLOCK: tl.constexpr, BINS: tl.constexpr):
    tl.store(out + tl.arange(0, BINS), tl.histogram(tl.load(x + tl.arange(0, BLOCK)), BINS))


def test_histogram():
    x = np.random.default_rng(2).integers(0, 16, B).astype(np.int32)
    out = np.zeros(16, np.int32)
    pt.jit(_histogram)[(1,)](x, out, BLOCK=B, BINS=16)
    np.testing.assert_array_equal(out, np.bincount(x, minlength=16))


# ------------------------------------------------------------------ scans with a user combine function
@triton.jit
def _wrapping_product(a, b):
    return a * b


@triton.jit
def _max(a, b):
    return tl.maximum(a, b)


@triton.jit
def _scans(x, prod, run_max, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    v = tl.load(x + o)
    tl.store(prod + o, tl.associative_scan(v, 0, _wrapping_product))
    tl.store(run_max + o, tl.associative_scan(v, 0, _max))


def test_associative_scan_with_user_combines():
    """A running product that wraps in 32 bits (exact in any association) and a running maximum."""
    x = np.random.default_rng(3).integers(-9, 10, B).astype(np.int32) | 1
    prod, run_max = np.zeros(B, np.int32), np.zeros(B, np.int32)
    pt.jit(_scans)[(1,)](x, prod, run_max, BLOCK=B)
    np.testing.assert_array_equal(prod, np.cumprod(x.astype(np.uint32), dtype=np.uint32).view(np.int32))
    np.testing.assert_array_equal(run_max, np.maximum.accumulate(x))


# ------------------------------------------------------------------ int64, fp16
@triton.jit
def _int64(x, out, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    v = tl.load(x + o)
    tl.store(out + o, tl.where(v > 0, v * 3_000_000_007, v // 7) + (v << 40) - (v >> 3))


def test_int64_arithmetic():
    """Products past 32 bits, division truncating toward zero (C's, which Triton keeps), shifts."""
    x = np.random.default_rng(4).integers(-100_000, 100_000, B).astype(np.int64)
    out = np.zeros(B, np.int64)
    pt.jit(_int64)[(1,)](x, out, BLOCK=B)
    trunc_div = np.sign(x) * (np.abs(x) // 7)
    np.testing.assert_array_equal(out, np.where(x > 0, x * 3_000_000_007, trunc_div) + (x << 40) - (x >> 3))


@triton.jit
def _half(x, out, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(out + o, (tl.load(x + o).to(tl.float32) * 3.0 + 1.0).to(tl.float16))


def test_fp16_in_and_out():
    x = np.random.default_rng(5).standard_normal(B).astype(np.float16)
    out = np.zeros(B, np.float16)
    pt.jit(_half)[(1,)](x, out, BLOCK=B, enable_fp_fusion=False)
    np.testing.assert_array_equal(out, (x.astype(np.float32) * np.float32(3) + np.float32(1)).astype(np.float16))


# ------------------------------------------------------------------ libdevice
@triton.jit
def _libdevice(x, out, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    v = tl.load(x + o)
    a = tl.abs(v)
    tl.store(out + o * 6, tl.math.erf(v))
    tl.store(out + o * 6 + 1, ld.tanh(v))
    tl.store(out + o * 6 + 2, ld.log1p(a))
    tl.store(out + o * 6 + 3, ld.pow(a, 1.7))
    tl.store(out + o * 6 + 4, ld.atan2(v, 1.5))
    tl.store(out + o * 6 + 5, ld.lgamma(a + 0.5))


def test_libdevice_math_within_a_few_ulp():
    """libdevice (CUDA's math library, linked into the PTX by Triton) runs as its PTX says: within 4 ulp
    of the correctly rounded result (its documented bounds are 2-4 ulp for these functions; lgamma's in
    absolute terms near its roots, where the result is tiny and its relative error is not bounded)."""
    x = np.random.default_rng(6).standard_normal(B).astype(np.float32) * 3
    out = np.zeros((B, 6), np.float32)
    pt.jit(_libdevice)[(1,)](x, out, BLOCK=B)
    fns = [math.erf, math.tanh, lambda v: math.log1p(abs(v)), lambda v: abs(v) ** 1.7,
           lambda v: math.atan2(v, 1.5), lambda v: math.lgamma(abs(v) + 0.5)]
    want = np.array([[f(float(v)) for f in fns] for v in x], np.float64)
    mag = np.abs(want)
    mag[:, 5] = np.maximum(mag[:, 5], 1.0)  # lgamma near its roots 1 and 2: an absolute bound (cancellation)
    ulp = np.spacing(mag.astype(np.float32)).astype(np.float64)
    err = np.abs(out.astype(np.float64) - want) / ulp
    assert err.max() <= 4, (err.max(), np.unravel_index(err.argmax(), err.shape))
