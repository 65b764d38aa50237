"""`ptxjit.trace`: run a kernel instrumented, and the `Trace` it gives.

    t = ptxjit.trace(kernel, grid, block, args, shared_mem=0, records=("blocks", "memory"))

Three steps (instrument/probes.py, buffers.py, merge.py have the details):

1. The counting run: the kernel translated with block-execution counters only.  Where no record count
   can depend on memory (instrument/independence.py proves it at translation time: no branch, guard,
   loop bound, barrier or collective takes a value from memory -- most kernels), a variant that drops
   every load, store and atomic: it touches no data, so nothing needs saving.  Elsewhere control flow
   may depend on values the kernel itself writes (a histogram's atomics, a flag one thread sets and
   another reads, a loop bound it stores), so the counting run performs the kernel's stores, and every
   array argument (and the module's globals) is snapshot before it and restored after it.
   (A `ptxjit.Pointer` argument without its `memory` names memory of unknown size: it is not restored.)
2. Buffers of exactly the counted size per record type; the traced run writes the records.
3. The post-pass orders each type's records by (cta, epoch, tid, seq) and merges the types.

The traced run computes what an uninstrumented launch computes (probes write only their own buffers).
Its records match the counting run's counts for kernels that take the same paths on the same input;
where they do not (e.g. a kernel racing on atomics), records beyond a CTA's claim are dropped and counted:
`strict=True` (default) then raises TraceOverflow.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ptxjit.instrument.buffers import (
    POOL,
    CountBuffers,
    Snapshot,
    TraceBuffers,
    array_arguments,
    capacities,
    give_back,
    key_tid_bits,
    record_dtypes,
)
from ptxjit.instrument.clock import Clock
from ptxjit.instrument.emit import ProbeSpec
from ptxjit.instrument.independence import kernel_independence
from ptxjit.instrument.merge import merge, sorted_records
from ptxjit.instrument.probes import (
    BARRIER_KINDS,
    KINDS,
    RECORD_TYPES,
    T_BARRIERS,
    T_BLOCKS,
    T_BRANCHES,
    T_MEMORY,
    Plan,
    ProbeLaunch,
    build_plan,
    lowered_kernel,
)
from ptxjit.util import PerObject

# The traced run's cost cutters (both on; bench/ptxbench/tracing.py turns them off to measure, in the same
# process and load, what they save): memory records packed into 64-bit keys (buffers.key_tid_bits), and
# the counting run's snapshot in pooled buffers (buffers.Snapshot).
PACK_MEMORY_KEYS = True
POOLED_SNAPSHOT = True
# ... and the room check (instrument/room.py: unchecked record stores where a call's records fit its
# CTA's claim), and the non-temporal hint on record stores ("auto": where it pays, emit.py _streaming;
# "always" as before the room check; "never")
ROOM_CHECK = True
NONTEMPORAL = "auto"
# ... and the counting run without memory accesses (no snapshot, no restore) for kernels whose record
# counts provably cannot depend on memory (instrument/independence.py)
MEMORY_FREE_COUNT = True
# ... and, for those kernels, the traced run's record stores without any check (every CTA fills its claim
# exactly: instrument/room.py)
EXACT_CLAIMS = True


class TraceOverflow(RuntimeError):
    """A traced run wrote more records of some type than the counting run counted (a kernel whose
    paths differ between two runs on the same input); they were dropped, never written out of bounds."""


def _records(records) -> tuple[str, ...]:
    if isinstance(records, str):
        records = (records,)
    got = tuple(dict.fromkeys(records))
    bad = [r for r in got if r not in RECORD_TYPES]
    if bad or not got:
        raise ValueError(f"records must be a non-empty subset of {RECORD_TYPES}, got {records!r}")
    return tuple(r for r in RECORD_TYPES if r in got)


_PLANS = PerObject()  # kernel -> {(block, records): its probe plan}


def kernel_plan(kernel, block: tuple[int, int, int] | None, records: tuple[str, ...]) -> Plan:
    """The probe plan of `kernel` as it is lowered for `block` (None: the generic translation)."""
    cache = _PLANS.of(kernel)
    key = (block, records)
    plan = cache.get(key)
    if plan is None:
        plan = cache[key] = build_plan(lowered_kernel(kernel, block), kernel.module.ir, records)
    return plan


def trace(kernel, grid, block, args=(), shared_mem: int = 0, records=("blocks", "memory"), *,
          timeout: float | None = None, checked: bool | None = None, unchecked: bool = False,
          strict: bool = True, values: bool = False, _generic: bool = False) -> Trace:
    """Run `kernel` (a ptxjit Kernel) on `args` as `kernel(grid, block, args, shared_mem)` would, and
    record `records` ("blocks": basic-block executions, "memory": memory accesses, "branches":
    conditional branch outcomes, "barriers": arrivals at barriers and warp collectives); `values`: memory
    records also carry the value accessed (table column "value": the bits of the first element -- a
    load's or atomic's result, a store's or reduction's operand).  The arrays end up
    as one launch leaves them.  `_generic` uses the translation for any block shape (per-thread
    scheduler; for tests)."""
    from ptxjit.runtime import printf
    from ptxjit.runtime.args import dims
    from ptxjit.runtime.launch import worker_count

    recs = _records(records)
    g, b = dims(grid, "grid"), dims(block, "block")
    nctas, nthreads = g[0] * g[1] * g[2], b[0] * b[1] * b[2]
    plan = kernel_plan(kernel, None if _generic else b, recs)
    nworkers = worker_count()
    times = {}
    # 1. counting run: without memory accesses where no count can depend on memory, else on a snapshot
    t0 = time.perf_counter()
    drop = MEMORY_FREE_COUNT and kernel_independence(kernel, None if _generic else b).independent
    snap = Snapshot([] if drop else array_arguments(
        args, kernel.module.globals, [p.may_write for p in kernel._access.params], bool(kernel.module._glay.offsets)),
        pooled=POOLED_SNAPSHOT)
    t1 = time.perf_counter()
    cb = CountBuffers(plan, nworkers, nctas, nthreads)
    try:
        with printf.muted():  # the traced run prints it
            kernel(g, b, args, shared_mem, timeout=timeout, checked=checked, unchecked=unchecked,
                   probes=ProbeLaunch(ProbeSpec(plan, "count", recs, _generic, drop_memory=drop), cb.table))
    finally:
        t2 = time.perf_counter()
        snap.restore()
        snap.release()
        t3 = time.perf_counter()
    counts = cb.counts()
    cap = capacities(plan, counts)
    types = tuple(RECORD_TYPES.index(r) for r in recs)
    for t in types:  # the counting pass and the per-CTA totals are two views of the same counts
        assert int(cap[t]) == int(cb.cta_totals[:, t].sum()), (RECORD_TYPES[t], cap[t], cb.cta_totals[:, t].sum())
    # 2. traced run
    tid_bits = key_tid_bits(plan, None if _generic else nthreads) if "memory" in recs and PACK_MEMORY_KEYS \
        else None
    tb = TraceBuffers(plan, types, cap, cb.cta_totals, nworkers, nthreads, values, tid_bits)
    spec = ProbeSpec(plan, "trace", recs, _generic, values, room=ROOM_CHECK, nontemporal=NONTEMPORAL,
                     exact=drop and EXACT_CLAIMS)
    if tid_bits is not None:  # packed memory records (instrument/buffers.py key_tid_bits)
        spec.tid_bits = tid_bits
        spec.key += f":key{tid_bits}"
    clock = Clock.start()
    t4 = time.perf_counter()
    kernel(g, b, args, shared_mem, timeout=timeout, checked=checked, unchecked=unchecked,
           probes=ProbeLaunch(spec, tb.table))
    t5 = time.perf_counter()
    dropped = {RECORD_TYPES[t]: tb.dropped(t) for t in types}
    if spec.exact:  # unchecked stores: a CTA past its claim would have written into its neighbour's
        over = [RECORD_TYPES[t] for t in types if (tb.used[:, t] > tb.claims[:, t]).any()]
        if over:
            raise TraceOverflow(f"kernel '{kernel.name}': a CTA wrote more {', '.join(over)} records than the "
                                "counting run counted, although no count can depend on memory "
                                "(instrument/independence.py): an internal error; the trace is unusable")
    if strict and any(dropped.values()):
        sizes = ", ".join(f"{RECORD_TYPES[t]}: capacity {int(cap[t])}, dropped {dropped[RECORD_TYPES[t]]}"
                          for t in types)
        raise TraceOverflow(f"kernel '{kernel.name}': the traced run emitted more records than the counting "
                            f"run counted ({sizes}); pass strict=False to keep the partial trace")
    # 3. the post-pass runs when the records are first asked for (see SortedRecords)
    per_type = SortedRecords({RECORD_TYPES[t]: (tb.buffers[t], tb.start[:, t], tb.written(t)) for t in types},
                             times, tid_bits)
    times.update(snapshot=t1 - t0, count=t2 - t1, restore=t3 - t2, trace=t5 - t4)
    block_counts = counts[[s.counter for s in plan.blocks]] if plan.blocks else np.zeros(0, np.int64)
    tr = Trace(kernel.name, g, b, plan, per_type, {RECORD_TYPES[t]: int(cap[t]) for t in types}, dropped,
               block_counts, times, snap.nbytes)
    if nctas:  # time 0: the first CTA's start (the launch itself may first have translated the kernel)
        clock = Clock(int(tb.cta_time[:, 1].min()))
    tr.clock, tr._cta_time, tr.values, tr._tid_bits = clock, tb.cta_time, values, tid_bits
    return tr


class SortedRecords(Mapping):
    """Record type -> its records in trace order, sorted on first access (the post-pass,
    instrument/merge.py): a trace that is only counted or exported in part never pays for sorting the
    rest.  The time spent accumulates in timings["post"]."""

    def __init__(self, raw: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], timings: dict,
                 tid_bits: int | None = None) -> None:
        self._raw = raw
        self._tid_bits = tid_bits  # packed memory records (instrument/buffers.py key_tid_bits)
        self._done: dict[str, np.ndarray] = {}
        self._timings = timings
        timings.setdefault("post", 0.0)
        weakref.finalize(self, give_back, raw)  # buffers never sorted go back to the pool too

    def __getitem__(self, kind: str) -> np.ndarray:
        got = self._done.get(kind)
        if got is None:
            t0 = time.perf_counter()
            buf, start, written = self._raw[kind]
            got = self._done[kind] = sorted_records(buf, start, written, RECORD_TYPES.index(kind),
                                                    self._tid_bits)  # a copy
            self._raw[kind] = (None, None, written)
            POOL.give(buf)
            self._timings["post"] += time.perf_counter() - t0
        return got

    def __iter__(self):
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def count(self, kind: str) -> int:
        return int(self._raw[kind][2].sum())


class Trace:
    """The records of one traced launch, per type in trace order (instrument/merge.py), with the probe
    plan that decodes them.  Exports build on `records()` (NumPy) and `table()` (pyarrow)."""

    def __init__(self, kernel: str, grid, block, plan: Plan, per_type: Mapping[str, np.ndarray],
                 capacity: dict[str, int], dropped: dict[str, int], block_counts: np.ndarray,
                 timings: dict[str, float], snapshot_bytes: int) -> None:
        self.kernel = kernel
        self.grid = grid
        self.block = block
        self.plan = plan
        self._records = per_type
        self._capacity = capacity
        self._dropped = dropped
        self.block_counts = block_counts  # executions per block site, from the counting run
        self.timings = timings
        self.snapshot_bytes = snapshot_bytes
        self._tables: dict[str, object] = {}
        self.clock: Clock | None = None  # the traced run's clock (barrier times, CTA spans)
        self.values = False  # memory records carry the value accessed
        self._cta_time: np.ndarray | None = None  # per CTA: worker, start, end (raw clock)
        self._tid_bits: int | None = None  # memory records as written: packed keys (buffers.key_tid_bits)

    @property
    def record_types(self) -> tuple[str, ...]:
        return tuple(self._records)

    def counts(self) -> dict[str, int]:
        """Records written per type."""
        return {k: self._records.count(k) for k in self._records}

    def capacity(self) -> dict[str, int]:
        """The pre-sized capacity per type (the counting run's count; equal to counts() when the kernel
        takes the same paths in both runs)."""
        return dict(self._capacity)

    def dropped(self) -> dict[str, int]:
        return dict(self._dropped)

    def nbytes(self) -> dict[str, int]:
        """Bytes of records per type (the buffers' size, less the scratch record)."""
        sizes = record_dtypes(self.plan, self.values, len(self._records), self._tid_bits)
        return {k: self._records.count(k) * sizes[RECORD_TYPES.index(k)].itemsize for k in self._records}

    def records(self, kind: str) -> np.ndarray:
        """The raw records of one type (structured NumPy array, instrument/buffers.py), in trace order."""
        self._need(kind)
        return self._records[kind]

    def _need(self, kind: str) -> None:
        if kind not in self._records:
            raise KeyError(f"this trace has no '{kind}' records; it has {', '.join(self._records) or 'none'}")

    # ------------------------------------------------------------------ pyarrow
    def table(self, kind: str):
        """A pyarrow Table of one record type in trace order.  Columns: cta, epoch, tid, seq (the order
        key: linear CTA and thread index, barrier epoch, sequence), then for "blocks": block (block
        site), function, ptx_line, source (CUDA line from .loc, or ""); for "memory": site, addr,
        space ("" generic), size (bytes), kind (load/store/atomic), instruction, function, ptx_line,
        source; for "branches": branch (branch site), taken, instruction, function, ptx_line, source;
        for "barriers" (one per thread arriving; epoch: before the barrier): site, time_ns (since the
        first CTA of the traced run began), kind ("cta": CTA barriers, "warp": warp barriers and collectives),
        instruction, function, ptx_line, source."""
        self._need(kind)
        tab = self._tables.get(kind)
        if tab is None:
            tab = self._tables[kind] = _table(self, kind)
        return tab

    def ctas(self):
        """One row per CTA of the traced run: cta (linear index), worker (the worker thread that ran
        it), start_ns, end_ns (ns since the first CTA of the traced run began)."""
        import pyarrow as pa

        ct = self._cta_time
        if ct is None or self.clock is None:
            raise ValueError("this trace has no CTA timing")
        return pa.table({"cta": np.arange(len(ct), dtype=np.uint32), "worker": ct[:, 0].astype(np.int32),
                         "start_ns": self.clock.ns(ct[:, 1]), "end_ns": self.clock.ns(ct[:, 2])})

    def merged(self):
        """The merged trace: one row per record of every type, in trace order (the same key for every
        type): columns type (record type), row (its row in table(type)), cta, epoch, tid, seq."""
        import pyarrow as pa

        types, rows = merge(self._records)
        names = list(self._records)
        cols = {k: np.concatenate([self._records[n][k] for n in names])[_flat(self._records, types, rows)]
                for k in ("cta", "epoch", "tid", "seq")}
        return pa.table({"type": _dictionary(types.astype(np.int32), names), "row": rows, **cols})

    def summary(self, by: str = "ptx"):
        """Per PTX line (by="ptx"; or per CUDA source line, by="source", where .loc gives one):
        instruction executions (derived from the counting run's block counts: every instruction of a
        basic block runs when the block does, guarded or not) and memory accesses (from the "memory"
        records; null when not traced)."""
        import pyarrow as pa

        if by not in ("ptx", "source"):
            raise ValueError("by must be 'ptx' or 'source'")
        rows: dict[tuple, list] = {}
        for site, count in zip(self.plan.blocks, self.block_counts, strict=True):
            for ins in self.plan.block_instrs[site.ident]:
                key = _line_key(site.function, ins.pos.line, ins.pos.source or "", by)
                row = rows.setdefault(key, [ins.text, 0, 0])
                row[1] += int(count)
        mem = self._records.get("memory")
        if mem is not None:
            per_site = np.bincount(mem["site"], minlength=len(self.plan.memory))
            for site, n in zip(self.plan.memory, per_site, strict=True):
                key = _line_key(site.function, site.line, site.source, by)
                rows.setdefault(key, [site.text, 0, 0])[2] += int(n)
        keys = sorted(rows, key=lambda k: (k[0] != self.kernel, k))
        out = {"function": [k[0] for k in keys]}
        if by == "ptx":
            out["ptx_line"] = pa.array([k[1] for k in keys], pa.int32())
        out["source"] = [k[2] for k in keys]
        out["instruction"] = [rows[k][0] for k in keys]
        out["executions"] = pa.array([rows[k][1] for k in keys], pa.int64())
        out["memory_accesses"] = pa.array([rows[k][2] if mem is not None else None for k in keys], pa.int64())
        return pa.table(out)

    def to_parquet(self, directory) -> dict[str, Path]:
        """One Parquet file per record type (`<dir>/<type>.parquet`, table(type) as it is); returns the paths."""
        import pyarrow.parquet as pq

        d = Path(directory)
        os.makedirs(d, exist_ok=True)
        paths = {}
        for kind in self._records:
            paths[kind] = d / f"{kind}.parquet"
            pq.write_table(self.table(kind), paths[kind])
        return paths

    # ------------------------------------------------------------------ exports and analyses
    def to_perfetto(self, path, warps: bool | None = None) -> Path:
        """A Chrome/Perfetto JSON trace (instrument/perfetto.py): tracks per worker and CTA, and per warp
        (`warps`; default: for grids of at most 16 CTAs)."""
        from ptxjit.instrument.perfetto import write_perfetto

        return write_perfetto(self, path, warps)

    def to_accelsim(self, directory) -> dict[str, Path]:
        """Accel-Sim's kernel-1.traceg and kernelslist.g (instrument/accelsim.py)."""
        from ptxjit.instrument.accelsim import write_accelsim

        return write_accelsim(self, directory)

    def memory_efficiency(self):
        """Per memory site: warp requests, global sectors per request, shared wavefronts and bank
        conflicts (instrument/analysis.py)."""
        from ptxjit.instrument.analysis import memory_efficiency

        return memory_efficiency(self)

    def branch_efficiency(self):
        """Per branch site: warp-level executions, uniform and divergent ones (instrument/analysis.py)."""
        from ptxjit.instrument.analysis import branch_efficiency

        return branch_efficiency(self)

    def barrier_waits(self):
        """Per barrier site: the share of warp time spent waiting there (instrument/analysis.py)."""
        from ptxjit.instrument.analysis import barrier_waits

        return barrier_waits(self)

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={v}" for k, v in self.counts().items())
        return f"<Trace {self.kernel} grid={self.grid} block={self.block}: {parts}>"


def _line_key(function: str, line: int, source: str, by: str) -> tuple:
    if by == "ptx":
        return (function, line, source)
    return (function, source.rsplit(":", 1)[0] if source.count(":") >= 2 else source, "")


def _flat(per_type: dict[str, np.ndarray], types: np.ndarray, rows: np.ndarray) -> np.ndarray:
    offsets = np.cumsum([0] + [len(v) for v in per_type.values()])[:-1]
    return offsets[types] + rows if len(types) else np.zeros(0, np.int64)


def _dictionary(indices: np.ndarray, values: list[str]):
    """A dictionary-encoded string column: values[indices] (duplicate values folded)."""
    import pyarrow as pa

    uniq, inverse = np.unique(np.array(values, dtype=object).astype(str), return_inverse=True) if values \
        else (np.array([], str), np.array([], np.int64))
    idx = inverse.astype(np.int32)[indices] if len(indices) else np.zeros(0, np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()), pa.array(uniq.tolist(), pa.string()))


