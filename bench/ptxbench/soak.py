"""Soak mode: long runs of every soak kernel with tiers on, looking for what only shows after many launches
(the tiers' recounts, guard failures and rebuilds; leaks of memory, file descriptors or threads).

Each kernel in turn is launched `--launches` times in all (default 100,000) from `--threads` Python
threads at once, on the same Kernel object: each thread has its own inputs (small: a launch is cheap)
and its own ptxjit.Stream, and launches in chunks of CHUNK, alternately synchronous and on its stream
(bounds-checked, as by default).  Every VARY_EVERY-th launch uses a second input size (other size
arguments and grid): tier 1's guards fail on it, so the policy's guard-failure path and its rebuilds
run.  Every CHECK_EVERY launches, and at the end, a thread synchronizes its stream, restores its inputs
and launches once more synchronously, and compares the outputs with the case's NumPy reference.

A sampler thread reads the process's RSS and thread count (/proc/self/status) and its open file
descriptors (/proc/self/fd) every SAMPLE_S seconds; the report gives per kernel and for the whole run
first / last / max and the least-squares slope per 1,000 launches.  An exception (a launch, a stream's
synchronize, a failed check) is collected with the kernel's name, the thread and the launch index; a
thread stops after MAX_ERRORS of them.

The kernels: the benchmark suite (ptxbench.suite.CASES, at small sizes), the empty kernel, and a set of
the corpus's kernels (corpus/ptx, references as in tests/test_corpus_*.py).

    python bench/run.py --soak [--launches N] [--kernels REGEX] [--threads T] [--budget SECONDS] [--out DIR]
    python bench/ptxbench/soak.py ...                      (the same)

`--budget` caps the whole run's wall time: the kernel running when it ends stops early and the rest
do not run (the report says which).  Writes DIR/soak.md and DIR/soak.json (default bench/results).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent
ROOT = BENCH.parent
CORPUS = ROOT / "corpus" / "ptx"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from ptxbench.case import cdiv  # noqa: E402

DEFAULT_LAUNCHES = 100_000
DEFAULT_THREADS = 4
CHUNK = 64  # launches per chunk: even chunks synchronous, odd ones on the thread's stream
VARY_EVERY = 97  # every this many launches one runs on the second input size (a guard failure)
CHECK_EVERY = 5_000  # launches of a thread between two checks against NumPy
SAMPLE_S = 0.5
MAX_ERRORS = 5  # per thread: after this many the thread stops (the rest would repeat them)


# ---------------------------------------------------------------------------------------- cases
@dataclass
class SoakCase:
    """A kernel to soak: `load()` gives the ptxjit kernel; `make(size, rng)` its inputs and (zeroed)
    outputs; `reference(d)` the expected outputs (NumPy); `launch(kernel, d, size)` a closure that
    launches once on `d` (the kernel may be a stream-bound proxy); `check(got, expected)` the problems
    found; `sizes`: the usual input size and the second one that breaks tier 1's guards."""
    name: str
    load: Callable
    make: Callable
    reference: Callable
    launch: Callable
    outputs: list[str]
    check: Callable
    sizes: tuple[int, int]


def _exact(outputs: list[str]) -> Callable:
    def check(got: dict, expected: dict) -> list[str]:
        out = []
        for k in outputs:
            g, e = np.asarray(got[k]), np.asarray(expected[k])
            if g.shape != e.shape or not np.array_equal(g, e):
                out.append(f"{k}: {np.count_nonzero(g != e) if g.shape == e.shape else 'shape'} elements differ")
        return out
    return check


def _close(outputs: list[str], rtol: float, atol: float) -> Callable:
    def check(got: dict, expected: dict) -> list[str]:
        out = []
        for k in outputs:
            g, e = np.asarray(got[k], np.float64), np.asarray(expected[k], np.float64)
            bad = ~np.isclose(g, e, rtol=rtol, atol=atol)
            if bad.any():
                i = int(np.flatnonzero(bad.ravel())[0])
                out.append(f"{k}: {int(bad.sum())} of {g.size} outside rtol={rtol} (first at {i}: got "
                           f"{g.ravel()[i]!r}, expected {e.ravel()[i]!r})")
        return out
    return check


