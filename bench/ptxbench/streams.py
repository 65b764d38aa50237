"""The streams section: asynchronous launches on ptxjit.Stream (ptxjit/streams).

* concurrency: two independent nbody launches, each with half as many CTAs as there are workers (so
  each uses half the machine), run one after the other (synchronous launches), on one stream, and
  on two streams; the two-stream time should approach half the sequential one;
* launch rate: 10,000 tiny saxpy launches (one CTA of 32 threads) spread over 4 streams, each stream
  an order-sensitive chain (y = x + y and x = x - y alternately: a lost or swapped launch changes the
  result, checked exactly); launches per second next to the same launches made synchronously and
  next to pocl (4 in-order OpenCL queues, the same chain, enqueue + finish);
* a timeline (docs/streams_timeline.png): which worker ran which launch's batches when, for kernels
  of three streams in flight together.

Results are checked before they are reported: nbody against NumPy (a sample of bodies), the chains
exactly.  Standalone: `python bench/ptxbench/streams.py [--quick] [--png PATH]`.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

NBODY_EPS2 = 0.01
SIZES = {"quick": {"bodies": 4096, "launches": 2000, "reps": 5},
         "full": {"bodies": 16384, "launches": 10000, "reps": 9}}


def _nbody_reference(pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
    p = pos.astype(np.float64)
    dp = p[None, :, :3] - p[rows, None, :3]
    r2 = (dp * dp).sum(-1) + NBODY_EPS2
    w = p[None, :, 3] / (r2 * np.sqrt(r2))
    return (dp * w[..., None]).sum(1)


def concurrency(peer, mode: str, log=print) -> dict:
    import ptxjit

    n = SIZES[mode]["bodies"]
    reps = SIZES[mode]["reps"]
    k = peer.kernel("nbody")
    workers = ptxjit.worker_count()
    half = max(1, workers // 2)
    rng = np.random.default_rng(7)
    pos = rng.random((n, 4), dtype=np.float32)
    pos[:, 3] = 0.5 + 0.5 * pos[:, 3]
    accs = [np.zeros((n, 4), np.float32) for _ in range(2)]
    args = [(pos, a, np.int32(n), np.float32(NBODY_EPS2)) for a in accs]
    s1, s2 = ptxjit.Stream(non_blocking=True), ptxjit.Stream(non_blocking=True)

    def sequential():
        k(half, 256, args[0])
        k(half, 256, args[1])

    def one_stream():
        k(half, 256, args[0], stream=s1)
        k(half, 256, args[1], stream=s1)
        s1.synchronize()

    def two_streams():
        k(half, 256, args[0], stream=s1)
        k(half, 256, args[1], stream=s2)
        ptxjit.synchronize()

    variants = {"sequential": sequential, "one_stream": one_stream, "two_streams": two_streams}
    for run in variants.values():  # translation, the batch-cost estimate, and the results check
        for a in accs:
            a[:] = 0
        run()
        rows = np.arange(0, half * 256, max(1, half * 256 // 64))
        ref = _nbody_reference(pos, rows)
        for a in accs:
            np.testing.assert_allclose(a[rows, :3], ref, rtol=1e-3, atol=1e-3)
    from ptxjit.streams import scheduler

    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    overlaps: list[float] = []
    sched = scheduler.get_scheduler()
    for _ in range(reps):
        for name, run in variants.items():
            if name == "two_streams":
                sched.trace = []
            c0 = os.times()
            t0 = time.perf_counter()
            run()
            wall = time.perf_counter() - t0
            c1 = os.times()
            times[name].append(wall)
            cpu[name].append((c1.user + c1.system - c0.user - c0.system) / wall)
            if name == "two_streams":
                overlaps.append(_overlap(sched.trace))
                sched.trace = None
    med = {name: statistics.median(t) for name, t in times.items()}
    out = {"bodies": n, "ctas_per_kernel": half, "workers": workers, **{f"{k_}_s": v for k_, v in med.items()},
           "speedup_two_streams": med["sequential"] / med["two_streams"],
           "best_speedup_two_streams": min(times["sequential"]) / min(times["two_streams"]),
           "overlap": statistics.median(overlaps),
           **{f"{k_}_cpu_per_wall": statistics.median(v) for k_, v in cpu.items()}}
    log(f"    two nbody launches of {half} CTA(s): sequential {med['sequential'] * 1e3:.1f} ms, one stream "
        f"{med['one_stream'] * 1e3:.1f} ms, two streams {med['two_streams'] * 1e3:.1f} ms "
        f"({out['speedup_two_streams']:.2f}x; best {out['best_speedup_two_streams']:.2f}x); the kernels' "
        f"batches overlapped {100 * out['overlap']:.0f}% of their span; CPU time / wall time: sequential "
        f"{out['sequential_cpu_per_wall']:.2f}, two streams {out['two_streams_cpu_per_wall']:.2f}")
    return out


def _overlap(spans: list) -> float:
    """The time both launches had batches running, as a fraction of the time from the first batch's
    start to the last one's end (1: fully concurrent, 0: one after the other)."""
    by: dict[int, tuple[int, int]] = {}
    for _w, _k, seq, a, b in spans:
        lo, hi = by.get(seq, (a, b))
        by[seq] = (min(lo, a), max(hi, b))
    if len(by) != 2:
        return 0.0
    (a0, a1), (b0, b1) = by.values()
    span = max(a1, b1) - min(a0, b0)
    return max(0, min(a1, b1) - max(a0, b0)) / span if span else 0.0


