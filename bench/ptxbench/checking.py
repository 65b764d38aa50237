"""The checking section: what each `ptxjit check` tool costs next to the plain launch.

For each kernel (smaller sizes than the timing section: the trace-based tools keep every memory record)
the plain launch and `ptxjit.check` with each tool run interleaved; reported as ratios to the plain
launch's median.  The benchmark kernels are correct, so every check must come back without a report: one
that does not is recorded as a problem and not timed.
"""

from __future__ import annotations

import gc
import statistics
import time

import numpy as np

from ptxbench.suite import CASES
from ptxbench.timing import geomean
from ptxbench.tracing import SIZES as TRACE_SIZES
from ptxbench.tracing import StandIn, checked_runs

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")

# a quarter of the tracing section's elements (half the edge of 2-D problems): the trace-based tools keep
# every memory record and analyse it in NumPy
SIZES = {mode: {k: v // (2 if k in ("sgemm", "jacobi", "transpose", "nbody") else 4) for k, v in sizes.items()}
         for mode, sizes in TRACE_SIZES.items()}


def _checked(kernel, tool: str) -> StandIn:
    import ptxjit

    return StandIn(kernel, lambda k, g, b, a, sm: ptxjit.check(k, g, b, a, sm, tools=(tool,)))


def _reports(label: str, target) -> list[str]:
    reports = getattr(target, "last", None) or []
    return [f"{len(reports)} report(s) on a correct kernel: {reports[0].kind}"] if reports else []


def measure(peer, mode: str, kernels: list[str], reps: int, log=print) -> dict:
    """The section's results: {"kernels": [...], "summary": {...}}."""
    out = []
    for name in kernels:
        if name not in SIZES[mode]:
            continue
        case = CASES[name]
        n = SIZES[mode][name]
        log(f"check {name} ({case.label(n)})")
        inputs = case.make(n, np.random.default_rng(1234))
        expected = case.reference(inputs)
        kernel = peer.kernel(name)
        targets = {"plain": kernel, **{tool: _checked(kernel, tool) for tool in TOOLS}}
        runs, problems = checked_runs(case, n, targets, inputs, expected, _reports)
        times: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(reps):
            for label, run in runs.items():
                t0 = time.perf_counter()
                run()
                times[label].append(time.perf_counter() - t0)
        plain = statistics.median(times["plain"]) if times.get("plain") else None
        rec = {"name": name, "size": n, "label": case.label(n), "problems": problems, "plain_s": plain,
               "tools": {}}
        for tool in TOOLS:
            if tool in times and plain:
                med = statistics.median(times[tool])
                rec["tools"][tool] = {"median_s": med, "x": med / plain}
        out.append(rec)
        log("    " + "  ".join(f"{t} {v['x']:.1f}x" for t, v in rec["tools"].items()))
        del runs, inputs, expected
        gc.collect()
    summary = {}
    for tool in TOOLS:
        xs = [k["tools"][tool]["x"] for k in out if tool in k["tools"]]
        summary[f"{tool}_geomean"] = geomean(xs)
        summary[f"{tool}_max"] = max(xs) if xs else None
    return {"kernels": out, "summary": summary}


def markdown(sec: dict) -> list[str]:
    """The section of results.md."""
    if not sec or not sec.get("kernels"):
        return []
    lines = ["", "## Checking (`ptxjit check`): time / plain launch", "",
             "| kernel | size | plain | " + " | ".join(TOOLS) + " |", "|---|---|---|" + "---|" * len(TOOLS)]
    for k in sec["kernels"]:
        cells = [k["name"], k["label"], f"{k['plain_s'] * 1e3:.2f} ms" if k.get("plain_s") else "—"]
        for tool in TOOLS:
            v = k["tools"].get(tool)
            cells.append(f"{v['x']:.1f}×" if v else ("wrong" if tool in k["problems"] else "—"))
        lines.append("| " + " | ".join(cells) + " |")
    sm = sec["summary"]
    lines += ["", "Geometric means: " + ", ".join(
        f"{tool} {sm[f'{tool}_geomean']:.1f}×" for tool in TOOLS if sm.get(f"{tool}_geomean")) + "."]
    problems = [f"{k['name']}/{t}: {p}" for k in sec["kernels"] for t, p in k["problems"].items()]
    if problems:
        lines += ["", "Problems: " + "; ".join(problems)]
    return lines
