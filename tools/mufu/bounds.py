#!/usr/bin/env python3
"""Measure ptxjit's maximum ulp distance to the H100 for the approximate instructions that are not
bit-exact yet (feeds src/ptxjit/lower/approx_bounds.py).  Run from the checkout with the venv:

    .venv/bin/python tools/mufu/bounds.py [variant-regex]

Per isa/ variant: every row of isa/ (NaN results: both NaN counts as equal, NaN vs number as inf),
plus, for the f32 forms, the dense mufu/ samples of the same function (sin/cos/lg2/tanh).  The ulp
distance is the larger of two measures: the difference of the bit patterns as sign-magnitude ordered
integers, and |ptxjit - H100| in units of the H100 value's last place (check.py's); half types per lane.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import golden  # noqa: E402

from tests.unit.floatutil import elementwise  # noqa: E402

VARIANTS = {  # isa/ case -> mufu/ arrays of the same function (their instruction is .ftz or tanh)
    "isa_sin_approx_f32": ["sin_approx_ftz_f32_0_2pi"], "isa_sin_approx_ftz_f32": ["sin_approx_ftz_f32_0_2pi"],
    "isa_cos_approx_f32": ["cos_approx_ftz_f32_0_2pi"], "isa_cos_approx_ftz_f32": ["cos_approx_ftz_f32_0_2pi"],
    "isa_lg2_approx_f32": ["lg2_approx_ftz_f32_1_2"], "isa_lg2_approx_ftz_f32": ["lg2_approx_ftz_f32_1_2"],
    "isa_tanh_approx_f32": ["tanh_approx_f32_pos"],
    "isa_tanh_approx_f16": [], "isa_tanh_approx_f16x2": [], "isa_tanh_approx_bf16": [], "isa_tanh_approx_bf16x2": [],
}
_REG = {"f32": "f32", "f64": "f64", "f16": "b16", "bf16": "b16", "f16x2": "x2", "bf16x2": "x2"}


def _ordered(bits: np.ndarray, width: int) -> np.ndarray:
    v = bits.astype(np.int64)
    sign = 1 << (width - 1)
    return np.where(v & sign, -(v & (sign - 1)), v)


def ulp_dist(got: np.ndarray, want: np.ndarray, width: int, inf_bits: int) -> np.ndarray:
    """|ordered(got) - ordered(want)|; both NaN -> 0, one NaN -> inf (inf_bits: the format's +inf)."""
    mag = (1 << (width - 1)) - 1
    gn = (got.astype(np.int64) & mag) > inf_bits
    wn = (want.astype(np.int64) & mag) > inf_bits
    d = np.abs(_ordered(got, width) - _ordered(want, width)).astype(np.float64)
    d = np.where(gn & wn, 0.0, d)
    return np.where(gn != wn, np.inf, d)


def gpu_ulp_dist(got: np.ndarray, want: np.ndarray, t: str) -> np.ndarray:
    """|got - want| in units of the H100 value's last place (gpu-golden/tools/check.py's measure)."""
    if t != "f32":
        got, want = got.astype(np.uint16), want.astype(np.uint16)
    if t.startswith("bf16"):
        a = (got.astype(np.uint32) << 16).view(np.float32)
        b = (want.astype(np.uint32) << 16).view(np.float32)
        sp = np.spacing(np.abs(b)).astype(np.float64) * 65536
    else:
        ft = np.float32 if t == "f32" else np.float16
        a, b = got.view(ft), want.view(ft)
        sp = np.spacing(np.abs(b)).astype(np.float64)
    with np.errstate(all="ignore"):
        d = np.abs(a.astype(np.float64) - b.astype(np.float64)) / sp
    d = np.where((np.isnan(a) & np.isnan(b)) | (got == want), 0.0, d)
    return np.nan_to_num(d, nan=np.inf, posinf=np.inf)


_INF = {"f32": 0x7F800000, "f16": 0x7C00, "f16x2": 0x7C00, "bf16": 0x7F80, "bf16x2": 0x7F80}


def lanes(v: np.ndarray, t: str) -> tuple[np.ndarray, int]:
    if t in ("f16x2", "bf16x2"):
        v = v.astype(np.uint32)
        return np.concatenate([v & 0xFFFF, v >> 16]), 16
    return v, {"f32": 32, "f16": 16, "bf16": 16, "f64": 64}[t]


def measure(variant: str) -> float:
    (x,), (want,) = golden.isa(variant)
    t = variant.rsplit("_", 1)[1]
    instr = variant[4:].replace("_", ".")
    (got,) = elementwise(f"{instr} {{d}}, {{a}};", [(_REG[t], x)], [_REG[t]])
    g, w = lanes(got, t)
    wv, width = lanes(want, t)
    worst = float(max(ulp_dist(g, wv, width, _INF[t]).max(), gpu_ulp_dist(g, wv, t).max()))
    for name in VARIANTS.get(variant, []):
        mx, my = golden.mufu(name)
        (mg,) = elementwise(f"{instr} {{d}}, {{a}};", [("f32", mx)], ["f32"])
        worst = max(worst, float(ulp_dist(mg, my, 32, _INF['f32']).max()), float(gpu_ulp_dist(mg, my, 'f32').max()))
    return worst


def main() -> None:
    pat = re.compile(sys.argv[1] if len(sys.argv) > 1 else ".")
    for v in VARIANTS:
        if pat.search(v):
            print(f"{v}: {measure(v):g}", flush=True)


if __name__ == "__main__":
    main()
