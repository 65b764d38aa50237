"""Profile analyses of a trace: the GPU profiler's view of a kernel (Nsight Compute's memory, branch and
barrier counters), computed from the records of a CPU run.

    t = ptxjit.trace(kernel, grid, block, args, records=("blocks", "memory", "branches"))
    t.memory_efficiency(); t.branch_efficiency(); t.barrier_waits()

Each returns a pyarrow Table, one row per static site that ran (function, ptx_line, source: the CUDA line
from .loc or "", instruction, then counts); `totals(table)` sums a table over its sites and
`ncu_metrics(memory table)` names the memory totals as Nsight Compute's metrics.

**Warps and warp-level instances.**  A warp is 32 consecutive linear thread indices of a CTA
(tid // 32), as on the GPU.  ptxjit runs a CTA's threads one after another, so the warp-level execution
an instruction's records belong to is reconstructed: the k-th execution of a site by each thread of a
warp (k counted per thread and CTA, in program order) is the warp's k-th execution of it.  In converged
code that is exactly the GPU's grouping; in a loop whose lanes leave at different iterations it pairs the
lanes still running at iteration k, which is what the SIMT hardware executes together.

**Global memory** (also const and generic: ptxjit records host addresses and cannot tell where a generic
address would have pointed on the GPU, so generic counts as global, as it mostly is).  A warp request is
one warp-level execution of a memory instruction; it touches the 32-byte sectors holding the bytes its
active lanes access (addr // 32 .. (addr + size - 1) // 32), each counted once per request: Nsight's
l1tex__t_sectors / l1tex__t_requests.  Sector counts depend on where arrays start: cudaMalloc returns
256-byte aligned memory, NumPy arrays need not be.  **Local memory** is interleaved across the warp on
the GPU (consecutive 4-byte words of a thread's local space are 128 bytes apart, lane l at 4 * l, so a
warp accessing one offset is one 128-byte line); ptxjit records per-thread offsets and maps them so.

**Shared memory**: 32 banks of 4 bytes, word w (byte offset // 4) in bank w % 32.  The banks deliver 128
bytes per cycle (a *wavefront*), so a request is split into phases of at most 128 bytes: the whole warp
for accesses of up to 4 bytes, half-warps (lanes 0-15, 16-31) for 8-byte accesses, quarter-warps (lanes
8q .. 8q + 7) for 16-byte ones (generally 128 / size lanes).  Within a phase lanes accessing the same word
share it (broadcast on loads, one write on stores); a bank holding n distinct accessed words needs n
wavefronts, so a phase takes max over banks of its distinct words, and a request the sum over its phases
that have an active lane.  Bank conflicts are the wavefronts beyond that ideal (wavefronts - phases): a
conflict-free 16-byte warp access is 4 wavefronts and 0 conflicts.  This is the model NVIDIA's forums give
for Nsight's l1tex__data_pipe_lsu_wavefronts_mem_shared / l1tex__data_bank_conflicts_pipe_lsu_mem_shared
counters (forums.developer.nvidia.com/t/260900: transactions of at most 128 bytes warp-wide for accesses
wider than 4 bytes; /t/359822: the bank-conflict counter is the wavefronts in excess of the ideal, 4 for a
warp's LDS.128) and it reproduces the H100's counts in tests/data/ncu.  Not modelled: Volta and later
serve some uniform-address 64/128-bit loads (lanes n and n ^ 1 or n ^ 2 at equal addresses) in fewer
wavefronts; ldmatrix, cp.async and bulk copies take their own paths (cp.async's shared part is counted as
a 4/8/16-byte store here).

**Branches** are the PTX's conditional branches (`@%p bra`).  ptxas if-converts short ones into predicated
code and adds its own, so these are the CUDA-level decisions, not the SASS branches Nsight counts.  A
warp-level execution is uniform when all its active lanes go the same way, else divergent; efficiency =
uniform / executions (Nsight's "branch efficiency").

**Barrier waits** are a model of GPU time, not the CPU's: per warp and barrier epoch (the stretch between
two CTA barriers), the instructions the warp issues, counting a basic block once per warp-level execution
(the most times any of its lanes ran it in that epoch) times its instruction count, the instructions of a
block that holds barriers split among the epochs they run in.  At a CTA barrier every warp waits for the
slowest: wait = max over the CTA's warps reaching it - own count.  share = sum of waits / sum of
(max x warps): the fraction of the warps' instruction slots up to that barrier spent waiting, assuming
every instruction takes the same time.  Warp-level barriers and collectives (bar.warp.sync, shfl, vote...)
make no other warp wait and are not reported.

Traces hold up to 10^8 records: the analyses are vectorized (a few sorts of packed uint64 keys per chunk
of whole CTAs, no Python loop per record or request), about 0.5 us per memory record.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ptxjit.instrument.probes import KINDS, is_cta_barrier

WARP = 32
SECTOR = 32       # bytes per sector (L1/L2 caches are managed in 32-byte sectors of 128-byte lines)
BANKS = 32
BANK_BYTES = 4
PHASE_BYTES = BANKS * BANK_BYTES  # what the banks deliver per wavefront
CHUNK = 1 << 22   # records analysed at a time (whole CTAs: no warp spans two): bounds the temporaries
KEY_BITS = 64     # sort keys packed into one uint64 where they fit (else a slower lexsort)

GLOBAL, SHARED, LOCAL, OTHER = range(4)  # how a memory site's addresses are analysed


def _space_class(space: str) -> int:
    if space in ("global", "const", ""):
        return GLOBAL
    if space.startswith("shared"):
        return SHARED
    return LOCAL if space == "local" else OTHER


# ------------------------------------------------------------------------------------------- grouping
def _pack(cols: Sequence[np.ndarray], bits: int | None = None) -> tuple[np.ndarray, list[int]] | None:
    """Integer columns (the first most significant), each shifted to start at 0, packed into one uint64
    that sorts as they do lexicographically, and their widths; None if they need more than `bits`
    (KEY_BITS) bits."""
    n = len(cols[0])
    parts, widths = [], []
    for c in cols:
        c = np.asarray(c, np.int64)
        c = (c - c.min() if n else c).view(np.uint64)  # non-negative: the view is the value
        parts.append(c)
        widths.append(int(c.max()).bit_length() if n else 0)
    if sum(widths) > (KEY_BITS if bits is None else bits):
        return None
    key = np.zeros(n, np.uint64)
    for c, w in zip(parts, widths, strict=True):
        if w:
            key = (key << np.uint64(w)) | c
    return key, widths


@dataclass
class Groups:
    """Rows grouped by equal keys: `ids` per row (0 .. n-1 in the keys' lexicographic order), `first` a
    row of each group."""
    ids: np.ndarray
    first: np.ndarray
    n: int


def _groups(*cols: np.ndarray) -> Groups:
    m = len(cols[0])
    if not m:
        return Groups(np.zeros(0, np.int64), np.zeros(0, np.int64), 0)
    packed = _pack(cols)
    if packed is not None:  # one uint64 sort (the usual case)
        order = np.argsort(packed[0])
        new = _changes(packed[0][order])
    else:  # keys too wide to pack
        order = np.lexsort(cols[::-1])
        new = np.logical_or.reduce([_changes(np.asarray(c)[order]) for c in cols])
    sorted_ids = np.cumsum(new) - 1
    ids = np.empty(m, np.int64)
    ids[order] = sorted_ids
    return Groups(ids, order[new], int(sorted_ids[-1]) + 1)


def _chunks(cta: np.ndarray) -> Iterator[slice]:
    """Slices of about CHUNK records holding whole CTAs (records are in CTA order)."""
    n, start, size = len(cta), 0, CHUNK
    while start < n:
        end = min(start + size, n)
        if end < n:
            end = int(np.searchsorted(cta, cta[end - 1], side="right"))
        yield slice(start, end)
        start = end


def _expand(start: np.ndarray, count: np.ndarray, *carried: np.ndarray) -> list[np.ndarray]:
    """Per row i, count[i] consecutive values start[i], start[i] + 1, ..., with the carried columns'
    values repeated alongside."""
    if bool((count == 1).all()):  # the usual case: an access within one sector or word
        return [start, *carried]
    idx = np.repeat(np.arange(len(count)), count)
    offs = np.arange(len(idx), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
    return [start[idx] + offs, *(c[idx] for c in carried)]


@dataclass
class Requests:
    """Warp-level executions of sites: the records sorted by (cta, site, warp, lane, record order), and
    per sorted record its request (0 .. n-1); `site` per request."""
    order: np.ndarray
    ids: np.ndarray
    n: int
    site: np.ndarray


def _warp_requests(cta: np.ndarray, tid: np.ndarray, site: np.ndarray) -> Requests:
    """Group records into warp requests (cta, site, warp, k) with one sort: sorted by (cta, site, warp,
    lane) and record order, a thread's records of a site are consecutive in program order (records are
    in (cta, epoch, tid, seq) order, and a thread's epochs grow with seq), so k is the position in the
    thread's run; a warp's requests are then numbered by its lanes' largest k."""
    m = len(cta)
    if not m:
        return Requests(np.zeros(0, np.int64), np.zeros(0, np.int64), 0, np.zeros(0, np.int64))
    warp, lane, rows = tid // WARP, tid % WARP, np.arange(m, dtype=np.int64)
    packed = _pack((cta, site, warp, lane, rows))
    if packed is not None:
        key, w = packed
        order = np.argsort(key)
        thread = key[order] >> np.uint64(w[4])
        group = thread >> np.uint64(w[3])
        new_thread, new_warp = _changes(thread), _changes(group)
    else:
        order = np.lexsort((lane, warp, site, cta))  # stable: record order within a thread
        new_warp = _changes(cta[order]) | _changes(site[order]) | _changes(warp[order])
        new_thread = new_warp | _changes(lane[order])
    k = rows - np.maximum.accumulate(np.where(new_thread, rows, 0))
    starts = np.flatnonzero(new_warp)
    nreq = np.maximum.reduceat(k, starts) + 1
    ids = (np.cumsum(nreq) - nreq)[np.cumsum(new_warp) - 1] + k
    n = int(nreq.sum())
    rsite = np.zeros(n, np.int64)
    rsite[ids] = site[order]
    return Requests(order, ids, n, rsite)


def _changes(x: np.ndarray) -> np.ndarray:
    """True where a sorted column starts a new value."""
    new = np.empty(len(x), bool)
    if len(x):
        new[0] = True
        np.not_equal(x[1:], x[:-1], out=new[1:])
    return new


def _distinct(group: np.ndarray, value: np.ndarray, n: int) -> np.ndarray:
    """Per group 0 .. n-1, its number of distinct values (values taken relative to the group's lowest,
    so that (group, value) usually packs into one uint64 sort)."""
    if not len(group):
        return np.zeros(n, np.int64)
    low = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(low, group, value)
    rel = value - low[group]
    wv, wg = int(rel.max()).bit_length(), max(n - 1, 1).bit_length()
    if wv + wg <= KEY_BITS:
        key = np.sort((group.astype(np.uint64) << np.uint64(wv)) | rel.astype(np.uint64))
        return np.bincount((key >> np.uint64(wv))[_changes(key)].astype(np.int64), minlength=n)
    order = np.lexsort((rel, group))  # values spread over more than 2^(64 - wg) (e.g. the whole heap)
    g, v = group[order], rel[order]
    return np.bincount(g[_changes(g) | _changes(v)], minlength=n)


def _count(ids: np.ndarray, n: int, weights: np.ndarray | None = None) -> np.ndarray:
    out = np.bincount(ids, weights=weights, minlength=n)
    return np.rint(out).astype(np.int64) if weights is not None else out


# ------------------------------------------------------------------------------------------- tables
def _need(t, kind: str, what: str) -> None:
    if kind not in t.record_types:
        raise ValueError(f"{what} needs the trace's '{kind}' records: trace with records=(..., '{kind}') "
                         f"(this trace has {', '.join(t.record_types) or 'none'})")


def _column(tab, name: str) -> np.ndarray:
    return tab.column(name).to_numpy(zero_copy_only=False)


def _source(ins) -> str:
    return getattr(ins.pos, "source", "") or ""


def _table(info: list[tuple[str, int, str, str]], rows: np.ndarray, cols: dict):
    """A per-site table: the sites' (function, ptx_line, source, instruction), then `cols` (arrays over
    all sites, or pyarrow arrays over `rows`), for the sites in `rows`."""
    import pyarrow as pa

    out = {"function": pa.array([info[i][0] for i in rows], pa.string()),
           "ptx_line": pa.array([info[i][1] for i in rows], pa.int32()),
           "source": pa.array([info[i][2] for i in rows], pa.string()),
           "instruction": pa.array([info[i][3] for i in rows], pa.string())}
    for name, v in cols.items():
        out[name] = v if isinstance(v, (pa.Array, pa.ChunkedArray)) else pa.array(np.asarray(v)[rows])
    return pa.table(out)


def _ratio(num: np.ndarray, den: np.ndarray, valid: np.ndarray | None = None):
    import pyarrow as pa

    ok = den > 0 if valid is None else (den > 0) & valid
    return pa.array(np.divide(num, den, out=np.zeros(len(num)), where=ok), pa.float64(), mask=~ok)


def _masked(values: np.ndarray, valid: np.ndarray):
    import pyarrow as pa

    return pa.array(values, pa.int64(), mask=~valid)


# ------------------------------------------------------------------------------------------- memory
REQ, ACC, SEC, WAVE, CONF = range(5)


def memory_efficiency(t):
    """Per memory site that ran: requests (warp-level executions), accesses (thread records), bytes;
    for global, const, generic and local sites sectors and sectors_per_request; for shared sites
    wavefronts, wavefronts_per_request and bank_conflicts (null where they do not apply).  See the
    module doc for the models."""
    _need(t, "memory", "memory_efficiency")
    rec = t.records("memory")
    sites = t.plan.memory
    size = np.array([max(s.size, 1) for s in sites], np.int64)
    cls = np.array([_space_class(s.space) for s in sites], np.int64)
    acc = np.zeros((5, len(sites)), np.int64)
    for sl in _chunks(rec["cta"]):
        _memory_chunk(rec[sl], size, cls, acc)
    rows = np.flatnonzero(acc[ACC] > 0)
    c = cls[rows]
    sectored, shared = (c == GLOBAL) | (c == LOCAL), c == SHARED
    req = acc[REQ][rows]
    info = [(s.function, s.line, s.source, s.text) for s in sites]
    return _table(info, rows, {
        "site": np.arange(len(sites), dtype=np.int32),
        "space": np.array([s.space or "generic" for s in sites], object),
        "kind": np.array([KINDS[s.kind] for s in sites], object),
        "size": size.astype(np.int32),
        "requests": acc[REQ], "accesses": acc[ACC], "bytes": acc[ACC] * size,
        "sectors": _masked(acc[SEC][rows], sectored),
        "sectors_per_request": _ratio(acc[SEC][rows], req, sectored),
        "wavefronts": _masked(acc[WAVE][rows], shared),
        "wavefronts_per_request": _ratio(acc[WAVE][rows], req, shared),
        "bank_conflicts": _masked(acc[CONF][rows], shared)})


def _memory_chunk(r: np.ndarray, size: np.ndarray, cls: np.ndarray, acc: np.ndarray) -> None:
    nsites = acc.shape[1]
    cta, tid, site = (r[f].astype(np.int64) for f in ("cta", "tid", "site"))
    req = _warp_requests(cta, tid, site)
    acc[REQ] += _count(req.site, nsites)
    acc[ACC] += _count(site, nsites)
    o = req.order  # from here on, records in request order
    site, lane, addr = site[o], tid[o] % WARP, r["addr"][o].astype(np.int64)
    sz, c = size[site], cls[site]
    last = addr + sz - 1

    # sectors: of the bytes for global-like sites; of each word's place in the warp's interleaved
    # local memory for local sites (word w of lane l at byte 128 w + 4 l)
    g, lo = np.flatnonzero(c == GLOBAL), np.flatnonzero(c == LOCAL)
    gsec, greq = _expand(addr[g] // SECTOR, last[g] // SECTOR - addr[g] // SECTOR + 1, req.ids[g])
    lword, lreq, llane = _expand(addr[lo] // BANK_BYTES, last[lo] // BANK_BYTES - addr[lo] // BANK_BYTES + 1,
                                 req.ids[lo], lane[lo])
    lsec = lword * (WARP * BANK_BYTES // SECTOR) + llane * BANK_BYTES // SECTOR
    sectors = _distinct(np.concatenate([greq, lreq]), np.concatenate([gsec, lsec]), req.n)
    acc[SEC] += _count(req.site, nsites, sectors.astype(np.float64))

    # shared: per (request, phase, bank) its distinct words, in one sort of (request, phase, bank, row)
    # keys (row = word // 32); a phase's wavefronts are its busiest bank's words
    s = np.flatnonzero(c == SHARED)
    if not len(s):
        return
    per_phase = np.maximum(1, PHASE_BYTES // np.maximum(sz[s], BANK_BYTES))
    word, wreq, wphase = _expand(addr[s] // BANK_BYTES, last[s] // BANK_BYTES - addr[s] // BANK_BYTES + 1,
                                 req.ids[s], lane[s] // per_phase)
    packed = _pack((wreq, wphase, word % BANKS, word // BANKS), 64)
    assert packed is not None  # requests < 2^32 per chunk, shared memory < 2^20 bytes
    key, w = packed
    key = np.sort(key)
    bank = key >> np.uint64(w[3])
    phase = bank >> np.uint64(w[2])
    new_word, new_bank, new_phase = _changes(key), _changes(bank), _changes(phase)
    words = np.add.reduceat(new_word.astype(np.int64), np.flatnonzero(new_bank))
    wave = np.maximum.reduceat(words, np.flatnonzero(new_phase[new_bank]))
    preq = (phase[new_phase] >> np.uint64(w[1])).astype(np.int64) + int(wreq.min())
    wave_req = _count(preq, req.n, wave.astype(np.float64))
    conflicts = wave_req - _count(preq, req.n)
    acc[WAVE] += _count(req.site, nsites, wave_req.astype(np.float64))
    acc[CONF] += _count(req.site, nsites, conflicts.astype(np.float64))


def ncu_metrics(mem) -> dict[str, int]:
    """The totals of a memory_efficiency() table under the names of the Nsight Compute metrics they
    model (global: global and generic sites; loads and stores, atomics apart)."""
    d = mem.to_pydict()
    out = {}
    for op, kind in (("ld", "load"), ("st", "store")):
        glob = [i for i, (sp, k) in enumerate(zip(d["space"], d["kind"], strict=True))
                if k == kind and sp in ("global", "generic")]
        shared = [i for i, (sp, k) in enumerate(zip(d["space"], d["kind"], strict=True))
                  if k == kind and sp == "shared"]
        out[f"l1tex__t_requests_pipe_lsu_mem_global_op_{op}.sum"] = sum(d["requests"][i] for i in glob)
        out[f"l1tex__t_sectors_pipe_lsu_mem_global_op_{op}.sum"] = sum(d["sectors"][i] for i in glob)
        out[f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"] = sum(d["wavefronts"][i] for i in shared)
        out[f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"] = \
            sum(d["bank_conflicts"][i] for i in shared)
    return out


# ------------------------------------------------------------------------------------------- branches
def branch_efficiency(t):
    """Per conditional branch site that ran: executions (warp-level), uniform, divergent, efficiency
    (uniform / executions), threads (thread-level executions), average_active_threads (threads /
    executions) and taken (thread-level)."""
    _need(t, "branches", "branch_efficiency")
    tab = t.table("branches")
    cta, tid, branch = (_column(tab, f).astype(np.int64) for f in ("cta", "tid", "branch"))
    taken = _column(tab, "taken").astype(np.int64)
    sites = t.plan.branches
    n = len(sites)
    executions, uniform, threads, ntaken = (np.zeros(n, np.int64) for _ in range(4))
    for sl in _chunks(cta):
        ex = _warp_requests(cta[sl], tid[sl], branch[sl])
        active = _count(ex.ids, ex.n)
        went = _count(ex.ids, ex.n, taken[sl][ex.order].astype(np.float64))
        site = ex.site
        executions += _count(site, n)
        uniform += _count(site, n, ((went == 0) | (went == active)).astype(np.float64))
        threads += _count(branch[sl], n)
        ntaken += _count(branch[sl], n, taken[sl].astype(np.float64))
    rows = np.flatnonzero(threads > 0)
    info = [(s.function, s.line, s.source, s.text) for s in sites]
    return _table(info, rows, {
        "site": np.arange(n, dtype=np.int32), "executions": executions, "uniform": uniform,
        "divergent": executions - uniform, "efficiency": _ratio(uniform[rows], executions[rows]),
        "threads": threads, "average_active_threads": _ratio(threads[rows], executions[rows]),
        "taken": ntaken})


# ------------------------------------------------------------------------------------------- barriers
@dataclass
class _Segments:
    """Per block site: its CTA barriers (count, and the instruction of each) and the instructions of
    each stretch between them (segment i ends at barrier i; the last one at the block's end)."""
    nbar: np.ndarray        # per block
    length: np.ndarray      # [block, segment]
    barrier: list[list]     # per block: its barrier instructions


def _segments(plan) -> _Segments:
    bars = [[j for j, ins in enumerate(instrs) if is_cta_barrier(ins)] for instrs in plan.block_instrs]
    nseg = 1 + max((len(b) for b in bars), default=0)
    length = np.zeros((len(bars), nseg), np.int64)
    for i, (b, instrs) in enumerate(zip(bars, plan.block_instrs, strict=True)):
        ends = [j + 1 for j in b] + [len(instrs)]
        length[i, :len(ends)] = np.diff([0, *ends])
    return _Segments(np.array([len(b) for b in bars], np.int64), length,
                     [[plan.block_instrs[i][j] for j in b] for i, b in enumerate(bars)])


def barrier_waits(t):
    """Per CTA barrier site: barriers (CTA-level instances), warps (warp arrivals), instructions (the
    arriving warps' modelled instruction counts in the epochs the barrier ends), waits (sum over warps of
    the slowest warp's count - own), span (sum of slowest count x warps), share (waits / span),
    max_wait, mean_wait (per warp arrival).  An instruction-count model of the GPU (module doc)."""
    _need(t, "blocks", "barrier_waits")
    plan = t.plan
    seg = _segments(plan)
    blocks = t.records("blocks")
    inst, derived = [], []
    for sl in _chunks(blocks["cta"]):
        r = blocks[sl]
        cta, epoch, tid, blk = (r[f].astype(np.int64) for f in ("cta", "epoch", "tid", "site"))
        # warp-level executions of a block in an epoch: the most any lane of the warp ran it
        per_thread = _groups(cta, epoch, tid, blk)
        runs = np.bincount(per_thread.ids, minlength=per_thread.n)
        f = per_thread.first
        per_warp = _groups(cta[f], epoch[f], tid[f] // WARP, blk[f])
        execs = np.zeros(per_warp.n, np.int64)
        np.maximum.at(execs, per_warp.ids, runs)
        w = f[per_warp.first]
        for i in range(seg.length.shape[1]):  # segment i of a block entered in epoch e runs in e + i
            sel = seg.nbar[blk[w]] >= i
            ws = w[sel]
            inst.append((cta[ws], epoch[ws] + i, tid[ws] // WARP, execs[sel] * seg.length[blk[ws], i]))
        if "barriers" not in t.record_types:  # arrivals: each barrier of each block a thread ran
            for i in range(seg.length.shape[1] - 1):
                sel = np.flatnonzero(seg.nbar[blk] > i)
                derived.append((cta[sel], epoch[sel] + i, tid[sel], blk[sel] * seg.length.shape[1] + i))
    ic, ie, iw, iv = (np.concatenate([p[j] for p in inst]) if inst else np.zeros(0, np.int64) for j in range(4))

    if "barriers" in t.record_types:
        tab = t.table("barriers")
        cta_kind = _column(tab, "kind").astype(str) == "cta"  # warp collectives make no other warp wait
        ac, ae, at, asite = (_column(tab, f).astype(np.int64)[cta_kind] for f in ("cta", "epoch", "tid", "site"))
        info = [(s.function, s.line, s.source, s.text) for s in plan.barriers]
    else:
        ac, ae, at, asite = (np.concatenate([p[j] for p in derived]) if derived else np.zeros(0, np.int64)
                             for j in range(4))
        nseg = seg.length.shape[1]  # derived site = block * nseg + its barrier's index in the block
        info = [("", 0, "", "")] * (len(plan.blocks) * nseg)
        for b, bars in enumerate(seg.barrier):
            for i, ins in enumerate(bars):
                info[b * nseg + i] = (plan.blocks[b].function, ins.pos.line, _source(ins), ins.text)
    return _waits(info, (ic, ie, iw, iv), (ac, ae, at, asite))


def _waits(info: list[tuple[str, int, str, str]], inst: tuple, arrivals: tuple):
    nsites = len(info)
    ic, ie, iw, iv = inst
    ac, ae, at, asite = arrivals
    # the warps reaching each barrier (a CTA's barrier instance is its epoch); where lanes reach
    # different barrier instructions for one epoch, the lowest site stands for it
    arr = _groups(ac, ae, at // WARP)
    wsite = np.full(arr.n, nsites, np.int64)
    np.minimum.at(wsite, arr.ids, asite)
    wc, we, ww = ac[arr.first], ae[arr.first], at[arr.first] // WARP
    # each arriving warp's instructions in the epoch: join on (cta, epoch, warp)
    keys = _groups(np.concatenate([ic, wc]), np.concatenate([ie, we]), np.concatenate([iw, ww]))
    per_key = np.bincount(keys.ids[:len(ic)], weights=iv.astype(np.float64), minlength=keys.n)
    mine = np.rint(per_key[keys.ids[len(ic):]]).astype(np.int64)
    ev = _groups(wc, we)
    slowest = np.zeros(ev.n, np.int64)
    np.maximum.at(slowest, ev.ids, mine)
    esite = np.full(ev.n, nsites, np.int64)
    np.minimum.at(esite, ev.ids, wsite)
    wait = slowest[ev.ids] - mine
    site = esite[ev.ids]
    nwarps = np.bincount(ev.ids, minlength=ev.n)
    barriers, warps = _count(esite, nsites + 1), _count(site, nsites + 1)
    waits = _count(site, nsites + 1, wait.astype(np.float64))
    span = _count(esite, nsites + 1, (slowest * nwarps).astype(np.float64))
    max_wait = np.zeros(nsites + 1, np.int64)
    np.maximum.at(max_wait, site, wait)
    rows = np.flatnonzero(barriers[:nsites] > 0)
    return _table(info, rows, {
        "barriers": barriers, "warps": warps, "instructions": span - waits, "waits": waits, "span": span,
        "share": _ratio(waits[rows], span[rows]), "max_wait": max_wait,
        "mean_wait": _ratio(waits[rows], warps[rows])})


# ------------------------------------------------------------------------------------------- totals
_RATIOS = {  # ratio column: (numerator, denominator)
    "sectors_per_request": ("sectors", "requests"),
    "wavefronts_per_request": ("wavefronts", "requests"),
    "efficiency": ("uniform", "executions"),
    "average_active_threads": ("threads", "executions"),
    "share": ("waits", "span"),
    "mean_wait": ("waits", "warps"),
}
_NOT_ADDITIVE = {"site", "ptx_line", "size", "max_wait"}


def totals(table) -> dict[str, float | int | None]:
    """One analysis table summed over its sites: its count columns summed, its ratios recomputed from
    those sums over the rows where they apply (sectors_per_request over the sites that have sectors)."""
    import pyarrow as pa

    d = table.to_pydict()
    out: dict[str, float | int | None] = {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        if name in _RATIOS or name in _NOT_ADDITIVE or not pa.types.is_integer(col.type):
            continue
        out[name] = sum(v for v in d[name] if v is not None)
    if "max_wait" in d:
        out["max_wait"] = max(d["max_wait"], default=0)
    for name, (num, den) in _RATIOS.items():
        if name not in d:
            continue
        rows = [i for i, v in enumerate(d[num]) if v is not None]
        n, m = sum(d[num][i] for i in rows), sum(d[den][i] for i in rows)
        out[name] = n / m if m else None
    return out


__all__ = ["barrier_waits", "branch_efficiency", "memory_efficiency", "ncu_metrics", "totals"]
