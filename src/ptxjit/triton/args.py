"""Arguments of a Triton launch: NumPy arrays and DeviceArrays as Triton "tensors", scalars as Python
numbers, so that Triton's own binder specializes them as its launcher would for torch tensors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import triton.language as tl

from ptxjit.runtime.memory import DeviceArray

# NumPy dtype -> Triton element type (NumPy has no bfloat16/fp8: use reinterpret() on uint16/uint8 arrays)
_DTYPES: dict[str, tl.dtype] = {
    "bool": tl.int1, "int8": tl.int8, "uint8": tl.uint8, "int16": tl.int16, "uint16": tl.uint16,
    "int32": tl.int32, "uint32": tl.uint32, "int64": tl.int64, "uint64": tl.uint64,
    "float16": tl.float16, "float32": tl.float32, "float64": tl.float64,
    "bfloat16": tl.bfloat16,  # ml_dtypes' bfloat16, where installed
}
_NAMES: dict[str, tl.dtype] = {
    "fp8e4nv": tl.float8e4nv, "fp8e5": tl.float8e5, "fp8e4b15": tl.float8e4b15, "bf16": tl.bfloat16,
    "fp16": tl.float16, "fp32": tl.float32, "fp64": tl.float64, "i1": tl.int1, "i8": tl.int8, "u8": tl.uint8,
    "i16": tl.int16, "u16": tl.uint16, "i32": tl.int32, "u32": tl.uint32, "i64": tl.int64, "u64": tl.uint64,
}
SUPPORTED = ", ".join(k for k in _DTYPES if k != "bfloat16")


@dataclass(frozen=True)
class Reinterpreted:
    """An array whose elements the kernel reads as another Triton type of the same width (bf16, fp8)."""

    array: np.ndarray | DeviceArray
    dtype: tl.dtype


def reinterpret(array, dtype) -> Reinterpreted:
    """Pass `array` to a Triton kernel as a pointer to `dtype` (a ``tl.dtype`` or a name: "bf16",
    "fp8e4nv", ...), as ``triton.reinterpret`` does for torch tensors: NumPy has no bfloat16, so a
    bf16 matrix is a uint16 array of bit patterns: ``reinterpret(bits, tl.bfloat16)``."""
    t = _NAMES.get(dtype) if isinstance(dtype, str) else dtype
    if not isinstance(t, tl.dtype):
        raise TypeError(f"reinterpret: {dtype!r} is not a Triton type (tl.bfloat16, 'bf16', 'fp8e4nv', ...)")
    host = array.array if isinstance(array, DeviceArray) else array
    if not isinstance(host, np.ndarray):
        raise TypeError(f"reinterpret: expected a NumPy array or a DeviceArray, got {type(array).__name__}")
    bits = t.primitive_bitwidth if hasattr(t, "primitive_bitwidth") else 0
    if bits and host.dtype.itemsize * 8 != bits and t != tl.int1:
        raise TypeError(f"reinterpret: {host.dtype} elements are {host.dtype.itemsize * 8} bits, "
                        f"{t} is {bits}")
    return Reinterpreted(array, t)


class TensorArg:
    """What Triton's binder sees for an array: ``data_ptr()`` (alignment specialization) and ``dtype``."""

    __slots__ = ("array", "dtype", "_ptr")

    def __init__(self, array, dtype: tl.dtype, ptr: int) -> None:
        self.array = array  # what ptxjit receives: the NumPy array or DeviceArray itself
        self.dtype = dtype
        self._ptr = ptr

    def data_ptr(self) -> int:
        return self._ptr


def _where(kernel: str, name: str) -> str:
    return f"Triton kernel '{kernel}' argument '{name}'"


def to_triton(kernel: str, name: str, v):
    """The value Triton's binder gets for argument `name`; arrays become TensorArg."""
    if isinstance(v, Reinterpreted):
        host = v.array.array if isinstance(v.array, DeviceArray) else v.array
        _check_array(kernel, name, host)
        return TensorArg(v.array, v.dtype, int(host.ctypes.data))
    if isinstance(v, DeviceArray | np.ndarray):
        host = v.array if isinstance(v, DeviceArray) else v
        if host.ndim == 0:  # a 0-d array is a scalar to Triton users (np.float32(x) often becomes one)
            return to_triton(kernel, name, host[()])
        _check_array(kernel, name, host)
        t = _DTYPES.get(host.dtype.name)
        if t is None:
            raise TypeError(f"{_where(kernel, name)}: arrays of dtype {host.dtype} have no Triton type "
                            f"(supported: {SUPPORTED}; bf16/fp8 via ptxjit.triton.reinterpret)")
        return TensorArg(v, t, int(host.ctypes.data))
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, np.generic) or (hasattr(v, "__array_interface__") and not isinstance(v, type)):
        raise TypeError(f"{_where(kernel, name)}: {type(v).__name__} values cannot be passed "
                        f"(supported: NumPy arrays of {SUPPORTED}, DeviceArray, int, float, bool)")
    return v


def _check_array(kernel: str, name: str, a: np.ndarray) -> None:
    if not a.flags.c_contiguous and not a.flags.f_contiguous:
        raise TypeError(f"{_where(kernel, name)}: the array must be contiguous (np.ascontiguousarray): "
                        f"a Triton kernel gets a pointer and computes its own offsets")
    if a.dtype.hasobject:
        raise TypeError(f"{_where(kernel, name)}: arrays of Python objects cannot be passed")


def launch_value(kernel: str, name: str, ty: str, v):
    """What ptxjit's launch gets for a non-constexpr parameter of Triton type `ty`."""
    if ty.startswith("*"):
        if not isinstance(v, TensorArg):
            raise TypeError(f"{_where(kernel, name)} is a pointer ({ty}): pass a NumPy array or a DeviceArray, "
                            f"got {type(v).__name__}")
        return v.array
    if ty in ("fp16", "bf16", "fp32", "fp64"):
        return float(v)
    if ty == "u1":
        return int(bool(v))
    if ty[:1] in ("i", "u") and ty[1:].isdigit():
        return int(v)
    raise TypeError(f"{_where(kernel, name)}: parameters of Triton type {ty} are not supported by ptxjit.triton")
