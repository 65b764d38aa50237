"""Kernel arguments -> the PTX parameter buffer, with type and range checks; and the launch checks
that refuse, before anything runs, what would crash or corrupt memory on a CPU (where a GPU would
fault or refuse the launch).

Launch limits are CUDA's for compute capability 9.0 (H100), so that a launch accepted here is one a
GPU accepts too: grid (2**31-1, 65535, 65535), block (1024, 1024, 64), 1024 threads per block, and
227 KB (232,448 bytes) of shared memory per block, static plus dynamic — the H100's opt-in maximum
(cudaDevAttrMaxSharedMemoryPerBlockOptin); without opting in a GPU allows 48 KB.
"""

from __future__ import annotations

import ctypes
import struct
import warnings

import numpy as np

from ptxjit.errors import PtxjitWarning
from ptxjit.frontend import ir
from ptxjit.lower.layout import param_layout
from ptxjit.runtime.access import KernelAccess
from ptxjit.runtime.memory import DeviceArray, Pointer

MAX_GRID = (2 ** 31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
MAX_SHARED_PER_BLOCK = 227 * 1024

_warned: set[tuple] = set()


def check_launch_shape(kernel: str, grid: tuple[int, int, int], block: tuple[int, int, int]) -> None:
    """ValueError naming the CUDA limit a launch shape exceeds (runs at every launch: comparisons only)."""
    for what, dims, lims in (("grid", grid, MAX_GRID), ("block", block, MAX_BLOCK)):
        for axis, v, lim in zip("xyz", dims, lims, strict=True):
            if v > lim:
                raise ValueError(f"kernel '{kernel}': {what}.{axis} = {v} exceeds CUDA's limit of {lim} "
                                 f"(max {'grid size' if what == 'grid' else 'block dimension'} {axis})")
    n = block[0] * block[1] * block[2]
    if n > MAX_THREADS_PER_BLOCK:
        raise ValueError(f"kernel '{kernel}': block {block} has {n} threads; CUDA's limit is "
                         f"{MAX_THREADS_PER_BLOCK} threads per block")


def check_shared_memory(kernel: str, static: int, dynamic: int, access: KernelAccess | None) -> None:
    """Refuse missing or provably too small dynamic shared memory, and more than a GPU has."""
    if static + dynamic > MAX_SHARED_PER_BLOCK:
        raise ValueError(f"kernel '{kernel}': {static} bytes of static + {dynamic} bytes of dynamic shared "
                         f"memory exceed the limit of {MAX_SHARED_PER_BLOCK} bytes (227 KB) per block")
    if access is None or not access.dynamic_shared:
        return
    if dynamic == 0:
        raise ValueError(f"kernel '{kernel}' uses dynamic shared memory (an extern .shared array) but the "
                         f"launch gives none: pass shared_mem=<bytes> (CUDA's third <<<...>>> argument)")
    if dynamic < access.dynamic_shared_min:
        raise ValueError(f"kernel '{kernel}' accesses at least {access.dynamic_shared_min} bytes of dynamic "
                         f"shared memory (extern .shared), but the launch gives shared_mem={dynamic}")


def _describe(v: object) -> str:
    if isinstance(v, np.ndarray):
        return f"numpy array of {v.dtype} with shape {v.shape}"
    return type(v).__name__


def pointer_of(v: object) -> int | None:
    """The address a pointer parameter receives for `v`, or None if `v` is not buffer-like."""
    if isinstance(v, DeviceArray):
        v = v.array
    if isinstance(v, np.ndarray):
        return v.__array_interface__["data"][0]  # cheaper than .ctypes.data (this runs every launch)
    if isinstance(v, Pointer):
        return v.address
    return None


def pack_arguments(kernel: str, params: list[ir.VarDecl], args: tuple | list,
                   lay=None, access: KernelAccess | None = None) -> tuple[np.ndarray, list]:
    """Build the parameter buffer; returns it and the objects that must stay alive during the launch.

    `access` (runtime/access.py) says which parameters are pointers the kernel dereferences and which
    it may write through; without it every array parameter counts as written (read-only arrays are
    refused) and no parameter as a certain pointer (ints are accepted)."""
    if not isinstance(args, tuple | list):
        raise TypeError(f"kernel '{kernel}': args must be a tuple or list, got {_describe(args)}")
    if len(args) != len(params):
        names = ", ".join(f"{p.name}: .{p.type}" for p in params)
        raise TypeError(f"kernel '{kernel}' takes {len(params)} arguments ({names}), got {len(args)}")
    lay = lay or param_layout(params)
    buf = bytearray(max(lay.size, 8))
    keep: list = []
    for i, (p, off, v) in enumerate(zip(params, lay.offsets, args, strict=True)):
        data = _encode(kernel, i, p, v, keep, access.params[i] if access is not None else None)
        buf[off:off + len(data)] = data
    return np.frombuffer(buf, dtype=np.uint8), keep


def _encode(kernel: str, i: int, p: ir.VarDecl, v: object, keep: list, pa) -> bytes:
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
        if isinstance(v, Pointer):  # the caller vouches for a raw address
            return struct.pack("<Q", ptr)
        arr = v.array if isinstance(v, DeviceArray) else v
        flags = arr.flags
        if not (flags.c_contiguous or flags.f_contiguous):
            raise TypeError(f"{where()}: array must be contiguous (use np.ascontiguousarray)")
        if arr.dtype.hasobject:  # object pointers would be read as data, or overwritten
            raise TypeError(f"{where()}: arrays of Python objects (dtype {arr.dtype}) cannot be passed to "
                            f"a kernel; use a numeric dtype")
        if not flags.writeable and (pa is None or pa.may_write):
            raise TypeError(f"{where()}: the array is read-only (e.g. a view of bytes or a read-only "
                            f"memmap) but the kernel may write through this pointer; pass a writable "
                            f"copy (np.array(...))")
        if pa is not None and pa.widths:
            _check_width(kernel, i, p, arr.dtype, pa.widths)
        keep.append(v)
        return struct.pack("<Q", ptr)
    if v is None:
        raise TypeError(f"{where()}: got None; pass a number" + (
            ", or ptxjit.Pointer(0) for a null pointer" if pa is not None and pa.pointer else ""))
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
    if pa is not None and pa.pointer:  # an int here is a size in the wrong slot, or an address out of thin air
        raise TypeError(f"{where()} is a pointer the kernel dereferences: pass a NumPy array or a "
                        f"DeviceArray (or ptxjit.Pointer(address) for a raw address, Pointer(0) for NULL), "
                        f"got int {int(v):#x}")
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


def _check_width(kernel: str, i: int, p: ir.VarDecl, dtype: np.dtype, widths: dict[int, set[str]]) -> None:
    """Warn once when every access to a pointer parameter has one element width and the array's
    elements have another (a float64 array for a kernel reading f32 is misread without a word)."""
    # mixed widths, complex, records, strings, and byte buffers (raw memory on purpose): no verdict
    if len(widths) != 1 or dtype.kind in "cVSUa" or dtype.itemsize == 1:
        return
    (w, types), = widths.items()
    if dtype.itemsize == w:
        return
    if dtype.itemsize < w and w % dtype.itemsize == 0 and not any(ir.is_float_type(t) for t in types):
        return  # packed access: half2 or char4 data moved as .u32/.b64 words (nvcc does this for __half2)
    key = (kernel, i, dtype.str)
    if key in _warned:
        return
    _warned.add(key)
    ts = "/".join("." + t for t in sorted(types))
    warnings.warn(f"kernel '{kernel}' argument {i} ('{p.name}'): {dtype} array ({dtype.itemsize}-byte "
                  f"elements), but the kernel accesses this parameter with {w}-byte {ts} loads/stores; "
                  f"its elements will be misread (convert with .astype())", PtxjitWarning, stacklevel=5)
