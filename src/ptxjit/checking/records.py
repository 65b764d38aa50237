"""The trace records as the checking tools use them: one NumPy column per field of every memory access
(site attributes spread over the accesses), the barrier arrivals, the launch's array ranges, and the
grouping helpers the tools share.  Everything is vectorized: no Python loop runs per record.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from ptxjit.checking.report import Access, parse_source, unlinear
from ptxjit.instrument.probes import KIND_ATOMIC, KIND_LOAD, KIND_STORE, KIND_WARP

WARP = 32
SPACES = ("global", "shared", "local", "", "const", "other")  # space codes: index in this tuple
SP_GLOBAL, SP_SHARED, SP_LOCAL, SP_GENERIC, SP_CONST, SP_OTHER = range(6)
ACCESS_NAMES = {KIND_LOAD: "read", KIND_STORE: "write", KIND_ATOMIC: "atomic"}


def space_code(space: str) -> int:
    return SPACES.index(space) if space in SPACES else SP_OTHER


@dataclass
class Accesses:
    """Memory accesses (one row per record, trace order) with their site's attributes."""
    cta: np.ndarray     # uint32 linear CTA index
    epoch: np.ndarray   # uint32 CTA barriers passed
    tid: np.ndarray     # uint16 linear thread index in the CTA
    seq: np.ndarray     # uint32 per-thread program order (shared by every record type)
    site: np.ndarray    # int64 memory site
    addr: np.ndarray    # int64 (host address; shared/local: offset)
    size: np.ndarray    # int32 bytes
    space: np.ndarray   # int8 space code (SPACES)
    kind: np.ndarray    # int8 KIND_LOAD / KIND_STORE / KIND_ATOMIC
    wepoch: np.ndarray  # int warp barriers (bar.warp.sync / __syncwarp) the thread had passed

    def __len__(self) -> int:
        return len(self.cta)

    def take(self, sel) -> Accesses:
        return Accesses(*(getattr(self, f)[sel] for f in self.__dataclass_fields__))


