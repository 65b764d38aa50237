"""The instrumentation section: what `ptxjit.trace` costs, per record type, next to the plain launch.

For each kernel (at a size that keeps a full trace in memory) the plain launch and `ptxjit.trace` with
each record set run interleaved (A B C … A B C …).  Reported per record set, as ratios to the plain
launch's median:

* `count`: the counting run alone (block-execution counters: the cheap profile, `timings["count"]`);
* `trace`: the whole `ptxjit.trace` call (snapshot, counting run, restore, traced run), records unsorted;
* `post`: the post-pass (sorting every type's records into trace order, done on first access);
* `bytes`: trace bytes per launch (records of all the set's types).

The results are correct before anything is timed: each variant's outputs are compared with the case's
NumPy reference.
"""

from __future__ import annotations

import gc
import resource
import statistics
import time

import numpy as np

from ptxbench.suite import CASES
from ptxbench.timing import geomean

RECORD_SETS = {"blocks": ("blocks",), "memory": ("memory",), "branches": ("branches",),
               "barriers": ("barriers",), "all": ("blocks", "memory", "branches", "barriers")}

# sizes at which a full trace (all four types) of each kernel fits comfortably in memory
SIZES = {
    "quick": {"vadd": 1 << 22, "saxpy": 1 << 22, "dot": 1 << 22, "sgemm": 256, "jacobi": 1024,
              "histogram": 1 << 22, "transpose": 1024, "nbody": 1024, "blackscholes": 1 << 20,
              "bitonic": 1 << 18, "scan": 1 << 20},
}
SIZES["full"] = {**SIZES["quick"], "vadd": 1 << 24, "sgemm": 512, "transpose": 2048}


class StandIn:
    """Stands in for a Kernel in the suite's launch code: each launch runs `launch(kernel, grid, block,
    args, shared_mem)` (ptxjit.trace, ptxjit.check) and keeps what it returns in `last`."""

    def __init__(self, kernel, launch) -> None:
        self.kernel, self.launch = kernel, launch
        self.last = None

    def __call__(self, grid, block, args, shared_mem=0) -> None:
        self.last = None  # the previous result (a trace's buffers) goes before the next is made
        self.last = self.launch(self.kernel, grid, block, args, shared_mem)


def _traced(kernel, records: tuple[str, ...]) -> StandIn:
    import ptxjit

    return StandIn(kernel, lambda k, g, b, a, sm: ptxjit.trace(k, g, b, a, sm, records=records))


def checked_runs(case, n: int, targets: dict, inputs: dict, expected: dict, extra=None) -> tuple[dict, dict]:
    """Each target (a Kernel, or a stand-in that traces or checks) launched once through the suite's
    launch code on its own copy of the inputs and compared with the reference; `extra(label, target)`
    may name more problems.  Returns (label -> run, for those that pass; label -> problem)."""
    runs, problems = {}, {}
    for label, target in targets.items():
        d = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
        run = case.ptxjit(target, d, n)
        run()  # translations, and the check
        bad = case.check({k: d[k] for k in case.outputs}, expected) + (extra(label, target) if extra else [])
        if bad:
            problems[label] = "; ".join(bad)
        else:
            runs[label] = run
    return runs, problems


