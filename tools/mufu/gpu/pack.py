"""Pack tanh_dense's raw output files into one small .npz: per range the first output's bits and the int8/int16
deltas between consecutive outputs (tanh is monotone and smooth, so the deltas are small and compress well).

Usage: python pack.py RAW_DIR OUT.npz     (unpack with tools/mufu/gpu/pack.py's unpack())
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def pack(raw_dir: Path, out: Path) -> None:
    arrays = {}
    for f in sorted(raw_dir.glob("*.bin")):
        bits = np.fromfile(f, dtype="<u4").astype(np.int64)
        delta = np.diff(bits)
        kind = np.int8 if np.abs(delta).max() < 128 else np.int16
        arrays[f.stem + "_first"] = np.array([bits[0]], dtype=np.uint32)
        arrays[f.stem + "_delta"] = delta.astype(kind)
    np.savez_compressed(out, **arrays)


def unpack(npz: Path, name: str) -> np.ndarray:
    """The output bits (uint32) of range `name` (e.g. 'tanh_f32_lo')."""
    data = np.load(npz)
    first = data[name + "_first"].astype(np.int64)
    return np.concatenate([first, first + np.cumsum(data[name + "_delta"].astype(np.int64))]).astype(np.uint32)


if __name__ == "__main__":
    pack(Path(sys.argv[1]), Path(sys.argv[2]))
