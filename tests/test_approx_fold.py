"""Approximate instructions on immediates, as ptxas folds them (passes/approx_fold.py).

tests/data/fold/probes.ptx applies rcp/sqrt/rsqrt/ex2/lg2/sin/cos .approx(.ftz).f32 and div.approx/full
(.ftz).f32 to 60 immediates (and, for four forms, to registers set by `mov` of them: ptxas propagates the
constant, then folds); expected.json is what ptxas 13 made of each in the SASS an H100 runs
(regen.sh: ptxas + nvdisasm): a constant, or for divisions the FMUL immediates applied to the dividend.
Entries ptxas leaves to the multifunction unit (null) are the unit model's, checked against the H100
by the golden tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ptxjit

DATA = Path(__file__).parent / "data" / "fold"
EXPECTED = json.loads((DATA / "expected.json").read_text())
A = np.float32(1.7)  # the dividend of the division kernels


@pytest.fixture(scope="module")
def module() -> ptxjit.Module:
    return ptxjit.Module((DATA / "probes.ptx").read_text(), "probes.ptx")


def _fmul(x: np.float32, bits: str, ftz: bool) -> np.float32:
    y = np.array([int(bits, 16)], np.uint32).view(np.float32)[0]
    exact = np.float64(x) * np.float64(y)  # exact: a product of two f32
    if ftz and 0 < abs(exact) < 2.0**-126:
        return np.float32(np.copysign(0.0, exact))
    with np.errstate(over="ignore"):
        return np.float32(x * y)


@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_immediates_fold_as_ptxas_does(module: ptxjit.Module, kernel: str) -> None:
    want = EXPECTED[kernel]
    buf = np.zeros(len(want) + 1, np.float32)
    buf[0] = A
    module.get_function(kernel)(1, 1, [buf])
    got = buf[1:].view(np.uint32)
    bad = []
    for i, w in enumerate(want):
        if w is None:
            continue
        if isinstance(w, list):  # the dividend times ptxas's FMUL immediates, in order
            v = A
            for bits in w:
                v = _fmul(v, bits, "ftz" in kernel)
            w = int(np.float32(v).view(np.uint32))
        if int(got[i]) != w:
            bad.append(f"[{i}] ptxjit {int(got[i]):#010x} ptxas {w:#010x}")
    assert not bad, f"{kernel}: {len(bad)} differ: " + "; ".join(bad[:6])


def test_divisor_fold_differs_from_the_unit() -> None:
    """The case that motivated it: x / 1.85062420f is FMUL x, 0x3f0a54eb (the correctly rounded
    reciprocal) on the GPU, while MUFU.RCP(1.8506242) is 0x3f0a54ea: the probe is sensitive."""
    src = """.version 8.4
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b32 %r<5>; .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  ld.global.f32 %r1, [%rd1];
  ld.global.f32 %r2, [%rd1+4];
  div.full.f32 %r3, %r1, 0f3FECE141;
  div.full.f32 %r4, %r1, %r2;
  st.global.f32 [%rd1+8], %r3;
  st.global.f32 [%rd1+12], %r4;
  ret;
}
"""
    buf = np.array([1.0, np.array([0x3FECE141], np.uint32).view(np.float32)[0], 0, 0], np.float32)
    ptxjit.Module(src, "k.ptx").get_function("k")(1, 1, [buf])
    assert buf[2:].view(np.uint32).tolist() == [0x3F0A54EB, 0x3F0A54EA]


def test_register_set_twice_is_not_folded() -> None:
    """A register with a second (guarded) definition is not a constant: ptxas keeps MUFU.RCP at run time
    (its SASS: FSEL of the two values, then MUFU.RCP), so the unit's 0x3f0a54ea is the GPU's result."""
    src = """.version 8.4
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p, .param .u32 n)
{
  .reg .b32 %r<6>; .reg .b64 %rd<2>; .reg .pred %p1;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  setp.gt.u32 %p1, %r1, 5;
  mov.b32 %r5, 0f3FECE141;
  @%p1 mov.b32 %r5, 0f40000000;
  rcp.approx.f32 %r4, %r5;
  st.global.f32 [%rd1], %r4;
  ret;
}
"""
    buf = np.zeros(1, np.float32)
    ptxjit.Module(src, "k.ptx").get_function("k")(1, 1, [buf, np.uint32(0)])
    assert buf.view(np.uint32)[0] == 0x3F0A54EA
