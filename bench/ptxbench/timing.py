"""Timing: interleaved rounds (A B C A B C ...), warm-up excluded, median and range."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable


def summarize(times: list[float]) -> dict:
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "reps": len(times),
            "times_s": [round(t, 9) for t in times]}


def interleaved(runs: dict[str, Callable[[], object]], reps: int, warmup: int = 1,
                budget_s: float | None = None, min_reps: int = 3) -> dict[str, dict]:
    """Time every callable in `runs` `reps` times, one of each per round.  The warm-up rounds are not
    recorded; when a round takes so long that `reps` rounds would exceed `budget_s`, fewer rounds
    (at least `min_reps`) are run."""
    round_s = 0.0
    for w in range(warmup):
        t0 = time.perf_counter()
        for fn in runs.values():
            fn()
        if w == warmup - 1:
            round_s = time.perf_counter() - t0
    if budget_s is not None and round_s > 0:
        reps = max(min_reps, min(reps, int(budget_s / round_s)))
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(reps):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {k: summarize(v) for k, v in times.items()}


def per_call(fn: Callable[[], object], calls: int, warmup: int = 20) -> dict:
    """Time `calls` individual calls of a (fast) function; median and range in microseconds."""
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return {"median_us": statistics.median(ts) * 1e6, "min_us": min(ts) * 1e6, "max_us": max(ts) * 1e6,
            "calls": calls}


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None and x > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(x) for x in xs) / len(xs))
