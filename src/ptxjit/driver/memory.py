"""Device memory: host memory, registered.

A device pointer is a host address (zero copy: a kernel, a memcpy and the host all see the same bytes).
Every allocation — cuMemAlloc, pitched, async/pool, managed, host-pinned, a registered host range — is
recorded with its base, size and kind, so that

* a launch's pointer arguments get their allocation's bounds as the range the memory-safety checks use
  (an access past the end, or through a pointer freed before the launch, is CUDA_ERROR_ILLEGAL_ADDRESS);
* cuPointerGetAttribute, cuMemGetAddressRange and the copies can tell device from host memory, and refuse
  a freed or unknown pointer with CUDA's error instead of touching whatever is there.

Allocations are 256-byte aligned (cudaMalloc's documented guarantee) and padded to a 256-byte multiple.

Under initcheck (`PTXJIT_CHECK=...,initcheck`, `ptxjit exec --check initcheck`) device and pool allocations
start uninitialized, as compute-sanitizer's initcheck takes cudaMalloc's memory: the copies and memsets into
them mark the bytes they write, the checked launches mark what kernels write (ptxjit/checking/initcheck.py),
and a kernel read of a byte nothing wrote is reported.
"""

from __future__ import annotations

import bisect
import ctypes
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from ptxjit import accounting, config
from ptxjit.driver import errors as E
from ptxjit.driver.errors import CudaError

ALIGN = 256
TRACK_UNINITIALIZED = "initcheck" in config.CHECK.text()  # read once, as `import ptxjit` reads PTXJIT_CHECK
MEMORYTYPE_HOST, MEMORYTYPE_DEVICE, MEMORYTYPE_ARRAY, MEMORYTYPE_UNIFIED = 1, 2, 3, 4

DEVICE, PINNED, MANAGED, REGISTERED, POOL = "device", "pinned host", "managed", "registered host", "pool"


@dataclass
class Allocation:
    """One live allocation: [base, base + size)."""

    base: int
    size: int
    kind: str
    context: object
    buffer: np.ndarray | None = None  # the bytes, when the driver owns them (not for registered host memory)
    flags: int = 0
    buffer_id: int = 0
    attributes: dict[int, int] = field(default_factory=dict)
    view: np.ndarray | None = None  # its `size` bytes as one array object (what a launch's Pointer names)

    @property
    def end(self) -> int:
        return self.base + self.size

    def memory(self) -> np.ndarray:
        """The allocation's bytes as an array, the same object for every launch (initcheck keys its byte
        masks by it)."""
        if self.view is None:
            self.view = self.buffer[:self.size] if self.buffer is not None else \
                np.ctypeslib.as_array((ctypes.c_uint8 * self.size).from_address(self.base))  # registered host memory
        return self.view

    @property
    def memory_type(self) -> int:
        return MEMORYTYPE_HOST if self.kind in (PINNED, REGISTERED) else MEMORYTYPE_DEVICE