# the benchmark suite's kernels at small sizes: (usual, second); the layers' n is the image side
BENCH_SIZES = {"vadd": (2000, 1001), "saxpy": (2000, 1001), "dot": (2000, 1001), "sgemm": (32, 16),
               "jacobi": (40, 23), "histogram": (2000, 1001), "transpose": (32, 64), "nbody": (256, 512),
               "blackscholes": (2000, 1001), "bitonic": (1024, 2048), "scan": (512, 1024),
               "batchnorm": (4, 3), "maxpool": (4, 2), "im2col": (6, 5), "nchw_to_nhwc": (4, 3)}


class _Modules:
    """Each PTX file loaded once (the threads of a kernel share one Kernel object)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._mods: dict[Path, object] = {}

    def kernel(self, path: Path, entry: str):
        import ptxjit

        with self._lock:
            m = self._mods.get(path)
            if m is None:
                m = self._mods[path] = ptxjit.Module.from_file(path)
        return m.get_function(entry)


MODULES = _Modules()


def _bench_case(name: str) -> SoakCase:
    from ptxbench.peers import PTX_DIR
    from ptxbench.suite import CASES

    c = CASES[name]

    def check(got: dict, expected: dict) -> list[str]:
        return c.check(got, expected)
    return SoakCase(f"bench:{name}", lambda: MODULES.kernel(PTX_DIR / f"{name}.ptx", name), c.make, c.reference,
                    c.ptxjit, list(c.outputs), check, BENCH_SIZES[name])


def _empty_case() -> SoakCase:
    from ptxbench.peers import PTX_DIR

    return SoakCase("bench:empty", lambda: MODULES.kernel(PTX_DIR / "empty.ptx", "empty_kernel"),
                    lambda n, rng: {}, lambda d: {}, lambda k, d, n: (lambda: k(n, 1, ())), [], _exact([]), (1, 2))


def _corpus(stem: str, entry: str) -> Callable:
    return lambda: MODULES.kernel(CORPUS / f"{stem}.ptx", entry)


def _f32_fma(a, x, y) -> np.ndarray:
    return (np.float64(a) * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)


def _vadd(rng_n):
    n, rng = rng_n
    return {"a": rng.standard_normal(n).astype(np.float32), "b": rng.standard_normal(n).astype(np.float32),
            "c": np.zeros(n, np.float32)}


def _stencil1d_ref(d):
    n = d["inp"].size
    p = np.pad(d["inp"].astype(np.int64), 3)
    return {"out": sum((o + 4) * p[3 + o:3 + o + n] for o in range(-3, 4)).astype(np.int32)}


def _stencil2d_ref(d):
    p = np.pad(d["a"].astype(np.float64), 1)
    return {"out": 4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - p[2:, 1:-1] - p[1:-1, :-2] - p[1:-1, 2:]}


def _grid2d_ref(d):
    h, w = d["out"].shape
    y, x = np.indices((h, w))
    return {"out": (x.astype(np.uint32) << 16) | y.astype(np.uint32)}


def _hist_launch(k, d, n):
    h, args = d["hist"], (d["data"], n, d["hist"])

    def run() -> None:
        h.fill(0)
        k(5, 128, args)
    return run


def _tdiv(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """C's truncating division in int64 (exact)."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    return np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))


def _divmod_make(n, rng):
    a = rng.integers(-(2**31) + 1, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-1000, 1000, n).astype(np.int32)
    b[b == 0] = -7
    return {"a": a, "b": b, "out": np.zeros((6, n), np.int32)}


def _divmod_ref(d):
    a, b = d["a"].astype(np.int64), d["b"].astype(np.int64)
    q, q7, q3, q16 = _tdiv(a, b), _tdiv(a, 7), _tdiv(a, -3), _tdiv(a, 16)
    return {"out": np.stack([q, a - b * q, q7, a - 7 * q7, q3, a - 16 * q16]).astype(np.int32)}


SAXPY_GS_A = np.float32(-1.5)


