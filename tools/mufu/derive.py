#!/usr/bin/env python3
"""Regenerate src/ptxjit/lower/mufu_tables.py from the dense H100 samples in ../shared/gpu-golden/mufu
(tanh: tools/mufu/gpu/tanh_dense.npz).

Each table is the per-segment (C0, C1, C2) of the quadratic interpolator in fit.py, fitted exactly to
the samples (needs scipy; about a minute per function, tanh five):  python3 tools/mufu/derive.py [NAME ...]
(a NAME that is no table rewrites the module with every table kept).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fit  # noqa: E402
import golden  # noqa: E402

OUT = Path(__file__).resolve().parents[2] / "src" / "ptxjit" / "lower" / "mufu_tables.py"
# per table: (segment-offset bits nb, squarer columns kept >= cut, fraction bits of the sum below the
# result's ulp); 64 segments per octave (rcp: 128).  Found with the probes in research.py.
# sin: the quarter wave sin(2*pi*r/2**25) over the 23-bit offset r, 64 segments; its result is fixed
# point with 37 fraction bits (exact in the samples below 2**-13), truncated to f32 afterwards, so the
# samples only bound Y (see sin_samples).
PARAMS = {"ex2": (17, 19, 15), "rcp": (16, 17, 15), "rsqrt": (17, 19, 16), "sqrt": (17, 19, 17),
          "sin": (17, 19, 4), "lg2": (17, 19, 4), "tanh": (17, 19, 16)}
SIN_FRAC_BITS = 37
# lg2: log2 of the mantissa 1.m over the 23-bit m, 64 segments; the result is fixed point with 36 fraction
# bits (exact in the samples just above 1), the exponent added as an integer, the sum truncated to f32, so
# the samples only bound Y (see lg2_samples).  lg2(1) = 0 is special (the table gives 7377 * 2**-36 there).
LG2_FRAC_BITS = 36
# tanh: |x| in [2**-8, 8) (below: x itself, from 8: 1), 2**S segments per octave of |x| (TANH_SEGS, octaves
# 2**-8 .. 4), the offset t = the 17 mantissa bits below the segment bits (lower bits are ignored).  The sum
# (before >> frac) is fixed point with frac bits below the ulp of 2**min(e, -1) (the octave's largest result),
# truncated to f32; results fall at most one octave lower, where the samples show one more bit.  Fitted to
# the dense H100 samples of tools/mufu/gpu/tanh_dense.npz, which hold every offset of every segment.
TANH_SEGS = (0, 0, 0, 1, 1, 2, 2, 2, 3, 4, 3)
TANH_E0 = -8
TANH_DENSE = Path(__file__).resolve().parent / "gpu" / "tanh_dense.npz"


def sin_reduce(x: np.ndarray, cos: bool) -> tuple[np.ndarray, np.ndarray]:
    """(quadrant q, quarter-wave offset r') of sin/cos.approx's exact argument reduction (approx.py)."""
    ax = (x & 0x7FFFFFFF).astype(np.uint32)
    p = ax.view(np.float32).astype(np.float64) * float.fromhex("0x1.45f306p-3")  # exact
    p32 = p.astype(np.float32)
    pb = p32.view(np.uint32).astype(np.int64) - (p32.astype(np.float64) > p)  # toward zero
    pc = pb.astype(np.uint32).view(np.float32).astype(np.float64)
    pc = np.where(pc < 2.0**23, pc, 0.0)
    n = (pc * 2**25).astype(np.int64) & ((1 << 25) - 1)
    if cos:
        n = (n + (1 << 23)) & ((1 << 25) - 1)
    q, r = n >> 23, n & ((1 << 23) - 1)
    return q, np.where(q & 1, (1 << 23) - 1 - r, r)


def sin_samples() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r', lowest Y, highest Y) from the sin and cos samples: |result| = Y * 2**-37 truncated to f32."""
    rs, los, his = [], [], []
    for name in ("sin_approx_ftz_f32_0_2pi", "cos_approx_ftz_f32_0_2pi"):
        x, y = golden.mufu(name)
        _, r = sin_reduce(x, name.startswith("cos"))
        a = np.abs(_f32(y))
        lo = np.round(a * 2.0**SIN_FRAC_BITS).astype(np.int64)
        _, e = np.frexp(a)
        ulp = np.maximum(np.where(a > 0, np.ldexp(1.0, e - 24 + SIN_FRAC_BITS), 1.0), 1.0).astype(np.int64)
        rs.append(r), los.append(lo), his.append(lo + ulp - 1)
    return np.concatenate(rs), np.concatenate(los), np.concatenate(his)


def lg2_samples() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mantissa m, lowest Y, highest Y) from the lg2 samples over [1, 2): result = Y * 2**-36 truncated
    to f32 (m = 0 left out: exactly 0)."""
    x, y = golden.mufu("lg2_approx_ftz_f32_1_2")
    a = _f32(y)
    lo = np.round(a * 2.0**LG2_FRAC_BITS).astype(np.int64)
    _, e = np.frexp(a)
    ulp = np.maximum(np.where(a > 0, np.ldexp(1.0, e - 24 + LG2_FRAC_BITS), 1.0), 1.0).astype(np.int64)
    m = (x & 0x7FFFFF).astype(np.int64)
    use = m > 0
    return m[use], lo[use], (lo + ulp - 1)[use]


def tanh_split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(global segment, offset t, exponent of the octave's largest result) of tanh's table for f32 bits
    x with 2**-8 <= |x| < 8."""
    nb = PARAMS["tanh"][0]
    x = x.astype(np.int64)
    e = ((x >> 23) & 0xFF) - 127
    m = x & 0x7FFFFF
    segs = np.array(TANH_SEGS, dtype=np.int64)
    base = np.concatenate([[0], np.cumsum(1 << segs)])
    k = e - TANH_E0
    S = segs[k]
    u = m >> (23 - nb - S)
    return base[k] + (u >> nb), u & ((1 << nb) - 1), np.minimum(e, -1)


