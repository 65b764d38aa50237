"""Device-style buffers.  On the CPU, device memory is host memory: a DeviceArray wraps a NumPy array."""

from __future__ import annotations

import numpy as np


class DeviceArray:
    """A buffer for kernels, with the CUDA-style API (`copy_to_host`); passing it passes its pointer."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

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
    return DeviceArray(np.empty(shape, dtype=dtype))


def zeros(shape, dtype=np.float32) -> DeviceArray:
    return DeviceArray(np.zeros(shape, dtype=dtype))
