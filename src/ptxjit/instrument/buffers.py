"""Record layouts, the probe table a launch gets (abi.L_PROBE), per-worker probe state, sizing and
allocation of the per-type buffers, and the snapshot that keeps the counting run from disturbing data.

Records as the post-pass returns them (little-endian, packed; `site` is the probe site's ident per
record type, instrument/probes.py):

    blocks    16 bytes: cta u32 | seq u32 | epoch u32 | tid u16 | site u16
    memory    24 bytes: addr u64 | cta u32 | seq u32 | epoch u32 | tid u16 | site u16 [| value u64]
    branches  16 bytes: cta u32 | seq u32 | epoch u32 | tid u16 | site u16   (site = 2 * branch + taken)
    barriers  24 bytes: time u64 | cta u32 | seq u32 | epoch u32 | tid u16 | site u16

`cta` and `tid` are linear (x + nx*(y + ny*z)); `epoch` counts the CTA barriers the thread has passed
(0 without barriers); `seq` is the position of the record in its worker's execution of the CTA (one
counter per CTA for all record types, so within one thread it follows program order); `addr` is the host
address for global, const and generic accesses, the offset in the CTA's shared memory for shared ones,
and the offset in the thread's local memory for a kernel's local ones.  `time` is the CPU's cycle counter
when the thread arrived (instrument/clock.py converts it to nanoseconds); `epoch` of a barrier record is
the thread's epoch before the barrier.

The traced code writes only what the post-pass cannot know (`record_dtypes`): never `cta` (a CTA runs on
one worker, which fills the CTA's claim -- below -- so the claim tells), `seq` only when several record
types are traced (with one, a record's seq is its position in the claim; with several, seq interleaves
the types) and `epoch` only for kernels with CTA barriers.  The traced run is bound by the bytes it
writes (vadd: three memory records per 12 bytes the kernel moves), so this matters: a memory record of a
one-type trace of a barrier-free kernel is 12 bytes (addr | tid | site), a block record 4.

Sizing: each type's buffer holds exactly `capacity` records, the sum over counters of
records(counter, type) x executions(counter) from the counting run, plus one scratch record where a
record beyond its CTA's claim lands (it is counted as dropped, never written out of bounds).  The
counting run also gives each CTA's record total per type; before a CTA runs, its worker claims exactly
that many records with one atomicrmw add on the type's cursor (TB_CURSOR), then bumps a worker-private
position per record (no atomic per record: a CTA runs on one worker).

Probe table (int64, TB_*): per-worker state base, per-CTA arrays, cursors and capacities per type.
Per-worker state (int64, WS_*, WS_STRIDE slots each; abi.W_PROBE points at the worker's): the CTA's
sequence counter and linear index, the counting run's counters and this worker's thread epochs, then per
type the claim (position, end, start), the running total (counting), the buffer and its scratch index.
"""

from __future__ import annotations

import numpy as np

from ptxjit.instrument.probes import NTYPES, T_BARRIERS, T_MEMORY, Plan

_PAYLOAD = {T_MEMORY: [("addr", "<u8")], T_BARRIERS: [("time", "<u8")]}  # before the order fields
_FULL_HEAD = [("cta", "<u4"), ("seq", "<u4"), ("epoch", "<u4"), ("tid", "<u2"), ("site", "<u2")]
_VALUE = [("value", "<u8")]  # memory records with values (ptxjit.trace(values=True)): the bits accessed


def _layouts(head: list, values: bool) -> tuple[np.dtype, ...]:
    return tuple(np.dtype(_PAYLOAD.get(t, []) + head + (_VALUE if values and t == T_MEMORY else []))
                 for t in range(NTYPES))


DTYPES = _layouts(_FULL_HEAD, False)
DTYPES_VALUES = _layouts(_FULL_HEAD, True)
BLOCK_DTYPE, MEMORY_DTYPE, BRANCH_DTYPE, BARRIER_DTYPE = DTYPES


def record_dtypes(plan: Plan, values: bool = False, ntypes: int = 2) -> tuple[np.dtype, ...]:
    """The record layouts the traced code writes for `plan`, tracing `ntypes` record types (module doc)."""
    head = ([("seq", "<u4")] if ntypes > 1 else []) + ([("epoch", "<u4")] if plan.has_barriers else [])
    return _layouts(head + [("tid", "<u2"), ("site", "<u2")], values)


