"""racecheck: pairs of accesses to overlapping bytes, by different threads not ordered by a barrier, at
least one of them a write (atomics against atomics excepted: they are the synchronized way to share; so is
the plain load of a CAS loop, which the same thread's atomic on that location follows).

* shared memory, within a CTA: same barrier epoch (`__syncthreads()` orders everything before it before
  everything after it);
* global memory within a CTA: the same;
* global memory between CTAs: any epochs (nothing orders the CTAs of one launch), except a write
  published by `__threadfence()` and an atomic ticket to a read after that atomic (the threadFenceReduction
  "last block" pattern; judged by PTX order, see _fence_published);
* threads of one warp: since Volta the threads of a warp are not guaranteed to run in lockstep
  (independent thread scheduling), so compute-sanitizer's racecheck reports hazards inside a warp too,
  unless a `__syncwarp()` separates the accesses.  ptxjit does the same: two accesses of one warp are
  ordered only when a `bar.warp.sync` (`__syncwarp()`) lies between them (their warp epochs differ);
  warp shuffles and votes do not order memory.

Global accesses are those of the .global space and generic accesses inside the launch's argument arrays
or the module's globals (a generic address elsewhere may be a CTA's shared memory or a thread's local
memory, whose host addresses the CPU reuses between CTAs).

Kinds: both writes: WAW; a write before the read in program order (PTX line): RAW (the read may see the
old value: a missing barrier between producer and consumer); else WAR (the write may clobber what the
read still needs).  Each distinct hazard (its pair of PTX sites and kind) is reported once, with one
example pair of threads and the number of racing pairs (`count`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ptxjit.checking.records import (
    SP_GENERIC,
    SP_GLOBAL,
    SP_SHARED,
    WARP,
    Accesses,
    Launch,
    compact,
    dense,
    expand,
    group_max,
    group_min,
    radix,
)
from ptxjit.checking.report import Report
from ptxjit.instrument.probes import KIND_ATOMIC, KIND_LOAD, KIND_STORE

MAX_PAIRS = 20_000_000  # actor pairs examined per scope at once (memory bound: a few hundred MB)


def racecheck(L: Launch) -> list[Report]:
    a = L.accesses()
    if not len(a):
        return []
    orig = a
    caddr, known = _compact_addresses(L, a)
    is_sh = a.space == SP_SHARED
    is_gl = (a.space == SP_GLOBAL) | ((a.space == SP_GENERIC) & known)
    keep = np.flatnonzero(is_sh | is_gl)
    if not len(keep):
        return []
    row, loc = expand(np.where(is_sh, a.addr, caddr)[keep], a.size[keep])
    row = keep[row]
    spc = is_gl[row].astype(np.int64)  # 0 shared, 1 global: separate address spaces
    a = _guard_cas_loads(L, a, row, loc)
    # a location can race only if two threads access it and one writes: most are one thread's own, and
    # this test needs no sort (compact locations: a table lookup), so the rest works on the few left
    # shared: per CTA epoch already (its offsets are reused by every CTA); global: any CTA, any epoch.
    # Keys of the two spaces laid side by side keep the key range the sum of theirs (a table, no sort)
    sh = spc == 0
    keys = np.zeros(len(row), np.int64)
    card = 0
    if sh.any():
        ks, card = radix(a.cta[row[sh]], a.epoch[row[sh]], loc[sh])
        keys[sh] = ks
    if not sh.all():
        lg = loc[~sh]
        lo = int(lg.min())
        keys[~sh] = card + (lg - lo)
        card += int(lg.max()) - lo + 1
    g, ng = compact(keys, card)
    thread = a.cta[row].astype(np.int64) * L.nthreads + a.tid[row]
    kind = a.kind[row]
    store = np.bincount(g, weights=(kind == KIND_STORE), minlength=ng) > 0
    atom = np.bincount(g, weights=(kind == KIND_ATOMIC), minlength=ng) > 0
    load = np.bincount(g, weights=(kind == KIND_LOAD), minlength=ng) > 0
    may = (group_min(g, thread, ng) != group_max(g, thread, ng)) & (store | (atom & load))
    sel = np.flatnonzero(may[g])
    if not len(sel):
        return []
    row, loc, spc = row[sel], loc[sel], spc[sel]
    found: list[tuple[np.ndarray, np.ndarray]] = []
    found.append(_within_cta(a, row, spc, loc))
    gsel = np.flatnonzero(spc == 1)
    if len(gsel) and L.grid[0] * L.grid[1] * L.grid[2] > 1:
        found.append(_between_ctas(a, row[gsel], loc[gsel]))
    first = np.concatenate([f[0] for f in found])
    second = np.concatenate([f[1] for f in found])
    keep_pairs = ~_fence_published(L, orig, first, second)
    return _reports(L, orig, first[keep_pairs], second[keep_pairs])


def _fence_published(L: Launch, a: Accesses, r1: np.ndarray, r2: np.ndarray) -> np.ndarray:
    """Per racing pair: whether it is a write published to another CTA by the threadFenceReduction
    pattern: the write comes before a `__threadfence()` (membar.gl / fence at gpu or sys scope) that
    comes before a global atomic (a ticket), and the read comes after that atomic (the last block reads
    what the others published).  Fences and atomics are not in the records: the test is on PTX order in
    the kernel function, an approximation of the happens-before the pattern builds."""
    out = np.zeros(len(r1), bool)
    if not len(r1):
        return out
    fn = L.kernel.fn
    fences = np.array(sorted(i.pos.line for i in fn.instructions
                             if i.opcode == "membar" and not i.has("cta")
                             or i.opcode == "fence" and i.has("gpu", "sys")), np.int64)
    atomics = np.array(sorted(s.line for s in L.plan.memory if s.function == fn.name and s.kind == KIND_ATOMIC
                              and s.space in ("global", "")), np.int64)
    if not len(fences) or not len(atomics):
        return out
    lines = np.array([s.line for s in L.plan.memory], np.int64)
    in_kernel = np.array([s.function == fn.name for s in L.plan.memory], bool)
    w1, w2 = a.kind[r1] != KIND_LOAD, a.kind[r2] != KIND_LOAD
    write = np.where(w1 & ~w2, r1, np.where(w2 & ~w1, r2, -1))
    read = np.where(w1 & ~w2, r2, np.where(w2 & ~w1, r1, -1))
    ok = (write >= 0) & (a.cta[r1] != a.cta[r2])
    wl = lines[a.site[np.maximum(write, 0)]]
    rl = lines[a.site[np.maximum(read, 0)]]
    ok &= in_kernel[a.site[np.maximum(write, 0)]] & in_kernel[a.site[np.maximum(read, 0)]]
    # the first fence after the write, then the first atomic after that fence: before the read?
    fi = np.searchsorted(fences, wl, side="right")
    has_fence = fi < len(fences)
    fl = fences[np.minimum(fi, len(fences) - 1)]
    ai = np.searchsorted(atomics, fl, side="right")
    has_atomic = ai < len(atomics)
    al = atomics[np.minimum(ai, len(atomics) - 1)]
    return ok & has_fence & has_atomic & (al < rl)


def _guard_cas_loads(L: Launch, a: Accesses, row: np.ndarray, loc: np.ndarray) -> Accesses:
    """The accesses with CAS-loop loads counted as atomics.  `old = *p; do { ... } while (atomicCAS(p, ...)
    != old)` reads p plainly, then lets the atomic decide: a load instruction that some thread follows,
    in the same epoch, by an atomic on the same location races with nothing the atomics do (a plain
    store by another thread still races with it)."""
    kind = a.kind[row]
    at = np.flatnonzero(kind == KIND_ATOMIC)
    if not len(at) or not (kind == KIND_LOAD).any():
        return a
    cta, tid, epoch = a.cta[row], a.tid[row], a.epoch[row]
    key, card = radix(cta, tid, epoch, loc)
    g, ng = compact(key, card)
    last_atomic = group_max(g[at], a.seq[row[at]].astype(np.int64), ng)
    guarded = (kind == KIND_LOAD) & (last_atomic[g] > a.seq[row])
    if not guarded.any():
        return a
    # the load instruction is a CAS loop's read: so are its executions whose loop exits without the
    # atomic (an atomicMax for floats stops when the value is already larger)
    cas_sites = np.zeros(max(len(L.plan.memory), 1), bool)
    cas_sites[a.site[row[guarded]]] = True
    new_kind = a.kind.copy()
    new_kind[(a.kind == KIND_LOAD) & cas_sites[a.site]] = KIND_ATOMIC
    return replace(a, kind=new_kind)


def _compact_addresses(L: Launch, a: Accesses) -> tuple[np.ndarray, np.ndarray]:
    """Per access: its address as an offset into the launch's known global memory laid end to end (the
    argument arrays, then the module's globals), so that locations span only the bytes the launch owns;
    and whether it lies in that memory.  Other addresses keep their value (above every offset)."""
    glob = L.kernel.module.globals
    ranges = sorted([(s, e) for s, e, _, _ in L.arg_ranges()]
                    + ([(int(glob.ctypes.data), int(glob.ctypes.data) + glob.nbytes)] if glob.nbytes else []))
    merged: list[list[int]] = []
    for lo, hi in ranges:  # arrays may overlap (views): merge them
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    if not merged:
        return a.addr, np.zeros(len(a), bool)
    starts = np.array([m[0] for m in merged], np.int64)
    ends = np.array([m[1] for m in merged], np.int64)
    # end to end with 16 bytes of slack each, each start moved to its address's alignment modulo 16 (the
    # granules of records.expand stay exact)
    base = np.cumsum(np.r_[0, (ends - starts + 16)[:-1]]).astype(np.int64)
    base += (starts - base) % 16
    j = np.searchsorted(starts, a.addr, side="right") - 1
    jj = np.maximum(j, 0)
    inside = (j >= 0) & (a.addr + a.size <= ends[jj])
    total = int(base[-1] + ends[-1] - starts[-1]) + 16
    caddr = np.where(inside, base[jj] + (a.addr - starts[jj]), a.addr + total)
    return caddr, inside


def _writes(kind: np.ndarray) -> np.ndarray:
    return kind != KIND_LOAD


def _pairs(gid: np.ndarray, with_self: bool) -> tuple[np.ndarray, np.ndarray]:
    """All (i, j), i <= j (i < j unless with_self), of rows i, j in the same group; gid sorted."""
    n = len(gid)
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ends = np.searchsorted(gid, gid, side="right")
    idx = np.arange(n, dtype=np.int64)
    cnt = ends - idx - (0 if with_self else 1)
    total = int(cnt.sum())
    if total > MAX_PAIRS:  # keep the first groups whole; the rest is not examined (reported in detail)
        keep = np.cumsum(cnt) <= MAX_PAIRS
        cnt = np.where(keep, cnt, 0)
        total = int(cnt.sum())
    i = np.repeat(idx, cnt)
    j = i + (np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)) + (0 if with_self else 1)
    return i, j


def _hazardous(k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
    """At least one write, and not two atomics."""
    return (_writes(k1) | _writes(k2)) & ~((k1 == KIND_ATOMIC) & (k2 == KIND_ATOMIC))


def _within_cta(a: Accesses, row: np.ndarray, spc: np.ndarray, loc: np.ndarray):
    """Racing pairs (as example access rows) in one CTA epoch."""
    cta, epoch, tid, kind = a.cta[row], a.epoch[row], a.tid[row], a.kind[row]
    g, ng = dense(spc, cta, epoch, loc)
    # only groups with two threads and a write can race: most locations are one thread's own
    tmin, tmax = group_min(g, tid, ng), group_max(g, tid, ng)
    store = np.bincount(g, weights=(kind == KIND_STORE), minlength=ng) > 0
    atom = np.bincount(g, weights=(kind == KIND_ATOMIC), minlength=ng) > 0
    load = np.bincount(g, weights=(kind == KIND_LOAD), minlength=ng) > 0
    live = (tmin != tmax) & (store | (atom & load))
    sel = np.flatnonzero(live[g])
    if not len(sel):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    g, row, tid = g[sel], row[sel], tid[sel]
    warp, wep, site = tid // WARP, a.wepoch[row], a.site[row]
    # actors: (group, site, warp, warp epoch), with their lowest and highest thread and an example row
    act, nact = dense(g, site, warp, wep)
    amin, amax = group_min(act, tid, nact), group_max(act, tid, nact)
    ex = np.zeros(nact, np.int64)
    ex[act[::-1]] = row[::-1]
    exmax = np.zeros(nact, np.int64)
    order = np.lexsort((tid, act))
    exmax[act[order]] = row[order]  # the last write per actor wins: the row of its highest thread
    agrp = np.zeros(nact, np.int64)
    agrp[act] = g
    asite, awarp, awep = (np.zeros(nact, np.int64) for _ in range(3))
    asite[act], awarp[act], awep[act] = site, warp, wep
    o = np.argsort(agrp, kind="stable")
    i, j = _pairs(agrp[o], with_self=True)
    i, j = o[i], o[j]
    k1, k2 = a.kind[ex[i]], a.kind[ex[j]]
    same_warp = awarp[i] == awarp[j]
    one_thread = (amin[i] == amax[i]) & (amin[j] == amax[j]) & (amin[i] == amin[j])
    race = _hazardous(k1, k2) & (~same_warp | ((awep[i] == awep[j]) & ~one_thread))
    i, j = i[race], j[race]
    # example threads: two different ones (the lowest of one actor, the highest of the other if equal)
    r1 = ex[i]
    r2 = np.where(a.tid[ex[j]] != a.tid[r1], ex[j], exmax[j])
    r1 = np.where(a.tid[r2] != a.tid[r1], r1, exmax[i])
    return r1, r2


def _between_ctas(a: Accesses, row: np.ndarray, loc: np.ndarray):
    """Racing pairs of global accesses by different CTAs (any epochs)."""
    cta, kind = a.cta[row], a.kind[row]
    g, ng = dense(loc)
    cmin, cmax = group_min(g, cta, ng), group_max(g, cta, ng)
    store = np.bincount(g, weights=(kind == KIND_STORE), minlength=ng) > 0
    atom = np.bincount(g, weights=(kind == KIND_ATOMIC), minlength=ng) > 0
    load = np.bincount(g, weights=(kind == KIND_LOAD), minlength=ng) > 0
    sel = np.flatnonzero(((cmin != cmax) & (store | (atom & load)))[g])
    if not len(sel):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    g, row, cta = g[sel], row[sel], cta[sel]
    site = a.site[row]
    # actors (group, site, CTA); per (group, site) the two lowest CTAs are enough to find a pair of
    # different CTAs with any other site
    act, nact = dense(g, site, cta)
    ex = np.zeros(nact, np.int64)
    ex[act[::-1]] = row[::-1]
    agrp, asite, acta = (np.zeros(nact, np.int64) for _ in range(3))
    agrp[act], asite[act], acta[act] = g, site, cta
    o = np.lexsort((acta, asite, agrp))
    gs = dense(agrp[o], asite[o])[0]
    start = np.searchsorted(gs, gs, side="left")
    o = o[np.arange(len(o)) - start < 2]
    o = o[np.argsort(agrp[o], kind="stable")]
    i, j = _pairs(agrp[o], with_self=False)
    i, j = o[i], o[j]
    race = (acta[i] != acta[j]) & _hazardous(a.kind[ex[i]], a.kind[ex[j]])
    return ex[i[race]], ex[j[race]]


def _reports(L: Launch, a: Accesses, r1: np.ndarray, r2: np.ndarray) -> list[Report]:
    """One report per (first site, second site, kind), ordered as RAW / WAR / WAW define (module doc)."""
    if not len(r1):
        return []
    lines = np.array([s.line for s in L.plan.memory], np.int64)
    k1, k2 = a.kind[r1], a.kind[r2]
    w1, w2 = _writes(k1), _writes(k2)
    pos1 = lines[a.site[r1]] * (1 << 20) + a.site[r1]
    pos2 = lines[a.site[r2]] * (1 << 20) + a.site[r2]
    waw = w1 & w2
    # the first access of the hazard: WAW the earlier site; RAW the write; WAR the read
    write_first = np.where(w1, pos1, pos2) < np.where(w1, pos2, pos1)
    raw = ~waw & write_first
    swap = np.where(waw, pos2 < pos1, np.where(raw, ~w1, w1))
    f = np.where(swap, r2, r1)
    s = np.where(swap, r1, r2)
    code = np.where(waw, 2, np.where(raw, 0, 1))
    nsites = max(len(L.plan.memory), 1)
    rs = L.report_site  # a wmma's elements: one instruction, one report
    key = (rs[a.site[f]] * nsites + rs[a.site[s]]) * 3 + code
    keys, first, counts = np.unique(key, return_index=True, return_counts=True)
    names = ("race RAW", "race WAR", "race WAW")
    out = []
    for idx, n in zip(first.tolist(), counts.tolist(), strict=True):
        fi, si = int(f[idx]), int(s[idx])
        site = L.mem_site(a.site[si])
        w = L.who(a.cta[si], a.tid[si])
        other = L.access(a.cta[fi], a.tid[fi], a.site[fi], a.addr[fi])
        space = "shared" if a.space[si] == SP_SHARED else "global"
        detail = ("the accesses are in different blocks: nothing orders the blocks of a launch"
                  if a.cta[fi] != a.cta[si] else "")
        out.append(Report(names[int(code[idx])], "racecheck", L.name, w["cta"], w["thread"], w["warp"], w["lane"],
                          site.line, L.source(site), int(a.addr[si]), int(a.size[si]), space,
                          ("read", "write", "atomic")[int(a.kind[si])], other, int(n), site.text, L.ptx_file,
                          detail))
    return sorted(out, key=lambda r: (r.ptx_line or 0, r.other.ptx_line if r.other else 0, r.kind))
