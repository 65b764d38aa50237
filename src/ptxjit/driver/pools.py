"""Stream-ordered memory pools (cuMemAllocAsync, cuMemAllocFromPoolAsync, cuMemFreeAsync, cuMemPool*).

The device has one pool, its default and initial current pool (cuDeviceGetDefaultMemPool/cuDeviceGetMemPool).
An allocation from it is a registered allocation of kind POOL made at once (stream order only asks that
the memory be usable by work queued after the call, which it is); a free is queued on the stream, so work
queued before it still sees the memory.  The pool keeps no freed memory for reuse, so its reserved bytes are
its used bytes; the attributes the API reads and writes are kept with their documented value types
(cuuint64_t for the threshold and the byte counts, int for the reuse switches).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxjit.driver import errors as E
from ptxjit.driver import memory as M
from ptxjit.driver.errors import CudaError

# CUmemPool_attribute (cuda.h)
REUSE_FOLLOW_EVENT_DEPENDENCIES, REUSE_ALLOW_OPPORTUNISTIC, REUSE_ALLOW_INTERNAL_DEPENDENCIES = 1, 2, 3
RELEASE_THRESHOLD, RESERVED_MEM_CURRENT, RESERVED_MEM_HIGH, USED_MEM_CURRENT, USED_MEM_HIGH = 4, 5, 6, 7, 8
INT_ATTRIBUTES = (REUSE_FOLLOW_EVENT_DEPENDENCIES, REUSE_ALLOW_OPPORTUNISTIC, REUSE_ALLOW_INTERNAL_DEPENDENCIES)
U64_ATTRIBUTES = (RELEASE_THRESHOLD, RESERVED_MEM_CURRENT, RESERVED_MEM_HIGH, USED_MEM_CURRENT, USED_MEM_HIGH)
# CUmemLocationType / CUmemAccess_flags
LOCATION_DEVICE = 1
ACCESS_NONE, ACCESS_READWRITE = 0, 3


@dataclass
class MemoryPool:
    handle: int
    device: int = 0
    attributes: dict[int, int] = field(default_factory=lambda: {
        REUSE_FOLLOW_EVENT_DEPENDENCIES: 1, REUSE_ALLOW_OPPORTUNISTIC: 1, REUSE_ALLOW_INTERNAL_DEPENDENCIES: 1,
        RELEASE_THRESHOLD: 0})
    live: set[int] = field(default_factory=set)  # bases of this pool's allocations not yet freed
    high: int = 0

    def used(self) -> int:
        """Bytes of this pool's live allocations (a base freed by cuMemFree/cuMemFreeAsync drops out here)."""
        total, gone = 0, []
        for base in self.live:
            a = M.REGISTRY.find(base)
            if a is None or a.base != base or a.kind != M.POOL:
                gone.append(base)
            else:
                total += a.size
        self.live.difference_update(gone)
        self.high = max(self.high, total)
        return total

    def get(self, attr: int) -> int:
        if attr in (USED_MEM_CURRENT, RESERVED_MEM_CURRENT):
            return self.used()
        if attr in (USED_MEM_HIGH, RESERVED_MEM_HIGH):
            self.used()
            return self.high
        if attr in self.attributes:
            return self.attributes[attr]
        raise CudaError(E.INVALID_VALUE, f"cuMemPoolGetAttribute: {attr} is not a CUmemPool_attribute")

    def set(self, attr: int, value: int) -> None:
        if attr in (USED_MEM_HIGH, RESERVED_MEM_HIGH):
            if value != 0:
                raise CudaError(E.INVALID_VALUE, "cuMemPoolSetAttribute: a high watermark can only be reset to 0")
            self.high = 0
            self.high = self.used()
        elif attr in INT_ATTRIBUTES or attr == RELEASE_THRESHOLD:
            self.attributes[attr] = int(value)
        else:
            raise CudaError(E.INVALID_VALUE, f"cuMemPoolSetAttribute: attribute {attr} cannot be set")

    def allocated(self, base: int) -> None:
        self.live.add(base)
        self.used()


def default_pool(driver, ordinal: int) -> MemoryPool:
    """The device's default pool, made on first use."""
    driver.device(ordinal)
    pool = getattr(driver, "default_pool", None)
    if pool is None:
        with driver.lock:
            pool = getattr(driver, "default_pool", None)
            if pool is None:
                pool = MemoryPool(0, ordinal)
                pool.handle = driver.pools.new(pool)
                driver.default_pool = pool
                driver.current_pool = pool
    return pool


def current_pool(driver, ordinal: int) -> MemoryPool:
    default_pool(driver, ordinal)
    return driver.current_pool
