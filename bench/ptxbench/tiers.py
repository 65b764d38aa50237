"""The tiers section (ptxjit/tiers, PTXJIT_TIERS=1; PTXJIT_TIERS=0 is the untiered single translation):
first-launch latency and steady-state time of tiered launches next to the untiered single O3 translation,
and the timeline of one long launch that moves from tier 0 to tier 1 while it runs (docs/tiers_swap.png).

* first launch: a fresh Module and a fresh, empty PTXJIT_CACHE_DIR per measurement; the time of the
  first launch (translation + run; bounds-checked, the default launch, or unchecked with
  `--unchecked`), tiers off (the untiered block-specialized O3 code) vs
  tiers on (tier 0: the generic code at LLVM O1, tier 1 left building in the background; the
  measurement waits for that build before the next one starts).  At the "tiny" sizes, where the
  translation is the first launch's cost.
* steady state: tier 1 built (synchronously), then launches of both interleaved (A B A B ...),
  medians.  Tiered launches cost one profile/guard step (about a microsecond) more.

Every variant's outputs are checked against the case's NumPy reference before anything is timed.
The machine may be shared and noisy: medians of interleaved repetitions; nothing is asserted on timings.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ptxbench.suite import CASES
from ptxbench.timing import geomean

CLASSIC = ["vadd", "saxpy", "dot", "sgemm", "jacobi", "histogram", "transpose", "nbody", "blackscholes", "bitonic",
           "scan"]
LAYERS = ["batchnorm", "maxpool", "im2col", "nchw_to_nhwc"]  # shapes as launch arguments (layers.py)
KERNELS = CLASSIC + LAYERS  # the suite's 15 kernels
BARRIER_HEAVY = {"bitonic", "scan", "transpose", "sgemm", "dot"}


# interleaved steady launches per side: at 3 (quick mode's repetitions) the medians of two runs of the same
# machine code differed by up to 12% on this shared 2-core machine (dot 0.88x where the race kept the plain code)
STEADY_REPS = 15

UNCHECKED = False  # --unchecked: measure unchecked launches (else bounds-checked: the default launch)


class _Launch:
    """A kernel launched bounds-checked (the default) or, with UNCHECKED, unchecked=True."""

    def __init__(self, kernel) -> None:
        self.kernel = kernel

    def __call__(self, grid, block, args, shared_mem=0) -> None:
        self.kernel(grid, block, args, shared_mem, unchecked=UNCHECKED)


def _set_tiers(on: bool) -> None:
    os.environ["PTXJIT_TIERS"] = "1" if on else "0"


def _ptx(name: str) -> Path:
    return Path(__file__).resolve().parents[1] / "kernels" / "ptx" / f"{name}.ptx"


def _wait_builds(kernel) -> None:
    for st in kernel.tier_states.values():
        th = st.building
        if th is not None and th.is_alive():
            th.join()


def first_launch(name: str, on: bool) -> tuple[float, list[str]]:
    """Seconds of the first launch (fresh module, empty disk cache) and the check's problems."""
    import ptxjit

    case = CASES[name]
    n = case.sizes["tiny"]
    inputs = case.make(n, np.random.default_rng(0))
    expected = case.reference(inputs)
    d = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    old = os.environ.get("PTXJIT_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="ptxjit-tiers-") as tmp:
        os.environ["PTXJIT_CACHE_DIR"] = tmp
        try:
            _set_tiers(on)
            k = ptxjit.Module.from_file(_ptx(name)).get_function(name)
            run = case.ptxjit(_Launch(k), d, n)
            t0 = time.perf_counter()
            run()
            dt = time.perf_counter() - t0
            _wait_builds(k)
        finally:
            if old is None:
                os.environ.pop("PTXJIT_CACHE_DIR", None)
            else:
                os.environ["PTXJIT_CACHE_DIR"] = old
    return dt, case.check({o: d[o] for o in case.outputs}, expected)


def steady(name: str, mode: str, reps: int) -> dict:
    """Median seconds per launch, tiers off vs tier 1, interleaved; with the check of both."""
    import ptxjit
    from ptxjit import tiers

    case = CASES[name]
    n = case.sizes["quick" if mode == "quick" else "full"] if mode != "tiny" else case.sizes["tiny"]
    inputs = case.make(n, np.random.default_rng(0))
    expected = case.reference(inputs)
    runs, problems = {}, {}
    tiers.HOOKS["synchronous"] = True
    tiers.POLICY.hot_run_ratio = 0.0  # tier 1 from the first profile: the steady state is what is measured here
    from ptxjit.tiers import counters

    counted: list[float] = []  # seconds of tier 0's counted launch (block counters; patterns in 8 CTAs)
    run_counted = counters.run_counted

    def timed_count(*a, **kw):
        t0 = time.perf_counter()
        try:
            return run_counted(*a, **kw)
        finally:
            counted.append(time.perf_counter() - t0)

    counters.run_counted = timed_count
    shared = {kk: (v.copy() if isinstance(v, np.ndarray) else v) for kk, v in inputs.items()}
    try:
        for label, on in (("today", False), ("tier1", True)):
            _set_tiers(on)
            k = ptxjit.Module.from_file(_ptx(name)).get_function(name)
            d = {kk: (v.copy() if isinstance(v, np.ndarray) else v) for kk, v in inputs.items()}
            run = case.ptxjit(_Launch(k), d, n)
            run()  # translations (tier 1 built from this launch's profile)
            bad = case.check({o: d[o] for o in case.outputs}, expected)
            if bad:
                problems[label] = "; ".join(bad)
            # past tier 1's race against the plain code, its counted launches (tiers/counters.py) and the
            # race of the version rebuilt with their branch weights
            for _ in range(2 * (2 * tiers.POLICY.trial_launches + 1) + tiers.POLICY.counted_launches + 1):
                run()
            if on:  # and tier 1's (or the race winner's) outputs, on fresh inputs
                d2 = {kk: (v.copy() if isinstance(v, np.ndarray) else v) for kk, v in inputs.items()}
                case.ptxjit(_Launch(k), d2, n)()
                bad = case.check({o: d2[o] for o in case.outputs}, expected)
                if bad:
                    problems["tier1"] = "; ".join(bad)
            # timed on one shared copy of the inputs: the arrays' placement alone moved dot by 4%
            # (two copies, the same code), which separate copies per side counted as a tier's gain or loss
            runs[label] = (case.ptxjit(_Launch(k), shared, n), on, k)
        times: dict[str, list[float]] = {label: [] for label in runs}
        for _ in range(reps):
            for label, (run, on, _k) in runs.items():
                _set_tiers(on)
                t0 = time.perf_counter()
                run()
                times[label].append(time.perf_counter() - t0)
        st = ptxjit.stats().get(runs["tier1"][2].name, {})
    finally:
        tiers.HOOKS["synchronous"] = False
        counters.run_counted = run_counted
    med = {label: statistics.median(v) for label, v in times.items()}
    return {"n": n, "today_s": med["today"], "tier1_s": med["tier1"], "speedup": med["today"] / med["tier1"],
            "counted_s": counted[0] if counted else None,
            "tier": st.get("tier"),
            "spec": (st["trials"][-1]["spec"] if st.get("trials") else
                     st["specializations"][-1] if st.get("specializations") else {}),
            "trial": (st.get("trials") or [{}])[-1].get("kept"),
            "problems": problems}


def swap_timeline(png: Path | None, mode: str, log=print, name: str = "scan") -> dict:
    """One long launch (scan: 32768 CTAs of 512 threads) started with an empty cache: tier 0 runs while
    tier 1 builds, then the workers move over; the batches' timeline as a plot."""
    import ptxjit
    from ptxjit import tiers

    case = CASES[name]
    # long enough on tier 0 (the generic code) for tier 1's build to finish while it runs
    n = case.sizes["full"] if mode != "tiny" else case.sizes["tiny"]
    inputs = case.make(n, np.random.default_rng(0))
    expected = case.reference(inputs)
    d = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    timeline: list = []
    old = os.environ.get("PTXJIT_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="ptxjit-tiers-") as tmp:
        os.environ["PTXJIT_CACHE_DIR"] = tmp
        tiers.HOOKS["timeline"] = timeline
        try:
            _set_tiers(True)
            k = ptxjit.Module.from_file(_ptx(name)).get_function(name)
            run = case.ptxjit(_Launch(k), d, n)
            t0 = time.perf_counter_ns()
            run()
            t_end = time.perf_counter_ns()
            _wait_builds(k)
        finally:
            tiers.HOOKS["timeline"] = None
            if old is None:
                os.environ.pop("PTXJIT_CACHE_DIR", None)
            else:
                os.environ["PTXJIT_CACHE_DIR"] = old
    problems = case.check({o: d[o] for o in case.outputs}, expected)
    out = {"kernel": name, "n": n, "seconds": (t_end - t0) / 1e9, "problems": problems, "batches": 0, "swap_s": None}
    if not timeline:
        return out
    lg = timeline[-1]
    out["batches"] = len(lg.batches)
    out["tier1_batches"] = sum(1 for b in lg.batches if b[1] == 1)
    out["swap_s"] = (lg.swap_ns - t0) / 1e9 if lg.swap_ns else None
    if png is not None:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            log("  matplotlib unavailable: no timeline plot")
            return out
        fig, ax = plt.subplots(figsize=(10, 3))
        colors = {0: "tab:orange", 1: "tab:blue"}
        for w, tier, a, b in lg.batches:
            ax.barh(w, (b - a) / 1e6, left=(a - t0) / 1e6, color=colors[tier], edgecolor="none", height=0.8)
        from matplotlib.patches import Patch

        handles = [Patch(color=colors[0], label="tier 0 batch"), Patch(color=colors[1], label="tier 1 batch")]
        if lg.swap_ns:
            handles.append(ax.axvline((lg.swap_ns - t0) / 1e6, color="k", linestyle="--",
                                      label="first tier-1 batch (swap)"))
        ax.set_xlabel("ms since the launch began")
        ax.set_ylabel("worker")
        workers = sorted({w for w, _, _, _ in lg.batches})
        ax.set_yticks(workers)
        ax.set_ylim(min(workers) - 0.6, max(workers) + 1.4)  # room for the legend above the bars
        ax.set_title(f"{name}, n={n}, first launch with an empty cache: tier 0 batches, then tier 1's")
        ax.legend(handles=handles, loc="upper right")
        fig.tight_layout()
        png.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(png, dpi=110)
        plt.close(fig)
        out["png"] = str(png)
    return out


def measure(mode: str, kernels: list[str] | None = None, reps: int | None = None, png: Path | None = None,
            log=print) -> dict:
    kernels = [k for k in (kernels or KERNELS) if k in CASES]
    reps = reps or (3 if mode == "quick" else 7)
    saved = os.environ.get("PTXJIT_TIERS")
    rows = []
    try:
        for name in kernels:
            firsts: dict[str, list[float]] = {"today": [], "tier0": []}
            problems: list[str] = []
            for _ in range(reps if mode != "quick" else 2):
                for label, on in (("today", False), ("tier0", True)):  # interleaved
                    dt, bad = first_launch(name, on)
                    firsts[label].append(dt)
                    problems += [f"{label}: {p}" for p in bad]
            f_today, f_t0 = statistics.median(firsts["today"]), statistics.median(firsts["tier0"])
            s = steady(name, mode, max(reps, STEADY_REPS))
            row = {"kernel": name, "first_today_s": f_today, "first_tier0_s": f_t0, "first_speedup": f_today / f_t0,
                   **{k: v for k, v in s.items() if k != "problems"},
                   "problems": problems + [f"{k}: {v}" for k, v in s["problems"].items()]}
            rows.append(row)
            log(f"  {name}: first launch {f_today:.3f} s -> {f_t0:.3f} s ({row['first_speedup']:.2f}x), "
                f"steady {s['today_s'] * 1e3:.2f} ms -> {s['tier1_s'] * 1e3:.2f} ms ({s['speedup']:.2f}x)"
                + (f", counted launch {s['counted_s'] / s['today_s']:.1f}x" if s.get("counted_s") else "")
                + (f"  PROBLEMS {row['problems']}" if row["problems"] else ""))
        swap = swap_timeline(png, mode, log)
    finally:
        if saved is None:
            os.environ.pop("PTXJIT_TIERS", None)
        else:
            os.environ["PTXJIT_TIERS"] = saved
    heavy = [r["first_speedup"] for r in rows if r["kernel"] in BARRIER_HEAVY]
    return {"kernels": rows, "swap": swap, "unchecked": UNCHECKED, "summary": {
        "first_launch_geomean": geomean([r["first_speedup"] for r in rows]),
        "first_launch_geomean_barrier_heavy": geomean(heavy),
        "steady_geomean": geomean([r["speedup"] for r in rows]),
        "steady_slowest": min((r["speedup"] for r in rows), default=None)}}


def markdown(sec: dict) -> list[str]:
    kind = "unchecked" if sec.get("unchecked") else "bounds-checked (default)"
    out = ["", f"## Tiers (PTXJIT_TIERS=1, {kind} launches)", "",
           "First launch: fresh module and empty disk cache, tiny sizes "
           "(today: the untiered O3 translation, vs tier 0). "
           "Steady state: medians of interleaved launches (today vs tier 1). Ratios > 1: tiers faster. "
           "Counted launch: tier 0's one launch on the counting code (block counters in every CTA, branch "
           "uniformity and memory patterns in the first 8), in steady launches of the untiered code.", "",
           "| kernel | first today (s) | first tier 0 (s) | ratio | steady today (ms) | steady tier 1 (ms) | ratio "
           "| counted launch (× steady) | specialized (tier 1's constants) | race vs plain O3: kept |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in sec["kernels"]:
        spec = ", ".join(f"{k}={v}" for k, v in (r.get("spec") or {}).items())
        cost = f"{r['counted_s'] / r['today_s']:.1f}" if r.get("counted_s") else "-"
        out.append(f"| {r['kernel']} | {r['first_today_s']:.3f} | {r['first_tier0_s']:.3f} | {r['first_speedup']:.2f} "
                   f"| {r['today_s'] * 1e3:.3f} | {r['tier1_s'] * 1e3:.3f} | {r['speedup']:.2f} | {cost} | {spec} "
                   f"| {r.get('trial') or '-'} |")
    s = sec["summary"]

    def f(x):
        return "n/a" if x is None else f"{x:.2f}x"

    out += ["", f"Geometric means: first launch {f(s['first_launch_geomean'])} "
                f"(barrier-heavy: {f(s['first_launch_geomean_barrier_heavy'])}), steady state "
                f"{f(s['steady_geomean'])} (slowest kernel {f(s['steady_slowest'])})."]
    sw = sec.get("swap") or {}
    if sw.get("batches"):
        out.append(f"Swap timeline: {sw['kernel']} n={sw['n']}, first launch {sw['seconds']:.2f} s, "
                   f"{sw['batches']} batches, "
                   f"{sw.get('tier1_batches', 0)} on tier 1, swap at "
                   f"{'n/a' if sw['swap_s'] is None else format(sw['swap_s'], '.2f')} s"
                   + (f" ({sw['png']})" if sw.get("png") else ""))
    return out


def add_to(run, log=print) -> None:
    """bench/run.py: measure into run.res["tiers"] and add the section to results.md."""
    if run.peers.get("ptxjit") is None:
        return
    log("tiers (bounds-checked launches)")
    png = run.out / "tiers_swap.png"
    sec = run.guard("tiers", measure, run.mode, [k for k in run.kernel_names if k in KERNELS], None, png, log)
    if sec:
        run.add_section("tiers", sec, markdown(sec))


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="quick", choices=("tiny", "quick", "full"))
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--png", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--unchecked", action="store_true", help="measure unchecked launches")
    a = ap.parse_args(argv)
    global UNCHECKED
    UNCHECKED = a.unchecked
    sec = measure(a.mode, [k for k in a.kernels.split(",") if k], a.reps, a.png)
    if a.json:
        a.json.write_text(json.dumps(sec, indent=1, default=str))
    print("\n".join(markdown(sec)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
