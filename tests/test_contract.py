"""Multiply-add contraction (passes/contract.py) against what ptxas does.

tests/data/fmad/probes.ptx holds one kernel per mul/add shape; expected.json is how many fused
multiply-adds, multiplies and adds ptxas 13 left in each kernel's SASS (regen.sh: ptxas + nvdisasm).
ptxjit must make the same decisions, and the fused results must be the exactly rounded a*b+c.
"""

from __future__ import annotations

import copy
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.frontend import ir
from ptxjit.passes.dataflow import liveness
from tests.markers import GOLDEN_SET, golden_needs

DATA = Path(__file__).parent / "data" / "fmad"
PROBES = (DATA / "probes.ptx").read_text()
EXPECTED = json.loads((DATA / "expected.json").read_text())
FLOAT_TYPES = {"f32", "f64", "f16", "bf16", "f16x2", "bf16x2"}


def _ir_counts(mod: ptxjit.Module, kernel: str) -> dict[str, int]:
    """fma, live mul, and add/sub instructions left in the kernel after contraction."""
    fn = copy.copy(mod.ir.functions[kernel])
    while True:  # drop dead mul/mov/neg (what LLVM's dead-code elimination will do)
        _, live_after = liveness(fn)
        body = [s for s in fn.body if not (isinstance(s, ir.Instr) and s.opcode in ("mul", "mov", "neg", "div")
                                           and isinstance(s.operands[0], ir.Reg)
                                           and s.operands[0].name not in live_after[id(s)])]
        if len(body) == len(fn.body):
            break
        fn.body = body
    counts = {"fma": 0, "mul": 0, "add": 0}
    for ins in fn.instructions:
        t = ins.types()[-1] if ins.types() else ""
        if t not in FLOAT_TYPES:
            continue
        if ins.opcode in ("fma", "mad"):
            counts["fma"] += 1
        elif ins.opcode in ("add", "sub"):
            counts["add"] += 1
        elif ins.opcode == "mul":
            counts["mul"] += 1
        elif ins.opcode == "div" and ins.has("approx", "full"):
            # ptxas: FMUL a, MUFU.RCP(d), after predicated FMULs scaling a and d (by 1/4 for |d| > 2**126
            # with .full; by 2**24 for subnormal d without .ftz)
            counts["mul"] += 1 + 2 * ins.has("full") + 2 * (not ins.has("ftz"))
    return counts


@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_contraction_matches_ptxas(kernel: str) -> None:
    mod = ptxjit.Module(PROBES, "probes.ptx", fmad=True)
    assert _ir_counts(mod, kernel) == EXPECTED[kernel]


def test_fmad_off_keeps_every_mul_and_add() -> None:
    mod = ptxjit.Module(PROBES, "probes.ptx", fmad=False)
    assert _ir_counts(mod, "single_use") == {"fma": 0, "mul": 1, "add": 1}
    assert _ir_counts(mod, "two_adds") == {"fma": 0, "mul": 1, "add": 3}


def _f32(x: Fraction) -> np.float32:
    """Round an exact rational to the nearest f32 (ties to even) via f64 when exact enough."""
    return np.float32(float(x)) if Fraction(float(x)) == x else _round_f32(x)


def _round_f32(x: Fraction) -> np.float32:
    lo = np.float32(float(x))
    cands = [lo, np.nextafter(lo, np.float32(np.inf)), np.nextafter(lo, np.float32(-np.inf))]
    return min(cands, key=lambda c: (abs(Fraction(float(c)) - x), int(c.view(np.uint32)) & 1))


def _run(kernel: str, inputs: np.ndarray, fmad: bool) -> np.ndarray:
    mod = ptxjit.Module(PROBES, "probes.ptx", fmad=fmad)
    out = np.zeros(16, np.uint8)
    mod.get_function(kernel)(1, 1, (inputs, out, np.uint32(1)))
    return out


def _inputs(a: float, b: float, c: float, d: float) -> np.ndarray:
    buf = np.zeros(64, np.uint8)
    buf[:16] = np.array([a, b, c, d], np.float32).view(np.uint8)
    return buf


