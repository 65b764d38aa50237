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
the types) and `epoch` only for kernels with CTA barriers.  Records are several times the bytes a
streaming kernel moves (vadd: three memory records per 12 bytes), so a memory record packs addr, tid
and site into one 64-bit key where tid and site fit its top 16 bits (`key_tid_bits`: the bits of
nthreads - 1, 10 for the generic translation, plus the bits of the number of memory sites; the
address keeps 48 bits, sign-extended by the post-pass: x86-64 user-space addresses are below 2**47 --
elsewhere records stay wide -- and shared/local offsets small), else addr | tid | site.  A memory
record of a one-type trace of a barrier-free kernel is 8 bytes (one store), 12 with barriers; a block
record 4.

Sizing: each type's buffer holds exactly `capacity` records, the sum over counters of
records(counter, type) x executions(counter) from the counting run, plus one scratch record where a
record beyond its CTA's claim lands (it is counted as dropped, never written out of bounds).  The
counting run also gives each CTA's record total per type; before a CTA runs, its worker claims exactly
that many records with one atomicrmw add on the type's cursor (TB_CURSOR), then bumps a worker-private
position per record (no atomic per record: a CTA runs on one worker).

The probe table and the per-worker probe state these buffers hang off: instrument/table.py.
"""

from __future__ import annotations

import numpy as np

from ptxjit.instrument.probes import NTYPES, T_BARRIERS, T_MEMORY, Plan
from ptxjit.instrument.table import (
    TB_CAP,
    TB_CTA,
    TB_CTA_START,
    TB_CTA_TIME,
    TB_CTA_USED,
    TB_PATTERNS,
    TB_SIZE,
    TB_WS,
    WS_BUF,
    WS_COUNTERS,
    WS_EPOCH,
    WS_PAT_THREADS,
    WS_SCRATCH,
    WS_STRIDE,
    ws_slot,
)

_PAYLOAD = {T_MEMORY: [("addr", "<u8")], T_BARRIERS: [("time", "<u8")]}  # before the order fields
_FULL_HEAD = [("cta", "<u4"), ("seq", "<u4"), ("epoch", "<u4"), ("tid", "<u2"), ("site", "<u2")]
_VALUE = [("value", "<u8")]  # memory records with values (ptxjit.trace(values=True)): the bits accessed


def _layouts(head: list, values: bool) -> tuple[np.dtype, ...]:
    return tuple(np.dtype(_PAYLOAD.get(t, []) + head + (_VALUE if values and t == T_MEMORY else []))
                 for t in range(NTYPES))


DTYPES = _layouts(_FULL_HEAD, False)
DTYPES_VALUES = _layouts(_FULL_HEAD, True)
BLOCK_DTYPE, MEMORY_DTYPE, BRANCH_DTYPE, BARRIER_DTYPE = DTYPES


ADDR_BITS = 48  # a memory key's address field: user-space host addresses and offsets (sign-extended)
ADDR_MASK = (1 << ADDR_BITS) - 1


def key_tid_bits(plan: Plan, nthreads: int | None) -> int | None:
    """Memory records of `plan` for CTAs of `nthreads` threads (None: any, up to 1,024) pack address,
    tid and site into one 64-bit key when tid and site fit the key's top 16 bits: the tid's bits, else
    None (the wide layout)."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None  # user-space addresses below 2**47 (sign-extension restores them): x86-64 only
    tid_bits = max(1, (1024 if nthreads is None else max(nthreads, 1)) - 1).bit_length()
    site_bits = max(1, len(plan.memory) - 1).bit_length()
    return tid_bits if tid_bits + site_bits <= 64 - ADDR_BITS else None


def record_dtypes(plan: Plan, values: bool = False, ntypes: int = 2,
                  tid_bits: int | None = None) -> tuple[np.dtype, ...]:
    """The record layouts the traced code writes for `plan`, tracing `ntypes` record types (module doc);
    `tid_bits` (key_tid_bits): memory records as key | [seq] | [epoch] [| value]."""
    head = ([("seq", "<u4")] if ntypes > 1 else []) + ([("epoch", "<u4")] if plan.has_barriers else [])
    out = list(_layouts(head + [("tid", "<u2"), ("site", "<u2")], values))
    if tid_bits is not None:
        out[T_MEMORY] = np.dtype([("key", "<u8")] + head + (_VALUE if values else []))
    return tuple(out)


