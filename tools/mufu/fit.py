"""Fit a multifunction-unit style table to dense H100 samples, exactly.

Model of one table segment (what the samples in gpu-golden/mufu are consistent with):

    Y = (C0 + C1*t + C2*(sq(t) >> cut)) >> frac

t: the low `nb` bits of the reduced argument (fixed point, the segment offset), sq(t): t*t from a
*truncated squarer* that keeps only the partial-product columns >= cut, Y: the result's significand
as an integer (ulp = 1).  C0, C1, C2 are integers per segment.  For each segment the feasible
(C1, C2) are found with linear programming (scipy), then C0 exactly with integer arithmetic.
"""

from __future__ import annotations

import numpy as np


def trunc_square(t: np.ndarray, nb: int, cut: int) -> np.ndarray:
    """t*t keeping only the partial-product bits of columns >= cut (t < 2**nb)."""
    t = np.asarray(t, dtype=np.int64)
    s = np.zeros(t.shape, dtype=np.int64)
    for i in range(nb):
        bi = (t >> i) & 1
        if 2 * i >= cut:
            s += bi << (2 * i)
        for j in range(i + 1, nb):
            if i + j + 1 >= cut:
                s += (bi & (t >> j)) << (i + j + 1)
    return s


def _lp_range(F: np.ndarray, lo: np.ndarray, hi: np.ndarray, k: int) -> tuple[float, float] | None:
    """Range of coefficient k over {c : lo <= F c <= hi} (None when empty)."""
    from scipy.optimize import linprog

    sc = np.maximum(np.abs(F).max(0), 1.0)
    Fn = F / sc
    A = np.vstack([-Fn, Fn])
    b = np.concatenate([-lo, hi])
    out = []
    for sign in (1.0, -1.0):
        c = np.zeros(F.shape[1])
        c[k] = sign
        r = linprog(c, A_ub=A, b_ub=b, bounds=[(None, None)] * F.shape[1], method="highs")
        if r.status != 0:
            return None
        out.append(sign * r.fun / sc[k])
    return out[0], out[1]


def fit_segment(t: np.ndarray, Y: np.ndarray, nb: int, cut: int, frac: int
                ) -> tuple[int, int, int, int] | None:
    """(C0 low, C1, C2, C0 high) reproducing Y exactly on the samples: any C0 in [low, high] does."""
    t = np.asarray(t, dtype=np.int64)
    Y = np.asarray(Y, dtype=np.int64)
    s = trunc_square(t, nb, cut) >> cut
    lo = (Y << frac).astype(np.float64)
    hi = lo + (1 << frac) - 1
    F = np.stack([np.ones(len(t)), t.astype(np.float64), s.astype(np.float64)], 1)
    r2 = _lp_range(F, lo, hi, 2)
    if r2 is None:
        return None
    best = None
    for c2 in range(int(np.ceil(r2[0] - 1e-6)), int(np.floor(r2[1] + 1e-6)) + 1):
        rest_lo = lo - c2 * s
        r1 = _lp_range(F[:, :2], rest_lo, rest_lo + (1 << frac) - 1, 1)
        if r1 is None:
            continue
        for c1 in range(int(np.ceil(r1[0] - 1e-6)) - 1, int(np.floor(r1[1] + 1e-6)) + 2):
            lin = c1 * t + c2 * s
            c0_lo = int(((Y << frac) - lin).max())
            c0_hi = int((((Y + 1) << frac) - 1 - lin).min())
            if c0_lo <= c0_hi and (best is None or c0_hi - c0_lo > best[3] - best[0]):
                best = (c0_lo, c1, c2, c0_hi)
    return best


def fit_segment_iv(t: np.ndarray, lo: np.ndarray, hi: np.ndarray, nb: int, cut: int, frac: int
                   ) -> tuple[int, int, int, int] | None:
    """Like fit_segment, but the samples only bound Y: lo <= Y <= hi (a fixed-point result seen through
    a narrower output format, e.g. sin's 2**-37 fixed point truncated to f32)."""
    t = np.asarray(t, dtype=np.int64)
    s = trunc_square(t, nb, cut) >> cut
    L = np.asarray(lo, dtype=np.int64) << frac
    H = ((np.asarray(hi, dtype=np.int64) + 1) << frac) - 1
    F = np.stack([np.ones(len(t)), t.astype(np.float64), s.astype(np.float64)], 1)
    r2 = _lp_range(F, L.astype(np.float64), H.astype(np.float64), 2)
    if r2 is None:
        return None
    best = None
    for c2 in range(int(np.ceil(r2[0] - 1e-6)), int(np.floor(r2[1] + 1e-6)) + 1):
        r1 = _lp_range(F[:, :2], (L - c2 * s).astype(np.float64), (H - c2 * s).astype(np.float64), 1)
        if r1 is None:
            continue
        for c1 in range(int(np.ceil(r1[0] - 1e-6)) - 1, int(np.floor(r1[1] + 1e-6)) + 2):
            lin = c1 * t + c2 * s
            c0_lo = int((L - lin).max())
            c0_hi = int((H - lin).min())
            if c0_lo <= c0_hi and (best is None or c0_hi - c0_lo > best[3] - best[0]):
                best = (c0_lo, c1, c2, c0_hi)
    return best


def pin_c0(ranges: list[tuple[int, int]]) -> list[int]:
    """One C0 per segment from its feasible range.  The hardware's C0s share their low bits (a
    rounding constant below a coarser stored C0): take the longest modulus 2**k at which one residue
    fits every range, then that residue's member of each range."""
    best = [(lo + hi) // 2 for lo, hi in ranges]
    for k in range(1, 24):
        m = 1 << k
        res = None
        for r in range(m):
            if all((lo + (r - lo) % m) <= hi for lo, hi in ranges):
                res = r
                break
        if res is None:
            break
        best = [lo + (res - lo) % m for lo, _ in ranges]
    return best


def eval_table(seg: np.ndarray, t: np.ndarray, table: np.ndarray, nb: int, cut: int, frac: int) -> np.ndarray:
    s = trunc_square(t, nb, cut) >> cut
    c = table[seg]
    return (c[:, 0] + c[:, 1] * t + c[:, 2] * s) >> frac