def tanh_samples() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(global segment, offset t, lowest V, highest V) from the dense samples, one row per (segment, t);
    V: the interpolator's sum (frac bits below the result octave's ulp), of which the f32 result is the
    truncation."""
    sys.path.insert(0, str(TANH_DENSE.parent))
    from pack import unpack

    frac = PARAMS["tanh"][2]
    xs, ys = [], []
    for name, first, stride in (("tanh_f32_lo", 0x39800000, 2), ("tanh_f32_hi", 0x3D800000, 4)):
        y = unpack(TANH_DENSE, name)
        x = (first + stride * np.arange(len(y), dtype=np.int64)).astype(np.uint32)
        keep = x >= 0x3B800000  # [2**-12, 2**-8) of the low range: x itself
        xs.append(x[keep]), ys.append(y[keep])
    x, y = np.concatenate(xs), np.concatenate(ys)
    seg, t, oexp = tanh_split(x)
    key = (seg << 20) | t
    _, idx, inv = np.unique(key, return_index=True, return_inverse=True)
    if np.any(y != y[idx][inv]):
        raise SystemExit("tanh: the output is not a function of (segment, offset)")
    seg, t, oexp, y = seg[idx], t[idx], oexp[idx], y[idx]
    a = _f32(y)
    sc = 23 - oexp + frac
    lo = np.round(np.ldexp(a, sc)).astype(np.int64)
    _, e = np.frexp(a)
    ulp = np.ldexp(1.0, e - 24 + sc).astype(np.int64)
    return seg, t, lo, lo + ulp - 1


def derive_tanh() -> list[tuple[int, int, int]]:
    seg, t, lo, hi = tanh_samples()
    nb, cut, frac = PARAMS["tanh"]
    fits = []
    for s in range(sum(1 << k for k in TANH_SEGS)):
        sel = seg == s
        # the bounds are on the sum itself: fit it with frac 0 and bounds lo .. hi
        f = fit.fit_segment_iv(t[sel], lo[sel], hi[sel], nb, cut, 0)
        if f is None:
            raise SystemExit(f"tanh: segment {s} has no exact fit")
        fits.append(f)
        print(f"tanh: segment {s}: {f}", flush=True)
    c0 = fit.pin_c0([(f[0], f[3]) for f in fits])
    table = [(c, f[1], f[2]) for c, f in zip(c0, fits, strict=True)]
    got = fit.eval_table(seg, t, np.array(table, dtype=np.int64), nb, cut, 0)
    print(f"tanh: {len(table)} segments, {np.sum((got >= lo) & (got <= hi))}/{len(t)} samples exact", flush=True)
    return table


def _f32(y: np.ndarray) -> np.ndarray:
    return y.view(np.float32).astype(np.float64)


def samples(name: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(fixed-point argument u, integer result Y, argument bits) for one table."""
    if name == "ex2":  # u = 23-bit fraction f of x in [0, 1), Y = 2**f * 2**23
        x, y = golden.mufu("ex2_approx_ftz_f32_0_1")
        a = np.arange(len(x), dtype=np.int64) * 16
        # x in (-1, 0): the unit takes the ones' complement of |x| in fixed point: 2**x = 2**(f - 1)
        # with f = 1 - |x| - 2**-23 (the samples cover the offsets = 15 mod 16 that way); x = -0
        # (no fraction bits) is exact, as for positive x
        _, yn = golden.mufu("ex2_approx_ftz_f32_m1_0")
        u = np.concatenate([a, (1 << 23) - 1 - a[1:]])
        Y = np.concatenate([np.round(_f32(y) * 2**23), np.round(_f32(yn[1:]) * 2**24)]).astype(np.int64)
        return u, Y, 23
    if name == "rcp":  # u = mantissa of x in [1, 2), Y = 1/x * 2**24
        x, y = golden.mufu("rcp_approx_ftz_f32_1_2")
        return (x & 0x7FFFFF).astype(np.int64), np.round(_f32(y) * 2**24).astype(np.int64), 23
    if name in ("rsqrt", "sqrt"):  # u = exponent parity and mantissa of x in [1, 4)
        xs, ys = zip(*(golden.mufu(f"{name}_approx_ftz_f32_{r}") for r in ("1_2", "2_4")), strict=True)
        x, y = np.concatenate(xs), np.concatenate(ys)
        scale = 2**24 if name == "rsqrt" else 2**23
        return (x - 0x3F800000).astype(np.int64), np.round(_f32(y) * scale).astype(np.int64), 24
    raise KeyError(name)


