"""The bytes a node's CTAs wrote into a buffer, found by comparing it with the input, and their merge.

Why a diff rather than dirty ranges recorded as the kernel writes: the diff costs one vectorized
comparison per written buffer per node (memory bandwidth, no change to the generated code), while
recording would put a bookkeeping step into every store of the native code.  Its one blind spot is
harmless: a store of the value already there is not seen, and the merged buffer holds that value
anyway.  The comparison is per byte, so that two nodes writing neighbouring bytes (a uint8 image
split between them) never overwrite each other with stale input bytes.

Encoding: the runs of changed bytes, as (start, length) pairs and their bytes; when the changes are
scattered enough that the runs would cost more, a bitmask (np.packbits) and the changed bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Changes:
    nbytes: int  # size of the buffer
    data: np.ndarray  # uint8: the changed bytes, in address order
    starts: np.ndarray | None = None  # int64 run starts (run encoding)
    lengths: np.ndarray | None = None
    mask: np.ndarray | None = None  # packed bits (mask encoding)

    @property
    def size(self) -> int:
        """Bytes this encoding ships."""
        return sum(a.nbytes for a in (self.data, self.starts, self.lengths, self.mask) if a is not None)

    @property
    def changed(self) -> int:
        return int(self.data.nbytes)


def _bytes(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, order="A").view(np.uint8)


def diff(before: np.ndarray, after: np.ndarray) -> Changes:
    b, a = _bytes(before), _bytes(after)
    ne = b != a
    data = a[ne]
    if data.size == 0:
        return Changes(a.size, data, np.zeros(0, np.int64), np.zeros(0, np.int64))
    edges = np.flatnonzero(np.diff(ne.view(np.int8), prepend=np.int8(0), append=np.int8(0)))
    starts, ends = edges[0::2], edges[1::2]
    if 16 * starts.size <= (a.size + 7) // 8:
        return Changes(a.size, data, starts.astype(np.int64), (ends - starts).astype(np.int64))
    return Changes(a.size, data, mask=np.packbits(ne))


def apply(target: np.ndarray, ch: Changes) -> None:
    """Write the changed bytes into target (a C- or F-contiguous array of ch.nbytes bytes)."""
    t = _bytes(target)
    if t.size != ch.nbytes:
        raise ValueError(f"a change set of {ch.nbytes} bytes does not fit a buffer of {t.size}")
    if ch.mask is not None:
        t[np.unpackbits(ch.mask, count=ch.nbytes).view(bool)] = ch.data
        return
    if ch.starts is None or ch.starts.size == 0:
        return
    if ch.starts.size == 1:
        s = int(ch.starts[0])
        t[s:s + ch.data.size] = ch.data
        return
    # the runs' byte positions without a Python loop: a ramp within each run plus its start
    offs = np.repeat(ch.starts - np.concatenate(([0], np.cumsum(ch.lengths)[:-1])), ch.lengths)
    t[offs + np.arange(ch.data.size)] = ch.data