# a*b + c with a product whose rounding changes the sum: fused and unfused results differ
A, B, C = 1.0000001, 1.0000001, -1.0000002


@pytest.mark.parametrize("kernel,c,d,exact", [
    ("single_use", C, 0.5, lambda a, b, c, d: a * b + c),
    ("sub_product_first", -C, 0.5, lambda a, b, c, d: a * b - c),
    ("sub_product_second", -C, 0.5, lambda a, b, c, d: c - a * b),
    ("neg_product", -C, 0.5, lambda a, b, c, d: -(a * b) + c),
    ("neg_product_sub", 0.5, C, lambda a, b, c, d: -(a * b) - d),
])
def test_fused_results_are_rounded_once(kernel: str, c: float, d: float, exact) -> None:
    fa, fb, fc, fd = (Fraction(float(np.float32(v))) for v in (A, B, c, d))
    fused = _run(kernel, _inputs(A, B, c, d), fmad=True)[:4].view(np.float32)[0]
    assert fused.view(np.uint32) == _f32(exact(fa, fb, fc, fd)).view(np.uint32)
    unfused = _run(kernel, _inputs(A, B, c, d), fmad=False)[:4].view(np.float32)[0]
    assert unfused != fused  # the probe is sensitive: separate rounding gives another result


def test_operand_redefined_between_product_and_add() -> None:
    """mul f5 = f1*f2; f1 = f1 + f4; f7 = f5 + f1: the fused product must use the old f1."""
    a, b, d = np.float32(A), np.float32(B), np.float32(C)
    out = _run("operand_redefined", _inputs(A, B, 0.0, C), fmad=True)[:4].view(np.float32)[0]
    new_a = np.float32(a + d)
    want = _f32(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(new_a)))
    assert out.view(np.uint32) == want.view(np.uint32)


def test_env_switch(monkeypatch) -> None:
    monkeypatch.setenv("PTXJIT_FMAD", "0")
    assert ptxjit.Module(PROBES, "probes.ptx").fmad is False
    monkeypatch.setenv("PTXJIT_FMAD", "1")
    assert ptxjit.Module(PROBES, "probes.ptx").fmad is True


MUFU = GOLDEN_SET / "mufu"


def _h100_rcp_samples() -> tuple[np.ndarray, np.ndarray]:
    """The H100's MUFU.RCP on [1, 2): inputs 0x3f800000 + 16 i (gpu-golden/README.md), outputs."""
    for p in sorted(MUFU.glob("mufu_*.npz")):
        z = np.load(p)
        if "rcp_approx_ftz_f32_1_2" in z.files:
            y = z["rcp_approx_ftz_f32_1_2"].view(np.uint32)
            return (0x3F800000 + 16 * np.arange(len(y))).astype(np.uint32), y
    pytest.skip("shared/gpu-golden/mufu has no rcp_approx_ftz_f32_1_2 samples")


@golden_needs("mufu")
def test_div_full_fused_with_add_is_a_times_h100_rcp_plus_c() -> None:
    """`div.full` then `add`: one FFMA a * MUFU.RCP(d) + c, as ptxas emits (Triton's layer norm
    `var / N + eps` needs it to match the H100), against the H100's own reciprocals."""
    xs, ys = _h100_rcp_samples()
    ieee = (1.0 / xs.view(np.float32).astype(np.float64)).astype(np.float32).view(np.uint32)
    i = int(np.flatnonzero(ys != ieee)[7])  # a divisor whose MUFU reciprocal is not the IEEE one
    d, r = xs[i].view(np.float32), ys[i].view(np.float32)
    a = np.float32(1.2345678)
    c = -np.float32(a * r)  # cancels the rounded product: only the fused residual is left
    exact = Fraction(float(a)) * Fraction(float(r)) + Fraction(float(c))
    got = _run("div_full_add", _inputs(a, d, c, 0.0), fmad=True)[:4].view(np.float32)[0]
    assert got.view(np.uint32) == _f32(exact).view(np.uint32) and got != 0
    unfused = _run("div_full_add", _inputs(a, d, c, 0.0), fmad=False)[:4].view(np.float32)[0]
    assert unfused == 0  # separate rounding: a * rcp rounded, then + c