def _corpus_cases() -> list[SoakCase]:
    f32 = np.float32
    return [
        SoakCase("corpus:elementwise.vadd", _corpus("elementwise", "vadd"), lambda n, rng: _vadd((n, rng)),
                 lambda d: {"c": d["a"] + d["b"]},
                 lambda k, d, n: (lambda a=(d["a"], d["b"], d["c"], n): k(cdiv(n, 128), 128, a)),
                 ["c"], _exact(["c"]), (1000, 517)),
        # in place: y = fma(a, x, y); checked on restored inputs
        SoakCase("corpus:elementwise.saxpy", _corpus("elementwise", "saxpy"),
                 lambda n, rng: {"x": rng.uniform(-4, 4, n).astype(f32), "y": rng.uniform(-4, 4, n).astype(f32)},
                 lambda d: {"y": _f32_fma(2.75, d["x"], d["y"])},
                 lambda k, d, n: (lambda a=(n, 2.75, d["x"], d["y"]): k(cdiv(n, 256), 256, a)),
                 ["y"], _close(["y"], 2.5e-7, 0.0), (1000, 517)),
        SoakCase("corpus:elementwise.saxpy_gridstride", _corpus("elementwise", "saxpy_gridstride"),
                 lambda n, rng: {"x": rng.uniform(-1, 1, n).astype(f32), "y": rng.uniform(-1, 1, n).astype(f32)},
                 lambda d: {"y": _f32_fma(-1.5, d["x"], d["y"])},
                 lambda k, d, n: (lambda a=(n, SAXPY_GS_A, d["x"], d["y"]): k(3, 64, a)),
                 ["y"], _close(["y"], 2.5e-7, 1e-30), (1000, 517)),
        SoakCase("corpus:stencil.stencil1d", _corpus("stencil", "stencil1d"),
                 lambda n, rng: {"inp": rng.integers(-100, 100, n).astype(np.int32), "out": np.zeros(n, np.int32)},
                 _stencil1d_ref, lambda k, d, n: (lambda a=(d["inp"], d["out"], n): k(cdiv(n, 128), 128, a)),
                 ["out"], _exact(["out"]), (1000, 517)),
        SoakCase("corpus:stencil.stencil2d", _corpus("stencil", "stencil2d"),
                 lambda n, rng: {"a": rng.uniform(-1, 1, (n, n + 7)).astype(f32), "out": np.zeros((n, n + 7), f32)},
                 _stencil2d_ref,
                 lambda k, d, n: (lambda a=(d["a"], d["out"], n, n + 7):
                                  k((cdiv(n + 7, 16), cdiv(n, 16)), (16, 16), a)),
                 ["out"], _close(["out"], 1e-5, 1e-6), (30, 17)),
        SoakCase("corpus:transpose.transpose_padded", _corpus("transpose", "transpose_padded"),
                 lambda n, rng: {"a": rng.standard_normal((n, n + 5)).astype(f32), "out": np.zeros((n + 5, n), f32)},
                 lambda d: {"out": d["a"].T},
                 lambda k, d, n: (lambda a=(d["out"], d["a"], n, n + 5): k((cdiv(n + 5, 32), cdiv(n, 32)), (32, 8), a)),
                 ["out"], _exact(["out"]), (40, 21)),
        SoakCase("corpus:grids.grid2d_coords", _corpus("grids", "grid2d_coords"),
                 lambda n, rng: {"out": np.zeros((n, n + 13), np.uint32)}, _grid2d_ref,
                 lambda k, d, n: (lambda a=(d["out"], n + 13, n): k((cdiv(n + 13, 8), cdiv(n, 4)), (8, 4), a)),
                 ["out"], _exact(["out"]), (37, 20)),
        SoakCase("corpus:grids.vol3d_add", _corpus("grids", "vol3d_add"),
                 lambda n, rng: {"a": rng.standard_normal((5, n, n + 4)).astype(f32),
                                 "b": rng.standard_normal((5, n, n + 4)).astype(f32),
                                 "c": np.zeros((5, n, n + 4), f32)},
                 lambda d: {"c": d["a"] + f32(2) * d["b"]},
                 lambda k, d, n: (lambda a=(d["a"], d["b"], d["c"], 5, n, n + 4):
                                  k((cdiv(n + 4, 4), cdiv(n, 4), cdiv(5, 2)), (4, 4, 2), a)),
                 ["c"], _exact(["c"]), (9, 6)),
        # small integers: the products and sums are exact in float32
        SoakCase("corpus:matmul.matmul_tiled", _corpus("matmul", "matmul_tiled"),
                 lambda n, rng: {"A": rng.integers(-4, 5, (n, n + 3)).astype(f32),
                                 "B": rng.integers(-4, 5, (n + 3, n + 9)).astype(f32),
                                 "C": np.zeros((n, n + 9), f32)},
                 lambda d: {"C": (d["A"].astype(np.int64) @ d["B"].astype(np.int64)).astype(f32)},
                 lambda k, d, n: (lambda a=(d["A"], d["B"], d["C"], n, n + 9, n + 3):
                                  k((cdiv(n + 9, 16), cdiv(n, 16)), (16, 16), a)),
                 ["C"], _exact(["C"]), (33, 20)),
        SoakCase("corpus:histogram.hist256", _corpus("histogram", "hist256"),
                 lambda n, rng: {"data": np.minimum(rng.exponential(6, n), 255).astype(np.uint8),
                                 "hist": np.zeros(256, np.uint32)},
                 lambda d: {"hist": np.bincount(d["data"], minlength=256).astype(np.uint32)},
                 _hist_launch, ["hist"], _exact(["hist"]), (2000, 1001)),
        SoakCase("corpus:intmath.int_divmod", _corpus("intmath", "int_divmod"), _divmod_make, _divmod_ref,
                 lambda k, d, n: (lambda a=(d["a"], d["b"], d["out"], n): k(cdiv(n, 128), 128, a)),
                 ["out"], _exact(["out"]), (1000, 517)),
    ]


