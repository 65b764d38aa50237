"""Perfetto / Chrome JSON trace export: the traced run as a timeline that ui.perfetto.dev (and
chrome://tracing) opens.

    t = ptxjit.trace(kernel, grid, block, args, records=("blocks", "memory", "barriers"))
    t.to_perfetto("trace.json")

The Chrome trace event format: {"traceEvents": [...]} with "M" (metadata) events naming processes and
threads and "X" (complete) events, each a span with `ts` and `dur` in microseconds.  Layout:

* process 0, "kernel NAME": one track with a span for the whole traced run (first CTA start to last end);
* a process per CTA ("CTA c: warps", for grids of at most 16 CTAs or warps=True) with a track per warp:
  per barrier epoch a span until the warp's last lane reached the barrier (`_warp_tracks`);
* a process per worker thread ("worker w"), with a track per CTA it ran ("CTA c (x,y,z)"), holding
  - a span per CTA (t.ctas(): start_ns, end_ns),
  - nested in it, with "barriers" records, a span per barrier epoch ("epoch e"): the stretch between two
    CTA barriers.  A barrier releases when its last thread arrives, so epoch e runs from the release of
    barrier e - 1 (the CTA's start for e = 0) to the release of barrier e (the CTA's end for the last).
    Its args: the barrier it ends at (PTX line), the arrivals, the warp collectives inside it.

A CPU worker runs a CTA's threads one after another between barriers, so an epoch's length is the work
of all its threads in that stretch: the epochs show where a CTA's time goes, barrier to barrier.
Times are since the traced run's first CTA began (the trace clock: instrument/clock.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def _us(ns) -> float:
    return round(float(ns) / 1000.0, 3)  # microseconds, to the nanosecond


def _cta_xyz(c: int, grid) -> tuple[int, int, int]:
    gx, gy, _ = grid
    return c % gx, c // gx % gy, c // (gx * gy)


def _ctas(t) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    try:
        tab = t.ctas()
    except AttributeError:  # a Trace without timing support
        raise ValueError("this trace has no CTA timing (t.ctas())") from None
    return tuple(tab.column(c).to_numpy().astype(np.int64) for c in ("cta", "worker", "start_ns", "end_ns"))


def _barriers(t) -> dict[int, dict]:
    """Per CTA: sorted CTA-barrier epochs with their release time, arrivals and PTX line, and the count
    of warp collectives per epoch."""
    if "barriers" not in getattr(t, "record_types", ()):
        return {}
    b = t.table("barriers")
    if not b.num_rows:
        return {}
    cta = b.column("cta").to_numpy().astype(np.int64)
    epoch = b.column("epoch").to_numpy().astype(np.int64)
    time = b.column("time_ns").to_numpy().astype(np.int64)
    kind = np.asarray(b.column("kind").to_pylist(), dtype=object)
    line = b.column("ptx_line").to_numpy()
    instr = np.asarray(b.column("instruction").to_pylist(), dtype=object)
    out: dict[int, dict] = {}
    is_cta = kind == "cta"
    # per (cta, epoch) of CTA barriers: the release (last arrival), the first arrival, the count
    o = np.lexsort((time, epoch, cta))
    o = o[is_cta[o]]
    if len(o):
        key = cta[o] * (int(epoch.max()) + 1) + epoch[o]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        ends = np.r_[starts[1:], len(o)]
        for s, e in zip(starts, ends, strict=True):
            c, ep = int(cta[o[s]]), int(epoch[o[s]])
            out.setdefault(c, {"epochs": {}, "warp": {}})["epochs"][ep] = {
                "release": int(time[o[e - 1]]), "first": int(time[o[s]]), "arrivals": int(e - s),
                "line": int(line[o[s]]), "instruction": str(instr[o[s]])}
    w = np.flatnonzero(~is_cta)
    if len(w):
        pairs, n = np.unique(np.stack([cta[w], epoch[w]]), axis=1, return_counts=True)
        for (c, ep), k in zip(pairs.T.tolist(), n.tolist(), strict=True):
            out.setdefault(c, {"epochs": {}, "warp": {}})["warp"][ep] = k
    return out


def _warp_arrivals(t) -> dict[tuple[int, int, int], int]:
    """(cta, epoch, warp) -> the time its last lane arrived at the CTA barrier ending the epoch."""
    if "barriers" not in getattr(t, "record_types", ()):
        return {}
    r = t.records("barriers")
    cta_kind = np.array([s.kind == 0 for s in t.plan.barriers], bool)  # KIND_CTA
    keep = cta_kind[r["site"]] if len(r) else np.zeros(0, bool)
    if not keep.any():
        return {}
    cta, epoch = r["cta"][keep].astype(np.int64), r["epoch"][keep].astype(np.int64)
    warp = r["tid"][keep].astype(np.int64) // 32
    time = t.clock.ns(r["time"][keep].view(np.int64))
    key = np.stack([cta, epoch, warp])
    uniq, inv = np.unique(key, axis=1, return_inverse=True)
    last = np.full(uniq.shape[1], np.iinfo(np.int64).min)
    np.maximum.at(last, inv.ravel(), time)
    return {(int(c), int(e), int(w)): int(x) for (c, e, w), x in zip(uniq.T.tolist(), last.tolist(), strict=True)}


def _warp_tracks(t, cta, start, end, bars, name, spans) -> None:
    """A process per CTA ("CTA c: warps") with a track per warp: per barrier epoch, a span from the
    epoch's start (the release of the barrier before, or the CTA's start) to the warp's last lane
    arriving at the barrier that ends it (the CTA's end after the last barrier).  A CPU worker runs a
    CTA's threads one after another, so the spans show in which order the warps reached each barrier."""
    arrivals = _warp_arrivals(t)
    nwarps = -(-int(np.prod(t.block)) // 32)
    for c, s, e in zip(cta.tolist(), start.tolist(), end.tolist(), strict=True):
        pid = WARP_PID + c
        xyz = _cta_xyz(c, t.grid)
        name(pid, None, "process_name", f"CTA {c} ({xyz[0]},{xyz[1]},{xyz[2]}): warps", pid)
        eps = bars.get(c, {"epochs": {}})["epochs"]
        nepochs = max(eps, default=-1) + 2
        for w in range(nwarps):
            name(pid, w + 1, "thread_name", f"warp {w}", w)
            begin = s
            for ep in range(nepochs):
                rel = eps.get(ep)
                release = e if rel is None else min(max(rel["release"], begin), e)
                reached = arrivals.get((c, ep, w), release) if rel is not None else e
                reached = min(max(reached, begin), release)
                spans.append({"ph": "X", "pid": pid, "tid": w + 1, "name": f"epoch {ep}", "cat": "warp",
                              "ts": _us(begin), "dur": _us(reached - begin),
                              "args": {"warp": w, "waits (us)": _us(release - reached)}})
                begin = release


WARP_PID = 1 << 20  # warp processes after the workers' (pid = worker + 1)


def perfetto_events(t, warps: bool | None = None) -> list[dict]:
    """The trace events of Trace `t` (module doc), metadata first, then spans in track and time order.
    `warps`: also a process per CTA with a track per warp (default: for grids of at most 16 CTAs)."""
    cta, worker, start, end = _ctas(t)
    bars = _barriers(t)
    meta: list[dict] = []
    spans: list[dict] = []

    def name(pid: int, tid: int | None, what: str, text: str, order: int) -> None:
        ev = {"ph": "M", "pid": pid, "name": what, "args": {"name": text}}
        sort = {"ph": "M", "pid": pid, "name": what.replace("_name", "_sort_index"), "args": {"sort_index": order}}
        if tid is not None:
            ev["tid"] = sort["tid"] = tid
        meta.extend([ev, sort])

    name(0, None, "process_name", f"kernel {t.kernel}", 0)
    name(0, 0, "thread_name", "launch", 0)
    if len(cta):
        counts = t.counts()
        spans.append({"ph": "X", "pid": 0, "tid": 0, "name": t.kernel, "cat": "launch", "ts": _us(start.min()),
                      "dur": _us(end.max() - start.min()),
                      "args": {"grid": list(t.grid), "block": list(t.block), "ctas": int(len(cta)),
                               "records": {k: int(v) for k, v in counts.items()}}})
    for w in np.unique(worker).tolist():
        name(w + 1, None, "process_name", f"worker {w}", w + 1)
    for c, w, s, e in zip(cta.tolist(), worker.tolist(), start.tolist(), end.tolist(), strict=True):
        pid, tid = w + 1, c + 1  # tid 0 of a process is not used: some viewers treat it as the process
        xyz = _cta_xyz(c, t.grid)
        name(pid, tid, "thread_name", f"CTA {c} ({xyz[0]},{xyz[1]},{xyz[2]})", c)
        info = bars.get(c, {"epochs": {}, "warp": {}})
        eps = info["epochs"]
        spans.append({"ph": "X", "pid": pid, "tid": tid, "name": f"CTA ({xyz[0]},{xyz[1]},{xyz[2]})", "cat": "cta",
                      "ts": _us(s), "dur": _us(e - s),
                      "args": {"cta": c, "worker": w, "barriers": len(eps)}})
        if not eps and not info["warp"]:
            continue
        # epoch spans: contiguous, clamped into the CTA's span (clock reads are a few ns apart)
        last = max(list(eps) + list(info["warp"]) + [0])
        nepochs = max(last, max(eps, default=-1) + 1) + 1
        begin = s
        for ep in range(nepochs):
            rel = eps.get(ep)
            stop = e if rel is None else min(max(rel["release"], begin), e)
            args = {"warp collectives": info["warp"].get(ep, 0)}
            if rel is not None:
                args.update({"ends at": f"{rel['instruction']} (PTX line {rel['line']})", "arrivals": rel["arrivals"],
                             "first arrival (us)": _us(rel["first"])})
            else:
                args["ends at"] = "the CTA's end"
            spans.append({"ph": "X", "pid": pid, "tid": tid, "name": f"epoch {ep}", "cat": "epoch",
                          "ts": _us(begin), "dur": _us(stop - begin), "args": args})
            begin = stop
    if warps or (warps is None and len(cta) <= 16):
        _warp_tracks(t, cta, start, end, bars, name, spans)
    spans.sort(key=lambda ev: (ev["pid"], ev["tid"], ev["ts"], -ev["dur"]))
    return meta + spans


def write_perfetto(t, path, warps: bool | None = None) -> Path:
    """Write Trace `t` as a Chrome JSON trace to `path` (module doc); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    doc = {"traceEvents": perfetto_events(t, warps), "displayTimeUnit": "ns",
           "otherData": {"generator": "ptxjit", "kernel": t.kernel, "grid": list(t.grid), "block": list(t.block)}}
    with open(p, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    return p


__all__ = ["perfetto_events", "write_perfetto"]
