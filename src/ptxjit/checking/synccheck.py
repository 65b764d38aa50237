"""synccheck: CTA barriers that not every live thread of the block reaches, and barriers whose thread
count does not match the threads that arrive.

From the "barriers" records (one per thread arriving, with the epoch before it):

* divergent barrier: in a CTA's epoch e, the threads arriving at barriers without a thread count
  (`__syncthreads()`, `bar.sync a`) are fewer than the threads still live at e (those that had not
  exited before the previous barrier), or they arrive at two different barrier sites.  ptxjit (like an
  H100, where compute-sanitizer then says nothing) lets a barrier complete once every thread that has
  not exited arrived; CUDA calls a `__syncthreads()` that some threads skip undefined, so it is reported.
* barrier count mismatch: `bar.sync a, b` where b is not a multiple of the warp size, exceeds the block,
  or differs from the number of threads that arrive at it in an epoch (those that arrive beyond b start
  a second, unintended barrier instance).
* warp collective mask: a shfl/vote/match/redux.sync or bar.warp.sync whose member mask names lanes that
  do not execute it with the others, or leaves out lanes that do (a constant mask here; a mask in a
  register -- a parameter, a ballot -- by its value at run time, warpmask.py);
* deadlock: a KernelDeadlock of the launch (threads waiting for arrivals that never come) is one report.
"""

from __future__ import annotations

import re

import numpy as np

from ptxjit.checking.records import WARP, Launch, collective_instances, dense
from ptxjit.checking.report import Report, parse_source, unlinear
from ptxjit.frontend import ir
from ptxjit.instrument.probes import KIND_CTA, KIND_WARP


def _cta_sites(L: Launch) -> tuple[np.ndarray, np.ndarray]:
    """Per barrier site: whether it is a waiting CTA barrier, and its thread count (0: all threads)."""
    waits = np.zeros(max(len(L.plan.barriers), 1), bool)
    counts = np.zeros(max(len(L.plan.barriers), 1), np.int64)
    for s in L.plan.barriers:
        ins = L.instr(s)
        if s.kind != KIND_CTA or ins.opcode not in ("bar", "barrier") or ins.has("arrive", "warp"):
            continue
        waits[s.ident] = True
        ops = ins.operands
        if not ins.has("red") and len(ops) == 2 and isinstance(ops[1], ir.Imm):
            counts[s.ident] = int(ops[1].value)
        elif not ins.has("red") and len(ops) == 2:
            counts[s.ident] = -1  # a count in a register: not checked
    return waits, counts


def synccheck(L: Launch, masks=None) -> list[Report]:
    """`masks`: the records of warpmask.record_masks (collectives whose mask is a register), or None."""
    if masks is None:
        return _cta_barriers(L) + warp_masks(L)
    from ptxjit.checking.warpmask import mask_reports

    return _cta_barriers(L) + sorted(warp_masks(L) + mask_reports(L, masks), key=lambda r: r.ptx_line or 0)