def measure(peer, mode: str, kernels: list[str], reps: int, log=print) -> dict:
    """The section's results: {"kernels": [...], "summary": {...}}."""
    out = []
    for name in kernels:
        if name not in SIZES[mode]:
            continue
        case = CASES[name]
        n = SIZES[mode][name]
        log(f"trace {name} ({case.label(n)})")
        rng = np.random.default_rng(1234)
        inputs = case.make(n, rng)
        expected = case.reference(inputs)
        kernel = peer.kernel(name)
        targets = {"plain": kernel, **{label: _traced(kernel, recs) for label, recs in RECORD_SETS.items()}}
        runs, problems = checked_runs(case, n, targets, inputs, expected)
        tracers = {label: targets[label] for label in runs if label != "plain"}
        rec = {"name": name, "size": n, "label": case.label(n), "problems": problems, "sets": {}}
        times: dict[str, list[float]] = {k: [] for k in runs}
        counts: dict[str, list[float]] = {k: [] for k in tracers}
        posts: dict[str, list[float]] = {k: [] for k in tracers}
        sizes: dict[str, tuple[int, dict]] = {}  # label -> (trace bytes, records per type)
        for _ in range(reps):
            for label, run in runs.items():
                t0 = time.perf_counter()
                run()
                times[label].append(time.perf_counter() - t0)
                tr = tracers.get(label)
                if tr is not None and tr.last is not None:
                    counts[label].append(tr.last.timings["count"])
                    t1 = time.perf_counter()
                    for kind in tr.last.record_types:
                        tr.last.records(kind)
                    posts[label].append(time.perf_counter() - t1)
                    sizes[label] = (sum(tr.last.nbytes().values()), tr.last.counts())
                    # its buffers and sorted records go now: the traces of every record set kept at once
                    # outgrew the memory (sgemm 512x512: 5.4 GB of records each, sorted copies on top:
                    # the full run was OOM-killed at 24 GB)
                    tr.last = None
        # once more with fresh buffers (the pool emptied): what a one-off trace pays for page faults
        from ptxjit.instrument.buffers import POOL

        cold: dict[str, float] = {}
        for label, run in runs.items():
            if label in tracers:
                with POOL._lock:
                    POOL._free.clear()
                gc.collect()
                t0 = time.perf_counter()
                run()
                cold[label] = time.perf_counter() - t0
                tracers[label].last = None
        plain = statistics.median(times["plain"]) if times.get("plain") else None
        rec["plain_s"] = plain
        for label in tracers:
            nbytes, records = sizes.get(label, (0, {}))
            entry = {"trace_s": statistics.median(times[label]), "count_s": statistics.median(counts[label]),
                     "post_s": statistics.median(posts[label]), "bytes": nbytes, "records": records}
            entry["fresh_s"] = cold.get(label)
            if plain:
                entry.update(trace_x=entry["trace_s"] / plain, count_x=entry["count_s"] / plain,
                             post_x=entry["post_s"] / plain)
                if entry["fresh_s"]:
                    entry["fresh_x"] = entry["fresh_s"] / plain
            rec["sets"][label] = entry
        rec["max_rss_GB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        out.append(rec)
        line = "  ".join(f"{k} {v.get('trace_x', 0):.1f}x" for k, v in rec["sets"].items())
        log(f"    plain {plain * 1e3 if plain else float('nan'):.2f} ms  counting run "
            f"{rec['sets'].get('blocks', {}).get('count_x', 0):.2f}x  {line}")
        del runs, tracers, inputs, expected
        gc.collect()
    summary = {}
    for label in RECORD_SETS:
        xs = [k["sets"][label]["trace_x"] for k in out if "trace_x" in k["sets"].get(label, {})]
        summary[f"trace_{label}_geomean"] = geomean(xs)
        summary[f"trace_{label}_max"] = max(xs) if xs else None
    fx = [k["sets"]["memory"]["fresh_x"] for k in out if "fresh_x" in k["sets"].get("memory", {})]
    summary["trace_memory_fresh_geomean"] = geomean(fx)
    cx = [k["sets"]["blocks"]["count_x"] for k in out if "count_x" in k["sets"].get("blocks", {})]
    summary["counting_run_geomean"] = geomean(cx)
    summary["counting_run_max"] = max(cx) if cx else None
    return {"kernels": out, "summary": summary}


def markdown(sec: dict) -> list[str]:
    """The section of results.md."""
    if not sec or not sec.get("kernels"):
        return []
    sets = list(RECORD_SETS)
    lines = ["", "## Instrumentation (`ptxjit.trace`): time / plain launch, trace size", "",
             "*counting run*: block counters only; each record set: the whole `ptxjit.trace` call (counting "
             "run, snapshot/restore, traced run) + the post-pass (sorting, on first access) in brackets.", "",
             "Traces reuse the buffers of earlier ones (instrument/buffers.py BufferPool); *memory, fresh*: a "
             "memory trace into newly allocated buffers (page faults included), as a one-off trace pays.", "",
             "| kernel | size | plain | counting run | " + " | ".join(sets) + " | memory, fresh | bytes (all) |",
             "|---|---|---|---|" + "---|" * len(sets) + "---|---|"]
    for k in sec["kernels"]:
        s = k["sets"]
        cells = [k["name"], k["label"], f"{k['plain_s'] * 1e3:.2f} ms" if k.get("plain_s") else "—",
                 f"{s['blocks']['count_x']:.2f}×" if "count_x" in s.get("blocks", {}) else "—"]
        for label in sets:
            e = s.get(label, {})
            cells.append(f"{e['trace_x']:.1f}× (+{e['post_x']:.1f})" if "trace_x" in e else "—")
        fresh = s.get("memory", {}).get("fresh_x")
        cells.append(f"{fresh:.1f}×" if fresh else "—")
        all_b = s.get("all", {}).get("bytes")
        cells.append(f"{all_b / 1e6:.0f} MB" if all_b is not None else "—")
        lines.append("| " + " | ".join(cells) + " |")
    sm = sec["summary"]
    lines += ["", "Geometric means: counting run " + _x(sm.get("counting_run_geomean"), 2) + ", "
              + ", ".join(f"{label} {_x(sm.get(f'trace_{label}_geomean'), 1)}" for label in sets)
              + f"; memory with fresh buffers {_x(sm.get('trace_memory_fresh_geomean'), 1)}."]
    return lines


def _x(v, digits: int) -> str:
    return "—" if v is None else f"{v:.{digits}f}×"


def compare_memory(peer, mode: str, kernels: list[str], reps: int, log=print) -> dict:
    """A memory trace with the latest cost cutters (instrument/trace.py MEMORY_FREE_COUNT: where no record
    count can depend on memory, instrument/independence.py, a counting run without memory accesses and
    so no snapshot or restore; EXACT_CLAIMS: then no room check on the traced run's record stores)
    against one without them (the earlier cutters ROOM_CHECK, NONTEMPORAL, PACK_MEMORY_KEYS,
    POOLED_SNAPSHOT stay on in both) and the plain launch,
    interleaved in one process (plain, without, with, plain, ...) so that both see the same load.
    Returns {"kernels": {name: {"plain_s", "without_x", "with_x", "bytes_without", "bytes_with"}},
    "summary": {"without_geomean", "with_geomean"}}."""
    from ptxjit.instrument import trace as tr

    def cutters(on: bool) -> None:
        tr.MEMORY_FREE_COUNT = on
        tr.EXACT_CLAIMS = on

    out = {}
    try:
        for name in kernels:
            if name not in SIZES[mode]:
                continue
            case, n = CASES[name], SIZES[mode][name]
            inputs = case.make(n, np.random.default_rng(1234))
            expected = case.reference(inputs)
            kernel = peer.kernel(name)
            targets = {"plain": kernel, "without": _traced(kernel, ("memory",)), "with": _traced(kernel, ("memory",))}
            runs, nbytes = {}, {}
            for label in targets:  # each checked against the reference once (and translated)
                cutters(label != "without")
                got, problems = checked_runs(case, n, {label: targets[label]}, inputs, expected)
                if problems:
                    raise AssertionError(f"{name} {label}: {problems[label]}")
                runs.update(got)
                if label != "plain":
                    nbytes[label] = sum(targets[label].last.nbytes().values())
            times: dict[str, list[float]] = {k: [] for k in runs}
            parts: dict[str, dict[str, list[float]]] = {k: {} for k in runs if k != "plain"}
            for _ in range(reps):
                for label, run in runs.items():
                    cutters(label != "without")
                    t0 = time.perf_counter()
                    run()
                    times[label].append(time.perf_counter() - t0)
                    if label != "plain":  # where the time went: snapshot + restore, counting run, traced run
                        tm = targets[label].last.timings
                        for part, v in (("copy", tm["snapshot"] + tm["restore"]), ("count", tm["count"]),
                                        ("traced", tm["trace"])):
                            parts[label].setdefault(part, []).append(v)
            plain = statistics.median(times["plain"])
            out[name] = {"plain_s": plain, "without_x": statistics.median(times["without"]) / plain,
                         "with_x": statistics.median(times["with"]) / plain,
                         "bytes_without": nbytes["without"], "bytes_with": nbytes["with"],
                         **{f"{part}_{label}_x": statistics.median(v) / plain
                            for label, d in parts.items() for part, v in d.items()}}
            e = out[name]
            log(f"{name:13s} plain {plain * 1e3:7.2f} ms  memory trace {e['without_x']:5.2f}x -> {e['with_x']:5.2f}x"
                f"  (traced run {e['traced_without_x']:.2f} -> {e['traced_with_x']:.2f}, snapshot+restore "
                f"{e['copy_without_x']:.2f} -> {e['copy_with_x']:.2f}, counting run {e['count_with_x']:.2f})"
                f"  records {nbytes['without'] / 1e6:.0f} -> {nbytes['with'] / 1e6:.0f} MB")
            del runs, targets, inputs, expected
            gc.collect()
    finally:
        cutters(True)
    summary = {f"{k}_geomean": geomean([v[f"{k}_x"] for v in out.values()]) for k in ("without", "with")}
    return {"kernels": out, "summary": summary}


if __name__ == "__main__":  # python bench/ptxbench/tracing.py [quick|full] [reps] [kernel,...]
    import os
    import sys

    from ptxbench.peers import PtxjitPeer

    mode = sys.argv[1] if len(sys.argv) > 1 else "quick"
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    names = sys.argv[3].split(",") if len(sys.argv) > 3 else list(SIZES[mode])
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    res = compare_memory(PtxjitPeer(), mode, names, reps)
    print(f"geomean: without {res['summary']['without_geomean']:.2f}x, with {res['summary']['with_geomean']:.2f}x; "
          f"load average after: {os.getloadavg()[0]:.2f}")
