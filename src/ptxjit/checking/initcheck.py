"""initcheck: reads of memory nothing wrote before them.

* shared memory: a read (load or atomic) of bytes no thread of the CTA wrote before it: not in an earlier
  barrier epoch, not by another thread in the same epoch (unordered: racecheck's business, not counted as
  uninitialized), not earlier by the same thread;
* local memory: bytes the thread itself never wrote before the read;
* global memory: bytes of a buffer created uninitialized (`ptxjit.checking.empty`, or any array given to
  `ptxjit.checking.track_uninitialized`) that no launch checked with initcheck has written (a byte mask
  per buffer, updated by every such launch) and that this launch did not write before the read (by the
  same thread earlier, by its CTA in an earlier epoch or in the same epoch by another thread, or by
  another CTA).  Host writes into such a buffer are not seen: `mark_initialized` says so.

One report per PTX site, with its first occurrence as the example.
"""

from __future__ import annotations

import weakref

import numpy as np

from ptxjit.checking.records import (
    SP_GENERIC,
    SP_GLOBAL,
    SP_LOCAL,
    SP_SHARED,
    Accesses,
    Launch,
    dense,
    expand,
    group_min,
)
from ptxjit.checking.report import Report
from ptxjit.instrument.probes import KIND_LOAD, KIND_STORE

# uninitialized buffers: id of the array object (NumPy or DeviceArray; NumPy arrays are not hashable) ->
# (a weak reference to it, its bytes written so far as a bool mask); an entry leaves with its object
_SHADOW: dict[int, tuple[weakref.ref, np.ndarray]] = {}


def shadow_of(obj) -> np.ndarray | None:
    entry = _SHADOW.get(id(obj))
    return entry[1] if entry is not None and entry[0]() is obj else None


def tracked_mask(obj) -> np.ndarray | None:
    """The written-bytes mask of the tracked buffer an argument names: the argument itself, or the memory its
    Pointer points into (a driver allocation under initcheck, driver/memory.py)."""
    from ptxjit.runtime.memory import Pointer

    mask = shadow_of(obj)
    if mask is None and isinstance(obj, Pointer) and obj.memory is not None:
        mask = shadow_of(obj.memory)
    return mask


def assume_written() -> None:
    """A launch initcheck could not watch (run unchecked: a cooperative launch, a kernel reaching memory through
    pointers it loads) may have written any tracked buffer: count every byte of them as written, so that no
    later read is reported for what it wrote."""
    for _ref, mask in list(_SHADOW.values()):
        mask[:] = True


def _array(obj) -> np.ndarray:
    from ptxjit.runtime.memory import DeviceArray

    return obj.array if isinstance(obj, DeviceArray) else obj


def track_uninitialized(obj):
    """Treat obj (a NumPy array or DeviceArray) as uninitialized memory: initcheck reports kernel reads of
    bytes no checked kernel wrote.  Returns obj."""
    arr = _array(obj)
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected a NumPy array or DeviceArray, got {type(obj).__name__}")
    _remember(obj, np.zeros(arr.nbytes, bool))
    return obj


def _remember(obj, mask: np.ndarray) -> np.ndarray:
    key = id(obj)
    _SHADOW[key] = (weakref.ref(obj, lambda _r, k=key: _SHADOW.pop(k, None)), mask)
    return mask


def mark_initialized(obj, start: int = 0, stop: int | None = None) -> None:
    """Bytes [start, stop) of a tracked buffer were written (e.g. by the host)."""
    mask = shadow_of(obj)
    if mask is not None:
        mask[start:stop] = True


def empty(shape, dtype=np.float32):
    """ptxjit.empty, tracked as uninitialized memory for initcheck."""
    from ptxjit.runtime.memory import empty as _empty

    return track_uninitialized(_empty(shape, dtype))


def _tracked(L: Launch) -> list[tuple[int, int, np.ndarray]]:
    """(start, end, mask) of the launch's arguments that are tracked uninitialized buffers."""
    out = []
    for start, end, _, obj in L.arg_ranges():
        mask = tracked_mask(obj)
        if mask is None and getattr(obj, "uninitialized", False):  # a marker runtime/memory.py may set
            mask = _remember(obj, np.zeros(end - start, bool))
        if mask is not None and len(mask) == end - start:
            out.append((start, end, mask))
    return out