def unpack_keys(key: np.ndarray, tid_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Memory keys -> (addr as uint64, tid | site << 16 as uint32): the address sign-extended from
    ADDR_BITS (host addresses are below 2**47; a negative shared or local offset comes back whole)."""
    key = np.asarray(key, np.uint64)
    shift = np.uint64(64 - ADDR_BITS)
    addr = ((key << shift).view(np.int64) >> np.int64(64 - ADDR_BITS)).view(np.uint64)
    top = (key >> np.uint64(ADDR_BITS)).astype(np.uint32)
    tid = top & np.uint32((1 << tid_bits) - 1)
    return addr, tid | ((top >> np.uint32(tid_bits)) << np.uint32(16))


def expand(records: np.ndarray, cta: np.ndarray, t: int, seq: np.ndarray | None = None,
           tid_bits: int | None = None) -> np.ndarray:
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
        if name == "key":  # packed memory record: addr, tid and site
            o = records.dtype.fields["key"][1] // 4
            addr, tid_site = unpack_keys(src[:, o:o + 2].copy().view(np.uint64).reshape(n), tid_bits)
            a = full_dt.fields["addr"][1] // 4
            dst[:, a:a + 2] = addr.view(np.uint32).reshape(n, 2)
            dst[:, full_dt.fields["tid"][1] // 4] = tid_site
            continue
        ftype, offset = records.dtype.fields[name][:2]
        words = max(1, ftype.itemsize // 4)
        d = full_dt.fields[name][1] // 4
        dst[:, d:d + words] = src[:, offset // 4:offset // 4 + words]
    return dst.view(full_dt).reshape(n)


class CountBuffers:
    """The counting run's memory: counters per worker, record totals per CTA, and with `patterns` the
    sampled CTAs' per-thread accumulators (instrument/patterns.py)."""

    def __init__(self, plan: Plan, nworkers: int, nctas: int, nthreads: int, patterns: bool = False) -> None:
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
        self.patterns = None
        if patterns:
            from ptxjit.instrument.patterns import PatternBuffers

            self.patterns = PatternBuffers(plan, nworkers, nthreads)
            self.table[TB_PATTERNS] = self.patterns.ctl.ctypes.data
            self.ws[:, WS_PAT_THREADS] = self.patterns.layout.n

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
        import threading

        from ptxjit import config

        self.limit = config.trace_pool_bytes()
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
                 nworkers: int, nthreads: int, values: bool = False, tid_bits: int | None = None) -> None:
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
            dt = record_dtypes(plan, values, len(types), tid_bits)[t]
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
    array, DeviceArray or Pointer memory argument the kernel may write through (`may_write`, per parameter: the
    launch checks' sound analysis, runtime/access.py; None: all) and the module's globals
    (`__device__` variables).  An array passed for a read-only parameter that overlaps a written one
    is restored through the written one."""
    from ptxjit.runtime.memory import memory_of

    out = []
    for i, v in enumerate(args):
        if may_write is not None and i < len(may_write) and not may_write[i]:
            continue
        a = memory_of(v)
        if a is not None and a.nbytes and a.flags.writeable:
            out.append(a)
    if module_globals.nbytes and has_globals:
        out.append(module_globals)
    return out


class Snapshot:
    """Copies of arrays, put back by restore() (in order: aliasing views get the same bytes back)."""

    def __init__(self, arrays: list[np.ndarray], pooled: bool = False) -> None:
        """`pooled`: large contiguous copies go into buffers of the BufferPool (release() gives them
        back): a fresh copy's first write faults every page in, which costs about as much as the copy
        (saxpy's 16 MB y: half the snapshot)."""
        self.saved: list[tuple[np.ndarray, np.ndarray]] = []
        self._pooled: list[np.ndarray] = []
        for a in arrays:
            if pooled and a.flags.c_contiguous and a.nbytes >= BufferPool.MIN_BYTES:
                buf = POOL.take(a.nbytes)[:a.nbytes]
                np.copyto(buf, a.reshape(-1).view(np.uint8))
                self._pooled.append(buf)
                self.saved.append((a, buf.view(a.dtype).reshape(a.shape)))
            else:
                self.saved.append((a, a.copy()))
        self.nbytes = sum(c.nbytes for _a, c in self.saved)

    def restore(self) -> None:
        for a, copy in self.saved:
            np.copyto(a, copy)

    def release(self) -> None:
        """Done with the copies (no restore() after this): pooled buffers go back to the pool."""
        self.saved = []
        for buf in self._pooled:
            POOL.give(buf)
        self._pooled = []
