"""NumPy reference of the reconstructed approximate instructions (mirrors src/ptxjit/lower/rules/approx.py);
`python3 tools/mufu/model.py` compares it with the H100's outputs in ../shared/gpu-golden/isa."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fit  # noqa: E402

# the generated tables, loaded by path (the ptxjit package itself needs llvmlite)
_spec = importlib.util.spec_from_file_location(
    "mufu_tables", Path(__file__).resolve().parents[2] / "src" / "ptxjit" / "lower" / "mufu_tables.py")
T = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(T)

NAN32 = np.uint32(0x7FFFFFFF)


def interp(name: str, u: np.ndarray) -> np.ndarray:
    nb, cut, frac = T.PARAMS[name]
    tab = np.array(getattr(T, name.upper()), dtype=np.int64)
    u = u.astype(np.int64)
    return fit.eval_table(u >> nb, u & ((1 << nb) - 1), tab, nb, cut, frac)


def _split(x: np.ndarray):
    x = x.astype(np.int64)
    return x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF


def rcp_ftz(x: np.ndarray) -> np.ndarray:
    s, e, m = _split(x)
    Y = interp("rcp", m)
    r = ((253 - e) << 23) + Y - (1 << 23)
    r = np.where(r < (1 << 23), 0, r)            # subnormal/underflow results flush
    r = np.where(e == 0, 0x7F800000, r)           # +-0, flushed subnormal -> inf
    r = np.where(e == 255, np.where(m == 0, 0, 0x7FFFFFFF), r)
    r = np.where(r == 0x7FFFFFFF, r, r | (s << 31))
    return r.astype(np.uint32)


def rsqrt_ftz(x: np.ndarray) -> np.ndarray:
    s, e, m = _split(x)
    u = ((e - 127) & 1) << 23 | m
    Y = np.where(u == 0, 1 << 24, interp("rsqrt", u))
    k = (e - 127) >> 1
    r = ((126 - k) << 23) + Y - (1 << 23)
    r = np.where(e == 0, 0x7F800000 | (s << 31), r)
    r = np.where((e == 255) & (m == 0), 0, r)
    r = np.where(((e == 255) & (m != 0)) | ((s != 0) & (e != 0)), 0x7FFFFFFF, r)
    return r.astype(np.uint32)


def sqrt_ftz(x: np.ndarray) -> np.ndarray:
    s, e, m = _split(x)
    u = ((e - 127) & 1) << 23 | m
    Y = interp("sqrt", u)
    k = (e - 127) >> 1
    r = ((127 + k) << 23) + Y - (1 << 23)
    r = np.where(e == 0, s << 31, r)
    r = np.where((e == 255) & (m == 0), 0x7F800000, r)
    r = np.where(((e == 255) & (m != 0)) | ((s != 0) & (e != 0)), 0x7FFFFFFF, r)
    return r.astype(np.uint32)


def compare(name: str, got: np.ndarray, want: np.ndarray, x: np.ndarray, show: int = 6) -> None:
    bad = np.nonzero(got != want)[0]
    print(f"{name}: {len(got) - len(bad)}/{len(got)} exact")
    for i in bad[:show]:
        print(f"   x={x[i]:#010x} ({x[i:i+1].view(np.float32)[0]:.8g}) got {got[i]:#010x} want {want[i]:#010x}")


def ex2_ftz(x: np.ndarray) -> np.ndarray:
    """x to fixed point with 23 fraction bits (|x| truncated; negative: ones' complement unless whole), split
    into integer part and fraction; 2**fraction from the table."""
    x = x.astype(np.int64)
    s, e, m = x >> 31, (x >> 23) & 0xFF, x & 0x7FFFFF
    sh = e - 127 - 23 + 23  # |x| * 2**23 = (m | 1<<23) << (e - 127)
    mag = np.where(sh >= 0, ((m | (1 << 23)) << np.clip(sh, 0, 40)), (m | (1 << 23)) >> np.clip(-sh, 0, 63))
    mag = np.where(e == 0, 0, np.where(e >= 127 + 8, 1 << 40, mag))
    whole = (mag & 0x7FFFFF) == 0  # no fraction bits: exact two's complement
    fx = np.where(s != 0, np.where(whole, -mag, ~mag), mag)
    i = fx >> 23
    Y = interp("ex2", fx & 0x7FFFFF)
    r = ((i + 127) << 23) + Y - (1 << 23)
    r = np.where(i + 127 <= 0, 0, np.where(i >= 128, 0x7F800000, r))
    r = np.where((e == 255) & (m != 0), 0x7FFFFFFF, r)
    return r.astype(np.uint32)


def sincos(x: np.ndarray, cos: bool) -> np.ndarray:
    """sin/cos.approx(.ftz).f32: exact reduction to the quarter-wave offset r' (derive.sin_reduce), the
    "sin" table's fixed-point result Y * 2**-37 truncated to f32, the quadrant's / argument's sign."""
    import derive
    x = x.astype(np.uint32)
    q, r = derive.sin_reduce(x, cos)
    Y = interp("sin", r)
    f = Y.astype(np.float64) * 2.0**-37
    f32 = f.astype(np.float32)
    v = f32.view(np.uint32).astype(np.int64) - (f32.astype(np.float64) > f)
    neg = q >= 2
    if not cos:
        neg = neg ^ ((x >> 31) != 0)
    v = v | np.where(neg, 0x80000000, 0)
    v = np.where((x & 0x7FFFFFFF) >= 0x7F800000, 0x7FFFFFFF, v)
    return v.astype(np.uint32)


def _trunc_fixed(v: np.ndarray, frac: int) -> np.ndarray:
    """f32 bits of the signed fixed-point integer v * 2**-frac, rounded toward zero."""
    a = np.abs(v).astype(np.float64)  # exact below 2**53
    f32 = (a * 2.0**-frac).astype(np.float32)
    r = f32.view(np.uint32).astype(np.int64) - (f32.astype(np.float64) > a * 2.0**-frac)
    return np.where(v < 0, r | 0x80000000, r)


def lg2_ftz(x: np.ndarray) -> np.ndarray:
    """lg2.approx.ftz.f32: (exponent - 127) + table(mantissa) formed from the table's sum before its
    >> frac, rounded toward zero to fixed point with 36 fraction bits, then truncated to f32; x = 1 gives
    exactly 0.  (Only negative results tell rounding toward zero from flooring: x = 0x3f7fffff.)"""
    s, e, m = _split(x)
    nb, cut, frac = T.PARAMS["lg2"]
    tab = np.array(T.LG2, dtype=np.int64)
    c = tab[m >> nb]
    t = m & ((1 << nb) - 1)
    S = c[:, 0] + c[:, 1] * t + c[:, 2] * (fit.trunc_square(t, nb, cut) >> cut)
    v = ((e - 127) << (36 + frac)) + S
    v = np.where(v < 0, -((-v) >> frac), v >> frac)
    v = np.where((e == 127) & (m == 0), 0, v)
    r = _trunc_fixed(v, 36)
    r = np.where(e == 0, 0xFF800000, r)  # +-0 and flushed subnormals
    r = np.where((e == 255) & (m == 0) & (s == 0), 0x7F800000, r)
    r = np.where(((e == 255) & (m != 0)) | ((s != 0) & (e != 0)), 0x7FFFFFFF, r)
    return r.astype(np.uint32)


def lg2(x: np.ndarray) -> np.ndarray:
    """lg2.approx.f32: subnormal x runs as lg2(x * 2**24) - 24 (an f32 add, round to nearest)."""
    a = x.astype(np.int64) & 0x7FFFFFFF
    sub = (a != 0) & (a < 0x00800000)
    xs = (_f32(x.astype(np.uint32)) * np.float32(2.0**24)).view(np.uint32)
    r = lg2_ftz(np.where(sub, xs, x).astype(np.uint32))
    with np.errstate(all="ignore"):
        rs = (_f32(r) - np.float32(24.0)).view(np.uint32)
    return np.where(sub & (r != 0x7FFFFFFF), rs, r).astype(np.uint32)


def tanh(x: np.ndarray) -> np.ndarray:
    """tanh.approx.f32: |x| < 2**-8 (subnormals included) -> x, |x| >= 8 (inf included) -> +-1, NaN -> NaN;
    between, the "tanh" table's sum over (segment, offset) of |x| (derive.tanh_split) is fixed point with frac
    bits below the ulp of 2**min(e, -1), truncated to f32, with x's sign."""
    import derive
    x = x.astype(np.uint32)
    a = x.astype(np.int64) & 0x7FFFFFFF
    mid = (a >= 0x3B800000) & (a < 0x41000000)
    xm = np.where(mid, a, 0x3F800000).astype(np.uint32)
    seg, t, oexp = derive.tanh_split(xm)
    nb, cut, frac = T.PARAMS["tanh"]
    v = fit.eval_table(seg, t, np.array(T.TANH, dtype=np.int64), nb, cut, 0)
    r = _trunc_fixed(v, 0).astype(np.int64)  # f32 bits of v truncated, then scaled (exact)
    r = r - ((23 - oexp + frac) << 23)
    r = np.where(mid, r, np.where(a >= 0x41000000, 0x3F800000, a))
    r = r | (x.astype(np.int64) & 0x80000000)
    return np.where(a > 0x7F800000, 0x7FFFFFFF, r).astype(np.uint32)


def _f32(v: np.ndarray) -> np.ndarray:
    return v.view(np.float32)


def nonftz(fn, x: np.ndarray, pre: float, post: float, when) -> np.ndarray:
    """Software wrapper for the non-ftz forms: scale the argument by `pre`, run the unit, scale the
    result by `post` (an f32 multiply), where `when` (on the argument's value) holds."""
    xv = _f32(x)
    with np.errstate(all="ignore"):
        scaled = (xv * np.float32(pre)).view(np.uint32)
        r = _f32(fn(scaled)) * np.float32(post)
    return np.where(when(xv), r.view(np.uint32), fn(x))


if __name__ == "__main__":
    import golden
    for fn, model in [("rcp", rcp_ftz), ("rsqrt", rsqrt_ftz), ("sqrt", sqrt_ftz), ("ex2", ex2_ftz)]:
        (x,), (y,) = golden.isa(f"isa_{fn}_approx_ftz_f32")
        compare(fn + " ftz", model(x), y, x)
    for v, model in [("isa_lg2_approx_ftz_f32", lg2_ftz), ("isa_lg2_approx_f32", lg2)]:
        (x,), (y,) = golden.isa(v)
        compare(v, model(x), y, x)
    x, y = golden.mufu("lg2_approx_ftz_f32_1_2")
    compare("mufu lg2_approx_ftz_f32_1_2", lg2_ftz(x), y, x)
    (x,), (y,) = golden.isa("isa_tanh_approx_f32")
    compare("isa_tanh_approx_f32", tanh(x), y, x)
    x, y = golden.mufu("tanh_approx_f32_pos")
    compare("mufu tanh_approx_f32_pos", tanh(x), y, x)
    for fn in ("sin", "cos"):
        (x,), (y,) = golden.isa(f"isa_{fn}_approx_f32")
        with np.errstate(invalid="ignore"):
            compare(fn, sincos(x, fn == "cos"), y, x)
