"""Packed 16-bit integer SIMD (PTX ISA 8.0, §9.7.1: add/sub/min/max .s16x2/.u16x2, .relu for min/max.s16x2)
against NumPy: each 32-bit register is two 16-bit lanes, lane 0 in the low half; add/sub wrap per lane."""

from __future__ import annotations

import numpy as np
import pytest

import ptxjit

OPS = ["add.s16x2", "add.u16x2", "sub.s16x2", "sub.u16x2", "min.s16x2", "min.u16x2", "max.s16x2",
       "max.u16x2", "min.relu.s16x2", "max.relu.s16x2"]

_BODY = "\n".join(f"  {op} %r{10 + k}, %r1, %r2;\n  st.global.u32 [%rd4+{4 * k}], %r{10 + k};"
                  for k, op in enumerate(OPS))

PTX = f""".version 8.7
.target sm_90a
.address_size 64

.visible .entry simd(.param .u64 pa, .param .u64 pb, .param .u64 pout)
{{
  .reg .b32 %r<32>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pout];
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd5, %r3, 4;
  add.u64 %rd6, %rd1, %rd5;
  ld.global.u32 %r1, [%rd6];
  add.u64 %rd6, %rd2, %rd5;
  ld.global.u32 %r2, [%rd6];
  mul.wide.u32 %rd5, %r3, {4 * len(OPS)};
  add.u64 %rd4, %rd3, %rd5;
{_BODY}
  ret;
}}
"""


def _reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-lane results of OPS as packed uint32, computed on int64 lanes."""
    def lanes(x: np.ndarray, signed: bool) -> np.ndarray:
        v = np.stack([x & 0xFFFF, x >> 16], axis=-1).astype(np.int64)
        return np.where(v >= 0x8000, v - 0x10000, v) if signed else v

    def pack(v: np.ndarray) -> np.ndarray:
        v = v & 0xFFFF
        return (v[..., 0] | (v[..., 1] << 16)).astype(np.uint32)

    cols = []
    for op in OPS:
        name, *mods = op.split(".")
        signed = mods[-1] == "s16x2"
        x, y = lanes(a, signed), lanes(b, signed)
        r = {"add": x + y, "sub": x - y, "min": np.minimum(x, y), "max": np.maximum(x, y)}[name]
        if "relu" in mods:
            r = np.maximum(r, 0)
        cols.append(pack(r))
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("mode", [pytest.param({"checked": True}, id="checked"),
                                  pytest.param({"unchecked": True}, id="unchecked")])
def test_simd16_against_numpy(mode):
    rng = np.random.default_rng(16)
    edge = np.array([0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    ea, eb = np.meshgrid(edge, edge)  # every pair of edge lanes, in both halves
    a = np.concatenate([ea.ravel() | (eb.ravel() << 16), rng.integers(0, 2**32, 92, dtype=np.uint32)])
    b = np.concatenate([eb.ravel() | (ea.ravel() << 16), rng.integers(0, 2**32, 92, dtype=np.uint32)])
    out = np.zeros((a.size, len(OPS)), dtype=np.uint32)
    ptxjit.Module(PTX).get_function("simd")(1, a.size, (a, b, out), **mode)
    want = _reference(a.astype(np.int64), b.astype(np.int64))
    for k, op in enumerate(OPS):
        bad = np.flatnonzero(out[:, k] != want[:, k])
        i = bad[0] if bad.size else 0
        assert bad.size == 0, f"{op}: a={a[i]:#x} b={b[i]:#x} got {out[i, k]:#x} want {want[i, k]:#x}"
