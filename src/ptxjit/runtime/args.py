"""Kernel arguments -> the PTX parameter buffer, with type and range checks."""

from __future__ import annotations

import ctypes
import struct

import numpy as np

from ptxjit.frontend import ir
from ptxjit.lower.layout import param_layout


def _describe(v: object) -> str:
    if isinstance(v, np.ndarray):
        return f"numpy array of {v.dtype} with shape {v.shape}"
    return type(v).__name__


def pointer_of(v: object) -> int | None:
    """The address a pointer parameter receives for `v`, or None if `v` is not buffer-like."""
    from ptxjit.runtime.memory import DeviceArray

    if isinstance(v, DeviceArray):
        v = v.array
    if isinstance(v, np.ndarray):
        return v.__array_interface__["data"][0]  # cheaper than .ctypes.data (this runs every launch)
    return None


def pack_arguments(kernel: str, params: list[ir.VarDecl], args: tuple | list,
                   lay=None) -> tuple[np.ndarray, list]:
    """Build the parameter buffer; returns it and the objects that must stay alive during the launch."""
    if not isinstance(args, tuple | list):
        raise TypeError(f"kernel '{kernel}': args must be a tuple or list, got {_describe(args)}")
    if len(args) != len(params):
        names = ", ".join(f"{p.name}: .{p.type}" for p in params)
        raise TypeError(f"kernel '{kernel}' takes {len(params)} arguments ({names}), got {len(args)}")
    lay = lay or param_layout(params)
    buf = bytearray(max(lay.size, 8))
    keep: list = []
    for i, (p, off, v) in enumerate(zip(params, lay.offsets, args, strict=True)):
        data = _encode(kernel, i, p, v, keep)
        buf[off:off + len(data)] = data
    return np.frombuffer(buf, dtype=np.uint8), keep


def _encode(kernel: str, i: int, p: ir.VarDecl, v: object, keep: list) -> bytes:
    def where() -> str:  # built only for an error message
        return f"kernel '{kernel}' argument {i} ('{p.name}', .{p.type}{'[]' if p.dims else ''})"

    if p.dims:  # by-value aggregate: raw bytes of exactly the parameter's size
        raw = _as_bytes(v)
        if raw is None or len(raw) != p.size:
            raise TypeError(f"{where()}: expected {p.size} bytes (bytes, ctypes structure or numpy record), "
                            f"got {_describe(v)}" + (f" of {len(raw)} bytes" if raw is not None else ""))
        return raw
    t = p.type
    size = ir.type_size(t)
    ptr = pointer_of(v)
    if ptr is not None:
        if size != 8:
            raise TypeError(f"{where()}: an array is passed as a 64-bit pointer, but the parameter is .{t}")
        arr = v.array if hasattr(v, "array") else v
        if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
            raise TypeError(f"{where()}: array must be contiguous (use np.ascontiguousarray)")
        keep.append(v)
        return struct.pack("<Q", ptr)
    if isinstance(v, bool | np.bool_):
        v = int(v)
    if t in ("f32", "f64", "f16", "bf16"):
        if not isinstance(v, int | float | np.integer | np.floating):
            raise TypeError(f"{where()}: expected a float, got {_describe(v)}")
        if t == "f32":
            return struct.pack("<f", float(v))
        if t == "f64":
            return struct.pack("<d", float(v))
        from ptxjit.lower.rules.half import float_to_bits16

        return struct.pack("<H", float_to_bits16(float(v), t))
    if isinstance(v, float | np.floating):
        raise TypeError(f"{where()}: expected an integer, got float {v!r}")
    if not isinstance(v, int | np.integer):
        raise TypeError(f"{where()}: expected an integer or an array, got {_describe(v)}")
    # nvcc declares C `int` parameters as .u32 (and `char` as .u8): PTX integer parameter types do not
    # say the signedness, so accept the two's-complement range of the width, signed or unsigned.
    lo, hi = (0, 1) if t == "pred" else (-(2 ** (8 * size - 1)), 2 ** (8 * size) - 1)
    iv = int(v)
    if not lo <= iv <= hi:
        raise TypeError(f"{where()}: value {iv} is out of range [{lo}, {hi}]")
    return (iv & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def _as_bytes(v: object) -> bytes | None:
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v)
    if isinstance(v, ctypes.Structure | ctypes.Union | ctypes.Array):
        return bytes(v)
    if isinstance(v, np.void | np.ndarray):
        return np.asarray(v).tobytes()
    return None
