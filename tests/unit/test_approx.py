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

from tests.markers import golden
from tests.unit.floatutil import elementwise

GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "gpu-golden"

pytestmark = golden

F32_UNARY = [f"{op}.approx{ftz}.f32" for op in ("rcp", "rsqrt", "sqrt", "ex2", "sin", "cos", "lg2")
             for ftz in ("", ".ftz")] + ["tanh.approx.f32"]


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


_BITS = {"f32": np.uint32, "f64": np.uint64, "f16": np.uint16, "bf16": np.uint16, "f16x2": np.uint32,
         "bf16x2": np.uint32}
_REG = {"f32": "f32", "f64": "f64", "f16": "b16", "bf16": "b16", "f16x2": "x2", "bf16x2": "x2"}


def _isa(variant: str) -> tuple[list[np.ndarray], list[np.ndarray], list[str]]:
    """(operands, H100 results, operand types) as unsigned bit arrays for an isa/ variant."""
    lay = json.loads((GOLDEN / "isa" / "layout.json").read_text())["variants"][variant]
    n = lay["n"]
    ins: list[list[np.ndarray]] = [[] for _ in lay["ins"]]
    outs: list[list[np.ndarray]] = [[] for _ in lay["outs"]]

    def field(buf, slot, off, t):
        dt = np.dtype(_BITS[t])
        return np.ascontiguousarray(buf[: n * slot].reshape(n, slot)[:, off: off + dt.itemsize]).view(dt).ravel()

    for rid in _isa_index()[variant]:
        bi = np.load(GOLDEN / "isa" / "in" / f"{rid}.npz")["b0"]
        bo = np.load(GOLDEN / "isa" / "gpu" / f"{rid}.npz")["g1"]
        for k, (off, t) in enumerate(zip(lay["in_off"], lay["ins"], strict=True)):
            ins[k].append(field(bi, lay["in_slot"], off, t))
        for k, (off, t) in enumerate(zip(lay["out_off"], lay["outs"], strict=True)):
            outs[k].append(field(bo, lay["out_slot"], off, t))
    return [np.concatenate(a) for a in ins], [np.concatenate(a) for a in outs], lay["ins"]


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
    elif name.startswith(("sin", "cos")):
        x = (i.astype(np.float32) * np.float32(1.1984224905356572e-05)).view(np.uint32)
    elif name.startswith("tanh"):
        x = (0x3D800000 + 128 * i).astype(np.uint32)
    else:
        x = ((0x40000000 if name.endswith("2_4") else 0x3F800000) + 16 * i).astype(np.uint32)
    return x, y


@pytest.mark.parametrize("name", ["rcp_approx_ftz_f32_1_2", "rsqrt_approx_ftz_f32_1_2", "rsqrt_approx_ftz_f32_2_4",
                                  "sqrt_approx_ftz_f32_1_2", "sqrt_approx_ftz_f32_2_4", "ex2_approx_ftz_f32_0_1",
                                  "ex2_approx_ftz_f32_m1_0", "sin_approx_ftz_f32_0_2pi", "cos_approx_ftz_f32_0_2pi",
                                  "lg2_approx_ftz_f32_1_2", "tanh_approx_f32_pos"])
def test_f32_approx_matches_h100_dense(name):
    x, want = _mufu(name)
    sel = slice(0, None, 5)  # a fifth of the 2**19 samples keeps the run short
    x, want = x[sel], want[sel]
    instr = name.split("_f32")[0].replace("_", ".") + ".f32"
    (got,) = elementwise(f"{instr} {{d}}, {{a}};", [("f32", x)], ["f32"])
    _assert_same(instr, x, got, want)


TANH_DENSE = Path(__file__).resolve().parents[2] / "tools" / "mufu" / "gpu" / "tanh_dense.npz"
# (range, first input bits, stride): tools/mufu/gpu/tanh_dense.cu
TANH_RANGES = [("tanh_f32_lo", 0x39800000, 2), ("tanh_f32_hi", 0x3D800000, 4)]