def all_cases() -> list[SoakCase]:
    from ptxbench.suite import CASES

    return [_empty_case(), *(_bench_case(n) for n in CASES), *_corpus_cases()]


# ---------------------------------------------------------------------------------------- sampling
def _status() -> tuple[int, int]:
    """(RSS in KiB, OS threads) of this process."""
    rss = threads = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return rss, threads


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@dataclass
class Sample:
    t: float
    launches: int  # launches of the whole run so far
    rss_kib: int
    fds: int
    threads: int


class Sampler:
    """Samples RSS, fds and threads every SAMPLE_S seconds (and on demand) in a thread of its own."""

    def __init__(self, counter: Callable[[], int]) -> None:
        self.counter = counter
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._th = threading.Thread(target=self._loop, name="soak-sampler", daemon=True)

    def sample(self) -> Sample:
        rss, threads = _status()
        s = Sample(time.monotonic(), self.counter(), rss, _fds(), threads)
        with self._lock:
            self.samples.append(s)
        return s

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.sample()

    def start(self) -> None:
        self.sample()
        self._th.start()

    def stop(self) -> None:
        self._stop.set()
        self._th.join()
        self.sample()

    def between(self, a: int, b: int) -> list[Sample]:
        with self._lock:
            return self.samples[a:b]


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of y per 1,000 launches (0 where the launches did not move)."""
    return float(np.polyfit(x, y, 1)[0]) * 1000 if len(x) >= 3 and np.ptp(x) > 0 else 0.0


def summarize(samples: list[Sample]) -> dict:
    """first / last / max of each measure and its least-squares slope per 1,000 launches, over all the
    samples and over the second half of the launches only (`steady_per_1000`: after the translations
    and tier-1 builds of the start, which add memory once; a leak keeps a slope there)."""
    out: dict[str, dict] = {}
    if not samples:
        return out
    x = np.array([s.launches for s in samples], np.float64)
    late = x >= (x[0] + x[-1]) / 2
    for key in ("rss_kib", "fds", "threads"):
        y = np.array([getattr(s, key) for s in samples], np.float64)
        out[key] = {"first": int(y[0]), "last": int(y[-1]), "max": int(y.max()), "per_1000_launches": _slope(x, y),
                    "steady_per_1000": _slope(x[late], y[late])}
    return out


# ---------------------------------------------------------------------------------------- the run
class _OnStream:
    """A kernel whose launches go on `stream`."""

    def __init__(self, kernel, stream) -> None:
        self.kernel, self.stream = kernel, stream

    def __call__(self, grid, block, args, **kw):
        return self.kernel(grid, block, args, stream=self.stream, **kw)


@dataclass
class KernelResult:
    name: str
    launches: int = 0
    seconds: float = 0.0
    checks: int = 0
    errors: list[str] = field(default_factory=list)
    stopped: str = ""  # why it ended before its launches ("budget"), or ""
    tiers: dict = field(default_factory=dict)
    memory: dict = field(default_factory=dict)


class _Count:
    def __init__(self) -> None:
        self.n = 0
        self.lock = threading.Lock()

    def add(self, k: int) -> None:
        with self.lock:
            self.n += k


def _worker(case: SoakCase, kernel, launches: int, seed: int, deadline: float, res: KernelResult,
            lock: threading.Lock, total: _Count) -> None:
    import ptxjit

    def error(where: str, e: BaseException) -> bool:
        tb = traceback.extract_tb(e.__traceback__)
        at = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
        with lock:
            res.errors.append(f"thread {seed} {where}: {type(e).__name__}: {e}{at}")
        mine[0] += 1
        return mine[0] >= MAX_ERRORS

    mine = [0]
    rng = np.random.default_rng(seed)
    stream = ptxjit.Stream()
    sets = []
    for size in case.sizes:
        inputs = case.make(size, rng)
        expected = case.reference(inputs)
        d = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
        sets.append((size, inputs, expected, d, case.launch(kernel, d, size),
                     case.launch(_OnStream(kernel, stream), d, size)))

    def check(which: int, at: int) -> bool:
        size, inputs, expected, d, run, _ = sets[which]
        try:
            stream.synchronize()
            for k, v in inputs.items():
                if isinstance(v, np.ndarray):
                    np.copyto(d[k], v)
            run()
            problems = case.check({k: d[k] for k in case.outputs}, expected)
        except Exception as e:  # noqa: BLE001 - collected
            return error(f"check at launch {at} (size {size})", e)
        with lock:
            res.checks += 1
        if problems:
            return error(f"check at launch {at} (size {size})", AssertionError("; ".join(problems)))
        return False

    done = 0
    for i in range(launches):
        if i % CHUNK == 0 and time.monotonic() > deadline:
            with lock:
                res.stopped = "budget"
            break
        which = 1 if i % VARY_EVERY == VARY_EVERY - 1 else 0
        on_stream = (i // CHUNK) % 2 == 1
        try:
            sets[which][5 if on_stream else 4]()
        except Exception as e:  # noqa: BLE001 - collected
            if error(f"launch {i} ({'stream' if on_stream else 'sync'}, size {sets[which][0]})", e):
                break
        done = i + 1
        total.add(1)
        if on_stream and (i + 1) % CHUNK == 0:
            try:
                stream.synchronize()
            except Exception as e:  # noqa: BLE001 - collected
                if error(f"stream synchronize after launch {i}", e):
                    break
        if done % CHECK_EVERY == 0 and check(0, i):
            break
    if mine[0] < MAX_ERRORS:
        for which in range(len(sets)):
            if check(which, done):
                break
    with lock:
        res.launches += done


def _tier_stats(kernel) -> dict:
    """The kernel's tiers, summed over its block shapes (and checked / unchecked)."""
    out = {"tier": 0, "launches": [0, 0], "guard_failures": 0, "reoptimizations": 0, "counted": 0,
           "recounts_moved": 0, "swaps": 0, "builds": 0, "errors": [], "notes": []}
    for st in kernel.tier_states.values():
        s = st.stats
        out["tier"] = max(out["tier"], 1 if st.t1 is not None else 0)
        out["launches"] = [a + b for a, b in zip(out["launches"], s.launches, strict=True)]
        for k, v in (("guard_failures", s.guard_failures), ("reoptimizations", s.reoptimizations),
                     ("counted", s.counted), ("recounts_moved", s.recounts_moved), ("swaps", s.swaps),
                     ("builds", len(s.builds))):
            out[k] += v
        out["errors"] += list(s.errors)
        # a counting code that could not be built is no error (the kernel keeps tier 1 without counts),
        # but its recounts never run: a note
        out["notes"] += [f"counters: {b['error']}" for b in s.builds if b.get("level") == "counters" and "error" in b]
    return out