def expand(records: np.ndarray, cta: np.ndarray, t: int, seq: np.ndarray | None = None) -> np.ndarray:
    """Records as written (record_dtypes) with their CTAs (and their seq, when not written) -> the full
    layout (DTYPES[t], or with values); epoch 0 when not written.  Copied as 32-bit words (every field,
    and the tid/site pair, is word-aligned in all layouts): NumPy's per-field structured assignment is
    several times slower."""
    full_dt = (DTYPES_VALUES if "value" in records.dtype.names else DTYPES)[t]
    n = len(records)
    src = np.ascontiguousarray(records).view(np.uint32).reshape(n, records.dtype.itemsize // 4)
    dst = np.empty((n, full_dt.itemsize // 4), np.uint32)
    dst[:, full_dt.fields["cta"][1] // 4] = cta
    if "epoch" not in records.dtype.names:
        dst[:, full_dt.fields["epoch"][1] // 4] = 0
    if "seq" not in records.dtype.names:
        dst[:, full_dt.fields["seq"][1] // 4] = seq
    for name in records.dtype.names:
        if name == "site":  # shares tid's word
            continue
        ftype, offset = records.dtype.fields[name][:2]
        words = max(1, ftype.itemsize // 4)
        d = full_dt.fields[name][1] // 4
        dst[:, d:d + words] = src[:, offset // 4:offset // 4 + words]
    return dst.view(full_dt).reshape(n)


# probe table
TB_WS, TB_CTA, TB_CTA_START, TB_CTA_USED = 0, 1, 2, 3
TB_CURSOR = 4               # + type: atomic cursor of the type's buffer
TB_CAP = TB_CURSOR + NTYPES  # + type: capacity
TB_CTA_TIME = TB_CAP + NTYPES  # per CTA (trace): worker, cycle counter at its start and at its end
TB_SIZE = TB_CTA_TIME + 1

# per-worker state
WS_SEQ, WS_CTA, WS_COUNTERS, WS_EPOCH = 0, 1, 2, 3
WS_TYPE = 4                  # + 8 * type: the slots below
WS_POS, WS_END, WS_START, WS_TOT, WS_BUF, WS_SCRATCH = range(6)
WS_STRIDE = 40               # 320 bytes: workers never share a cache line


def ws_slot(t: int, what: int) -> int:
    return WS_TYPE + 8 * t + what


assert ws_slot(NTYPES - 1, WS_SCRATCH) < WS_STRIDE


class CountBuffers:
    """The counting run's memory: counters per worker, record totals per CTA."""

    def __init__(self, plan: Plan, nworkers: int, nctas: int, nthreads: int) -> None:
        self.counters = np.zeros((nworkers, max(plan.ncounters, 1)), np.int64)
        self.cta_totals = np.zeros((nctas, NTYPES), np.int64)
        self.ws = np.zeros((nworkers, WS_STRIDE), np.int64)
        self.epochs = np.zeros((nworkers, max(nthreads, 1)), np.int32)
        for w in range(nworkers):
            self.ws[w, WS_COUNTERS] = self.counters[w].ctypes.data
            self.ws[w, WS_EPOCH] = self.epochs[w].ctypes.data
        self.table = np.zeros(TB_SIZE, np.int64)
        self.table[TB_WS] = self.ws.ctypes.data
        self.table[TB_CTA] = self.cta_totals.ctypes.data

    def counts(self) -> np.ndarray:
        """Executions per counter, all workers together."""
        return self.counters.sum(axis=0)


def capacities(plan: Plan, counts: np.ndarray) -> np.ndarray:
    """Records per type: sum over counters of records(counter, type) x executions(counter)."""
    rec = np.array(plan.counter_records, np.int64).reshape(-1, NTYPES)
    return (rec * counts[:len(rec), None]).sum(axis=0)


class BufferPool:
    """Record buffers of traces whose records were sorted (or that were dropped), kept for the next
    trace.  The first write to a fresh buffer page costs a page fault in which the OS zeroes the page:
    for record-heavy kernels about as much as writing the records (vadd: half the traced run).  Holds
    at most `limit` bytes (PTXJIT_TRACE_POOL: bytes, 0 to disable; default an eighth of the memory)."""

    MIN_BYTES = 1 << 20  # smaller buffers are cheap to fault in

    def __init__(self) -> None:
        import os
        import threading

        env = os.environ.get("PTXJIT_TRACE_POOL")
        try:
            self.limit = int(env) if env is not None else \
                os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 8
        except (ValueError, OSError, AttributeError):
            self.limit = 0
        self._free: list[np.ndarray] = []
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> np.ndarray:
        """A uint8 array of at least nbytes: a pooled one that is not much larger, else a new one."""
        with self._lock:
            fits = [a for a in self._free if nbytes <= a.nbytes <= 2 * nbytes + self.MIN_BYTES]
            if fits:
                best = min(fits, key=lambda a: a.nbytes)
                self._free = [a for a in self._free if a is not best]
                return best
        return np.empty(nbytes, np.uint8)

    def give(self, buf: np.ndarray | None) -> None:
        """Return a buffer (a view of one from take()) once nothing reads it any more."""
        if buf is None:
            return
        root = buf
        while isinstance(root.base, np.ndarray):
            root = root.base
        if root.base is not None or root.dtype != np.uint8 or root.nbytes < self.MIN_BYTES:
            return
        with self._lock:
            if any(a is root for a in self._free) or root.nbytes > self.limit:
                return
            self._free.append(root)
            while sum(a.nbytes for a in self._free) > self.limit:
                self._free.pop(0)  # the oldest first


POOL = BufferPool()


def give_back(raw: dict) -> None:
    """Return the unsorted buffers of a dropped trace to the pool (weakref.finalize of SortedRecords)."""
    for buf, *_ in raw.values():
        POOL.give(buf)


class TraceBuffers:
    """The traced run's memory: one buffer per record type of exactly `capacity` records (+1 scratch),
    each CTA's claim per type, and where each CTA's records went."""

    def __init__(self, plan: Plan, types: tuple[int, ...], capacity: np.ndarray, cta_claims: np.ndarray,
                 nworkers: int, nthreads: int, values: bool = False) -> None:
        nctas = len(cta_claims)
        self.types = types
        self.capacity = capacity.copy()
        self.claims = np.ascontiguousarray(cta_claims, np.int64)
        self.start = np.zeros((nctas, NTYPES), np.int64)
        self.used = np.zeros((nctas, NTYPES), np.int64)
        self.cta_time = np.zeros((nctas, 3), np.int64)  # worker, start, end (cycle counter)
        self.ws = np.zeros((nworkers, WS_STRIDE), np.int64)
        self.epochs = np.zeros((nworkers, max(nthreads, 1)), np.int32)
        self.buffers: list[np.ndarray | None] = [None] * NTYPES
        self.table = np.zeros(TB_SIZE, np.int64)
        for t in types:
            cap = int(capacity[t])
            # np.empty: only records written are ever read (holes of short claims are skipped), and
            # np.zeros's calloc path faults its pages in slower; the last record is the scratch slot
            dt = record_dtypes(plan, values, len(types))[t]
            self.buffers[t] = POOL.take((cap + 1) * dt.itemsize)[:(cap + 1) * dt.itemsize].view(dt)
            self.table[TB_CAP + t] = cap
        for w in range(nworkers):
            self.ws[w, WS_EPOCH] = self.epochs[w].ctypes.data
            for t in types:
                self.ws[w, ws_slot(t, WS_BUF)] = self.buffers[t].ctypes.data
                self.ws[w, ws_slot(t, WS_SCRATCH)] = int(capacity[t])
        self.table[TB_WS] = self.ws.ctypes.data
        self.table[TB_CTA] = self.claims.ctypes.data
        self.table[TB_CTA_START] = self.start.ctypes.data
        self.table[TB_CTA_USED] = self.used.ctypes.data
        self.table[TB_CTA_TIME] = self.cta_time.ctypes.data

    def written(self, t: int) -> np.ndarray:
        """Per CTA: records of type t written (within its claim and the buffer)."""
        room = np.maximum(int(self.capacity[t]) - self.start[:, t], 0)
        return np.minimum(np.minimum(self.used[:, t], self.claims[:, t]), room)

    def dropped(self, t: int) -> int:
        """Records of type t that found their CTA's claim (or the buffer) full."""
        return int((self.used[:, t] - self.written(t)).sum())


def array_arguments(args, module_globals: np.ndarray, may_write: list[bool] | None = None,
                    has_globals: bool = True) -> list[np.ndarray]:
    """The memory a launch may write that has to be restored after the counting run: every NumPy
    array (or DeviceArray) argument the kernel may write through (`may_write`, per parameter: the
    launch checks' sound analysis, runtime/access.py; None: all) and the module's globals
    (`__device__` variables).  An array passed for a read-only parameter that overlaps a written one
    is restored through the written one."""
    from ptxjit.runtime.memory import DeviceArray

    out = []
    for i, a in enumerate(args):
        if may_write is not None and i < len(may_write) and not may_write[i]:
            continue
        if isinstance(a, DeviceArray):
            a = a.array
        if isinstance(a, np.ndarray) and a.nbytes and a.flags.writeable:
            out.append(a)
    if module_globals.nbytes and has_globals:
        out.append(module_globals)
    return out


class Snapshot:
    """Copies of arrays, put back by restore() (in order: aliasing views get the same bytes back)."""

    def __init__(self, arrays: list[np.ndarray]) -> None:
        self.saved = [(a, a.copy()) for a in arrays]

    def restore(self) -> None:
        for a, copy in self.saved:
            np.copyto(a, copy)

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for _a, c in self.saved)