def _chain_expect(x0: float, y0: float, steps: int, phase: int) -> tuple[float, float]:
    x, y = x0, y0
    for step in range(steps):
        if (step + phase) % 2:
            y = x + y
        else:
            x = x - y
    return x, y


def launch_rate(peer, ocl, mode: str, log=print) -> dict:
    """Tiny launches over 4 streams; the same launches synchronously; pocl on 4 queues."""
    import ptxjit

    total = SIZES[mode]["launches"]
    nstreams = 4
    per = total // nstreams
    k = peer.kernel("saxpy")
    n = 32
    n32 = np.int32(n)
    one, minus = np.float32(1.0), np.float32(-1.0)

    def fresh():
        return ([np.full(n, i + 1, np.float32) for i in range(nstreams)],
                [np.full(n, 2 * i - 3, np.float32) for i in range(nstreams)])

    expect = [_chain_expect(i + 1, 2 * i - 3, per, i) for i in range(nstreams)]

    def check(xs, ys, what: str) -> None:
        for i in range(nstreams):
            if not (np.all(xs[i] == expect[i][0]) and np.all(ys[i] == expect[i][1])):
                raise AssertionError(f"{what}: stream {i} lost or reordered launches: x {xs[i][0]}, y {ys[i][0]}, "
                                     f"expected {expect[i]}")

    def run_streams():
        xs, ys = fresh()
        streams = [ptxjit.Stream() for _ in range(nstreams)]
        t0 = time.perf_counter()
        for step in range(per):
            for i, s in enumerate(streams):
                if (step + i) % 2:
                    k(1, n, (n32, one, xs[i], ys[i]), stream=s)
                else:
                    k(1, n, (n32, minus, ys[i], xs[i]), stream=s)
        t1 = time.perf_counter()
        ptxjit.synchronize()
        t2 = time.perf_counter()
        check(xs, ys, "streams")
        return t1 - t0, t2 - t0

    def run_sync():
        xs, ys = fresh()
        t0 = time.perf_counter()
        for step in range(per):
            for i in range(nstreams):
                if (step + i) % 2:
                    k(1, n, (n32, one, xs[i], ys[i]))
                else:
                    k(1, n, (n32, minus, ys[i], xs[i]))
        t1 = time.perf_counter()
        check(xs, ys, "synchronous")
        return t1 - t0

    run_streams()  # translation and warm-up
    enq, tot, sync = [], [], []
    for _ in range(3):
        a, b = run_streams()
        enq.append(a)
        tot.append(b)
        sync.append(run_sync())
    out = {"launches": per * nstreams, "streams": nstreams,
           "streams_launches_per_s": per * nstreams / statistics.median(tot),
           "enqueue_per_s": per * nstreams / statistics.median(enq),
           "sync_launches_per_s": per * nstreams / statistics.median(sync)}
    if ocl is not None:
        try:
            out["pocl_launches_per_s"] = _pocl_rate(ocl, per, nstreams, n, fresh, check)
        except Exception as e:  # noqa: BLE001 - the peer is optional
            out["pocl_error"] = f"{type(e).__name__}: {e}"
    log(f"    {per * nstreams} tiny launches on {nstreams} streams: {out['streams_launches_per_s']:.0f}/s "
        f"(enqueue {out['enqueue_per_s']:.0f}/s), synchronous {out['sync_launches_per_s']:.0f}/s"
        + (f", pocl {out['pocl_launches_per_s']:.0f}/s" if "pocl_launches_per_s" in out else ""))
    return out


