"""Textures and surfaces from NumPy arrays, with CuPy's `cupy.cuda.texture` API.

    desc = texture.ChannelFormatDescriptor(32, 0, 0, 0, texture.cudaChannelFormatKindFloat)
    arr = texture.CUDAarray(desc, width, height)
    arr.copy_from(host)                                   # (height, width) float32
    res = texture.ResourceDescriptor(texture.cudaResourceTypeArray, cuArr=arr)
    tex = texture.TextureObject(res, texture.TextureDescriptor(
        (texture.cudaAddressModeClamp,) * 2, texture.cudaFilterModeLinear, texture.cudaReadModeElementType))
    kernel(grid, block, (tex, ...))                        # passed where CUDA passes cudaTextureObject_t

Design (the generated code is lower/rules/texture.py):

- every live texture or surface object owns one row of a process-wide int64 table (`TABLE`), reached by
  the generated code through the symbol `__ptxjit_texture_table` (llvm.add_symbol, so that cached
  object code stays valid).  The object's handle -- the u64 the kernel receives -- is
  `kind << 48 | generation << 16 | row`; the row's first word holds the handle while the object lives
  and 0 once it is freed.  The code checks `row < ROWS and TABLE[row][W_HANDLE] == handle` (and the
  kind) before it reads anything else, so an integer, a stale handle or a surface used as a texture
  traps instead of reading memory ptxjit does not own;
- a texture keeps a *canonical copy* of its texels: 4 channels of float32 (float formats, or the
  normalized-float read mode) or int32 (integer element-type reads), missing channels 0, 0, 0, 1.
  The code then needs one 16-byte load per texel whatever the format.  The copy is refreshed from the
  resource at every launch that receives the object (texture reads see the memory as it was when the
  launch started; CUDA leaves writes during the kernel that reads the texture undefined anyway);
- a surface reads and writes the CUDA array's own bytes (byte x coordinate, as CUDA's surf*D*).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np

from ptxjit.lower.texture_table import (  # noqa: F401  (the table's layout, as the generated code reads it)
    KIND_SURFACE,
    KIND_TEXTURE,
    MODE_BORDER,
    MODE_CLAMP,
    MODE_MIRROR,
    MODE_WRAP,
    PTX_ADDR_MODE,
    ROWS,
    SYMBOL,
    TEXTURE_TRAP,
    TRAP_BAD_SURFACE,
    TRAP_BAD_TEXTURE,
    TRAP_SURFACE_RANGE,
    W_ADDR0,
    W_ADDR1,
    W_ADDR2,
    W_BORDER,
    W_DATA,
    W_DEPTH,
    W_DIMS,
    W_ELEM,
    W_FILTER,
    W_FLOATS,
    W_HANDLE,
    W_HEIGHT,
    W_LAYERED,
    W_LAYERS,
    W_NORM,
    W_PITCH,
    W_QADDR0,
    W_SLICE,
    W_WBYTES,
    W_WIDTH,
    W_ZEXT,
    WORDS,
    trap_word,
)
from ptxjit.runtime.memory import DeviceArray

# ---------------------------------------------------------------- CUDA's enumerations (cuda runtime)
cudaChannelFormatKindSigned, cudaChannelFormatKindUnsigned, cudaChannelFormatKindFloat = 0, 1, 2
cudaResourceTypeArray, cudaResourceTypeMipmappedArray, cudaResourceTypeLinear, cudaResourceTypePitch2D = 0, 1, 2, 3
cudaAddressModeWrap, cudaAddressModeClamp, cudaAddressModeMirror, cudaAddressModeBorder = 0, 1, 2, 3
cudaFilterModePoint, cudaFilterModeLinear = 0, 1
cudaReadModeElementType, cudaReadModeNormalizedFloat = 0, 1
cudaArrayDefault, cudaArrayLayered, cudaArraySurfaceLoadStore = 0, 1, 2

# ---------------------------------------------------------------- the table the generated code reads
# (its layout: lower/texture_table.py)
TABLE = np.zeros((ROWS, WORDS), np.int64)
llvm.add_symbol(SYMBOL, TABLE.ctypes.data)
_lock = threading.Lock()
_free_rows = list(range(ROWS - 1, -1, -1))
_generation = itertools.count(1)


class TextureError(ValueError):
    """A texture or surface object that CUDA would refuse to create (cudaErrorInvalidValue)."""


@dataclass(frozen=True)
class ChannelFormatDescriptor:
    """cudaChannelFormatDesc: bits of the x, y, z, w channels and their kind (signed/unsigned/float)."""

    x: int
    y: int
    z: int
    w: int
    f: int

    def __post_init__(self) -> None:
        bits = [b for b in (self.x, self.y, self.z, self.w) if b]
        if not bits or any(b != bits[0] for b in bits) or [self.x, self.y, self.z, self.w][len(bits):] != \
                [0] * (4 - len(bits)):
            raise TextureError(f"channel format ({self.x}, {self.y}, {self.z}, {self.w}): channels must be "
                               f"equal sizes, leading, at least one")
        if len(bits) == 3:
            raise TextureError("channel format: 3-channel formats do not exist in CUDA; use 1, 2 or 4 channels")
        if self.f not in (0, 1, 2) or bits[0] not in ((16, 32) if self.f == 2 else (8, 16, 32)):
            raise TextureError(f"channel format: {bits[0]}-bit channels of kind {self.f} are not supported "
                               f"(8/16/32-bit signed/unsigned, 16/32-bit float)")

    @property
    def channels(self) -> int:
        return sum(1 for b in (self.x, self.y, self.z, self.w) if b)

    @property
    def bits(self) -> int:
        return self.x

    @property
    def dtype(self) -> np.dtype:
        """The NumPy type of one channel."""
        kind = {cudaChannelFormatKindSigned: "i", cudaChannelFormatKindUnsigned: "u",
                cudaChannelFormatKindFloat: "f"}[self.f]
        return np.dtype(f"{kind}{self.x // 8}")

    def get_channel_format(self) -> dict:
        return {"x": self.x, "y": self.y, "z": self.z, "w": self.w, "f": self.f}


class CUDAarray:
    """A CUDA array of width x height x depth elements (height 0: 1D; depth 0: 2D), owned by ptxjit.

    With `flags=cudaArrayLayered` the depth is the number of layers (a layered 1D array has height 0)."""

    def __init__(self, desc: ChannelFormatDescriptor, width: int, height: int = 0, depth: int = 0,
                 flags: int = 0) -> None:
        if width < 1 or height < 0 or depth < 0:
            raise TextureError(f"CUDAarray extent ({width}, {height}, {depth}) must be positive")
        if depth and not height and not flags & cudaArrayLayered:
            raise TextureError(f"CUDAarray extent ({width}, 0, {depth}): a 3D array needs a height")
        self.desc = desc
        self.width, self.height, self.depth, self.flags = width, height, depth, flags
        self.layered = bool(flags & cudaArrayLayered)
        self.ndim = 1 + (height > 0) + (depth > 0 and not self.layered)
        self.layers = max(depth, 1) if self.layered else 1
        shape = (self.layers if self.layered else max(depth, 1), max(height, 1), width, desc.channels)
        self._data = np.zeros(shape, desc.dtype)  # (layers or depth, height, width, channels)
        # what textures over this array need to know to skip refreshing their copy: the contents change
        # only by copy_from (the version) or by kernels through a live SurfaceObject (the count)
        self._version = 0
        self._surfaces = 0

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def _check(self, a: np.ndarray, what: str) -> None:
        if a.dtype != self.desc.dtype or a.size != self._data.size:
            raise TextureError(f"CUDAarray.{what}: expected {self._data.size} elements of {self.desc.dtype} "
                               f"(extent {self.width}x{self.height}x{self.depth}, {self.desc.channels} "
                               f"channel(s)), got {a.size} of {a.dtype}")

    def copy_from(self, in_arr: np.ndarray | DeviceArray, stream: object = None) -> None:
        a = np.asarray(in_arr.array if isinstance(in_arr, DeviceArray) else in_arr)
        self._check(a, "copy_from")
        self._data.reshape(-1)[...] = a.reshape(-1)
        self._version += 1

    def copy_to(self, out_arr: np.ndarray | DeviceArray, stream: object = None) -> None:
        a = out_arr.array if isinstance(out_arr, DeviceArray) else out_arr
        self._check(a, "copy_to")
        a.reshape(-1)[...] = self._data.reshape(-1)


class ResourceDescriptor:
    """cudaResourceDesc: a CUDAarray, linear memory (arr, chDesc, sizeInBytes) or pitched 2D memory
    (arr, chDesc, width, height, pitchInBytes)."""

    def __init__(self, restype: int, cuArr: CUDAarray | None = None, arr: object = None,  # noqa: N803
                 chDesc: ChannelFormatDescriptor | None = None, sizeInBytes: int = 0,  # noqa: N803
                 width: int = 0, height: int = 0, pitchInBytes: int = 0) -> None:  # noqa: N803
        self.restype = restype
        self.cuArr, self.arr, self.chDesc = cuArr, arr, chDesc
        self.sizeInBytes, self.width, self.height, self.pitchInBytes = sizeInBytes, width, height, pitchInBytes
        if restype == cudaResourceTypeArray:
            if not isinstance(cuArr, CUDAarray):
                raise TextureError("ResourceDescriptor(cudaResourceTypeArray) needs cuArr=CUDAarray")
        elif restype in (cudaResourceTypeLinear, cudaResourceTypePitch2D):
            if chDesc is None or _raw(arr) is None:
                raise TextureError("ResourceDescriptor(linear/pitch2d) needs arr (a NumPy array or DeviceArray) "
                                   "and chDesc")
            esize = chDesc.channels * chDesc.bits // 8
            nbytes = _raw(arr).nbytes
            if restype == cudaResourceTypeLinear:
                if sizeInBytes <= 0 or sizeInBytes % esize or sizeInBytes > nbytes:
                    raise TextureError(f"ResourceDescriptor(linear): sizeInBytes {sizeInBytes} must be a positive "
                                       f"multiple of the element size {esize}, at most the array's {nbytes}")
            elif width < 1 or height < 1 or pitchInBytes < width * esize or \
                    pitchInBytes * (height - 1) + width * esize > nbytes:
                raise TextureError(f"ResourceDescriptor(pitch2d): width {width}, height {height}, pitch "
                                   f"{pitchInBytes} do not fit the array's {nbytes} bytes")
        else:
            raise TextureError(f"ResourceDescriptor: resource type {restype} is not supported "
                               f"(array, linear, pitch2d; no mipmapped arrays)")

    def elements(self) -> np.ndarray:
        """The resource's elements as (layers-or-depth, height, width, channels) (a view, not a copy)."""
        if self.restype == cudaResourceTypeArray:
            assert self.cuArr is not None
            return self.cuArr._data
        ch = self.chDesc
        assert ch is not None
        raw = _raw(self.arr).reshape(-1).view(np.uint8)
        if self.restype == cudaResourceTypeLinear:
            return raw[:self.sizeInBytes].view(ch.dtype).reshape(1, 1, -1, ch.channels)
        esize = ch.channels * ch.bits // 8
        rows = np.lib.stride_tricks.as_strided(raw, (self.height, self.width * esize), (self.pitchInBytes, 1))
        return np.ascontiguousarray(rows).view(ch.dtype).reshape(1, self.height, self.width, ch.channels)

    def shape(self) -> tuple[int, int, int, int, int, bool]:
        """(width, height, depth, layers, dims, layered)."""
        if self.restype == cudaResourceTypeArray:
            a = self.cuArr
            assert a is not None
            return (a.width, max(a.height, 1), 1 if a.layered else max(a.depth, 1), a.layers,
                    a.ndim, a.layered)
        e = self.elements()
        return e.shape[2], e.shape[1], 1, 1, 1 if self.restype == cudaResourceTypeLinear else 2, False

    @property
    def format(self) -> ChannelFormatDescriptor:
        return self.cuArr.desc if self.cuArr is not None else self.chDesc  # type: ignore[return-value]