class Launch:
    """One traced launch as the tools see it: kernel, shapes, sites, records and the argument ranges."""

    def __init__(self, kernel, grid, block, args, trace) -> None:
        self.kernel = kernel
        self.name = kernel.name
        self.grid = grid
        self.block = block
        self.nthreads = block[0] * block[1] * block[2]
        self.args = args
        self.trace = trace
        self.plan = trace.plan
        self.ptx_file = kernel.module.name
        self._acc: Accesses | None = None

    # ------------------------------------------------------------------ records
    def accesses(self) -> Accesses:
        if self._acc is None:
            self._acc = self._build()
        return self._acc

    def _build(self) -> Accesses:
        # narrow columns (views of the records, small site tables): a trace holds millions of accesses and
        # every int64 copy costs memory bandwidth; arithmetic that could overflow them casts first
        r = self.trace.records("memory")
        sites = self.plan.memory or [None]
        site = r["site"].astype(np.int64)
        ssize = np.array([s.size if s else 0 for s in sites], np.int32)
        sspace = np.array([space_code(s.space) if s else 0 for s in sites], np.int8)
        skind = np.array([s.kind if s else 0 for s in sites], np.int8)
        cta, tid, seq = r["cta"], r["tid"], r["seq"]
        wepoch = self._warp_epochs(cta, tid, seq)
        return Accesses(cta, r["epoch"], tid, seq, site, r["addr"].view(np.int64), ssize[site], sspace[site],
                        skind[site], wepoch)

    def barrier_records(self) -> np.ndarray:
        return self.trace.records("barriers")

    def _warp_epochs(self, cta: np.ndarray, tid: np.ndarray, seq: np.ndarray) -> np.ndarray:
        """Per access: how many warp barriers (bar.warp.sync) its thread had passed before it.  Two
        accesses of one warp in different warp epochs are ordered by a __syncwarp() both passed."""
        if "barriers" not in self.trace.record_types or not len(cta):
            return np.zeros(len(cta), np.int32)
        b = self.trace.records("barriers")
        warp_sites = np.array([s.kind == KIND_WARP and self.instr(s).opcode in ("bar", "barrier")
                               for s in self.plan.barriers] or [False], bool)
        b = b[warp_sites[b["site"].astype(np.int64)]] if len(b) else b
        if not len(b):
            return np.zeros(len(cta), np.int32)
        thread = lambda c, t: c.astype(np.int64) * self.nthreads + t  # noqa: E731
        bkey = np.sort((thread(b["cta"].astype(np.int64), b["tid"].astype(np.int64)) << 32)
                       | b["seq"].astype(np.int64))
        g = thread(cta, tid) << 32
        return np.searchsorted(bkey, g | seq.astype(np.int64)) - np.searchsorted(bkey, g)

    def instr(self, site):
        return site_instr(self.kernel.module, site)

    # ------------------------------------------------------------------ array ranges
    def arg_ranges(self) -> list[tuple[int, int, int, object]]:
        """(start, end, argument index, the argument) of every argument naming memory (a NumPy array, a
        DeviceArray, a Pointer with its memory)."""
        from ptxjit.runtime.memory import memory_of

        out = []
        for i, a in enumerate(self.args):
            arr = memory_of(a)
            if arr is not None and arr.nbytes:
                start = int(arr.ctypes.data)
                out.append((start, start + arr.nbytes, i, a))
        return out

    def in_args(self, addr: np.ndarray, size: np.ndarray) -> np.ndarray:
        """Per access: the index into arg_ranges() of the argument array it lies in, else -1."""
        ranges = sorted(self.arg_ranges())
        out = np.full(len(addr), -1, np.int64)
        if not ranges or not len(addr):
            return out
        starts = np.array([r[0] for r in ranges], np.int64)
        ends = np.array([r[1] for r in ranges], np.int64)
        j = np.searchsorted(starts, addr, side="right") - 1
        ok = (j >= 0) & (addr + size <= ends[np.maximum(j, 0)])
        order = [self.arg_ranges().index(r) for r in ranges]
        out[ok] = np.array(order, np.int64)[j[ok]]
        return out

    # ------------------------------------------------------------------ report helpers
    def who(self, cta: int, tid: int) -> dict:
        return {"cta": unlinear(int(cta), self.grid), "thread": unlinear(int(tid), self.block),
                "warp": int(tid) // WARP, "lane": int(tid) % WARP}

    @functools.cached_property
    def report_site(self) -> np.ndarray:
        """Per memory site: the site its reports go under -- a wmma.load/store's elements (one site each,
        instrument/probes.py tensor_accesses) under its first, so that one instruction is one report."""
        out = np.arange(max(len(self.plan.memory), 1), dtype=np.int64)
        for s in self.plan.memory:
            if s.part and s.text.startswith("wmma"):
                out[s.ident] = s.ident - s.part
        return out

    def mem_site(self, site: int):
        return self.plan.memory[int(site)]

    def source(self, site) -> tuple[str, int] | None:
        """(file, line) of a site in the user's code: where a CUDA header's function (an atomic, a shuffle)
        was inlined into it (`.loc ... inlined_at`), else the site's own `.loc` line."""
        return user_source(self.kernel.module, site.line) or parse_source(site.source)

    def access(self, cta: int, tid: int, site: int, addr: int) -> Access:
        s = self.mem_site(site)
        w = self.who(cta, tid)
        return Access(w["cta"], w["thread"], w["warp"], w["lane"], s.line, self.source(s),
                      ACCESS_NAMES[s.kind], s.text, int(addr))


_LOC = re.compile(r"^\s*\.loc\s+\d+\s+\d+\s+\d+.*?inlined_at\s+(\d+)\s+(\d+)\s+\d+")


@functools.lru_cache(maxsize=16)
def _lines(text: str) -> list[str]:
    return text.splitlines()


def user_source(module, ptx_line: int) -> tuple[str, int] | None:
    """The `inlined_at` place of the `.loc` in force at a PTX line (the frontend keeps only the inlined
    function's own line), as (file, line); None when that .loc has none.  Runs per report, not per record."""
    if ptx_line is None or not module.ir.files:
        return None
    lines = _lines(module.source_text)
    for i in range(min(ptx_line - 2, len(lines) - 1), -1, -1):
        ln = lines[i].lstrip()
        if ln.startswith(".loc"):
            m = _LOC.match(ln)
            if not m:
                return None
            f = module.ir.files.get(int(m.group(1)))
            return (f, int(m.group(2))) if f else None
        if ln.startswith((".entry", ".func", ".visible")):
            return None
    return None


def site_instr(module, site):
    """The PTX instruction of a probe site.  Sites index the function as lowered (scheduling markers may be
    inserted), so the statement index is confirmed by the PTX line, else the line finds it."""
    fn = module.ir.functions[site.function]
    body = fn.body or []
    ins = body[site.stmt] if 0 <= site.stmt < len(body) else None
    if getattr(ins, "pos", None) is not None and ins.pos.line == site.line and ins.text == site.text:
        return ins
    return next(i for i in fn.instructions if i.pos.line == site.line and i.text == site.text)


# ---------------------------------------------------------------------------------------- grouping
def dense(*cols: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ids 0..n-1 of the distinct tuples of the columns (equal tuples, equal ids), and n."""
    ids, card = radix(*cols)
    return compact(ids, card) if len(ids) else (ids, 0)


def collective_instances(cta: np.ndarray, tid: np.ndarray, site: np.ndarray, thread_order) -> tuple:
    """Group records of warp collectives into instances: the k-th execution of a site by each lane of a
    warp is one instance.  `thread_order(th)` sorts the records into each thread's program order, given
    their dense per-(cta, tid, site) ids.  Returns (warp, lane, instance id per record, number of
    instances, per instance the bit set of lanes that arrived)."""
    th, _ = dense(cta, tid, site)
    order = thread_order(th)
    start = np.searchsorted(th[order], th[order], side="left")
    occ = np.empty(len(th), np.int64)
    occ[order] = np.arange(len(th)) - start
    warp, lane = tid // WARP, tid % WARP
    g, ng = dense(cta, warp, site, occ)
    lanes = np.zeros(ng, np.int64)
    np.bitwise_or.at(lanes, g, np.left_shift(1, lane))
    return warp, lane, g, ng, lanes


def radix(*cols: np.ndarray) -> tuple[np.ndarray, int]:
    """The tuples of the columns as single int64 keys (mixed radix over each column's range, compacted
    where the product would overflow), and the bound of the keys."""
    n = len(cols[0]) if cols else 0
    ids = np.zeros(n, np.int64)
    if not n:
        return ids, 1
    card = 1
    for c in cols:  # mixed radix over each column's range: no sort while the product fits in 62 bits
        lo, hi = int(c.min()), int(c.max())
        span = hi - lo + 1
        if card * span >= 1 << 62:  # compact what we have first (a sort), then go on
            ids, card = compact(ids, card)
        if card * span >= 1 << 62:
            u, inv = np.unique(c, return_inverse=True)
            c, lo, span = inv.reshape(-1), 0, len(u)
        ids = ids * span + (c - lo)
        card *= span
    return ids, card


def compact(ids: np.ndarray, card: int) -> tuple[np.ndarray, int]:
    """ids (each < card) renumbered 0..k-1 in the same order: a table lookup when card is small, else a sort."""
    if card <= 4 * len(ids) + (1 << 16):
        present = np.zeros(card, bool)
        present[ids] = True
        remap = np.cumsum(present) - 1
        return remap[ids], int(remap[-1]) + 1
    u, inv = np.unique(ids, return_inverse=True)
    return inv.reshape(-1).astype(np.int64), len(u)


def group_min(keys: np.ndarray, values: np.ndarray, n: int, empty: int = np.iinfo(np.int64).max) -> np.ndarray:
    out = np.full(n, empty, np.int64)
    np.minimum.at(out, keys, values)
    return out


def group_max(keys: np.ndarray, values: np.ndarray, n: int, empty: int = np.iinfo(np.int64).min) -> np.ndarray:
    out = np.full(n, empty, np.int64)
    np.maximum.at(out, keys, values)
    return out


def granule(addr: np.ndarray, size: np.ndarray) -> int:
    """The largest power of two (<= 16) dividing every address and size: byte ranges expanded in units of
    it overlap exactly when the accesses overlap."""
    if not len(addr):
        return 1
    bits = int(np.bitwise_or.reduce(addr)) | int(np.bitwise_or.reduce(size))
    g = 1
    while g < 16 and not bits & g:
        g <<= 1
    return g


def expand(addr: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each access as the granules it covers: (row of the access, granule index), one entry per granule."""
    g = granule(addr, size)
    if len(size) and int(size.max()) <= g:  # one granule each (accesses of one size): no expansion
        return np.arange(len(addr), dtype=np.int64), addr // g
    units = np.maximum(size // g, 1).astype(np.int64)
    row = np.repeat(np.arange(len(addr), dtype=np.int64), units)
    first = np.cumsum(units) - units
    within = np.arange(len(row), dtype=np.int64) - np.repeat(first, units)
    return row, addr[row] // g + within
