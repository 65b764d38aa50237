"""Real-kernel corpus: fast-math and directed-rounding intrinsics, compaction, fences, cooperative groups.

Directed-rounding expectations are computed with exact rational arithmetic (fractions.Fraction).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from tests.corpus_util import cdiv, kernel


def round_exact(q: Fraction, mode: str, dtype) -> float:
    """Round the exact value q to dtype (np.float32 / np.float64) with rounding mode rn/rz/rd/ru."""
    c = dtype(float(q))
    lo = c if Fraction(float(c)) <= q else np.nextafter(c, dtype(-np.inf))
    if Fraction(float(lo)) == q:
        return lo
    hi = np.nextafter(lo, dtype(np.inf))
    assert Fraction(float(lo)) < q < Fraction(float(hi))
    if mode == "rd":
        return lo
    if mode == "ru":
        return hi
    if mode == "rz":
        return lo if q > 0 else hi
    dlo, dhi = q - Fraction(float(lo)), Fraction(float(hi)) - q
    if dlo != dhi:
        return lo if dlo < dhi else hi
    bits = np.array([lo]).view(np.uint32 if dtype == np.float32 else np.uint64)[0]
    return lo if bits % 2 == 0 else hi


def sqrt_ru_f32(a: np.float32) -> np.float32:
    """Smallest float32 r with r*r >= a (exact comparison)."""
    q = Fraction(float(a))
    r = np.float32(math.sqrt(float(a)))
    while Fraction(float(r)) ** 2 < q:
        r = np.nextafter(r, np.float32(np.inf))
    while True:
        p = np.nextafter(r, np.float32(-np.inf))
        if p >= 0 and Fraction(float(p)) ** 2 >= q:
            r = p
        else:
            return r


# ------------------------------------------------------------------------------------------ fast math
def test_fast_math_intrinsics():
    rng = np.random.default_rng(1100)
    n = 1000
    x = rng.uniform(0.1, 10, n).astype(np.float32)
    y = rng.uniform(-3, 3, n).astype(np.float32)
    out = np.zeros((8, n), np.float32)
    kernel("fastmath", "fast_intrinsics")(cdiv(n, 128), 128, (x, y, out, n))
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    y4 = (y * np.float32(0.25)).astype(np.float64)
    checks = [
        ("__expf", np.exp(yd), 2e-6, 0),
        ("__logf", np.log(xd), 1e-6, 2e-6),
        ("__sinf", np.sin(yd), 0, 2e-6),
        ("__cosf", np.cos(yd), 0, 2e-6),
        ("__fdividef", yd / xd, 1e-6, 1e-30),
        ("rsqrtf", 1 / np.sqrt(xd), 1e-6, 0),
        ("__powf", xd**yd, 2e-5, 0),
        ("__tanf", np.tan(y4), 1e-5, 2e-6),
    ]
    for k, (name, exp, rtol, atol) in enumerate(checks):
        np.testing.assert_allclose(out[k], exp, rtol=rtol, atol=atol, err_msg=name)


def test_rounding_modes_f32():
    rng = np.random.default_rng(1101)
    n = 300
    x = (rng.uniform(-10, 10, n) * rng.choice([1, 1e-3, 1e3], n)).astype(np.float32)
    y = (rng.uniform(0.5, 4, n) * rng.choice([-1, 1], n)).astype(np.float32)
    x[:4] = [1.0, -1.0, 3.0, -3.0]
    y[:4] = [3.0, 3.0, -1.5, 1.5]
    out = np.zeros((12, n), np.float32)
    kernel("fastmath", "rounding_modes")(cdiv(n, 64), 64, (x, y, out, n))
    names = ["mul_rn", "mul_rz", "mul_rd", "mul_ru", "add_rz", "add_rd", "add_ru",
             "div_rz", "div_ru", "div_rd"]
    exp = np.zeros((12, n), np.float32)
    for i in range(n):
        a, b = Fraction(float(x[i])), Fraction(float(y[i]))
        row = [(a * b, "rn"), (a * b, "rz"), (a * b, "rd"), (a * b, "ru"), (a + b, "rz"), (a + b, "rd"),
               (a + b, "ru"), (a / b, "rz"), (a / b, "ru"), (a / b, "rd")]
        for k, (q, mode) in enumerate(row):
            exp[k, i] = round_exact(q, mode, np.float32)
        exp[10, i] = sqrt_ru_f32(np.abs(x[i]))
    exp[11] = np.clip(y, 0, 1)
    for k, name in enumerate([*names, "sqrt_ru", "saturate"]):
        np.testing.assert_array_equal(out[k], exp[k], err_msg=name)


def test_rounding_modes_f64():
    rng = np.random.default_rng(1102)
    n = 300
    x = rng.uniform(-10, 10, n) * rng.choice([1, 1e-7, 1e7], n)
    y = rng.uniform(0.5, 4, n) * rng.choice([-1, 1], n)
    out = np.zeros((4, n))
    kernel("fastmath", "rounding_modes_f64")(cdiv(n, 64), 64, (x, y, out, n))
    exp = np.zeros((4, n))
    for i in range(n):
        a, b = Fraction(float(x[i])), Fraction(float(y[i]))
        exp[:, i] = [round_exact(a * b, "rz", np.float64), round_exact(a + b, "ru", np.float64),
                     round_exact(a / b, "rd", np.float64), round_exact(a * b + 1, "rz", np.float64)]
    for k, name in enumerate(["dmul_rz", "dadd_ru", "ddiv_rd", "fma_rz"]):
        np.testing.assert_array_equal(out[k], exp[k], err_msg=name)


# ------------------------------------------------------------------------------- compaction / fences
def test_compact_warp_aggregated():
    rng = np.random.default_rng(1200)
    n, thr = 3000, 60
    x = rng.integers(0, 100, n).astype(np.int32)
    out = np.full(n, -1, np.int32)
    count = np.zeros(1, np.uint32)
    kernel("compact", "compact_warp_aggregated")(cdiv(n, 128), 128, (x, out, count, thr, n))
    keep = x[x > thr]
    assert int(count[0]) == len(keep)
    np.testing.assert_array_equal(np.sort(out[:len(keep)]), np.sort(keep))
    np.testing.assert_array_equal(out[len(keep):], -1)
    # each warp's survivors are written as one contiguous run, in lane order
    got = out[:len(keep)].tolist()
    for w in range(cdiv(n, 32)):
        seg = x[w * 32:(w + 1) * 32]
        run = seg[seg > thr].tolist()
        if run:
            assert any(got[p:p + len(run)] == run for p in range(len(got) - len(run) + 1)), f"warp {w}"


def test_last_block_done_sum():
    rng = np.random.default_rng(1201)
    n = 5000
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    nb = cdiv(n, 128)
    partials = np.zeros(nb, np.int32)
    ticket = np.zeros(1, np.uint32)
    result = np.full(2, -1, np.int32)
    kernel("compact", "last_block_sum")(nb, 128, (x, partials, ticket, result, n))
    np.testing.assert_array_equal(partials, [x[b * 128:(b + 1) * 128].sum() for b in range(nb)])
    assert int(ticket[0]) == nb
    assert int(result[0]) == int(x.sum())
    assert 0 <= result[1] < nb


def test_divergent_activemask():
    rng = np.random.default_rng(1202)
    n = 1000
    x = rng.integers(0, 100, n).astype(np.int32)
    out = np.zeros(n, np.uint32)
    kernel("compact", "divergent_activemask")(cdiv(n, 128), 128, (x, out, n))
    for i in range(n):
        lane, base = i % 32, (i // 32) * 32
        odd = bool(x[i] & 1)
        m = int(out[i]) if odd else (~int(out[i])) & 0xFFFFFFFF
        same_path = sum(1 << (j - base) for j in range(base, min(base + 32, n)) if bool(x[j] & 1) == odd)
        assert (m >> lane) & 1, f"thread {i}: own lane missing from activemask {m:#x}"
        assert m & ~same_path == 0, f"thread {i}: activemask {m:#x} has lanes outside its path {same_path:#x}"


# ----------------------------------------------------------------------------------- cooperative groups
def test_cg_reduce_tiles():
    rng = np.random.default_rng(1300)
    n, block = 1000, 128
    x = rng.integers(-500, 500, n).astype(np.int32)
    nb = cdiv(n, block)
    sums = np.zeros(nb, np.int32)
    tile8 = np.zeros(n, np.int32)
    ranks = np.zeros(n, np.int32)
    kernel("coopgroups", "cg_reduce")(nb, block, (x, sums, tile8, ranks, n))
    np.testing.assert_array_equal(sums, [x[b * block:(b + 1) * block].sum() for b in range(nb)])
    i = np.arange(n)
    t8 = np.array([x[k * 8:(k + 1) * 8].sum() for k in range(cdiv(n, 8))])
    np.testing.assert_array_equal(tile8, t8[i // 8])
    np.testing.assert_array_equal(ranks, (i % 8) * 1000 + (i % block) // 8)


def test_cg_tile16_shfl_ballot():
    rng = np.random.default_rng(1301)
    n, thr = 1000, 0
    x = rng.integers(-100, 100, n).astype(np.int32)
    mx = np.zeros(n, np.int32)
    ballots = np.zeros(n, np.uint32)
    kernel("coopgroups", "cg_tile_ops")(cdiv(n, 128), 128, (x, mx, ballots, thr, n))
    i = np.arange(n)
    tmax = np.array([x[k * 16:(k + 1) * 16].max() for k in range(cdiv(n, 16))])
    np.testing.assert_array_equal(mx, tmax[i // 16])
    tb = [sum(1 << (j - k * 16) for j in range(k * 16, min(k * 16 + 16, n)) if x[j] > thr)
          for k in range(cdiv(n, 16))]
    np.testing.assert_array_equal(ballots, np.array(tb, np.uint32)[i // 16])