def _raw(arr: object) -> np.ndarray | None:
    a = arr.array if isinstance(arr, DeviceArray) else arr
    return a if isinstance(a, np.ndarray) and a.flags.c_contiguous else None


@dataclass
class TextureDescriptor:
    """cudaTextureDesc: address mode per dimension, filter mode, read mode, border color, normalized
    coordinates (sRGB and anisotropy are accepted for CuPy compatibility and must stay off)."""

    addressModes: tuple[int, ...] | None = None  # noqa: N815
    filterMode: int = cudaFilterModePoint  # noqa: N815
    readMode: int = cudaReadModeElementType  # noqa: N815
    sRGB: int | None = None  # noqa: N815
    borderColors: tuple[float, ...] | None = None  # noqa: N815
    normalizedCoords: int | None = None  # noqa: N815
    maxAnisotropy: int | None = None  # noqa: N815


class _Handle:
    """A row of TABLE and the handle naming it; freed explicitly (`free`) or when collected."""

    kind = 0

    def __init__(self) -> None:
        with _lock:
            if not _free_rows:
                raise TextureError(f"too many live texture/surface objects (at most {ROWS})")
            self._row = _free_rows.pop()
            self.ptr = self.kind << 48 | (next(_generation) & 0xFFFFFFFF) << 16 | self._row
        self._alive = True

    def _publish(self, words: dict[int, int]) -> None:
        row = TABLE[self._row]
        if row[W_HANDLE] != self.ptr:  # first publication: a reused row holds another object's words
            row[:] = 0
        for k, v in words.items():
            row[k] = v
        row[W_HANDLE] = self.ptr  # last: the row is valid only once complete

    def free(self) -> None:
        """Destroy the object (cudaDestroyTextureObject): later launches refuse it, kernels trap on it."""
        with _lock:
            if self._alive:
                self._alive = False
                TABLE[self._row, W_HANDLE] = 0
                _free_rows.append(self._row)

    @property
    def alive(self) -> bool:
        return self._alive

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:  # interpreter shutdown
            pass

    def __int__(self) -> int:
        return self.ptr