def _table(tr: Trace, kind: str):
    import pyarrow as pa

    r = tr._records[kind]
    site = r["site"].astype(np.int32)
    cols = {"cta": r["cta"], "epoch": r["epoch"], "tid": r["tid"], "seq": r["seq"]}
    if kind == "blocks":
        sites = tr.plan.blocks
        cols["block"] = r["site"]
    elif kind == "branches":
        sites = tr.plan.branches
        site = (r["site"] >> 1).astype(np.int32)
        cols["branch"] = site.astype(np.uint16)
        cols["taken"] = (r["site"] & 1).astype(bool)
        cols["instruction"] = _dictionary(site, [s.text for s in sites])
    elif kind == "barriers":
        sites = tr.plan.barriers
        cols["site"] = r["site"]
        cols["time_ns"] = tr.clock.ns(r["time"].view(np.int64)) if tr.clock is not None else \
            r["time"].astype(np.int64)
        cols["kind"] = _dictionary(site, [BARRIER_KINDS[s.kind] for s in sites])
        cols["instruction"] = _dictionary(site, [s.text for s in sites])
    else:
        sites = tr.plan.memory
        cols["site"] = r["site"]
        cols["addr"] = r["addr"]
        if "value" in r.dtype.names:
            cols["value"] = r["value"]
        cols["space"] = _dictionary(site, [s.space for s in sites])
        cols["size"] = np.array([s.size for s in sites], np.uint16)[site] if sites else np.zeros(0, np.uint16)
        cols["kind"] = _dictionary(site, [KINDS[s.kind] for s in sites])
        cols["instruction"] = _dictionary(site, [s.text for s in sites])
    cols["function"] = _dictionary(site, [s.function for s in sites])
    cols["ptx_line"] = np.array([s.line for s in sites], np.int32)[site] if sites else np.zeros(0, np.int32)
    cols["source"] = _dictionary(site, [s.source for s in sites])
    return pa.table({k: v if isinstance(v, pa.Array) else pa.array(v) for k, v in cols.items()})


__all__ = ["T_BARRIERS", "T_BLOCKS", "T_BRANCHES", "T_MEMORY", "Trace", "TraceOverflow", "kernel_plan", "trace"]
