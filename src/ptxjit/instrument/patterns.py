"""Execution patterns of a counted launch (the tiers' execution counters): per conditional branch whether it
went the same way for every thread of a warp and of a CTA, per memory access its alignment, the stride
between neighbouring threads (x) and the 32-byte sectors one warp's request touches.

The counting run counts block executions per worker; these need per-thread values, so counting with
patterns (`ProbeSpec(patterns=True)`) also keeps, in each CTA that runs it (the first SAMPLED_CTAS: a
counted launch runs its first batches on this code and the rest on the plain counting code,
tiers/counters.py), per thread:

    branch site b:  exec[b][t], taken[b][t]        (i32: executions, of which taken)
    memory site m:  count[m][t] (i32), first[m][t] (i64: the address of its first access in the CTA),
                    bits[m][t] (i64: the OR of every address it accessed)

one contiguous i32/i64 array per site, indexed by the thread's linear index: in the thread loops these are
vector loads and stores that LLVM keeps beside the kernel's (the runtime's own memory).  Each sampled CTA
has its own zeroed slot; CTAs past SAMPLED_CTAS write a scratch slot per worker that is never read.

The post-pass (`summarize`, NumPy) reads the slots:

* a warp (32 consecutive linear thread indices) is *uniform* at a branch when every thread of it that
  executed the branch executed it as often and took it as often: for a branch each thread runs once,
  exactly "all went the same way"; for a loop's back edge, "all ran the same trip count" (a thread's
  k-th execution then goes the way every other thread's k-th does).  A CTA likewise over all its threads.
* per memory site: alignment, the largest power of two dividing every address accessed (up to 4096);
  per warp, from the first access of each thread: the x-stride (difference between neighbouring
  threads in x within the warp) classified as uniform (0: one address), contiguous (the access size),
  strided (another constant) or irregular; and the distinct 32-byte sectors the warp's first accesses
  touch (global, local, const and generic accesses: the GPU's coalescing unit).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from llvmlite import ir as ll

from ptxjit.instrument.table import WS_PAT_CUR, WS_PAT_THREADS
from ptxjit.lower.types import I32, I64, const_int

WARP = 32
SECTOR = 32
MAX_ALIGN = 4096
SAMPLED_CTAS = 8  # CTAs sampled per counted launch (fewer where their slots would pass BUDGET)
BUDGET = 64 << 20  # bytes of slots at most (a slot: threads x (8 per branch + 20 per memory site))
STRIDE_CLASSES = ("uniform", "contiguous", "strided", "irregular")

# the control array (int64) the table's TB_PATTERNS points at
C_BASE, C_SLOT_BYTES, C_SLOTS, C_NEXT, C_DUMMY = range(5)
C_CTAS = 8  # + k: the CTA in slot k (-1: unused)


@dataclass(frozen=True)
class Layout:
    """Byte offsets of one CTA's slot: `n` threads (padded to even, so the i64 arrays are aligned)."""
    n: int
    nbranches: int
    nmemory: int

    @property
    def count(self) -> int:
        return 8 * self.nbranches * self.n

    @property
    def first(self) -> int:
        return self.count + 4 * self.nmemory * self.n

    @property
    def bits(self) -> int:
        return self.first + 8 * self.nmemory * self.n

    @property
    def size(self) -> int:
        return -(-(self.bits + 8 * self.nmemory * self.n) // 64) * 64


def layout(plan, nthreads: int) -> Layout:
    return Layout(nthreads + (nthreads & 1), len(plan.branches), len(plan.memory))


def sampled_ctas(plan, nworkers: int, nthreads: int) -> int:
    """How many CTAs a counted launch samples: SAMPLED_CTAS, fewer where their slots and the workers'
    scratch slots would pass BUDGET (kernels with thousands of accesses), 0 where one would, and 0 for a
    plan without branch or memory sites (an empty slot: nothing to sample, the block counts say all)."""
    size = layout(plan, nthreads).size
    if size <= 0:
        return 0
    return max(0, min(SAMPLED_CTAS, BUDGET // size - nworkers))


class PatternBuffers:
    """The sampled CTAs' slots (SAMPLED_CTAS, zeroed; each CTA that runs the code takes the next one),
    a scratch slot per worker (for CTAs past them) and the control array."""

    def __init__(self, plan, nworkers: int, nthreads: int) -> None:
        self.plan = plan
        self.layout = layout(plan, nthreads)
        self.slots = sampled_ctas(plan, nworkers, nthreads)
        self.data = np.zeros(max((self.slots + nworkers) * self.layout.size, 64) // 8, np.int64)
        self.ctl = np.full(C_CTAS + self.slots, -1, np.int64)
        self.ctl[C_BASE] = self.data.ctypes.data
        self.ctl[C_SLOT_BYTES] = self.layout.size
        self.ctl[C_SLOTS] = self.slots
        self.ctl[C_NEXT] = 0

    def sampled(self) -> list[tuple[int, np.ndarray]]:
        """(CTA index, its slot as bytes) of every sampled CTA."""
        raw = self.data.view(np.uint8)
        size = self.layout.size
        return [(int(c), raw[k * size:(k + 1) * size]) for k, c in enumerate(self.ctl[C_CTAS:]) if c >= 0]


# ------------------------------------------------------------------------------ the code
def before_cta(b: ll.IRBuilder, ctl: ll.Value, ws_cur: ll.Value, wid: ll.Value, c: ll.Value) -> None:
    """Before CTA c: take the next sampled slot (one atomic add), or the worker's scratch slot once they
    are gone, and remember which CTA has it."""
    def at(k):
        return b.gep(ctl, [k if isinstance(k, ll.Value) else const_int(I64, k)])

    slots = b.load(at(C_SLOTS))
    k = b.atomic_rmw("add", at(C_NEXT), const_int(I64, 1), "monotonic")
    want = b.icmp_signed("<", k, slots)
    slot = b.select(want, k, b.add(slots, wid))
    b.store(b.add(b.load(at(C_BASE)), b.mul(slot, b.load(at(C_SLOT_BYTES)))), ws_cur)
    b.store(c, at(b.select(want, b.add(k, const_int(I64, C_CTAS)), const_int(I64, C_DUMMY))))


class PatternEmitter:
    """The per-thread accumulators in one lowered function (instrument/emit.py ProbeEmitter calls it)."""

    def __init__(self, em) -> None:
        self.em = em
        self.lw = em.lw
        self.nb, self.nm = len(em.plan.branches), len(em.plan.memory)

    def _n(self) -> ll.Value:
        """Threads per slot row (even): a constant in block-specialized code."""
        block = self.lw.cg.block
        if block is not None:
            n = block[0] * block[1] * block[2]
            return const_int(I64, n + (n & 1))
        return self.em._fixed(WS_PAT_THREADS)

    def _at(self, ty: ll.IntType, row_units: ll.Value) -> ll.Value:
        """&slot[row_units + tlin] as `ty` (row_units: the row's start in elements of ty)."""
        lw, em = self.lw, self.em
        cur = em._fixed(WS_PAT_CUR)
        base = em._entry(("patterns", ty.width), lambda b: b.inttoptr(cur, ty.as_pointer()))
        return lw.b.gep(base, [lw.b.add(row_units, lw.b.zext(lw.tlin, I64))])

    def _i32_row(self, row: int) -> ll.Value:
        return self._at(I32, self.lw.b.mul(self._n(), const_int(I64, row)))

    def _i64_row(self, row: int) -> ll.Value:
        """Row `row` of the i64 arrays, which start after the 2 nb + nm rows of i32 (n is even)."""
        b = self.lw.b
        half = b.lshr(self._n(), const_int(I64, 1))
        return self._at(I64, b.add(b.mul(half, const_int(I64, 2 * self.nb + self.nm)),
                                   b.mul(self._n(), const_int(I64, row))))

    def _update(self, p: ll.Value, f) -> ll.Value:
        """*p = f(*p) (the runtime's own memory); the old value."""
        lw, b = self.lw, self.lw.b
        old = lw.internal_access(b.load(p))
        lw.internal_access(b.store(f(old), p))
        return old

    def branch(self, site, taken: ll.Value) -> None:
        b = self.lw.b
        self._update(self._i32_row(site.ident), lambda v: b.add(v, const_int(I32, 1)))
        self._update(self._i32_row(self.nb + site.ident), lambda v: b.add(v, b.zext(taken, I32)))

    def memory(self, site, addr: ll.Value) -> None:
        b = self.lw.b
        old = self._update(self._i32_row(2 * self.nb + site.ident), lambda v: b.add(v, const_int(I32, 1)))
        first = b.icmp_signed("==", old, const_int(I32, 0))
        self._update(self._i64_row(site.ident), lambda v: b.select(first, addr, v))
        self._update(self._i64_row(self.nm + site.ident), lambda v: b.or_(v, addr))




# ------------------------------------------------------------------------------ the post-pass
@dataclass
class PatternCounts:
    """Per branch site: warps and CTAs that executed it, and of those the uniform ones; per memory site:
    requests (warps with an active thread), warps per x-stride class (STRIDE_CLASSES), the x-strides
    seen (bytes -> warps), sectors (summed over requests that have them), the OR of its addresses, and
    thread accesses.  Sums over the sampled CTAs of every counted launch (merge adds)."""
    warps: np.ndarray
    warps_uniform: np.ndarray
    ctas: np.ndarray
    ctas_uniform: np.ndarray
    requests: np.ndarray
    classes: np.ndarray  # [site, class]
    sectors: np.ndarray
    sector_requests: np.ndarray
    bits: np.ndarray  # uint64
    accesses: np.ndarray
    strides: list[dict[int, int]] = field(default_factory=list)

    def merge(self, o: PatternCounts) -> PatternCounts:
        return PatternCounts(*(getattr(self, f) + getattr(o, f) for f in _SUMMED),
                             bits=self.bits | o.bits, accesses=self.accesses + o.accesses,
                             strides=[_add(a, c) for a, c in zip(self.strides, o.strides, strict=True)])

    def alignment(self, m: int) -> int:
        v = int(self.bits[m])
        return MAX_ALIGN if v == 0 else min(v & -v, MAX_ALIGN)


_SUMMED = ("warps", "warps_uniform", "ctas", "ctas_uniform", "requests", "classes", "sectors", "sector_requests")


def _add(a: dict, c: dict) -> dict:
    out = dict(a)
    for k, v in c.items():
        out[k] = out.get(k, 0) + v
    return out


def summarize(pb: PatternBuffers, block: tuple[int, int, int]) -> PatternCounts:
    """The pattern counts of the sampled CTAs."""
    plan, lay = pb.plan, pb.layout
    nb, nm, n = lay.nbranches, lay.nmemory, lay.n
    nthreads = block[0] * block[1] * block[2]
    nwarps = -(-nthreads // WARP)
    pad = nwarps * WARP
    z = np.zeros
    out = PatternCounts(z(nb, np.int64), z(nb, np.int64), z(nb, np.int64), z(nb, np.int64), z(nm, np.int64),
                        z((nm, len(STRIDE_CLASSES)), np.int64), z(nm, np.int64), z(nm, np.int64),
                        z(nm, np.uint64), z(nm, np.int64), [{} for _ in range(nm)])
    size = np.array([max(s.size, 1) for s in plan.memory], np.int64)
    sectored = np.array([s.space != "shared" for s in plan.memory], bool)
    # x-neighbours within a warp: thread t and t + 1 in the same row and the same warp
    t = np.arange(pad - 1)
    xpair = ((t % block[0]) != block[0] - 1) & ((t // WARP) == ((t + 1) // WARP)) & (t + 1 < nthreads)
    ctas = pb.sampled()
    if not ctas:
        return out
    ex, tk, cnt, first, bits = ([], [], [], [], [])
    for _cta, raw in ctas:  # every sampled CTA's threads side by side: [site, cta * pad + thread]
        i32 = raw[:lay.first].view(np.int32)
        i64 = raw[lay.first:lay.bits + 8 * nm * n].view(np.int64)
        ex.append(_rows(i32[:nb * n], nb, n, nthreads, pad))
        tk.append(_rows(i32[nb * n:2 * nb * n], nb, n, nthreads, pad))
        cnt.append(_rows(i32[2 * nb * n:(2 * nb + nm) * n], nm, n, nthreads, pad))
        first.append(_rows(i64[:nm * n], nm, n, nthreads, pad))
        bits.append(_rows(i64[nm * n:2 * nm * n], nm, n, nthreads, pad))
    ex, tk, cnt, first, bits = (np.concatenate(a, axis=1) for a in (ex, tk, cnt, first, bits))
    nc = len(ctas)
    _branches(out, ex, tk, nc * nwarps, nc)
    if nm:
        out.bits |= np.bitwise_or.reduce(bits.view(np.uint64), axis=1)
        out.accesses += cnt.sum(axis=1)
        _memory(out, cnt > 0, first, size, sectored, np.tile(np.append(xpair, False), nc)[:-1], nc * nwarps)
    return out


def _rows(a: np.ndarray, rows: int, n: int, nthreads: int, pad: int) -> np.ndarray:
    """[site, thread] with the threads padded to whole warps (zeros: inactive)."""
    m = a.reshape(rows, n)[:, :nthreads].astype(np.int64)
    return np.pad(m, ((0, 0), (0, pad - nthreads)))


def _same(v: np.ndarray, active: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Per [site, group]: any active thread, and all active threads hold one value."""
    s = v.shape[0]
    act = active.reshape(s, groups, -1)
    big = np.iinfo(np.int64).max
    g = v.reshape(s, groups, -1)
    lo = np.where(act, g, big).min(axis=2)
    hi = np.where(act, g, -big).max(axis=2)
    return act.any(axis=2), lo == hi


def _branches(out: PatternCounts, ex: np.ndarray, tk: np.ndarray, nwarps: int, nctas: int) -> None:
    if not len(ex):
        return
    active = ex > 0
    for groups, total, uniform in ((nwarps, out.warps, out.warps_uniform), (nctas, out.ctas, out.ctas_uniform)):
        any_e, same_e = _same(ex, active, groups)
        _, same_t = _same(tk, active, groups)
        total += any_e.sum(axis=1)
        uniform += (any_e & same_e & same_t).sum(axis=1)


def _memory(out: PatternCounts, active, first, size, sectored, xpair, nwarps: int) -> None:
    nm = len(first)
    if not nm:
        return
    any_w = active.reshape(nm, nwarps, WARP).any(axis=2)
    out.requests += any_w.sum(axis=1)
    # x-strides: per warp, the differences of neighbouring threads' first addresses where both accessed
    both = np.pad(active[:, :-1] & active[:, 1:] & xpair[None, :], ((0, 0), (0, 1))).reshape(nm, nwarps, WARP)
    d = np.pad(first[:, 1:] - first[:, :-1], ((0, 0), (0, 1))).reshape(nm, nwarps, WARP)
    big = np.iinfo(np.int64).max
    lo, hi = np.where(both, d, big).min(axis=2), np.where(both, d, -big).max(axis=2)
    seen = both.any(axis=2)
    one = seen & (lo == hi)
    cls = np.where(lo == 0, 0, np.where(lo == size[:, None], 1, 2))
    for c in range(3):
        out.classes[:, c] += (one & (cls == c)).sum(axis=1)
    out.classes[:, 3] += (seen & ~one).sum(axis=1)
    ms, ws = np.nonzero(one)
    pairs, counts = np.unique(np.stack([ms, lo[ms, ws]]), axis=1, return_counts=True)
    for (m, v), k in zip(pairs.T.tolist(), counts.tolist(), strict=True):
        out.strides[m][v] = out.strides[m].get(v, 0) + k
    # sectors: distinct 32-byte sectors of each warp's first accesses (both ends of each access)
    rows = np.flatnonzero(sectored)
    if not len(rows):
        return
    act = np.repeat(active[rows].reshape(len(rows), nwarps, WARP), 2, axis=2)
    f = first[rows].reshape(len(rows), nwarps, WARP)
    ends = np.stack([f // SECTOR, (f + size[rows, None, None] - 1) // SECTOR], axis=3).reshape(len(rows), nwarps,
                                                                                                 2 * WARP)
    keys = np.sort(np.where(act, ends, big), axis=2)
    new = (keys != big) & np.concatenate([np.ones((len(rows), nwarps, 1), bool), keys[:, :, 1:] != keys[:, :, :-1]],
                                         axis=2)
    out.sectors[rows] += new.sum(axis=2).sum(axis=1)
    out.sector_requests[rows] += any_w[rows].sum(axis=1)