@pytest.mark.parametrize(("name", "first", "stride"), TANH_RANGES)
def test_tanh_matches_h100_dense(name, first, stride):
    """tanh.approx.f32 against the H100 on [2**-12, 1/16) (every 2nd ulp) and [1/16, 8) (every 4th ulp):
    100,000 samples of each, at random but fixed positions, plus each range's first and last samples."""
    with np.load(TANH_DENSE) as z:  # first output and the deltas between consecutive ones (gpu/pack.py)
        d = z[name + "_first"].astype(np.int64)
        want = np.concatenate([d, d + np.cumsum(z[name + "_delta"].astype(np.int64))]).astype(np.uint32)
    idx = np.random.default_rng(1).choice(len(want), 100_000, replace=False)
    idx = np.concatenate([idx, np.arange(64), len(want) - 1 - np.arange(64)])
    x = (first + stride * idx).astype(np.uint32)
    x = np.concatenate([x, x | np.uint32(0x80000000)])  # odd (as every negative isa/ row shows)
    want = np.concatenate([want[idx], want[idx] | np.uint32(0x80000000)])
    (got,) = elementwise("tanh.approx.f32 {d}, {a};", [("f32", x)], ["f32"])
    _assert_same("tanh.approx.f32", x, got, want)


HALF_UNARY = ["ex2.approx.f16", "ex2.approx.f16x2", "ex2.approx.ftz.bf16", "ex2.approx.ftz.bf16x2",
              "tanh.approx.f16", "tanh.approx.f16x2", "tanh.approx.bf16", "tanh.approx.bf16x2"]


@pytest.mark.parametrize("instr", HALF_UNARY)
def test_half_approx_matches_h100_exhaustive(instr):
    """Every f16/bf16 input (isa/ holds all 65,536 patterns): the f32 unit, truncated to the half format."""
    (x,), (want,), (t,) = _isa("isa_" + instr.replace(".", "_"))
    (got,) = elementwise(f"{instr} {{d}}, {{a}};", [(_REG[t], x)], [_REG[t]])
    _assert_same(instr, x, got, want)


F64_UNARY = ["rcp.approx.ftz.f64", "rsqrt.approx.ftz.f64", "rsqrt.approx.f64"]


@pytest.mark.parametrize("instr", F64_UNARY)
def test_f64_approx_matches_h100_isa(instr):
    (x,), (want,), _ = _isa("isa_" + instr.replace(".", "_"))
    (got,) = elementwise(f"{instr} {{d}}, {{a}};", [("f64", x)], ["f64"])
    _assert_same(instr, x, got, want)


@pytest.mark.parametrize("name", ["rcp_approx_ftz_f64_1_2", "rsqrt_approx_ftz_f64_1_2", "rsqrt_approx_ftz_f64_2_4"])
def test_f64_approx_matches_h100_dense(name):
    """MUFU.RCP64H / RSQ64H: every high word of [1, 2) resp. [2, 4) at even mantissa offsets (a fifth)."""
    z = {}
    for p in sorted((GOLDEN / "mufu").glob("mufu_*.npz")):
        with np.load(p) as f:
            if name in f.files:
                z[name] = f[name]
    want = z[name].view(np.uint64)
    i = np.arange(len(want), dtype=np.uint64)
    base = np.uint64(0x4000000000000000 if name.endswith("2_4") else 0x3FF0000000000000)
    x = base + (i << np.uint64(33))
    sel = slice(0, None, 5)
    x, want = x[sel], want[sel]
    instr = name.split("_f64")[0].replace("_", ".") + ".f64"
    (got,) = elementwise(f"{instr} {{d}}, {{a}};", [("f64", x)], ["f64"])
    _assert_same(instr, x, got, want)


DIV = [f"div.{kind}{ftz}.f32" for kind in ("approx", "full") for ftz in ("", ".ftz")]