def _canonical(res: ResourceDescriptor, normalized: bool) -> np.ndarray:
    """The texels as (layers*depth, height, width, 4) float32 or int32, missing channels (0, 0, 0, 1)."""
    e = res.elements()
    fmt = res.format
    floats = fmt.f == cudaChannelFormatKindFloat or normalized
    out = np.zeros((*e.shape[:3], 4), np.float32 if floats else np.int32)
    out[..., 3] = 1
    if fmt.f == cudaChannelFormatKindFloat:
        out[..., :fmt.channels] = e.astype(np.float32)
    elif normalized:  # CUDA Programming Guide: unsigned n bits -> [0, 1], signed -> [-1, 1]
        if fmt.f == cudaChannelFormatKindUnsigned:
            out[..., :fmt.channels] = e.astype(np.float32) / np.float32(2 ** fmt.bits - 1)
        else:
            out[..., :fmt.channels] = np.maximum(e.astype(np.float32) / np.float32(2 ** (fmt.bits - 1) - 1),
                                                 np.float32(-1))
    else:
        out[..., :fmt.channels] = e.astype(np.int64).astype(np.uint32).view(np.int32) \
            if fmt.f == cudaChannelFormatKindUnsigned else e.astype(np.int32)
    return out


class TextureObject(_Handle):
    """cudaTextureObject_t over a resource; pass it as a kernel argument."""

    kind = KIND_TEXTURE

    def __init__(self, ResDesc: ResourceDescriptor, TexDesc: TextureDescriptor) -> None:  # noqa: N803
        fmt = ResDesc.format
        normalized = TexDesc.readMode == cudaReadModeNormalizedFloat and fmt.f != cudaChannelFormatKindFloat
        if normalized and fmt.bits == 32:
            raise TextureError("TextureObject: cudaReadModeNormalizedFloat needs 8- or 16-bit integer channels")
        floats = fmt.f == cudaChannelFormatKindFloat or normalized
        if TexDesc.filterMode == cudaFilterModeLinear and not floats:
            raise TextureError("TextureObject: linear filtering needs a float result (a float format, or "
                               "cudaReadModeNormalizedFloat)")
        if TexDesc.filterMode not in (0, 1) or TexDesc.readMode not in (0, 1):
            raise TextureError(f"TextureObject: filter mode {TexDesc.filterMode} / read mode {TexDesc.readMode}")
        if TexDesc.sRGB or (TexDesc.maxAnisotropy or 0) > 1:
            raise TextureError("TextureObject: sRGB and anisotropic filtering are not supported")
        modes = list(TexDesc.addressModes or ())
        if any(m not in (0, 1, 2, 3) for m in modes):
            raise TextureError(f"TextureObject: address modes {modes}: each must be wrap/clamp/mirror/border")
        modes = (modes + [cudaAddressModeWrap] * 3)[:3]
        self._asked = [PTX_ADDR_MODE[m] for m in modes]
        norm = bool(TexDesc.normalizedCoords)
        if not norm:  # wrap and mirror exist only with normalized coordinates: CUDA clamps
            modes = [MODE_CLAMP if m in (cudaAddressModeWrap, cudaAddressModeMirror) else m for m in modes]
        border = list(TexDesc.borderColors or (0.0, 0.0, 0.0, 0.0))
        if len(border) != 4:
            raise TextureError(f"TextureObject: borderColors must have 4 values, got {len(border)}")
        super().__init__()
        self.ResDesc, self.TexDesc = ResDesc, TexDesc
        self._normalized, self._floats = normalized, floats
        self._modes, self._norm = modes, norm
        bwords = (np.array(border, np.float32).view(np.int32) if floats else
                  np.array([int(v) for v in border], np.int64).astype(np.int32))
        self._border = [int(v) & 0xFFFFFFFF for v in bwords]
        self._texels = np.zeros(0, np.float32)
        self._seen = -1  # the CUDAarray version the copy was made from
        self.refresh()

    def refresh(self) -> None:
        """Copy the resource's current contents into the texel copy the kernels read (done by every
        launch that receives this object; skipped for a CUDAarray that provably did not change)."""
        if not self._alive:
            return
        a = self.ResDesc.cuArr
        if a is not None:
            if a._surfaces == 0 and a._version == self._seen:
                return
            self._seen = a._version
        w, h, d, layers, dims, layered = self.ResDesc.shape()
        texels = np.ascontiguousarray(_canonical(self.ResDesc, self._normalized))
        if texels.shape == self._texels.shape and texels.dtype == self._texels.dtype:
            # in place: a launch still running in another thread keeps reading valid memory
            self._texels[...] = texels
            return
        self._texels = texels  # kept alive as long as the row points to it
        self._publish({W_DATA: texels.ctypes.data, W_WIDTH: w, W_HEIGHT: h, W_DEPTH: d, W_LAYERS: layers,
                       W_FILTER: self.TexDesc.filterMode, W_NORM: int(self._norm),
                       W_ADDR0: self._modes[0], W_ADDR1: self._modes[1], W_ADDR2: self._modes[2],
                       W_FLOATS: int(self._floats), W_DIMS: dims, W_LAYERED: int(layered),
                       **{W_QADDR0 + i: v for i, v in enumerate(self._asked)},
                       **{W_BORDER + i: v for i, v in enumerate(self._border)}})

    def GetResourceDesc(self) -> ResourceDescriptor:  # noqa: N802
        return self.ResDesc

    def GetTextureDesc(self) -> TextureDescriptor:  # noqa: N802
        return self.TexDesc


