"""The device heap: CUDA's in-kernel `malloc`/`free`, checked.

Generated code calls the three functions of lower/heap_code.py (malloc, free, find).  The state they
share is one int64 array (`_state`), reached from the code through the symbol `__ptxjit_device_heap`
(llvm.add_symbol, when the runtime is imported), so that cached object code stays valid.  Allocation is under a
spin lock (device malloc is rare); `find` reads without it.  Per granule the arena has an owner word
(int32: k + 1 for granule k's live block, -(k + 1) once freed, 0 never used) and per block start a
metadata record (size, allocating site, CTA, thread), which `describe` and `live_blocks` read back.
Blocks persist across launches, as CUDA's heap: the ones never freed are the leaks (`heap_leaks`).
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np

from ptxjit.lower.heap_code import (  # noqa: F401  (the layout, as the generated code reads it)
    BAD_DOUBLE,
    BAD_NOT_BLOCK,
    GRANULE,
    M_BX,
    M_BY,
    M_CX,
    M_CY,
    M_CZ,
    M_SITE,
    M_SIZE,
    M_TID,
    META_WORDS,
    S_BAD_ADDR,
    S_BAD_KIND,
    S_BASE,
    S_CURSOR,
    S_LIVE,
    S_LOCK,
    S_META,
    S_OWNER,
    S_SIZE,
    S_USED,
    S_WORDS,
    SYMBOL,
)

DEFAULT_HEAP_SIZE = 8 << 20  # CUDA's default cudaLimitMallocHeapSize

_state = np.zeros(S_WORDS, np.int64)
_state[S_SIZE] = DEFAULT_HEAP_SIZE
llvm.add_symbol(SYMBOL, _state.ctypes.data)  # the generated code's one reference to the heap
_py_lock = threading.Lock()
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


# ---------------------------------------------------------------------------- Python side
@dataclass(frozen=True)
class Block:
    """One live block of the device heap and who allocated it."""
    address: int
    size: int
    kernel: str
    where: str                   # "file.cu:LINE:COL (PTX file.ptx:LINE:COL)" of the malloc call
    cta: tuple[int, int, int]
    thread: tuple[int, int, int]
    linear_thread: int = 0       # the thread's index in its block (x fastest): its warp and lane

    @property
    def source(self) -> str:
        """The allocating call's place, CUDA line first ("kernel.cu:12"), without the column."""
        head = self.where.split(" (PTX ")[0]
        parts = head.rsplit(":", 2)
        return f"{parts[0]}:{parts[1]}" if len(parts) == 3 and parts[1].isdigit() else head

    def describe(self) -> str:
        return f"a {self.size}-byte block allocated by device malloc at {self.source}"


def heap_size() -> int:
    """The device heap's size limit in bytes (cudaLimitMallocHeapSize)."""
    return int(_state[S_SIZE])