def _cta_barriers(L: Launch) -> list[Report]:
    b = L.barrier_records()
    if not len(b):
        return []
    waits, counts = _cta_sites(L)
    site = b["site"].astype(np.int64)
    b = b[waits[site]]
    site = b["site"].astype(np.int64)
    if not len(b):
        return []
    cta, epoch, tid = (b[k].astype(np.int64) for k in ("cta", "epoch", "tid"))
    out: dict[tuple[str, int], Report] = {}
    cnt = counts[site]

    # thread-count barriers: arrivals per (cta, epoch, site) against the count
    sel = np.flatnonzero(cnt > 0)
    if len(sel):
        g, n = dense(cta[sel], epoch[sel], site[sel])
        arrivals = np.bincount(g, minlength=n)
        first = np.full(n, -1, np.int64)
        first[g[::-1]] = sel[::-1]  # the first arrival (trace order) of each group
        want = cnt[first]
        bad = (arrivals != want) | (want % WARP != 0) | (want > L.nthreads)
        for gi in np.flatnonzero(bad).tolist():
            i = int(first[gi])
            key = ("barrier count mismatch", int(site[i]))
            why = (f"bar.sync expects {int(want[gi])} threads: not a multiple of the warp size"
                   if want[gi] % WARP else
                   f"bar.sync expects {int(want[gi])} threads but {int(arrivals[gi])} of the block's "
                   f"{L.nthreads} arrive")
            _add(out, key, L, i, b, "barrier count mismatch", why)

    # barriers of all threads: arrivals per (cta, epoch) against the threads live at that epoch
    sel = np.flatnonzero(cnt == 0)
    if len(sel):
        c, e, s, t = cta[sel], epoch[sel], site[sel], tid[sel]
        g, n = dense(c, e)
        arrivals = np.bincount(g, minlength=n)
        gs, ngs = dense(g, s)
        site_of = np.zeros(ngs, np.int64)
        site_of[gs] = g
        nsites = np.bincount(site_of, minlength=n)
        # a thread's final epoch: the barriers it passed (threads with no arrival: 0)
        th, nth = dense(c, t)
        passed = np.bincount(th, minlength=nth)
        th_cta = np.zeros(nth, np.int64)
        th_cta[th] = c
        # per (cta, epoch): threads of the block that exited before e (passed < e)
        key_c = th_cta.astype(np.int64)
        fin = np.sort((key_c << 32) | passed)
        first = np.full(n, -1, np.int64)
        first[g[::-1]] = np.arange(len(g))[::-1]
        gc, ge = c[first], e[first]
        exited_recorded = np.searchsorted(fin, (gc << 32) | ge) - np.searchsorted(fin, gc << 32)
        with_arrivals = np.bincount(th_cta, minlength=int(c.max()) + 1)[gc]
        never = L.nthreads - with_arrivals  # threads of the CTA with no arrival at all: final epoch 0
        live = L.nthreads - exited_recorded - np.where(ge > 0, never, 0)
        short = arrivals < live
        # only a shortfall needs the memory records (their sorting is the costly part of a trace)
        went_on = _went_on(L, c, t, passed, th, th_cta, g, first, sel, site) if short.any() \
            else np.zeros(n, np.int64)
        bad = (short & (went_on > 0)) | (nsites > 1)
        for gi in np.flatnonzero(bad).tolist():
            rows = np.flatnonzero(g == gi)  # one group per reported site: bounded by the dedup below
            i = int(sel[rows[0]])
            key = ("divergent barrier", int(site[i]))
            if key in out:
                out[key] = _bump(out[key])
                continue
            here = set(t[rows].tolist())
            missing = sorted(set(range(L.nthreads)) - here)
            other_sites = sorted(set(s[rows].tolist()) - {int(site[i])})
            if other_sites:
                o = L.plan.barriers[other_sites[0]]
                why = (f"{len(here)} threads of the block reach barriers in this epoch, at PTX lines "
                       f"{L.plan.barriers[int(site[i])].line} and {o.line}"
                       + (f" ({o.source})" if o.source else ""))
            else:
                ex = unlinear(missing[0], L.block) if missing else None
                why = (f"{int(arrivals[gi])} of the {int(live[gi])} live threads of the block reach it; "
                       f"{int(went_on[gi])} skip it and go on past it"
                       + (f" (e.g. thread ({ex[0]},{ex[1]},{ex[2]}))" if ex else ""))
            _add(out, key, L, i, b, "divergent barrier", why)
    return sorted(out.values(), key=lambda r: (r.ptx_line or 0, r.kind))