class SurfaceObject(_Handle):
    """cudaSurfaceObject_t over a CUDAarray; surf*Dread/write address its bytes (x in bytes)."""

    kind = KIND_SURFACE

    def __init__(self, ResDesc: ResourceDescriptor) -> None:  # noqa: N803
        if ResDesc.restype != cudaResourceTypeArray:
            raise TextureError("SurfaceObject needs a cudaResourceTypeArray resource")
        a = ResDesc.cuArr
        assert a is not None
        super().__init__()
        self.ResDesc = ResDesc
        a._surfaces += 1  # kernels may now write the array: textures over it refresh at every launch
        data = a._data
        esize = a.desc.channels * a.desc.bits // 8
        # a layer is addressed as a slice: _data is (layers or depth, height, width, channels)
        self._publish({W_DATA: data.ctypes.data, W_WIDTH: a.width, W_HEIGHT: max(a.height, 1),
                       W_DEPTH: 1 if a.layered else max(a.depth, 1), W_LAYERS: a.layers,
                       W_ZEXT: data.shape[0], W_PITCH: a.width * esize,
                       W_SLICE: a.width * esize * max(a.height, 1), W_WBYTES: a.width * esize, W_ELEM: esize,
                       W_DIMS: a.ndim, W_LAYERED: int(a.layered)})

    def refresh(self) -> None:
        """Nothing to copy: a surface works on the array's own bytes."""

    def free(self) -> None:
        if self._alive and self.ResDesc.cuArr is not None:
            self.ResDesc.cuArr._surfaces -= 1
        super().free()

    def GetResourceDesc(self) -> ResourceDescriptor:  # noqa: N802
        return self.ResDesc


