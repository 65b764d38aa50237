"""Load the H100 golden data (../shared/gpu-golden) for the approximate-instruction research scripts.

`mufu(name)` -> (inputs, outputs) of one dense mufu/ sample array (see gpu-golden/README.md);
`isa(variant)` -> (list of input arrays per operand, list of output arrays) from isa/ (held-out check).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "gpu-golden"
N = 1 << 19

_DT = {"f32": np.uint32, "f64": np.uint64, "f16": np.uint16, "bf16": np.uint16, "f16x2": np.uint32,
       "bf16x2": np.uint32, "b32": np.uint32, "u32": np.uint32}


@cache
def _mufu_arrays() -> dict[str, np.ndarray]:
    out = {}
    for p in sorted((GOLDEN / "mufu").glob("mufu_*.npz")):
        z = np.load(p)
        for k in z.files:
            out[k] = z[k]
    return out


def mufu_inputs(name: str) -> np.ndarray:
    """Input bit patterns (uint32 or uint64) of a mufu/ array, as the README's table defines them."""
    i = np.arange(N, dtype=np.int64)
    if name.endswith("f64_1_2"):
        return (np.uint64(0x3FF0000000000000) + (i.astype(np.uint64) << np.uint64(33))).astype(np.uint64)
    if name.endswith("f64_2_4"):
        return (np.uint64(0x4000000000000000) + (i.astype(np.uint64) << np.uint64(33))).astype(np.uint64)
    if name.endswith("_1_2"):
        return (0x3F800000 + 16 * i).astype(np.uint32)
    if name.endswith("_2_4"):
        return (0x40000000 + 16 * i).astype(np.uint32)
    if name.startswith("ex2"):
        v = i.astype(np.float32) * np.float32(2.0**-19)
        if name.endswith("m1_0"):
            v = -v
        return v.view(np.uint32)
    if name.startswith(("sin", "cos")):
        return (i.astype(np.float32) * np.float32(1.1984224905356572e-05)).astype(np.float32).view(np.uint32)
    if name.startswith("tanh"):
        return (0x3D800000 + 128 * i).astype(np.uint32)
    raise KeyError(name)


def mufu(name: str) -> tuple[np.ndarray, np.ndarray]:
    raw = _mufu_arrays()[name]
    dt = np.uint64 if "f64" in name else np.uint32
    return mufu_inputs(name), raw.view(dt)


@cache
def _index() -> dict[str, list[str]]:
    idx: dict[str, list[str]] = {}
    for p in sorted((GOLDEN / "isa" / "in").glob("*.npz")):
        meta = json.loads(str(np.load(p)["meta"]))
        idx.setdefault(meta["case"], []).append(p.stem)
    return idx


def isa(variant: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(operands, results) of an isa/ variant, e.g. 'isa_ex2_approx_f32', as unsigned bit arrays."""
    lay = json.load(open(GOLDEN / "isa" / "layout.json"))["variants"][variant]
    ins, outs = [], []
    for rid in _index()[variant]:
        zi = np.load(GOLDEN / "isa" / "in" / f"{rid}.npz")
        zg = np.load(GOLDEN / "isa" / "gpu" / f"{rid}.npz")
        n = lay["n"]
        ib, ob = zi["b0"], zg["g1"]
        ins.append([_field(ib, n, lay["in_slot"], off, t) for off, t in zip(lay["in_off"], lay["ins"], strict=True)])
        outs.append([_field(ob, n, lay["out_slot"], off, t)
                     for off, t in zip(lay["out_off"], lay["outs"], strict=True)])
    k = len(ins[0])
    return ([np.concatenate([r[j] for r in ins]) for j in range(k)],
            [np.concatenate([r[j] for r in outs]) for j in range(len(outs[0]))])


def _field(buf: np.ndarray, n: int, slot: int, off: int, t: str) -> np.ndarray:
    dt = np.dtype(_DT[t])
    rows = buf[: n * slot].reshape(n, slot)
    return np.ascontiguousarray(rows[:, off: off + dt.itemsize]).view(dt).ravel()