def _written_before(a: Accesses, row: np.ndarray, loc: np.ndarray, scope: np.ndarray,
                    by_thread_only: bool) -> np.ndarray:
    """Per granule entry (row, loc) that is a read: whether a write to it came before it (module doc's rules)
    within `scope` (CTA for shared, thread for local, launch for global)."""
    kind = a.kind[row]
    is_w = kind != KIND_LOAD
    cta, epoch = a.cta[row], a.epoch[row]
    done = np.zeros(len(row), bool)
    sub = np.arange(len(row))
    if not by_thread_only:
        # the CTA wrote it in an earlier epoch: the common case (write, __syncthreads(), read), and a
        # test on a small key; only the reads it leaves open, and the writes where they read, go on
        ce, nce = dense(scope, cta, loc)
        first_epoch = group_min(ce[is_w], epoch[is_w], nce)
        done = first_epoch[ce] < epoch
        need = np.zeros(nce, bool)
        need[ce[(kind != KIND_STORE) & ~done]] = True
        sub = np.flatnonzero(need[ce])
        if not len(sub):
            return done
    r, w = row[sub], is_w[sub]
    cta, epoch, tid, seq, lsub, ssub = a.cta[r], a.epoch[r], a.tid[r], a.seq[r], loc[sub], scope[sub]
    # the same thread, earlier in program order
    th, nth = dense(ssub, cta, tid, lsub)
    late = group_min(th[w], seq[w], nth)[th] < seq
    if not by_thread_only:
        # another thread of the CTA in the same epoch
        g, ng = dense(ssub, cta, epoch, lsub)
        gt, ngt = dense(g, tid)
        late |= np.bincount(g[w], minlength=ng)[g] > np.bincount(gt[w], minlength=ngt)[gt]
    done[sub] |= late
    return done


def initcheck(L: Launch) -> list[Report]:
    a = L.accesses()
    if not len(a):
        return []
    reads = a.kind != KIND_STORE  # loads and atomics read
    bad_rows: list[np.ndarray] = []
    for space, by_thread in ((SP_SHARED, False), (SP_LOCAL, True)):
        keep = np.flatnonzero(a.space == space)
        if not len(keep) or not reads[keep].any():
            continue
        row, loc = expand(a.addr[keep], a.size[keep])
        row = keep[row]
        done = _written_before(a, row, loc, np.zeros(len(row), np.int64), by_thread)
        bad_rows.append(row[reads[row] & ~done])
    tracked = _tracked(L)
    if tracked:
        bad_rows.append(_global(L, a, tracked, reads))
    rows = np.unique(np.concatenate(bad_rows)) if bad_rows else np.zeros(0, np.int64)
    out = []
    if len(rows):
        sites, first, counts = np.unique(L.report_site[a.site[rows]], return_index=True, return_counts=True)
        for s, i, n in zip(sites.tolist(), rows[first].tolist(), counts.tolist(), strict=True):
            site = L.mem_site(s)
            w = L.who(a.cta[i], a.tid[i])
            space = {SP_SHARED: "shared", SP_LOCAL: "local"}.get(int(a.space[i]), "global")
            what = {"shared": "no thread of the block wrote it before",
                    "local": "the thread never wrote it before"}.get(space, "it lies in an uninitialized buffer "
                                                                           "no kernel wrote")
            out.append(Report("uninitialized read", "initcheck", L.name, w["cta"], w["thread"], w["warp"],
                              w["lane"], site.line, L.source(site), int(a.addr[i]), int(a.size[i]),
                              space, "read", None, int(n), site.text, L.ptx_file, f"is uninitialized: {what}"))
    return sorted(out, key=lambda r: r.ptx_line or 0)


def _global(L: Launch, a: Accesses, tracked, reads: np.ndarray) -> np.ndarray:
    """Rows of reads of never-written bytes of tracked buffers; then the buffers' masks take this launch's
    writes."""
    sel = np.flatnonzero((a.space == SP_GLOBAL) | (a.space == SP_GENERIC))
    starts = np.array([t[0] for t in tracked], np.int64)
    order = np.argsort(starts)
    starts = starts[order]
    ends = np.array([t[1] for t in tracked], np.int64)[order]
    masks = [tracked[k][2] for k in order.tolist()]
    j = np.searchsorted(starts, a.addr[sel], side="right") - 1
    inside = (j >= 0) & (a.addr[sel] + a.size[sel] <= ends[np.maximum(j, 0)])
    sel, j = sel[inside], j[inside]
    if not len(sel):
        return np.zeros(0, np.int64)
    # bytes, exactly (tracked buffers are few; their accesses are expanded byte by byte)
    units = a.size[sel].astype(np.int64)
    row = np.repeat(sel, units)
    buf = np.repeat(j, units)
    off = a.addr[row] - starts[buf] + (np.arange(len(row)) - np.repeat(np.cumsum(units) - units, units))
    flat = np.concatenate(masks)
    base = np.cumsum([0] + [len(m) for m in masks])[:-1]
    before = flat[base[buf] + off]
    loc = base[buf] + off
    kind = a.kind[row]
    # written by another CTA in this launch: counted as written (their order is racecheck's business)
    is_w = kind != KIND_LOAD
    g, ng = dense(loc)
    wctas = np.full(ng, -1, np.int64)
    wctas[g[is_w]] = a.cta[row[is_w]]
    wmin = np.full(ng, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(wmin, g[is_w], a.cta[row[is_w]])
    other_cta = (wmin[g] != a.cta[row]) & (wmin[g] != np.iinfo(np.int64).max) | \
        ((wctas[g] != a.cta[row]) & (wctas[g] >= 0))
    done = before | other_cta | _written_before(a, row, loc, np.zeros(len(row), np.int64), False)
    bad = row[reads[row] & ~done]
    for k, m in enumerate(masks):  # the launch's writes initialize the buffers for later launches
        w = is_w & (buf == k)
        m[off[w]] = True
    return bad