@pytest.mark.parametrize("instr", DIV)
def test_div_approx_matches_h100_isa(instr):
    (a, c), (want,), _ = _isa("isa_" + instr.replace(".", "_"))
    (got,) = elementwise(f"{instr} {{d}}, {{a}}, {{b}};", [("f32", a), ("f32", c)], ["f32"])
    _assert_same(instr, a, got, want)


def _ordered(v: np.ndarray, width: int) -> np.ndarray:
    v = v.astype(np.int64)
    sign = 1 << (width - 1)
    return np.where(v & sign, -(v & (sign - 1)), v)


_INF = {"f32": 0x7F800000, "f16": 0x7C00, "f16x2": 0x7C00, "bf16": 0x7F80, "bf16x2": 0x7F80}


def _case_bounds() -> list[str]:
    from ptxjit.lower.approx_bounds import APPROX_MAX_ULP

    return sorted(APPROX_MAX_ULP)


@pytest.mark.parametrize("variant", _case_bounds())
def test_inexact_approx_within_recorded_bound(variant):
    """The variants not yet bit-exact stay within approx_bounds.APPROX_MAX_ULP of the H100 on isa/."""
    from ptxjit.lower.approx_bounds import APPROX_MAX_ULP

    (x,), (want,), (t,) = _isa(variant)
    instr = variant[4:].replace("_", ".")
    (got,) = elementwise(f"{instr} {{d}}, {{a}};", [(_REG[t], x)], [_REG[t]])
    if t.endswith("x2"):
        got = np.concatenate([got & 0xFFFF, got >> 16])
        want = np.concatenate([want & 0xFFFF, want >> 16])
    width = 32 if t == "f32" else 16
    mag = (1 << (width - 1)) - 1
    gn = (got.astype(np.int64) & mag) > _INF[t]
    wn = (want.astype(np.int64) & mag) > _INF[t]
    assert np.array_equal(gn, wn), f"{variant}: NaN where the H100 has none or vice versa"
    d = np.where(gn, 0, np.abs(_ordered(got, width) - _ordered(want, width)))
    assert d.max() <= APPROX_MAX_ULP[variant], f"{variant}: {d.max()} ulp > recorded {APPROX_MAX_ULP[variant]}"


@pytest.mark.parametrize("fn", ["sin", "cos"])
def test_sincos_tiny_and_quarter_turns(fn):
    """Quarter-turn points (exact 0 / +-1), tiny arguments (the table's 2**-37 fixed point shows in every
    bit of sin's small results), huge arguments and specials, against the H100 on isa/."""
    (x,), (want,), _ = _isa(f"isa_{fn}_approx_f32")
    (got,) = elementwise(f"{fn}.approx.f32 {{d}}, {{a}};", [("f32", x)], ["f32"])
    a = want & 0x7FFFFFFF
    sel = np.isin(a, [0, 0x3F800000]) | (a < 0x39000000) | ((x & 0x7FFFFFFF) >= 0x4B000000)
    assert sel.sum() > 0
    _assert_same(fn, x[sel], got[sel], want[sel])


@pytest.mark.parametrize("ftz", ["", ".ftz"])
def test_lg2_near_one_and_specials(ftz):
    """lg2 around x = 1 (the 2**-36 fixed point shows in every bit: lg2(1) = 0, lg2(0.5) = -0.9999999,
    just below 1 the magnitude rounded toward zero), subnormals, zeros, negatives, inf and NaN, on isa/."""
    (x,), (want,), _ = _isa(f"isa_lg2_approx{ftz.replace('.', '_')}_f32")
    (got,) = elementwise(f"lg2.approx{ftz}.f32 {{d}}, {{a}};", [("f32", x)], ["f32"])
    a = x & 0x7FFFFFFF
    sel = (np.abs(x.astype(np.int64) - 0x3F800000) < 0x20000) | (a < 0x00800000) | (a >= 0x7F800000)
    sel |= (x >> 31) == 1
    sel |= np.isin(a, [0x3F000000, 0x3E800000, 0x40000000])
    assert sel.sum() > 100
    _assert_same("lg2", x[sel], got[sel], want[sel])