# ---------------------------------------------------------------- traps


def explain_texture_trap(arg: int, err: BaseException) -> BaseException:
    """The KernelTrap of a texture/surface instruction, with the reason in words."""
    from ptxjit.errors import KernelTrap

    if not isinstance(err, KernelTrap):
        return err
    why, low = arg >> 48 & 0xFF, arg & (1 << 48) - 1
    if why == TRAP_SURFACE_RANGE:
        reason = "executed trap: a surface access out of range with .trap (cudaBoundaryModeTrap)"
    elif why in (TRAP_BAD_TEXTURE, TRAP_BAD_SURFACE):
        what = "TextureObject" if why == TRAP_BAD_TEXTURE else "SurfaceObject"
        reason = (f"executed trap: the handle (low 48 bits {low:#x}) is not a live ptxjit.texture.{what} "
                  f"(an integer, a freed object or the other kind; nothing was read)")
    else:
        return err
    return KernelTrap(err.kernel, err.cta, err.thread, err.where, reason)


# ---------------------------------------------------------------- kernel arguments
HANDLE_OPCODES = {"tex": KIND_TEXTURE, "tld4": KIND_TEXTURE, "txq": KIND_TEXTURE,
                  "suld": KIND_SURFACE, "sust": KIND_SURFACE, "suq": KIND_SURFACE, "sured": KIND_SURFACE}