def set_heap_size(nbytes: int) -> None:
    """Set the device heap's size (cudaDeviceSetLimit(cudaLimitMallocHeapSize, nbytes)): device malloc
    returns NULL beyond it.  Like CUDA, it cannot change while blocks are live; call it before launching
    kernels that use malloc (not while one runs)."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
        raise ValueError(f"set_heap_size: expected a positive number of bytes, got {nbytes!r}")
    nbytes = -(-int(nbytes) // GRANULE) * GRANULE
    if nbytes >= 1 << 35:
        raise ValueError(f"set_heap_size: {nbytes} bytes is more than the 32 GiB a device heap may have")
    with _py_lock:
        if _state[S_BASE]:
            if _state[S_LIVE]:
                raise RuntimeError(f"set_heap_size: the device heap has {int(_state[S_LIVE])} live blocks; "
                                   f"free them first (CUDA refuses to resize a heap in use too)")
            _release()
        _state[S_SIZE] = nbytes


def _release() -> None:
    """Give the arena back (no live blocks): the next malloc makes a new one of the current size."""
    v = _views()
    if v is not None:
        for p in v[2][:, M_SITE][v[2][:, M_SITE] != 0].tolist():  # the blocks' copies of their site
            _libc.free(ctypes.c_void_p(p))
    for w in (S_BASE, S_OWNER, S_META):
        if _state[w]:
            _libc.free(ctypes.c_void_p(int(_state[w])))
        _state[w] = 0
    _state[S_CURSOR] = _state[S_USED] = _state[S_LIVE] = 0


def _views() -> tuple[int, np.ndarray, np.ndarray] | None:
    base = int(_state[S_BASE])
    if not base:
        return None
    g = int(_state[S_SIZE]) // GRANULE
    owner = np.ctypeslib.as_array((ctypes.c_int32 * g).from_address(int(_state[S_OWNER])))
    meta = np.ctypeslib.as_array((ctypes.c_int64 * (g * META_WORDS)).from_address(int(_state[S_META])))
    return base, owner, meta.reshape(g, META_WORDS)


def _block(base: int, meta: np.ndarray, k: int) -> Block:
    m = [int(x) for x in meta[k]]
    site = ctypes.string_at(m[M_SITE]).decode("utf-8", "replace") if m[M_SITE] else ""
    kernel, _, where = site.partition("\x1f")
    bx, by = max(m[M_BX], 1), max(m[M_BY], 1)
    t = m[M_TID]
    return Block(base + k * GRANULE, m[M_SIZE], kernel, where, (m[M_CX], m[M_CY], m[M_CZ]),
                 (t % bx, (t // bx) % by, t // (bx * by)), t)


def live_blocks() -> list[Block]:
    """The device heap's live blocks (allocated and not yet freed), by address."""
    with _py_lock:
        v = _views()
        if v is None:
            return []
        base, owner, meta = v
        starts = np.flatnonzero(owner == np.arange(1, len(owner) + 1, dtype=np.int64))
        return [_block(base, meta, int(k)) for k in starts]


def heap_leaks() -> list[Block]:
    """The blocks device malloc handed out that no device free has released yet: the leaks, at exit."""
    return live_blocks()


def describe(addr: int, where: str = "") -> tuple[str, str] | None:
    """(allocation, detail) of a faulting address that the heap explains, or None.  `where`: the
    faulting instruction's place and text; a fault at a `call` is a refused device free ("device free"),
    any other one an access past a block's end or into a freed block ("device heap").  The heap is read
    after the launch: a block that the faulting thread went on to free reads as freed."""
    with _py_lock:
        v = _views()
        if "('call" in where:
            if v is None:  # no block was ever allocated
                return "device free", f"free of address {addr:#x}: not a pointer device malloc returned"
            return "device free", _bad_free(*v, addr)
        if v is None:
            return None
        base, owner, meta = v
        off = addr - base
        if not 0 <= off < len(owner) * GRANULE:
            return None
        o = int(owner[off // GRANULE])
        if o == 0:
            return "device heap", f"address {addr:#x} is in the device heap but in no block device malloc allocated"
        blk = _block(base, meta, abs(o) - 1)
        at = addr - blk.address
        if at >= blk.size:  # past the end (the red zone): whether or not the block was freed since
            return "device heap", f"address {addr:#x} is {at - blk.size} bytes past the end of {blk.describe()}"
        if o < 0:
            return "device heap", (f"address {addr:#x} is at byte {at} of {blk.describe()}, which device free "
                                   f"has freed (use after free)")
        return "device heap", (f"address {addr:#x} is at byte {at} of {blk.describe()}, and the access runs "
                               f"past its end")


def _bad_free(base: int, owner: np.ndarray, meta: np.ndarray, addr: int) -> str:
    off = addr - base
    o = int(owner[off // GRANULE]) if 0 <= off < len(owner) * GRANULE else 0
    blk = _block(base, meta, abs(o) - 1) if o else None
    if blk is not None and blk.address == addr and o < 0:
        return f"free of address {addr:#x}: a double free of {blk.describe()}"
    if blk is not None:
        state = "a freed" if o < 0 else "a live"
        return (f"free of address {addr:#x}: not the start of a block but byte {addr - blk.address} of "
                f"{state} {blk.describe()[2:]}")
    return f"free of address {addr:#x}: not a pointer device malloc returned"
