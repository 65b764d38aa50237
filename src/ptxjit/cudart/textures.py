"""CUDA arrays, texture objects and surface objects in the runtime API, on ptxjit.texture.

A `cudaArray_t` is a handle to a ptxjit.texture.CUDAarray (its elements in host memory); the copies to and
from it (`cudaMemcpy2DToArray`, `cudaMemcpy2DFromArray`, `cudaMemcpyToArray`) address it as CUDA does, in
bytes along a row and rows down.  `cudaCreateTextureObject` makes a TextureObject over an array, linear
memory or pitched 2D memory (a view of the driver allocation the pointer is in), and
`cudaCreateSurfaceObject` a SurfaceObject over an array made with cudaArraySurfaceLoadStore; the
`cudaTextureObject_t`/`cudaSurfaceObject_t` a program gets is the object's handle, the 64-bit value the
translated kernels look up.

A texture keeps a copy of its texels in the format the kernels read.  Before a launch that receives a
texture object, the copy is refreshed in stream order (a host step on the launch's stream just before the
kernel), so the kernel sees the memory as the work before it left it — including copies and kernels that
wrote the linear memory under a texture.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ptxjit import texture as T
from ptxjit.cudart import base as B
from ptxjit.cudart import errors as RE
from ptxjit.cudart.errors import RuntimeError_
from ptxjit.driver import capture as _capture
from ptxjit.driver import memory as M
from ptxjit.driver import streams as _streams
from ptxjit.driver.context import DRIVER

entry = B.entry

INVALID_HANDLE = RE.CODES["cudaErrorInvalidResourceHandle"]
_ARRAY_FLAGS = T.cudaArrayLayered | T.cudaArraySurfaceLoadStore | 0x4 | 0x8 | 0x10 | 0x20  # + cubemap, gather..

_ARRAYS: dict[int, T.CUDAarray] = {}  # cudaArray_t -> the array
_OBJECTS: dict[int, T.TextureObject | T.SurfaceObject] = {}  # texture/surface handle -> the object
_next_array = [0x7C000000]


def _array(h) -> T.CUDAarray:
    a = _ARRAYS.get(B.h(h))
    if a is None:
        raise RuntimeError_(INVALID_HANDLE, f"{B.h(h):#x} is not a live cudaArray_t")
    return a


def _format(desc) -> T.ChannelFormatDescriptor:
    d = B.out(desc, "desc")
    try:
        return T.ChannelFormatDescriptor(d.x, d.y, d.z, d.w, d.f)
    except T.TextureError as exc:
        raise RuntimeError_(RE.INVALID_VALUE, str(exc)) from None


def _new_array(out, desc, width: int, height: int, depth: int, flags: int) -> None:
    B.ctx()
    B.out(out, "array")
    fmt = _format(desc)
    if flags & ~_ARRAY_FLAGS:
        raise RuntimeError_(RE.INVALID_VALUE, f"unknown cudaArray flags {flags:#x}")
    if flags & ~(T.cudaArrayLayered | T.cudaArraySurfaceLoadStore):
        raise RuntimeError_(RE.NOT_SUPPORTED, f"cudaArray flags {flags:#x}: cubemap, texture-gather and "
                                              "sparse arrays are not supported")
    try:
        a = T.CUDAarray(fmt, width, height, depth, flags)
    except T.TextureError as exc:
        raise RuntimeError_(RE.INVALID_VALUE, str(exc)) from None
    _next_array[0] += 16
    _ARRAYS[_next_array[0]] = a
    out[0] = B.ffi.cast("void *", _next_array[0])


@entry
def cudaMallocArray(out, desc, width, height, flags):
    _new_array(out, desc, width, height, 0, flags)


@entry
def ptxjit_rt_malloc_3d_array(out, desc, width, height, depth, flags):
    _new_array(out, desc, width, height, depth, flags)


B.SHOWN_AS["ptxjit_rt_malloc_3d_array"] = "cudaMalloc3DArray"


@entry
def cudaFreeArray(h):
    B.ctx()
    if B.h(h) == 0:
        return
    _array(h)
    _streams.synchronize_all(DRIVER.current())  # as cudaFree: the work that may use it completes first
    del _ARRAYS[B.h(h)]


@entry
def cudaArrayGetInfo(desc, extent, flags, h):
    a = _array(h)
    if desc != B.ffi.NULL:
        desc.x, desc.y, desc.z, desc.w, desc.f = a.desc.x, a.desc.y, a.desc.z, a.desc.w, a.desc.f
    if extent != B.ffi.NULL:
        extent.width, extent.height, extent.depth = a.width, a.height, a.depth
    if flags != B.ffi.NULL:
        flags[0] = a.flags


def _rows(a: T.CUDAarray) -> np.ndarray:
    """The array's bytes as (rows, row bytes): every layer's or slice's rows one after another."""
    return a._data.reshape(-1).view(np.uint8).reshape(-1, a.width * a.desc.channels * a.desc.bits // 8)


def _region(a: T.CUDAarray, x: int, y: int, width: int, height: int, what: str) -> np.ndarray:
    rows = _rows(a)
    if x + width > rows.shape[1] or y + height > rows.shape[0]:
        raise RuntimeError_(RE.INVALID_VALUE, f"{what}: {width} bytes x {height} rows at ({x}, {y}) run past the "
                                              f"array's {rows.shape[1]} bytes x {rows.shape[0]} rows")
    return rows[y:y + height, x:x + width]


def _host_rows(p: int, pitch: int, width: int, height: int, what: str) -> np.ndarray:
    if height and pitch < width:
        raise RuntimeError_(RE.INVALID_VALUE, f"{what}: pitch {pitch} is smaller than the width {width}")
    span = pitch * (height - 1) + width if height else 0
    if span and p == 0:
        raise RuntimeError_(RE.INVALID_VALUE, f"{what}: NULL pointer")
    M.REGISTRY.check_range(p, span, what)
    flat = np.ctypeslib.as_array((ctypes.c_uint8 * span).from_address(p)) if span else np.zeros(0, np.uint8)
    return np.lib.stride_tricks.as_strided(flat, (height, width), (pitch, 1))


def _copy_to_array(dst, x: int, y: int, src: int, spitch: int, width: int, height: int, kind: int,
                   what: str) -> None:
    ctx = B.ctx()
    B.kind(kind, what)
    a = _array(dst)
    region = _region(a, x, y, width, height, what)
    source = _host_rows(src, spitch, width, height, what + " source")
    B.sync_legacy(ctx)
    region[...] = source
    a._version += 1  # textures over it refresh their copy at their next launch


@entry
def cudaMemcpy2DToArray(dst, x, y, src, spitch, width, height, kind):
    _copy_to_array(dst, x, y, B.h(src), spitch, width, height, kind, "cudaMemcpy2DToArray")


@entry
def cudaMemcpyToArray(dst, x, y, src, count, kind):
    # deprecated, still declared: `count` bytes from (x, y), continuing on the next rows
    a = _array(dst)
    row = _rows(a).shape[1]
    if x == 0 and count % row == 0:
        _copy_to_array(dst, 0, y, B.h(src), row, row, count // row, kind, "cudaMemcpyToArray")
    elif x + count <= row:
        _copy_to_array(dst, x, y, B.h(src), count, count, 1, kind, "cudaMemcpyToArray")
    else:
        raise RuntimeError_(RE.NOT_SUPPORTED, "cudaMemcpyToArray: a copy that starts inside a row and spans "
                                              "rows; use cudaMemcpy2DToArray")


@entry
def cudaMemcpy2DFromArray(dst, dpitch, src, x, y, width, height, kind):
    ctx = B.ctx()
    B.kind(kind, "cudaMemcpy2DFromArray")
    region = _region(_array(src), x, y, width, height, "cudaMemcpy2DFromArray")
    target = _host_rows(B.h(dst), dpitch, width, height, "cudaMemcpy2DFromArray destination")
    B.sync_legacy(ctx)
    target[...] = region


@entry
def cudaMemcpy2DArrayToArray(dst, dx, dy, src, sx, sy, width, height, kind):
    ctx = B.ctx()
    B.kind(kind, "cudaMemcpy2DArrayToArray")
    d = _array(dst)
    to = _region(d, dx, dy, width, height, "cudaMemcpy2DArrayToArray destination")
    from_ = _region(_array(src), sx, sy, width, height, "cudaMemcpy2DArrayToArray source")
    B.sync_legacy(ctx)
    to[...] = from_
    d._version += 1


# ---------------------------------------------------------------------------- texture and surface objects
_RES_ARRAY, _RES_MIPMAP, _RES_LINEAR, _RES_PITCH2D = 0, 1, 2, 3


def _memory_view(p: int, nbytes: int, what: str) -> np.ndarray:
    a = M.REGISTRY.find(p)
    if a is None or p + nbytes > a.base + a.size:
        raise RuntimeError_(RE.INVALID_VALUE, f"{what}: {nbytes} bytes at {p:#x} are not in one allocation of "
                                              "cudaMalloc or cudaMallocPitch")
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(p))


def _resource(r) -> T.ResourceDescriptor:
    r = B.out(r, "pResDesc")
    kind = r.resType
    try:
        if kind == _RES_ARRAY:
            return T.ResourceDescriptor(T.cudaResourceTypeArray, cuArr=_array(r.res.array.array))
        if kind == _RES_LINEAR:
            lin = r.res.linear
            fmt = _format(B.ffi.addressof(lin.desc))
            data = _memory_view(B.h(lin.devPtr), lin.sizeInBytes, "linear texture memory")
            return T.ResourceDescriptor(T.cudaResourceTypeLinear, arr=data, chDesc=fmt, sizeInBytes=lin.sizeInBytes)
        if kind == _RES_PITCH2D:
            p2 = r.res.pitch2D
            fmt = _format(B.ffi.addressof(p2.desc))
            esize = fmt.channels * fmt.bits // 8
            if p2.height < 1 or p2.pitchInBytes < p2.width * esize:
                raise RuntimeError_(RE.INVALID_VALUE, f"pitched texture memory: width {p2.width}, height "
                                                      f"{p2.height}, pitch {p2.pitchInBytes}")
            if p2.pitchInBytes % DRIVER.model.attribute(51):  # CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT
                raise RuntimeError_(RE.INVALID_VALUE, f"pitched texture memory: pitch {p2.pitchInBytes} is not a "
                                                      "multiple of the texture pitch alignment (use cudaMallocPitch)")
            nbytes = p2.pitchInBytes * (p2.height - 1) + p2.width * esize
            data = _memory_view(B.h(p2.devPtr), nbytes, "pitched texture memory")
            return T.ResourceDescriptor(T.cudaResourceTypePitch2D, arr=data, chDesc=fmt, width=p2.width,
                                        height=p2.height, pitchInBytes=p2.pitchInBytes)
    except T.TextureError as exc:
        raise RuntimeError_(RE.INVALID_VALUE, str(exc)) from None
    if kind == _RES_MIPMAP:
        raise RuntimeError_(RE.NOT_SUPPORTED, "mipmapped arrays are not supported")
    raise RuntimeError_(RE.INVALID_VALUE, f"{kind} is not a cudaResourceType")


@entry
def cudaCreateTextureObject(out, res, tex, view):
    B.ctx()
    B.out(out, "pTexObject")
    t = B.out(tex, "pTexDesc")
    if view != B.ffi.NULL:
        raise RuntimeError_(RE.NOT_SUPPORTED, "cudaCreateTextureObject: resource views are not supported")
    desc = T.TextureDescriptor(addressModes=tuple(t.addressMode[i] for i in range(3)), filterMode=t.filterMode,
                               readMode=t.readMode, sRGB=t.sRGB,
                               borderColors=tuple(t.borderColor[i] for i in range(4)),
                               normalizedCoords=t.normalizedCoords, maxAnisotropy=t.maxAnisotropy)
    try:
        obj = T.TextureObject(_resource(res), desc)
    except T.TextureError as exc:
        raise RuntimeError_(RE.INVALID_VALUE, f"cudaCreateTextureObject: {exc}") from None
    _OBJECTS[obj.ptr] = obj
    out[0] = obj.ptr


@entry
def cudaCreateSurfaceObject(out, res):
    B.ctx()
    B.out(out, "pSurfObject")
    r = _resource(res)
    if r.restype != T.cudaResourceTypeArray:
        raise RuntimeError_(RE.INVALID_VALUE, "cudaCreateSurfaceObject: the resource must be a CUDA array")
    if not r.cuArr.flags & T.cudaArraySurfaceLoadStore:
        raise RuntimeError_(RE.INVALID_VALUE, "cudaCreateSurfaceObject: the array was not made with "
                                              "cudaArraySurfaceLoadStore")
    obj = T.SurfaceObject(r)
    _OBJECTS[obj.ptr] = obj
    out[0] = obj.ptr


def _destroy(h: int, kind: type, what: str) -> None:
    B.ctx()
    obj = _OBJECTS.get(h)
    if not isinstance(obj, kind):
        raise RuntimeError_(RE.INVALID_VALUE, f"{what}: {h:#x} is not a live object of this kind")
    _streams.synchronize_all(DRIVER.current())  # launches already queued still read it
    obj.free()
    del _OBJECTS[h]


@entry
def cudaDestroyTextureObject(h):
    _destroy(h, T.TextureObject, "cudaDestroyTextureObject")


@entry
def cudaDestroySurfaceObject(h):
    _destroy(h, T.SurfaceObject, "cudaDestroySurfaceObject")


# ---------------------------------------------------------------------------- launches
def _texture_offsets(f) -> tuple[int, ...]:
    """The parameter offsets of kernel `f`'s texture handles (computed once per function)."""
    offs = getattr(f, "_rt_texture_offsets", None)
    if offs is None:
        kinds = T.handle_params(f.kernel.fn)
        names = [p.name for p in f.kernel.fn.params]
        offs = tuple(f.param_offsets[names.index(n)] for n, k in kinds.items() if k == T.KIND_TEXTURE)
        f._rt_texture_offsets = offs
    return offs


def before_launch(f, raw: bytes, stream) -> None:
    """The texture objects a launch receives refresh their texel copy in stream order, just before it."""
    if not _OBJECTS:
        return
    offs = _texture_offsets(f)
    if not offs:
        return
    if isinstance(stream, int):
        if _capture.of(stream) is not None:  # captured: the graph's launch refreshes them
            return
        stream = _streams.resolve(DRIVER, stream)
    for off in offs:
        obj = _OBJECTS.get(int.from_bytes(raw[off:off + 8], "little"))
        if isinstance(obj, T.TextureObject):
            _streams.enqueue_host(stream, lambda _, o=obj: o.refresh())