def run(launches: int = DEFAULT_LAUNCHES, kernels: str | None = None, threads: int = DEFAULT_THREADS,
        budget: float | None = None, out: Path | None = BENCH / "results", log: Callable = print,
        cases: list[SoakCase] | None = None) -> dict:
    """The soak run (see the module's docstring) of `cases` (default: all_cases()) whose names match
    `kernels`; returns the report's data."""
    os.environ["PTXJIT_TIERS"] = "1"
    import ptxjit

    cases = all_cases() if cases is None else cases
    if kernels:
        pat = re.compile(kernels)
        cases = [c for c in cases if pat.search(c.name)]
    total = _Count()
    sampler = Sampler(lambda: total.n)
    sampler.start()
    t_start = time.monotonic()
    deadline = t_start + budget if budget else float("inf")
    results: list[KernelResult] = []
    not_run: list[str] = []
    for case in cases:
        if time.monotonic() > deadline:
            not_run.append(case.name)
            continue
        res = KernelResult(case.name)
        first = len(sampler.samples)
        sampler.sample()
        a = time.monotonic()
        try:
            kernel = case.load()
        except Exception as e:  # noqa: BLE001 - a kernel that cannot load is a result
            res.errors.append(f"load: {type(e).__name__}: {e}")
            results.append(res)
            continue
        lock = threading.Lock()
        per = [launches // threads + (1 if t < launches % threads else 0) for t in range(threads)]
        ths = [threading.Thread(target=_worker, args=(case, kernel, per[t], t, deadline, res, lock, total),
                                name=f"soak-{t}") for t in range(threads) if per[t]]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        res.seconds = time.monotonic() - a
        sampler.sample()
        res.tiers = _tier_stats(kernel)
        res.memory = summarize(sampler.between(first, len(sampler.samples)))
        results.append(res)
        log(_row(res))
    sampler.stop()
    report = {"launches_per_kernel": launches, "threads": threads, "budget_s": budget,
              "wall_s": time.monotonic() - t_start, "launches": sum(r.launches for r in results),
              "workers": ptxjit.worker_count(), "cpus": os.cpu_count(), "load_avg": os.getloadavg(),
              "kernels": [r.__dict__ for r in results], "not_run": not_run,
              "memory": summarize(sampler.samples),
              "errors": [f"{r.name}: {e}" for r in results for e in r.errors + r.tiers.get("errors", [])]}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "soak.json").write_text(json.dumps(report, indent=1, default=str))
        (out / "soak.md").write_text(markdown(report))
    return report