class Registry:
    """The live allocations, sorted by base: lookups by any address inside one are a bisection."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bases: list[int] = []
        self._allocs: list[Allocation] = []
        self._next_id = 1
        self.bytes_in_use = 0

    def allocate(self, size: int, kind: str, context, flags: int = 0) -> Allocation:
        if size <= 0:
            raise CudaError(E.INVALID_VALUE, f"allocation of {size} bytes: the size must be positive")
        padded = -(-size // ALIGN) * ALIGN
        try:
            raw = np.empty(padded + ALIGN, dtype=np.uint8)
        except (MemoryError, ValueError):
            raise CudaError(E.OUT_OF_MEMORY, f"cannot allocate {size} bytes of host memory for the device") from None
        start = -raw.ctypes.data % ALIGN
        buf = raw[start:start + padded]
        a = self.add(Allocation(int(buf.ctypes.data), size, kind, context, buf, flags))
        if TRACK_UNINITIALIZED and kind in (DEVICE, POOL):
            from ptxjit.checking.initcheck import track_uninitialized

            track_uninitialized(a.memory())
        return a

    def add(self, alloc: Allocation) -> Allocation:
        with self._lock:
            i = bisect.bisect_right(self._bases, alloc.base)
            if i > 0 and self._allocs[i - 1].end > alloc.base or i < len(self._allocs) and \
                    self._allocs[i].base < alloc.end:
                raise CudaError(E.HOST_MEMORY_ALREADY_REGISTERED,
                                f"[{alloc.base:#x}, {alloc.end:#x}) overlaps a live allocation")
            alloc.buffer_id = self._next_id
            self._next_id += 1
            self._bases.insert(i, alloc.base)
            self._allocs.insert(i, alloc)
            self.bytes_in_use += alloc.size
        return alloc

    def find(self, address: int) -> Allocation | None:
        """The live allocation containing `address`, or None."""
        bases = self._bases
        i = bisect.bisect_right(bases, address) - 1
        if i < 0:
            return None
        try:
            a = self._allocs[i]
        except IndexError:  # removed concurrently
            return None
        return a if a.base <= address < a.base + max(a.size, 1) else None

    def remove(self, base: int, kinds: tuple[str, ...], what: str) -> Allocation:
        """Free the allocation starting at `base` (one of `kinds`); CUDA_ERROR_INVALID_VALUE otherwise."""
        with self._lock:
            i = bisect.bisect_left(self._bases, base)
            if i == len(self._bases) or self._bases[i] != base or self._allocs[i].kind not in kinds:
                inside = self.find(base)
                why = (f"it points {base - inside.base} bytes into a {inside.kind} allocation of {inside.size} bytes"
                       if inside is not None else "it is not a live allocation (never allocated, or freed already)")
                raise CudaError(E.INVALID_VALUE, f"{what}({base:#x}): {why}")
            a = self._allocs.pop(i)
            self._bases.pop(i)
            self.bytes_in_use -= a.size
        return a

    def of_context(self, context) -> list[Allocation]:
        with self._lock:
            return [a for a in self._allocs if a.context is context]

    def check_range(self, address: int, size: int, what: str) -> Allocation | None:
        """The allocation holding [address, address + size), None for memory the driver does not know (host
        memory of the program's own: the copies accept it, as CUDA's unified addressing does); an access that
        starts inside an allocation and runs past its end is refused."""
        if address == 0 and size:
            raise CudaError(E.INVALID_VALUE, f"{what}: NULL pointer")
        a = self.find(address)
        if a is not None and address + size > a.end:
            raise CudaError(E.INVALID_VALUE, f"{what}: [{address:#x}, +{size}) runs {address + size - a.end} bytes "
                                             f"past the end of its {a.kind} allocation of {a.size} bytes")
        return a


REGISTRY = Registry()

memmove = ctypes.memmove
memset = ctypes.memset


def move(dst: int, src: int, size: int) -> None:
    """An unchecked memmove (its ends checked before), counted among the process's copies."""
    t0 = time.perf_counter()
    memmove(dst, src, size)
    accounting.copied(size, time.perf_counter() - t0)
    if TRACK_UNINITIALIZED:
        written(dst, size)


def written(dst: int, size: int, pitch: int = 0, height: int = 1) -> None:
    """Under initcheck: `height` rows of `size` bytes from dst (`pitch` apart) were written by the host."""
    a = REGISTRY.find(dst)
    if a is None or a.view is None:
        return
    from ptxjit.checking.initcheck import mark_initialized

    for r in range(height):
        start = dst - a.base + r * pitch
        mark_initialized(a.view, start, start + size)


def copy(dst: int, src: int, size: int, what: str) -> None:
    """A checked copy of `size` bytes (both ends must be inside their allocations, if any)."""
    if size == 0:
        return
    REGISTRY.check_range(dst, size, what + " destination")
    REGISTRY.check_range(src, size, what + " source")
    move(dst, src, size)


def fill(dst: int, value: int, elem: int, count: int, what: str, pitch: int = 0, height: int = 1) -> None:
    """cuMemsetD8/16/32 (and 2D): `count` elements of `elem` bytes set to `value`, per row of `pitch` bytes."""
    if count == 0 or height == 0:
        return
    row = elem * count
    pitch = pitch or row
    if pitch < row:
        raise CudaError(E.INVALID_VALUE, f"{what}: pitch {pitch} is smaller than a row of {row} bytes")
    REGISTRY.check_range(dst, pitch * (height - 1) + row, what)
    t0 = time.perf_counter()
    if elem == 1:
        for r in range(height):
            memset(dst + r * pitch, value & 0xFF, row)
    else:
        pattern = np.full(count, value, dtype={2: np.uint16, 4: np.uint32}[elem])
        for r in range(height):
            memmove(dst + r * pitch, pattern.ctypes.data, row)
    accounting.copied(row * height, time.perf_counter() - t0)
    if TRACK_UNINITIALIZED:
        written(dst, row, pitch, height)


def copy_2d(dst: int, dpitch: int, src: int, spitch: int, width: int, height: int, what: str) -> None:
    """A pitched copy of `height` rows of `width` bytes."""
    if width == 0 or height == 0:
        return
    if dpitch < width or spitch < width:
        raise CudaError(E.INVALID_VALUE, f"{what}: a pitch ({dpitch}, {spitch}) is smaller than the width {width}")
    REGISTRY.check_range(dst, dpitch * (height - 1) + width, what + " destination")
    REGISTRY.check_range(src, spitch * (height - 1) + width, what + " source")
    t0 = time.perf_counter()
    for r in range(height):
        memmove(dst + r * dpitch, src + r * spitch, width)
    accounting.copied(width * height, time.perf_counter() - t0)
    if TRACK_UNINITIALIZED:
        written(dst, width, dpitch, height)