def _pocl_rate(ocl, per: int, nstreams: int, n: int, fresh, check) -> float:
    cl = ocl.cl
    ocl.kernel("saxpy")
    prog = ocl._programs["saxpy"]
    queues = [cl.CommandQueue(ocl.ctx) for _ in range(nstreams)]
    best = []
    for _ in range(3):
        xs, ys = fresh()
        bx = [ocl.buffer(x) for x in xs]
        by = [ocl.buffer(y) for y in ys]
        # one kernel object per (stream, direction), its arguments set once: only the enqueue is timed
        kerns = []
        for i in range(nstreams):
            kp = cl.Kernel(prog, "saxpy")
            kp.set_args(np.int32(n), np.float32(1.0), bx[i], by[i])
            km = cl.Kernel(prog, "saxpy")
            km.set_args(np.int32(n), np.float32(-1.0), by[i], bx[i])
            kerns.append((kp, km))
        t0 = time.perf_counter()
        for step in range(per):
            for i, q in enumerate(queues):
                cl.enqueue_nd_range_kernel(q, kerns[i][0] if (step + i) % 2 else kerns[i][1], (n,), (n,))
        for q in queues:
            q.finish()
        best.append(time.perf_counter() - t0)
        for i, q in enumerate(queues):
            cl.enqueue_copy(q, xs[i], bx[i])
            cl.enqueue_copy(q, ys[i], by[i])
            q.finish()
        check(xs, ys, "pocl")
    return per * nstreams / statistics.median(best)


def timeline(peer, mode: str, png: Path | None, log=print) -> dict:
    """Kernels of three streams in flight together; per worker, which launch's batches ran when."""
    import ptxjit
    from ptxjit.streams import scheduler

    n = 2048  # a CTA takes a few ms: launches of several batches, interleaved
    k = peer.kernel("nbody")
    workers = ptxjit.worker_count()
    rng = np.random.default_rng(3)
    pos = rng.random((n, 4), dtype=np.float32)
    pos[:, 3] = 1.0
    plan = [(0, 2 * workers), (0, 2 * workers), (1, 4 * workers), (2, workers), (2, workers), (2, workers)]
    streams = [ptxjit.Stream(non_blocking=True) for _ in range(3)]
    accs = [np.zeros((n, 4), np.float32) for _ in plan]
    k(1, 256, (pos, accs[0], np.int32(n), np.float32(NBODY_EPS2)))
    sched = scheduler.get_scheduler()
    sched.trace = []
    try:
        t0 = time.perf_counter_ns()
        labels = {}
        for j, (si, grid) in enumerate(plan):
            k(grid, 256, (pos, accs[j], np.int32(n), np.float32(NBODY_EPS2)), stream=streams[si])
            labels[j] = f"stream {si}, launch {j} ({grid} CTAs)"
        ptxjit.synchronize()
        spans = list(sched.trace)
    finally:
        sched.trace = None
    seqs = sorted({s[2] for s in spans})
    by_seq = {seq: j for j, seq in enumerate(seqs)}
    out = {"batches": len(spans), "launches": len(seqs)}
    if png is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(10, 2.2 + 0.4 * workers))
        colors = plt.get_cmap("tab10")
        for w, _kernel, seq, a, b in spans:
            j = by_seq[seq]
            ax.broken_barh([((a - t0) / 1e6, (b - a) / 1e6)], (w - 0.4, 0.8), color=colors(j % 10))
        for j in range(len(seqs)):
            ax.bar(0, 0, color=colors(j % 10), label=labels.get(j, f"launch {j}"))
        ax.set_yticks(range(sched.nworkers))
        ax.set_yticklabels([f"worker {i}" for i in range(sched.nworkers)])
        ax.set_xlabel("ms since the first launch was enqueued")
        ax.set_title("ptxjit streams: batches of CTAs of six nbody launches on three streams")
        fig.legend(loc="lower center", ncol=3, fontsize=8)
        fig.tight_layout(rect=(0, 0.22, 1, 1))
        png.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(png, dpi=110)
        plt.close(fig)
        out["png"] = str(png)
    log(f"    timeline: {out['launches']} launches in {out['batches']} batches")
    return out