HEADER = (f"{'kernel':38} {'launches':>9} {'s':>7} {'launch/s':>8} {'checks':>6} {'guard':>6} {'reopt':>5} "
          f"{'count':>5} {'RSS MiB first/last/max':>23} {'fds':>9} {'thr':>7} {'err':>4}")


def _row(r: KernelResult) -> str:
    m, t = r.memory, r.tiers
    rss = m.get("rss_kib", {})
    fds, thr = m.get("fds", {}), m.get("threads", {})
    mib = "/".join(f"{rss.get(k, 0) / 1024:.0f}" for k in ("first", "last", "max"))
    return (f"{r.name[:38]:38} {r.launches:>9} {r.seconds:>7.1f} {r.launches / max(r.seconds, 1e-9):>8.0f} "
            f"{r.checks:>6} {t.get('guard_failures', 0):>6} {t.get('reoptimizations', 0):>5} "
            f"{t.get('counted', 0):>5} {mib:>23} {fds.get('first', 0):>4}/{fds.get('last', 0):<4} "
            f"{thr.get('first', 0):>3}/{thr.get('last', 0):<3} {len(r.errors) + len(t.get('errors', [])):>4}"
            + (f"  (stopped: {r.stopped})" if r.stopped else ""))


def markdown(rep: dict) -> str:
    lines = ["# ptxjit soak run", "",
             f"{rep['launches']:,} launches in {rep['wall_s']:.0f} s: up to {rep['launches_per_kernel']:,} per "
             f"kernel from {rep['threads']} Python threads (synchronous and stream launches, bounds-checked, "
             f"tiers on; every {VARY_EVERY}th launch on a second input size), {rep['workers']} workers on "
             f"{rep['cpus']} CPUs, load average {', '.join(f'{x:.1f}' for x in rep['load_avg'])}.", "",
             "| kernel | launches | s | launches/s | checks | guard failures | reoptimizations | counted | "
             "RSS MiB first / last / max | RSS KiB per 1k launches (all / second half) | fds first / last / max | "
             "threads first / last / max | errors |", "|" + "---|" * 13]
    for r in rep["kernels"]:
        m, t = r["memory"], r["tiers"]
        rss, fds, thr = m.get("rss_kib", {}), m.get("fds", {}), m.get("threads", {})
        lines.append(
            f"| {r['name']} | {r['launches']:,}{' (stopped: ' + r['stopped'] + ')' if r['stopped'] else ''} | "
            f"{r['seconds']:.1f} | {r['launches'] / max(r['seconds'], 1e-9):.0f} | {r['checks']} | "
            f"{t.get('guard_failures', 0)} | {t.get('reoptimizations', 0)} | {t.get('counted', 0)} | "
            + " / ".join(f"{rss.get(k, 0) / 1024:.0f}" for k in ("first", "last", "max"))
            + f" | {rss.get('per_1000_launches', 0):.1f} / "
            + (f"{rss['steady_per_1000']:.1f}" if "steady_per_1000" in rss else "-") + " | "
            + " / ".join(str(fds.get(k, 0)) for k in ("first", "last", "max")) + " | "
            + " / ".join(str(thr.get(k, 0)) for k in ("first", "last", "max"))
            + f" | {len(r['errors']) + len(t.get('errors', []))} |")
    mem = rep["memory"]
    lines += ["", "## Whole run", ""]
    for key, label in (("rss_kib", "RSS (KiB)"), ("fds", "open file descriptors"), ("threads", "OS threads")):
        v = mem.get(key)
        if v:
            steady = v.get("steady_per_1000")  # optional in a report read back from soak.json
            lines.append(f"* {label}: first {v['first']:,}, last {v['last']:,}, max {v['max']:,}; slope "
                         f"{v['per_1000_launches']:.2f} per 1,000 launches"
                         + (f" ({steady:.2f} over the second half)" if steady is not None else ""))
    if rep["not_run"]:
        lines += ["", f"Not run (budget): {', '.join(rep['not_run'])}"]
    notes = [f"{r['name']}: {n}" for r in rep["kernels"] for n in r["tiers"].get("notes", [])]
    if notes:
        lines += ["", "## Notes", ""] + [f"* {n}" for n in notes]
    lines += ["", "## Errors", ""]
    lines += [f"* {e}" for e in rep["errors"][:200]] or ["none"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Soak ptxjit: many launches per kernel with tiers on (bench/README.md).")
    ap.add_argument("--launches", type=int, default=DEFAULT_LAUNCHES, help="launches per kernel (all threads)")
    ap.add_argument("--kernels", help="regular expression on the kernel names (bench:NAME, corpus:FILE.ENTRY)")
    ap.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="Python threads launching at once")
    ap.add_argument("--budget", type=float, help="seconds for the whole run (the rest is reported as not run)")
    ap.add_argument("--out", type=Path, default=BENCH / "results", help="directory for soak.md / soak.json")
    ap.add_argument("--list", action="store_true", help="list the kernels and exit")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(c.name for c in all_cases()))
        return 0
    if args.launches < 1 or args.threads < 1:
        ap.error("--launches and --threads must be at least 1")
    if args.kernels:
        try:
            re.compile(args.kernels)
        except re.error as e:
            ap.error(f"--kernels: not a regular expression: {e}")
        if not any(re.search(args.kernels, c.name) for c in all_cases()):
            ap.error(f"--kernels {args.kernels!r} matches no kernel (--list shows them)")
    print(HEADER, flush=True)
    rep = run(args.launches, args.kernels, args.threads, args.budget, args.out, log=lambda m: print(m, flush=True))
    print()
    print(markdown(rep))
    return 1 if rep["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