def _went_on(L: Launch, c, t, passed, th, th_cta, g, first, sel, site) -> np.ndarray:
    """Per (CTA, epoch) group of barrier arrivals: how many threads of the CTA did not arrive, did not
    exit before the epoch, and made a memory access in it at a PTX line after the barrier (they went
    around it and on).  Threads that exit without reaching a barrier are finished, not divergent: an
    early `if (i >= n) return;` before a `__syncthreads()` is valid on Volta and later (the barrier
    counts only threads that have not exited), and ptxjit runs it so."""
    ng = len(first)
    if "memory" not in L.trace.record_types:
        return np.ones(ng, np.int64)  # no way to tell: every shortfall counts
    a = L.accesses()
    if not len(a):
        return np.zeros(ng, np.int64)
    lines = np.array([s.line for s in L.plan.memory] or [0], np.int64)
    mline = lines[a.site]
    gcta, gep = c[first], (L.barrier_records()["epoch"].astype(np.int64)[sel])[first]
    bline = np.array([b.line for b in L.plan.barriers] or [0], np.int64)[site[first]]
    # each thread's exit epoch: the barriers it passed (threads without arrivals: 0)
    acta, atid, aep = a.cta.astype(np.int64), a.tid.astype(np.int64), a.epoch.astype(np.int64)
    thread_key = acta * L.nthreads + atid
    # the tid of each arriving thread id (th): every record of one th has the same tid
    tid_of = np.zeros(len(passed), np.int64)
    tid_of[th] = t
    arrived_key = th_cta * L.nthreads + tid_of
    order = np.argsort(arrived_key)
    pos = np.searchsorted(arrived_key[order], thread_key)
    pos = np.minimum(pos, len(order) - 1)
    hit = arrived_key[order][pos] == thread_key
    exit_epoch = np.where(hit, passed[order][pos], 0)
    # accesses in the thread's exit epoch, after the barrier of its CTA's group at that epoch
    in_exit = aep == exit_epoch
    gkey = gcta * (int(gep.max()) + 2 if len(gep) else 1) + gep
    akey = acta * (int(gep.max()) + 2 if len(gep) else 1) + aep
    gorder = np.argsort(gkey)
    gpos = np.minimum(np.searchsorted(gkey[gorder], akey), len(gorder) - 1)
    ghit = in_exit & (gkey[gorder][gpos] == akey)
    gi = gorder[gpos]
    after = ghit & (mline > bline[gi])
    # count distinct threads per group
    if not after.any():
        return np.zeros(ng, np.int64)
    u = np.unique(gi[after] * (L.nthreads + 1) + atid[after])
    return np.bincount(u // (L.nthreads + 1), minlength=ng)


def constant_value(fn, op) -> int | None:
    """The value of an operand when it is an immediate or a register set once, by a mov of an immediate
    (nvcc materializes `__shfl_sync(0xffffffff, ...)`'s mask that way)."""
    if isinstance(op, ir.Imm):
        return int(op.value)
    if not isinstance(op, ir.Reg):
        return None
    defs = [i for i in fn.instructions if i.operands and isinstance(i.operands[0], ir.Reg)
            and i.operands[0].name == op.name and i.opcode not in ("st", "red", "bar", "barrier")]
    if len(defs) == 1 and defs[0].opcode == "mov" and defs[0].guard is None and len(defs[0].operands) == 2 \
            and isinstance(defs[0].operands[1], ir.Imm):
        return int(defs[0].operands[1].value)
    return None


def _member_masks(L: Launch) -> np.ndarray:
    """Per barrier site: the member mask of a warp collective or warp barrier (shfl/vote/match/redux.sync,
    bar.warp.sync: their last operand) when it is a constant, else -1 (not checked)."""
    masks = np.full(max(len(L.plan.barriers), 1), -1, np.int64)
    for s in L.plan.barriers:
        ins = L.instr(s)
        if s.kind != KIND_WARP or not ins.has("sync") or not ins.operands:
            continue
        if ins.opcode not in ("shfl", "vote", "match", "redux", "bar", "barrier"):
            continue
        v = constant_value(L.kernel.module.ir.functions[s.function], ins.operands[-1])
        if v is not None:
            masks[s.ident] = v & 0xFFFFFFFF
    return masks


def warp_masks(L: Launch) -> list[Report]:
    """Warp collectives whose member mask does not match the lanes that execute them: each lane named must
    execute the same collective (the k-th execution of the site by each lane is one collective), and
    every lane executing it must be named.  A GPU leaves both undefined (a hang, or garbage); ptxjit runs
    the lanes that came."""
    b = L.barrier_records()
    if not len(b):
        return []
    masks = _member_masks(L)
    site = b["site"].astype(np.int64)
    sel = np.flatnonzero(masks[site] >= 0)
    if not len(sel):
        return []
    cta, tid, seq, site = (b[k].astype(np.int64)[sel] for k in ("cta", "tid", "seq", "site"))
    warp, lane, g, ng, lanes = collective_instances(cta, tid, site, lambda th: np.lexsort((seq, th)))
    first = np.full(ng, -1, np.int64)
    first[g[::-1]] = np.arange(len(g))[::-1]
    gwarp, gsite = warp[first], site[first]
    exist = (np.left_shift(1, np.minimum(L.nthreads - gwarp * WARP, WARP)) - 1) & 0xFFFFFFFF
    want = masks[gsite] & exist
    bad = lanes != want
    out: dict[tuple[str, int], Report] = {}
    for gi in np.flatnonzero(bad).tolist():
        i = int(sel[first[gi]])
        key = ("warp collective mask", int(gsite[gi]))
        missing, extra = int(want[gi] & ~lanes[gi]), int(lanes[gi] & ~want[gi])
        why = f"member mask {int(masks[gsite[gi]]):#010x}: " + "; ".join(
            x for x in (f"lanes {lane_list(missing)} it names do not execute it" if missing else "",
                        f"lanes {lane_list(extra)} execute it without being named" if extra else "") if x)
        _add(out, key, L, i, b, "warp collective mask", why)
    return sorted(out.values(), key=lambda r: r.ptx_line or 0)


def lane_list(bits: int) -> str:
    """1-3,8 for the set bits of a lane mask."""
    runs, i = [], 0
    while i < 32:
        if bits >> i & 1:
            j = i
            while j + 1 < 32 and bits >> (j + 1) & 1:
                j += 1
            runs.append(f"{i}" if i == j else f"{i}-{j}")
            i = j + 1
        else:
            i += 1
    return ",".join(runs)


def _add(out: dict, key, L: Launch, i: int, b: np.ndarray, kind: str, why: str) -> None:
    if key in out:
        out[key] = _bump(out[key])
        return
    s = L.plan.barriers[int(b["site"][i])]
    w = L.who(b["cta"][i], b["tid"][i])
    out[key] = Report(kind, "synccheck", L.name, w["cta"], w["thread"], w["warp"], w["lane"], s.line,
                      L.source(s), None, 0, "", "", None, 1, s.text, L.ptx_file, why)


def _bump(r: Report) -> Report:
    from dataclasses import replace

    return replace(r, count=r.count + 1)


_WHERE = re.compile(r"at (?P<src>[^ ]+:\d+:\d+) \(PTX (?P<file>.+):(?P<line>\d+):\d+\)|at (?P<file2>[^ ]+):"
                    r"(?P<line2>\d+):\d+")


def deadlock_report(kernel, err, block) -> Report:
    """A KernelDeadlock as a synccheck report (the barrier it names, the thread it says waits there)."""
    msg = str(err)
    m = _WHERE.search(msg)
    line = int(m.group("line") or m.group("line2")) if m else None
    src = parse_source(m.group("src")) if m and m.group("src") else None
    cta = tuple(getattr(err, "cta", (0, 0, 0)))
    th = re.search(r"thread \((\d+), (\d+), (\d+)\) is waiting", msg)
    thread = tuple(int(x) for x in th.groups()) if th else (0, 0, 0)
    tid = thread[0] + block[0] * (thread[1] + block[1] * thread[2])
    detail = msg.split(": ", 1)[-1]
    return Report("deadlock", "synccheck", kernel.name, cta, thread, tid // WARP, tid % WARP, line, src, None, 0,
                  "", "", None, 1, "bar.sync", kernel.module.name, detail)
