"""Device-style buffers.  On the CPU, device memory is host memory: a DeviceArray wraps a NumPy array."""

from __future__ import annotations

import numpy as np


class DeviceArray:
    """A buffer for kernels, with the CUDA-style API (`copy_to_host`); passing it passes its pointer."""

    def __init__(self, array: np.ndarray, uninitialized: bool = False) -> None:
        self.array = array
        # made by ptxjit.empty: its bytes were never written (initcheck, ptxjit/checking, reports reads)
        self.uninitialized = uninitialized

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    @property
    def size(self) -> int:
        return self.array.size

    @property
    def nbytes(self) -> int:
        return self.array.nbytes

    @property
    def ptr(self) -> int:
        return int(self.array.ctypes.data)

    def copy_to_host(self, out: np.ndarray | None = None) -> np.ndarray:
        if out is None:
            return self.array.copy()
        np.copyto(out, self.array)
        return out

    def copy_from_host(self, src: np.ndarray) -> None:
        np.copyto(self.array, np.asarray(src).reshape(self.array.shape))

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return self.array if dtype is None else self.array.astype(dtype)

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype})"


def to_device(host: np.ndarray) -> DeviceArray:
    return DeviceArray(np.array(host, copy=True, order="C"))


def empty(shape, dtype=np.float32) -> DeviceArray:
    """An uninitialized buffer (cudaMalloc): `ptxjit check --tool initcheck` reports kernel reads of bytes
    no kernel wrote."""
    return DeviceArray(np.empty(shape, dtype=dtype), uninitialized=True)


def zeros(shape, dtype=np.float32) -> DeviceArray:
    return DeviceArray(np.zeros(shape, dtype=dtype))


class Pointer:
    """An explicit raw address for a pointer parameter: `kernel(grid, block, (ptxjit.Pointer(addr), n))`.

    Plain Python ints are refused for parameters the kernel dereferences (an int there is almost always
    a mistake: a size passed in the wrong slot, or an address that is not the caller's to give).  With a
    Pointer the caller vouches for the address: ptxjit passes it unchecked (no read-only, dtype or size
    checks), exactly like CUDA passes a device pointer."""

    __slots__ = ("address",)

    def __init__(self, address: int) -> None:
        if isinstance(address, bool) or not isinstance(address, int | np.integer):
            raise TypeError(f"Pointer() takes an integer address, got {type(address).__name__}")
        a = int(address)
        if not 0 <= a < 2 ** 64:
            raise ValueError(f"Pointer() address {a:#x} is outside [0, 2**64)")
        self.address = a

    def __int__(self) -> int:
        return self.address

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pointer) and other.address == self.address

    def __hash__(self) -> int:
        return hash(("ptxjit.Pointer", self.address))

    def __repr__(self) -> str:
        return f"Pointer({self.address:#x})"