def measure(peer, ocl, mode: str, png: Path | None, log=print) -> dict:
    return {"concurrency": concurrency(peer, mode, log), "rate": launch_rate(peer, ocl, mode, log),
            "timeline": timeline(peer, mode, png, log)}


def markdown(sec: dict) -> list[str]:
    if not sec:
        return []
    lines = ["", "## Streams (`ptxjit.Stream`): concurrent kernels, launch rate", ""]
    c = sec.get("concurrency")
    if c:
        lines += [f"Two independent nbody launches ({c['bodies']} bodies), each of {c['ctas_per_kernel']} CTA(s) "
                  f"= half of the {c['workers']} workers:", "",
                  "| sequential (synchronous) | one stream | two streams | speedup (median; best) | overlap |",
                  "|---|---|---|---|---|",
                  f"| {c['sequential_s'] * 1e3:.1f} ms | {c['one_stream_s'] * 1e3:.1f} ms | "
                  f"{c['two_streams_s'] * 1e3:.1f} ms | {c['speedup_two_streams']:.2f}×; "
                  f"{c['best_speedup_two_streams']:.2f}× | {100 * c['overlap']:.0f}% |", "",
                  "*overlap*: the time both kernels had batches running, over the span of the two (from the "
                  "batch timestamps).  Process CPU time / wall time: sequential "
                  f"{c['sequential_cpu_per_wall']:.2f}, two streams {c['two_streams_cpu_per_wall']:.2f} (the cores "
                  "the machine actually gave the run: with two workers and no other load, two streams approach 2)."]
    r = sec.get("rate")
    if r:
        pocl = f"{r['pocl_launches_per_s']:.0f}" if "pocl_launches_per_s" in r else "—"
        lines += ["", f"{r['launches']} tiny launches (1 CTA of 32 threads) on {r['streams']} streams, every "
                  "stream's order checked through its results:", "",
                  "| streams (enqueue → synchronize) | enqueue only | synchronous launches | pocl, 4 queues |",
                  "|---|---|---|---|",
                  f"| {r['streams_launches_per_s']:.0f}/s | {r['enqueue_per_s']:.0f}/s | "
                  f"{r['sync_launches_per_s']:.0f}/s | {pocl}/s |"]
    t = sec.get("timeline")
    if t and t.get("png"):
        lines += ["", f"Timeline: {t['png']} ({t['launches']} launches, {t['batches']} batches)."]
    return lines


def add_to(run, log=print) -> None:
    """bench/run.py: measure into run.res["async_streams"] and add the section to results.md."""
    peer = run.peers.get("ptxjit")
    if peer is None:
        return
    log("streams (ptxjit.Stream)")
    png = run.out / "streams_timeline.png"
    sec = run.guard("streams", measure, peer, run.peers.get("pocl"), run.mode, png, log)
    if sec:
        run.add_section("async_streams", sec, markdown(sec))


def main(argv: list[str] | None = None) -> int:
    import argparse

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from ptxbench import peers as P

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--png", type=Path, default=None, help="write the timeline here")
    a = ap.parse_args(argv)
    try:
        ocl = P.OpenCLPeer()
    except P.PeerUnavailable as e:
        print(f"pocl unavailable: {e}")
        ocl = None
    sec = measure(P.PtxjitPeer(), ocl, "quick" if a.quick else "full", a.png)
    print("\n".join(markdown(sec)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