def handle_operand(ins) -> object | None:
    """The register (or symbol) an instruction of HANDLE_OPCODES takes as its texture/surface."""
    from ptxjit.frontend import ir

    for op in ins.operands:
        if isinstance(op, ir.Addr):
            return op.base
        if isinstance(op, ir.Vec) and op.items and isinstance(op.items[0], ir.Addr):
            return op.items[0].base
    return None


def handle_params(fn) -> dict[str, int]:
    """Parameter name -> KIND_TEXTURE/KIND_SURFACE for the parameters whose value the function uses as a
    texture or surface handle (loaded with ld.param into a register, possibly moved, then used)."""
    from ptxjit.frontend import ir

    names = {p.name for p in fn.params}
    origin: dict[str, str] = {}
    for ins in fn.instructions:
        ops = ins.operands
        if len(ops) == 2 and isinstance(ops[0], ir.Reg):
            src = ops[1]
            if ins.opcode == "ld" and isinstance(src, ir.Addr) and isinstance(src.base, ir.Sym) \
                    and src.base.name in names and src.offset == 0:
                origin[ops[0].name] = src.base.name
            elif ins.opcode == "mov" and isinstance(src, ir.Reg) and src.name in origin:
                origin[ops[0].name] = origin[src.name]
    out: dict[str, int] = {}
    for ins in fn.instructions:
        kind = HANDLE_OPCODES.get(ins.opcode)
        h = handle_operand(ins) if kind else None
        if isinstance(h, ir.Reg) and h.name in origin:
            out.setdefault(origin[h.name], kind)  # type: ignore[arg-type]
    return out


def is_handle_object(v: object) -> bool:
    return isinstance(v, _Handle)


def encode_argument(where: str, kind: int, v: object, size: int = 8) -> bytes:
    """The 8 bytes of a texture/surface argument; `kind` is what the kernel uses the parameter as
    (0: not known to be a handle).  Refuses integers and dead or mismatched objects, naming `where`."""
    want = {KIND_TEXTURE: "a ptxjit.texture.TextureObject", KIND_SURFACE: "a ptxjit.texture.SurfaceObject"}
    if not isinstance(v, _Handle):
        raise TypeError(f"{where} is used by the kernel as a "
                        f"{'texture' if kind == KIND_TEXTURE else 'surface'}: pass {want[kind]}, got "
                        f"{type(v).__name__} {v!r}"[:300])
    if size != 8:
        raise TypeError(f"{where}: a {type(v).__name__} is a 64-bit handle; the parameter has {size} bytes")
    if not v.alive:
        raise TypeError(f"{where}: the {type(v).__name__} was freed (a stale handle {v.ptr:#x})")
    if kind and v.kind != kind:
        raise TypeError(f"{where} is used by the kernel as a "
                        f"{'texture' if kind == KIND_TEXTURE else 'surface'}: pass {want[kind]}, got a "
                        f"{type(v).__name__}")
    v.refresh()
    return v.ptr.to_bytes(8, "little")


__all__ = [
    "CUDAarray", "ChannelFormatDescriptor", "ResourceDescriptor", "SurfaceObject", "TextureDescriptor",
    "TextureError", "TextureObject",
]