def derive_iv(name: str) -> list[tuple[int, int, int]]:
    """Tables whose samples only bound Y (sin, lg2): interval fitting."""
    r, lo, hi = sin_samples() if name == "sin" else lg2_samples()
    nb, cut, frac = PARAMS[name]
    fits = []
    for s in range(1 << (23 - nb)):
        sel = (r >> nb) == s
        f = fit.fit_segment_iv(r[sel] & ((1 << nb) - 1), lo[sel], hi[sel], nb, cut, frac)
        if f is None:
            raise SystemExit(f"{name}: segment {s} has no exact fit")
        fits.append(f)
    c0 = fit.pin_c0([(f[0], f[3]) for f in fits])
    table = [(c, f[1], f[2]) for c, f in zip(c0, fits, strict=True)]
    got = fit.eval_table(r >> nb, r & ((1 << nb) - 1), np.array(table, dtype=np.int64), nb, cut, frac)
    print(f"{name}: {len(table)} segments, {np.sum((got >= lo) & (got <= hi))}/{len(r)} samples exact", flush=True)
    return table


def derive(name: str) -> list[tuple[int, int, int]]:
    if name in ("sin", "lg2"):
        return derive_iv(name)
    if name == "tanh":
        return derive_tanh()
    u, Y, nbits = samples(name)
    nb, cut, frac = PARAMS[name]
    # rsqrt(1) is exact (1.0, the hardware special-cases it); not part of the interpolation
    use = u > 0 if name == "rsqrt" else np.ones(len(u), bool)
    fits = []
    for s in range(1 << (nbits - nb)):
        sel = ((u >> nb) == s) & use
        t = u[sel] & ((1 << nb) - 1)
        r = fit.fit_segment(t, Y[sel], nb, cut, frac)
        if r is None:
            raise SystemExit(f"{name}: segment {s} has no exact fit")
        fits.append(r)
    c0 = fit.pin_c0([(r[0], r[3]) for r in fits])
    table = [(c, r[1], r[2]) for c, r in zip(c0, fits, strict=True)]
    # check: the table reproduces every sample
    seg, t = u >> nb, u & ((1 << nb) - 1)
    got = fit.eval_table(seg, t, np.array(table, dtype=np.int64), nb, cut, frac)
    print(f"{name}: {len(table)} segments, {np.sum((got == Y) & use)}/{np.sum(use)} samples exact", flush=True)
    return table


def main() -> None:
    names = sys.argv[1:] or list(PARAMS)
    # tables not named on the command line are kept as they are in the generated module
    import importlib.util
    spec = importlib.util.spec_from_file_location("mufu_tables", OUT)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    tables = {n: derive(n) if n in names else [tuple(c) for c in getattr(old, n.upper())]
              for n in PARAMS}
    lines = ['"""Quadratic-interpolation tables of the H100 multifunction unit (generated by',
             'tools/mufu/derive.py from ../shared/gpu-golden/mufu and tools/mufu/gpu; do not edit).',
             "",
             "Per segment (C0, C1, C2): Y = (C0 + C1*t + C2*(sq(t) >> cut)) >> frac, see approx.py;",
             "PARAMS: per table (offset bits nb, squarer columns kept >= cut, frac).",
             '"""', "", "PARAMS = {", *(f"    {k!r}: {v!r}," for k, v in PARAMS.items()), "}", "",
             "# tanh: log2 of the segments per octave of |x|, octaves 2**TANH_E0 .. 4 (tools/mufu/derive.py)",
             f"TANH_E0 = {TANH_E0}", "TANH_SEGS = (", *(f"    {k}," for k in TANH_SEGS), ")", ""]
    for n, tab in tables.items():
        lines.append(f"{n.upper()} = (")
        for c in tab:
            lines.append(f"    ({c[0]}, {c[1]}, {c[2]}),")
        lines.append(")")
        lines.append("")
    OUT.write_text("\n".join(lines))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
