"""The post-pass: per-type buffers -> records in trace order, and one merged order over all types.

Trace order is by the key (cta, epoch, tid, seq):

* `cta`: the CTA's linear index.  CTAs run independently (no order between them exists), so the trace
  lists them one after the other;
* `epoch`: the number of CTA barriers the thread had passed.  Everything a CTA's threads do before a
  barrier happens before everything after it, so all records of epoch e of a CTA come before those of
  epoch e + 1 (for __syncthreads-style barriers that every thread reaches; with named barriers of
  partial thread counts or barriers under divergent conditions, epochs are per thread and the order is
  by epoch number only);
* `tid`, then `seq`: within an epoch each thread's records together, in its program order (`seq` is
  the record's position in the worker's execution of the CTA, shared by all record types).

Per type, a CTA's records lie together in its buffer (its claim), so the post-pass gathers the claims
in CTA order (linear time) and sorts only where a CTA's records are not already in order (region mode
runs threads in order within each barrier region, so they usually are).
"""

from __future__ import annotations

import numpy as np

from ptxjit.instrument.buffers import expand


def claim_order(start: np.ndarray, written: np.ndarray) -> np.ndarray:
    """Buffer indices of the records, claim by claim in CTA order (holes left by short claims skipped)."""
    w = np.asarray(written, np.int64)
    nz = np.nonzero(w)[0]
    ww = w[nz]
    if not len(ww):
        return np.zeros(0, np.int64)
    offsets = np.cumsum(ww) - ww
    return np.repeat(np.asarray(start, np.int64)[nz] - offsets, ww) + np.arange(int(ww.sum()), dtype=np.int64)


def _bits(x: np.ndarray) -> int:
    return int(x.max()).bit_length() if len(x) else 0


def sort_key(cta, epoch, tid, seq) -> np.ndarray | None:
    """(cta, epoch, tid, seq) packed into one uint64 that sorts the same, or None if it does not fit."""
    fields = [np.asarray(f, np.uint64) for f in (cta, epoch, tid, seq)]
    widths = [_bits(f) for f in fields]
    if sum(widths) > 64:
        return None
    key = np.zeros(len(fields[0]), np.uint64)
    for f, w in zip(fields, widths, strict=True):
        key <<= np.uint64(w)
        key |= f
    return key


def order(cta, epoch, tid, seq) -> np.ndarray | None:
    """The permutation that puts records in trace order (stable), or None: they are in order."""
    key = sort_key(cta, epoch, tid, seq)
    if key is None:
        return np.lexsort((seq, tid, epoch, cta))
    if len(key) < 2 or bool(np.all(key[1:] >= key[:-1])):
        return None
    return np.argsort(key, kind="stable")


def gather_claims(records: np.ndarray, start: np.ndarray, written: np.ndarray) -> np.ndarray:
    """A type's records claim by claim in CTA order (copies of contiguous slices where there are not
    too many CTAs, else one gather)."""
    w = np.asarray(written, np.int64)
    nz = np.nonzero(w)[0]
    if len(nz) <= 1 << 18:
        raw = records.view(np.dtype((np.void, records.dtype.itemsize)))  # plain bytes: memcpy per piece
        st = np.asarray(start, np.int64)
        pieces = [raw[s:s + n] for s, n in zip(st[nz].tolist(), w[nz].tolist(), strict=True)]
        return np.concatenate(pieces).view(records.dtype) if pieces else records[:0].copy()
    return records[claim_order(start, written)]


def sorted_records(records: np.ndarray, start: np.ndarray, written: np.ndarray, t: int,
                   tid_bits: int | None = None) -> np.ndarray:
    """Type t's records (as written: instrument/buffers.py record_dtypes) in trace order, full layout.

    After gathering the claims in CTA order, `cta` is in order, and within a CTA so is `seq` (a claim is
    filled in the order its worker ran the CTA, which is the order of `seq`).  So records need sorting
    only where (epoch, tid) goes back inside a CTA, and then a stable sort by (cta, epoch, tid) keeps
    each thread's records in seq order."""
    g = gather_claims(records, start, written)
    w = np.asarray(written, np.int64)
    # the fields the traced code did not write: cta from the claims, seq from the position in the claim
    nz = np.nonzero(w)[0]
    seq = None
    if "seq" not in g.dtype.names:
        seq = (np.arange(len(g), dtype=np.int64) - np.repeat(np.cumsum(w[nz]) - w[nz], w[nz])).astype(np.uint32)
    g = expand(g, np.repeat(nz.astype(np.uint32), w[nz]), t, seq, tid_bits)
    if len(g) < 2:
        return g
    first = (np.cumsum(w[w > 0]) - w[w > 0])  # index of each CTA's first record
    sub = g["tid"]
    epoch = g["epoch"]
    if epoch.any():
        sub = (epoch.astype(np.int64) << 16) | sub
    back = np.flatnonzero(sub[1:] < sub[:-1]) + 1
    if not len(back) or np.isin(back, first).all():
        return g
    perm = order(g["cta"], epoch, g["tid"], g["seq"])
    return g if perm is None else g[perm]


def merge(per_type: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Merged trace order over record types whose records are each in trace order already: (type
    index into the dict's order, row in that type's records), one entry per record."""
    names = list(per_type)
    types = np.concatenate([np.full(len(per_type[n]), i, np.int8) for i, n in enumerate(names)]) \
        if names else np.zeros(0, np.int8)
    rows = np.concatenate([np.arange(len(per_type[n]), dtype=np.int64) for n in names]) \
        if names else np.zeros(0, np.int64)
    if not names:
        return types, rows
    cols = {k: np.concatenate([per_type[n][k] for n in names]) for k in ("cta", "epoch", "tid", "seq")}
    perm = order(cols["cta"], cols["epoch"], cols["tid"], cols["seq"])
    return (types, rows) if perm is None else (types[perm], rows[perm])
