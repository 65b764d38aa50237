"""Device-style buffers.  On the CPU, device memory is host memory: a DeviceArray wraps a NumPy array."""

from __future__ import annotations

import numpy as np


class DeviceArray:
    """A buffer for kernels, with the CUDA-style API (`copy_to_host`) and CuPy's (`get`, `set`, indexing,
    NumPy interop); passing it to a kernel passes its pointer.  Device memory is host memory here: the
    NumPy array `array` holds the bytes, and views (`a[2:]`, `a[0]`) share them, as CuPy's do."""

    def __init__(self, array: np.ndarray, uninitialized: bool = False) -> None:
        """Wrap `array` (not copied: kernels write into it)."""
        self.array = array
        # made by ptxjit.empty: its bytes were never written (initcheck, ptxjit/checking, reports reads)
        self.uninitialized = uninitialized

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape."""
        return self.array.shape

    @property
    def dtype(self) -> np.dtype:
        """The element type."""
        return self.array.dtype

    @property
    def size(self) -> int:
        """The number of elements."""
        return self.array.size

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self.array.ndim

    @property
    def strides(self) -> tuple[int, ...]:
        """Bytes between consecutive elements of each dimension."""
        return self.array.strides

    @property
    def nbytes(self) -> int:
        """The size in bytes."""
        return self.array.nbytes

    @property
    def ptr(self) -> int:
        """The address of the first element (what a kernel receives)."""
        return int(self.array.ctypes.data)

    def copy_to_host(self, out: np.ndarray | None = None) -> np.ndarray:
        """A NumPy copy of the contents (or copy them into `out`), as Numba's DeviceNDArray does."""
        if out is None:
            return self.array.copy()
        np.copyto(out, self.array)
        return out

    def copy_from_host(self, src: np.ndarray) -> None:
        """Overwrite the contents with `src` (reshaped to this shape)."""
        np.copyto(self.array, np.asarray(src).reshape(self.array.shape))

    def get(self, stream=None, order: str = "C", out: np.ndarray | None = None) -> np.ndarray:
        """A NumPy copy of the contents, as CuPy's `ndarray.get()` (`out`: copy into that array)."""
        if out is not None:
            np.copyto(out, self.array)
            return out
        return np.array(self.array, order=order, copy=True)

    def set(self, arr: np.ndarray, stream=None) -> None:
        """Overwrite the contents with `arr` (same shape), as CuPy's `ndarray.set()`."""
        a = np.asarray(arr)
        if a.shape != self.array.shape:
            raise ValueError(f"DeviceArray.set: shape {a.shape} does not match the array's {self.array.shape}")
        np.copyto(self.array, a)

    def __getitem__(self, key) -> DeviceArray:
        """A view (basic indexing) or copy (advanced indexing) as a DeviceArray; one element is a 0-d
        DeviceArray sharing its memory (CuPy's `a[3]`), `.get()` or `float(...)` gives the value."""
        k = key if isinstance(key, tuple) else (key,)
        if not any(x is Ellipsis for x in k):
            k = (*k, Ellipsis)  # keeps a single element a 0-d view instead of a copied NumPy scalar
        return DeviceArray(self.array[k])

    def __setitem__(self, key, value) -> None:
        """Write elements: `a[2:5] = 0`, `a[i] = other_device_array`."""
        self.array[key] = value.array if isinstance(value, DeviceArray) else value

    def __len__(self) -> int:
        return len(self.array)

    def __float__(self) -> float:
        return float(self.array)

    def __int__(self) -> int:
        return int(self.array)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """NumPy interop (`np.asarray(a)` is a view of the buffer; `copy=True` copies)."""
        a = self.array if dtype is None else self.array.astype(dtype, copy=False)
        return a.copy() if copy else a

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype})"


def to_device(host: np.ndarray) -> DeviceArray:
    """A DeviceArray holding a C-contiguous copy of `host` (cuda.to_device / cupy.asarray)."""
    return DeviceArray(np.array(host, copy=True, order="C"))


def empty(shape, dtype=np.float32) -> DeviceArray:
    """An uninitialized buffer (cudaMalloc): `ptxjit check --tool initcheck` reports kernel reads of bytes
    no kernel wrote."""
    return DeviceArray(np.empty(shape, dtype=dtype), uninitialized=True)


def zeros(shape, dtype=np.float32) -> DeviceArray:
    """A zero-filled DeviceArray (cupy.zeros)."""
    return DeviceArray(np.zeros(shape, dtype=dtype))


class Pointer:
    """An explicit raw address for a pointer parameter: `kernel(grid, block, (ptxjit.Pointer(addr), n))`.

    Plain Python ints are refused for parameters the kernel dereferences (an int there is almost always
    a mistake: a size passed in the wrong slot, or an address that is not the caller's to give).  With a
    Pointer the caller vouches for the address: ptxjit passes it unchecked (no read-only, dtype or size
    checks), exactly like CUDA passes a device pointer.

    `memory` (a NumPy array, e.g. `Pointer(a.ctypes.data + 64, memory=a)`): the memory the address points
    into.  The bounds checks then allow exactly that array, whichever byte of it the address names (as
    CUDA's memcheck allows the whole allocation behind an interior pointer), and the checking tools
    (ptxjit.check, PTXJIT_CHECK) watch it like an array argument; the driver API's launches pass their
    pointers this way, with the allocation each one points into.  An empty array: memory of no
    allocation, every access through the pointer is out of bounds."""

    __slots__ = ("address", "memory")

    def __init__(self, address: int, memory: np.ndarray | None = None) -> None:
        if isinstance(address, bool) or not isinstance(address, int | np.integer):
            raise TypeError(f"Pointer() takes an integer address, got {type(address).__name__}")
        a = int(address)
        if not 0 <= a < 2 ** 64:
            raise ValueError(f"Pointer() address {a:#x} is outside [0, 2**64)")
        if memory is not None:
            if isinstance(memory, DeviceArray):
                memory = memory.array
            if not isinstance(memory, np.ndarray):
                raise TypeError(f"Pointer(memory=) takes a NumPy array or DeviceArray, got {type(memory).__name__}")
            lo = memory.__array_interface__["data"][0]
            if memory.nbytes and not lo <= a <= lo + memory.nbytes:
                raise ValueError(f"Pointer({a:#x}) is outside its memory [{lo:#x}, {lo + memory.nbytes:#x})")
        self.address = a
        self.memory = memory

    def __int__(self) -> int:
        return self.address

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pointer) and other.address == self.address

    def __hash__(self) -> int:
        return hash(("ptxjit.Pointer", self.address))

    def __repr__(self) -> str:
        if self.memory is not None:
            lo = self.memory.__array_interface__["data"][0]
            return f"Pointer({self.address:#x}, byte {self.address - lo} of {self.memory.nbytes})"
        return f"Pointer({self.address:#x})"


def memory_of(v: object) -> np.ndarray | None:
    """The memory an argument names: a NumPy array, a DeviceArray's array, the memory a Pointer points
    into; None for anything else (a number, a Pointer the caller vouches for without saying its memory)."""
    if isinstance(v, DeviceArray):
        return v.array
    if isinstance(v, np.ndarray):
        return v
    if isinstance(v, Pointer):
        return v.memory
    return None
