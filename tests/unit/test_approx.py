"""The approximate instructions against an H100's outputs (../shared/gpu-golden), bit for bit.

isa/: the one-instruction golden kernels' inputs (special values, every exponent) and results;
mufu/: dense samples of the multifunction unit (from which src/ptxjit/lower/mufu_tables.py was derived,
so these check the lowering around the tables, not the fit alone).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from tests.unit.floatutil import elementwise

GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "gpu-golden"

pytestmark = pytest.mark.skipif(not GOLDEN.is_dir(), reason="no ../shared/gpu-golden beside the checkout")

F32_UNARY = [f"{op}.approx{ftz}.f32" for op in ("rcp", "rsqrt", "sqrt", "ex2") for ftz in ("", ".ftz")]


@cache
def _isa_index() -> dict[str, list[str]]:
    idx: dict[str, list[str]] = {}
    for p in sorted((GOLDEN / "isa" / "in").glob("*.npz")):
        meta = json.loads(str(np.load(p)["meta"]))
        idx.setdefault(meta["case"], []).append(p.stem)
    return idx


def _isa_unary_f32(variant: str) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, H100 results) as uint32 for a unary f32 isa/ variant."""
    lay = json.loads((GOLDEN / "isa" / "layout.json").read_text())["variants"][variant]
    xs, ys = [], []
    for rid in _isa_index()[variant]:
        n = lay["n"]
        inp = np.load(GOLDEN / "isa" / "in" / f"{rid}.npz")["b0"][: n * lay["in_slot"]]
        out = np.load(GOLDEN / "isa" / "gpu" / f"{rid}.npz")["g1"][: n * lay["out_slot"]]
        xs.append(inp.reshape(n, -1)[:, lay["in_off"][0]:][:, :4].copy().view(np.uint32).ravel())
        ys.append(out.reshape(n, -1)[:, lay["out_off"][0]:][:, :4].copy().view(np.uint32).ravel())
    return np.concatenate(xs), np.concatenate(ys)


def _assert_same(instr: str, x: np.ndarray, got: np.ndarray, want: np.ndarray) -> None:
    bad = np.nonzero(got != want)[0]
    detail = [(hex(int(x[i])), hex(int(got[i])), hex(int(want[i]))) for i in bad[:8]]
    assert len(bad) == 0, f"{instr}: {len(bad)}/{len(x)} differ from the H100 (x, ptxjit, H100): {detail}"


@pytest.mark.parametrize("instr", F32_UNARY)
def test_f32_approx_matches_h100_isa(instr):
    variant = "isa_" + instr.replace(".", "_")
    x, want = _isa_unary_f32(variant)
    (got,) = elementwise(f"{instr} {{d}}, {{a}};", [("f32", x)], ["f32"])
    _assert_same(instr, x, got, want)


def _mufu(name: str) -> tuple[np.ndarray, np.ndarray]:
    arrays = {}
    for p in sorted((GOLDEN / "mufu").glob("mufu_*.npz")):
        z = np.load(p)
        if name in z.files:
            arrays[name] = z[name]
    y = arrays[name].view(np.uint32)
    i = np.arange(len(y), dtype=np.int64)
    if name.startswith("ex2"):
        v = i.astype(np.float32) * np.float32(2.0**-19)
        x = (-v if name.endswith("m1_0") else v).view(np.uint32)
    else:
        x = ((0x40000000 if name.endswith("2_4") else 0x3F800000) + 16 * i).astype(np.uint32)
    return x, y


@pytest.mark.parametrize("name", ["rcp_approx_ftz_f32_1_2", "rsqrt_approx_ftz_f32_1_2", "rsqrt_approx_ftz_f32_2_4",
                                  "sqrt_approx_ftz_f32_1_2", "sqrt_approx_ftz_f32_2_4", "ex2_approx_ftz_f32_0_1",
                                  "ex2_approx_ftz_f32_m1_0"])
def test_f32_approx_matches_h100_dense(name):
    x, want = _mufu(name)
    sel = slice(0, None, 5)  # a fifth of the 2**19 samples keeps the run short
    x, want = x[sel], want[sel]
    instr = name.split("_f32")[0].replace("_", ".") + ".f32"
    (got,) = elementwise(f"{instr} {{d}}, {{a}};", [("f32", x)], ["f32"])
    _assert_same(instr, x, got, want)
