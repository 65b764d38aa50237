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

from ptxjit import config
from ptxjit.errors import PtxjitWarning
from ptxjit.frontend import ir
from ptxjit.lower.layout import param_layout
from ptxjit.runtime.access import KernelAccess
from ptxjit.runtime.memory import DeviceArray, Pointer
from ptxjit.texture import encode_argument, is_handle_object
from ptxjit.util import ENV_DATA

MAX_GRID = (2 ** 31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
MAX_SHARED_PER_BLOCK = 227 * 1024
MAX_STATIC_SHARED = 48 * 1024  # what ptxas lets a kernel declare statically; beyond it only dynamic (opt-in)

_warned: set[tuple] = set()
_UNCHECKED_KEY = config.UNCHECKED.key
_CHECKED_KEY = config.CHECKED.key


def dims(v, what: str) -> tuple[int, int, int]:
    """A launch's grid, block or cluster shape (an int or 1 to 3 ints) as three ints; TypeError or
    ValueError naming `what` for anything else."""
    if type(v) is int and v >= 1:  # the common case, checked first: this runs at every launch
        return v, 1, 1
    if isinstance(v, int | np.integer):
        v = (int(v),)
    if not isinstance(v, tuple | list) or not 1 <= len(v) <= 3:
        raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, got {v!r}")
    out = []
    for x in v:
        if not isinstance(x, int | np.integer) or isinstance(x, bool):
            raise TypeError(f"{what} must contain ints, got {v!r}")
        if x < 1:
            raise ValueError(f"{what} dimensions must be >= 1, got {tuple(v)!r}")
        out.append(int(x))
    while len(out) < 3:
        out.append(1)
    return out[0], out[1], out[2]


def resolve_checked(checked: bool | None, unchecked: bool) -> bool:
    """Bounds checks for this launch (on by default): `unchecked=True` or `checked=False` turn them
    off, else PTXJIT_UNCHECKED=1 (or PTXJIT_CHECKED=0) does."""
    if unchecked:
        return False
    if checked is not None:
        return bool(checked)
    # read at every launch (a variable set while the process runs counts), from os.environ's own
    # bytes dict where there is one (util.getenv): about 50 ns when neither is set
    env = ENV_DATA
    if env is not None and _UNCHECKED_KEY not in env and _CHECKED_KEY not in env:
        return True
    return config.launch_checked()


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
    if static > MAX_STATIC_SHARED:
        raise ValueError(f"kernel '{kernel}' declares {static} bytes of static shared memory; CUDA allows at most "
                         f"{MAX_STATIC_SHARED} (48 KB) per block (ptxas refuses such a kernel): more must be "
                         "dynamic shared memory (an extern .shared array), up to 227 KB")
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
    if pa is not None and pa.texture or is_handle_object(v):  # ptxjit/texture.py
        keep.append(v)
        return encode_argument(where(), pa.texture if pa is not None else 0, v, ir.type_size(p.type))
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
        from ptxjit.lower.types import float_to_bits16

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


def _width_mismatch(dtype: np.dtype, widths: dict[int, set[str]]) -> tuple[int, set[str]] | None:
    """The (width, PTX types) of every access to a pointer parameter when the array's elements have
    another width (a float64 array for a kernel reading f32 is misread without a word), else None."""
    # mixed widths, complex, records, strings, and byte buffers (raw memory on purpose): no verdict
    if len(widths) != 1 or dtype.kind in "cVSUa" or dtype.itemsize == 1:
        return None
    (w, types), = widths.items()
    if dtype.itemsize == w:
        return None
    if dtype.itemsize < w and w % dtype.itemsize == 0 and not any(ir.is_float_type(t) for t in types):
        return None  # packed access: half2 or char4 data moved as .u32/.b64 words (nvcc does this for __half2)
    return w, types


def _check_width(kernel: str, i: int, p: ir.VarDecl, dtype: np.dtype, widths: dict[int, set[str]]) -> None:
    """Warn once when every access to a pointer parameter has one element width and the array's
    elements have another (a float64 array for a kernel reading f32 is misread without a word)."""
    bad = _width_mismatch(dtype, widths)
    if bad is None:
        return
    w, types = bad
    key = (kernel, i, dtype.str)
    if key in _warned:
        return
    _warned.add(key)
    ts = "/".join("." + t for t in sorted(types))
    warnings.warn(f"kernel '{kernel}' argument {i} ('{p.name}'): {dtype} array ({dtype.itemsize}-byte "
                  f"elements), but the kernel accesses this parameter with {w}-byte {ts} loads/stores; "
                  f"its elements will be misread (convert with .astype())", PtxjitWarning, stacklevel=5)


# ------------------------------------------------------------------ the per-launch fast path
def _probe_address():
    """A fast address of an ndarray's data: read PyArrayObject.data (the first field after the object
    header, part of NumPy's C ABI) through the object's address.  `__array_interface__` and `.ctypes`
    build a dict or an object per call (about 1 us each, per array argument at every launch).  Used
    only where a probe confirms the layout (CPython with the usual object header); otherwise the
    portable spelling."""
    import sys

    def portable(a: np.ndarray) -> int:
        return a.__array_interface__["data"][0]

    if sys.implementation.name != "cpython" or object.__basicsize__ != 16:
        return portable
    read = ctypes.c_void_p.from_address

    def fast(a: np.ndarray) -> int:
        return read(id(a) + 16).value or 0

    base = np.arange(64, dtype=np.float64)
    probes = [base, base[3:], base[::-2], base.reshape(8, 8).T, np.empty(0, np.int8), np.ones(())]
    if all(fast(a) == portable(a) for a in probes):
        return fast
    return portable


array_address = _probe_address()

_WIDE, _F64, _F32, _NARROW, _PAD = range(5)  # slot kinds: the fast cases each parameter type has
_MAX_DTYPES = 64  # per parameter: the dtypes known to pass every check silently


class ArgPacker:
    """A kernel's arguments -> its parameter buffer, planned once per kernel: a struct format for the
    whole buffer and per parameter the cheap cases (a contiguous writable ndarray of a dtype that has
    passed the checks before, a Python int or float in range) packed without calls.  Anything else
    takes `_encode`, the full checks with their error messages, and its bytes are patched into the
    buffer (by-value aggregates, f16 values, NumPy scalars, Pointer, read-only or new dtypes...).

    Per launch nothing is shared or cached but the dtypes a parameter has accepted silently, which
    depend on no argument value: concurrent launches from several threads stay independent."""

    def __init__(self, kernel: str, params: list[ir.VarDecl], lay, access: KernelAccess,
                 range_params: list[int]) -> None:
        """`range_params`: the parameters with a range table entry, in table order (lower/safety/bounds.py)."""
        self.kernel = kernel
        self.params = params
        self.access = access
        self.size = max(lay.size, 8)  # bytes of the parameter buffer
        fmt: list[str] = []
        pos = 0
        slots = []
        rindex = {i: 2 * k for k, i in enumerate(range_params)}
        for i, (p, off) in enumerate(zip(params, lay.offsets, strict=True)):
            pa = access.params[i]
            t = p.type
            size = ir.type_size(t)
            wide = not p.dims and size == 8
            kind, ch, lo, hi, mask = _PAD, "", 1, 0, 0  # lo > hi: no int takes the fast path
            if p.dims or t in ("f16", "bf16"):
                pass
            elif t in ("f32", "f64"):
                kind, ch = (_F32, "f") if t == "f32" else (_F64, "d")
            elif size in (1, 2, 4, 8):  # as _encode: every other type takes an integer
                kind, ch = (_WIDE if size == 8 else _NARROW), {1: "B", 2: "H", 4: "I", 8: "Q"}[size]
                mask = (1 << (8 * size)) - 1
                if not (pa.pointer and wide or pa.texture):  # an int for a dereferenced pointer or a
                    # texture/surface handle is refused (slow path)
                    lo, hi = (0, 1) if t == "pred" else (-(2 ** (8 * size - 1)), mask)
            if off > pos:
                fmt.append(f"{off - pos}x")
            width = 0 if kind == _PAD else size
            if kind == _PAD:
                pos = off
            else:
                fmt.append(ch)
                pos = off + width
            placeholder = None if kind == _PAD else (0.0 if kind in (_F32, _F64) else 0)
            r = rindex.get(i, -1)
            # (kind, index, lo, hi, mask, read-only ok, dtypes known to pass, range index, offset, placeholder)
            # arrays take the fast path only where they have a range table entry to fill
            known: set | frozenset = set() if r >= 0 else frozenset()
            slots.append((kind, i, lo, hi, mask, not pa.may_write, known, r, off, placeholder))
        self.slots = slots
        self.format = "".join(fmt)  # no byte order, no trailing padding: launch.RecordPlan adds them
        self.nranges = len(range_params)

    def pack(self, args, checked: bool) -> tuple[list, list | None, list | None]:
        """(values for `format`, the range table's [lo, len) pairs of the 64-bit parameters when
        `checked`, else None, and (offset, bytes) patches for the parameters packed the slow way)."""
        if type(args) is not tuple and type(args) is not list:
            if not isinstance(args, tuple | list):
                raise TypeError(f"kernel '{self.kernel}': args must be a tuple or list, got {_describe(args)}")
        if len(args) != len(self.slots):
            names = ", ".join(f"{p.name}: .{p.type}" for p in self.params)
            raise TypeError(f"kernel '{self.kernel}' takes {len(self.params)} arguments ({names}), got {len(args)}")
        vals: list = []
        rng = [0] * (2 * self.nranges) if checked else None
        patches = None
        address = array_address
        ndarray = np.ndarray
        for (kind, i, lo, hi, mask, ro_ok, ok, r, off, placeholder), v in zip(self.slots, args, strict=True):
            tv = type(v)
            if kind == _WIDE:
                a = v.array if tv is DeviceArray else v
                if type(a) is ndarray:
                    fl = a.flags
                    if a.dtype in ok and (fl.writeable or ro_ok) and (fl.c_contiguous or fl.f_contiguous):
                        addr = address(a)
                        vals.append(addr)
                        if rng is not None:
                            rng[r] = addr
                            rng[r + 1] = a.nbytes
                        continue
                elif tv is int and lo <= v <= hi:
                    vals.append(v & mask)
                    continue
            elif kind == _NARROW:
                if tv is int and lo <= v <= hi:
                    vals.append(v & mask)
                    continue
            elif kind != _PAD:
                if tv is float:
                    vals.append(v)
                    continue
                if tv is int:
                    vals.append(float(v))
                    continue
            # the slow way: every check, with its error message (and the width warning, once)
            data = _encode(self.kernel, i, self.params[i], v, [], self.access.params[i])
            if placeholder is not None:
                vals.append(placeholder)
            if patches is None:
                patches = []
            patches.append((off, data))
            if r >= 0:
                a = v.array if isinstance(v, DeviceArray) else v
                if isinstance(a, np.ndarray):
                    if rng is not None:
                        rng[r] = a.__array_interface__["data"][0]
                        rng[r + 1] = a.nbytes
                    # a dtype that passed silently takes the fast path from now on
                    if len(ok) < _MAX_DTYPES and not a.dtype.hasobject and (
                            not self.access.params[i].widths
                            or _width_mismatch(a.dtype, self.access.params[i].widths) is None):
                        ok.add(a.dtype)
                elif rng is not None and isinstance(v, Pointer):
                    if v.memory is not None:  # the memory it points into
                        rng[r] = v.memory.__array_interface__["data"][0]
                        rng[r + 1] = v.memory.nbytes
                    elif v.address:
                        rng[r + 1] = -1  # the caller vouches for a raw address: no range is known
        return vals, rng, patches
