"""numba-cuda's own test suite, module by module, on ptxjit's libcuda.so.1 and on numba's simulator.

Each test module of the installed numba-cuda wheel (``numba.cuda.tests.<package>.<module>``) runs in a child
process of its own, with a wall-clock limit, twice:

* ``ptxjit``: numba-cuda's real CUDA target (NVVM -> PTX -> cuLibraryLoadData/cuLaunchKernelEx) with the driver
  calls answered by ptxjit's libcuda.so.1, started through ``ptxjit exec``;
* ``cudasim``: the same module under ``NUMBA_ENABLE_CUDASIM=1`` (numba's Python simulator, no ptxjit), the
  independent reference for which tests a CPU can pass at all.

The child runs the module with unittest and writes one JSON record per test as it goes (a module that times out
or crashes keeps what it finished, and the test that was running is named).  The parent writes a markdown report
(per module both columns, totals, wall times, every failure with its reason class) and the same data as JSON.

Tests that need what a one-device CPU driver does not have (IPC, peer access, several GPUs, CUDA arrays, nvJitLink
link-time optimization) are skipped on the ptxjit target with the reason: see ``OUT_OF_SCOPE``.

The full run (hours on a 2-core machine) is a command of its own, not part of the default tests::

    .venv/bin/python scripts/numba_cuda_suite.py                      # every module, both targets
    .venv/bin/python scripts/numba_cuda_suite.py --modules 'cudadrv\\.' --timeout 900
    .venv/bin/python scripts/numba_cuda_suite.py --modules 'cudapy\\.test_(atomics|warp)' --targets ptxjit

The CI subset is tests/test_numba_cuda_suite.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import unittest
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("ptxjit", "cudasim")
OUTCOMES = ("passed", "failed", "skipped", "errors")

# Tests that exercise what ptxjit's single-device CPU driver deliberately does not provide.  Each entry is a
# regular expression on the test id (module.Class.method) and the reason the ptxjit target reports as a skip.
OUT_OF_SCOPE: tuple[tuple[str, str], ...] = (
    (r"\.test_ipc\.", "CUDA IPC (cuIpc*) needs memory shared across processes by a device driver"),
    (r"(?i)\.test_multigpu\.|multi_?gpu", "a second device: the CPU driver exposes one"),
    (r"(?i)peer_access|\.test_peer", "peer access between devices: the CPU driver exposes one device"),
    (r"(?i)\.test_nvjitlink\.|_lto\b", "nvJitLink / link-time optimization: the driver links PTX, not LTO-IR"),
)

# Tests that end in a kernel fault on the ptxjit target because the test itself accesses memory out of bounds
# (see TRIAGED): a fault is sticky for the process, as on CUDA, so each runs after the rest of its module,
# where it takes no other test down with it.  Regular expressions on the test id.
RUN_LAST: tuple[str, ...] = (
    r"\.test_dispatcher_cpointer_arguments$",
    r"\.test_struct_model_type_arr$",
    r"\.test_device_arch_specific$",
)


@dataclass
class TestRecord:
    test: str
    outcome: str  # passed | failed | errors | skipped
    reason: str = ""
    detail: str = ""
    seconds: float = 0.0


@dataclass
class ModuleRun:
    module: str
    target: str
    status: str = "ok"  # ok | timeout | crash | no-result
    wall: float = 0.0
    returncode: int | None = None
    tests: list[TestRecord] = field(default_factory=list)
    running: str = ""  # the test that had started when the child stopped
    stderr_tail: str = ""
    driver_log: str = ""

    def counts(self) -> dict[str, int]:
        c = dict.fromkeys(OUTCOMES, 0)
        for t in self.tests:
            c[t.outcome] += 1
        return c


# --------------------------------------------------------------------------------------------- child side


class _Recorder(unittest.TestResult):
    """Writes the results file after every test, so a timeout or a crash loses only the running test."""

    def __init__(self, out: Path) -> None:
        super().__init__()
        self.out = out
        self.records: list[dict] = []
        self.running = ""
        self._t0 = 0.0

    def _flush(self) -> None:
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps({"tests": self.records, "running": self.running}))
        os.replace(tmp, self.out)

    def _add(self, test: unittest.TestCase, outcome: str, reason: str = "", detail: str = "") -> None:
        self.records.append(asdict(TestRecord(test.id(), outcome, reason[:500], detail[-4000:],
                                              round(time.monotonic() - self._t0, 3))))
        self.running = ""
        self._flush()

    def startTest(self, test: unittest.TestCase) -> None:  # noqa: N802 - unittest's name
        super().startTest(test)
        self.running = test.id()
        self._t0 = time.monotonic()
        self._flush()
        print(f"-- {test.id()}", file=sys.stderr, flush=True)

    @staticmethod
    def _last_line(err) -> str:
        exc = err[1]
        text = f"{type(exc).__name__}: {exc}".strip()
        return text.splitlines()[0] if text else type(exc).__name__

    def _tb(self, err, test) -> str:
        return self._exc_info_to_string(err, test)

    def addSuccess(self, test):  # noqa: N802
        self._add(test, "passed")

    def addFailure(self, test, err):  # noqa: N802
        self._add(test, "failed", self._last_line(err), self._tb(err, test))

    def addError(self, test, err):  # noqa: N802
        if type(err[1]).__name__ == "Skipped":  # pytest.importorskip inside a unittest test
            self.addSkip(test, str(err[1]))
            return
        # setUpClass/module errors come as a _ErrorHolder without a TestCase's timing
        if not isinstance(test, unittest.TestCase):
            self.records.append(asdict(TestRecord(str(test), "errors", self._last_line(err), self._tb(err, test))))
            self._flush()
            return
        self._add(test, "errors", self._last_line(err), self._tb(err, test))

    def addSkip(self, test, reason):  # noqa: N802
        self._add(test, "skipped", str(reason))

    def addExpectedFailure(self, test, err):  # noqa: N802
        self._add(test, "passed", "expected failure")

    def addUnexpectedSuccess(self, test):  # noqa: N802
        self._add(test, "failed", "unexpected success")

    def addSubTest(self, test, subtest, err):  # noqa: N802
        if err is not None:
            kind = "failed" if issubclass(err[0], test.failureException) else "errors"
            self.records.append(asdict(TestRecord(subtest.id(), kind, self._last_line(err), self._tb(err, test))))
            self._flush()


def _iter_tests(suite: unittest.TestSuite | unittest.TestCase) -> Iterable[unittest.TestCase]:
    if isinstance(suite, unittest.TestSuite):
        for t in suite:
            yield from _iter_tests(t)
    else:
        yield suite


def _skip_out_of_scope(suite: unittest.TestSuite) -> None:
    for test in _iter_tests(suite):
        for pattern, reason in OUT_OF_SCOPE:
            if re.search(pattern, test.id()):
                setattr(test, test._testMethodName, unittest.skip(f"out of scope for ptxjit: {reason}")(
                    lambda *a, **k: None))
                break


def _faults_last(suite: unittest.TestSuite) -> unittest.TestSuite:
    """The module's tests in their order, those RUN_LAST names moved to the end (unittest still runs each
    class's setUpClass/tearDownClass around its tests)."""
    tests = list(_iter_tests(suite))
    last = [t for t in tests if any(re.search(p, t.id()) for p in RUN_LAST)]
    if not last:
        return suite
    return unittest.TestSuite([t for t in tests if t not in last] + last)


def child_main(module: str, out: Path, target: str) -> int:
    out.write_text(json.dumps({"tests": [], "running": ""}))
    result = _Recorder(out)
    try:
        suite = unittest.defaultTestLoader.loadTestsFromName(module)
    except unittest.SkipTest as exc:  # the module skips itself at import (e.g. "not done in simulator")
        result.records.append(asdict(TestRecord(module, "skipped", str(exc)[:500])))
        result._flush()
        return 0
    except Exception as exc:  # an import failure is the module's error, reported like unittest would
        result.records.append(asdict(TestRecord(module, "errors", f"{type(exc).__name__}: {exc}",
                                                traceback.format_exc())))
        result._flush()
        return 1
    except BaseException as exc:  # pytest's Skipped is a BaseException
        if type(exc).__name__ != "Skipped":
            raise
        # a module-level pytest.importorskip: the whole module is skipped, as pytest reports it
        result.records.append(asdict(TestRecord(module, "skipped", str(exc)[:500])))
        result._flush()
        return 0
    if target == "ptxjit":
        _skip_out_of_scope(suite)
        suite = _faults_last(suite)
    if suite.countTestCases() == 0:  # a module of plain pytest test functions, which unittest does not see
        return _run_pytest(module, result, target)
    suite.run(result)
    result._flush()
    return 0


class _PytestRecorder:
    """The same records from pytest's reports (setup and teardown failures count as errors)."""

    def __init__(self, result: _Recorder, target: str) -> None:
        self.result = result
        self.target = target

    def pytest_collection_modifyitems(self, items) -> None:
        import pytest

        if self.target != "ptxjit":
            return
        for item in items:
            for pattern, reason in OUT_OF_SCOPE:
                if re.search(pattern, item.nodeid.replace("::", ".")):
                    item.add_marker(pytest.mark.skip(reason=f"out of scope for ptxjit: {reason}"))
                    break

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.result.running = nodeid
        self.result._flush()

    def pytest_runtest_logreport(self, report) -> None:
        if report.when != "call" and report.passed:
            return
        if report.skipped:
            lr = report.longrepr
            outcome, reason = "skipped", str(lr[2] if isinstance(lr, tuple) and len(lr) == 3 else lr)
        elif report.failed:
            outcome = "failed" if report.when == "call" else "errors"
            crash = getattr(report.longrepr, "reprcrash", None)
            reason = crash.message if crash is not None else str(report.longrepr).splitlines()[-1]
        else:
            outcome, reason = "passed", ""
        self.result.records.append(asdict(TestRecord(report.nodeid, outcome, reason.splitlines()[0][:500] if reason
                                                     else "", report.longreprtext[-4000:] if report.failed else "",
                                                     round(report.duration, 3))))
        self.result.running = ""
        self.result._flush()


def _run_pytest(module: str, result: _Recorder, target: str) -> int:
    import pytest

    pytest.main(["-q", "-p", "no:cacheprovider", "--import-mode=importlib", "--pyargs", module],
                plugins=[_PytestRecorder(result, target)])
    result._flush()
    return 0


# -------------------------------------------------------------------------------------------- parent side


def tests_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("numba_cuda")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("numba-cuda is not installed: pip install -e '.[numba,dev]'")
    return Path(next(iter(spec.submodule_search_locations))) / "numba" / "cuda" / "tests"


def discover(pattern: str | None) -> list[str]:
    base = tests_dir()
    mods = []
    for f in sorted(base.rglob("test_*.py")):
        rel = f.relative_to(base.parent.parent.parent).with_suffix("")
        name = ".".join(rel.parts)
        if pattern is None or re.search(pattern, name):
            mods.append(name)
    return mods


def _child_cmd(module: str, out: Path, target: str) -> list[str]:
    me = [sys.executable, "-W", "ignore", str(Path(__file__).resolve()), "--child", module, "--result", str(out),
          "--target", target]
    if target == "ptxjit":
        return [sys.executable, "-m", "ptxjit.cli", "exec", "--", *me]
    return me


def run_module(module: str, target: str, timeout: float, workdir: Path) -> ModuleRun:
    tag = f"{module}.{target}"
    out = workdir / f"{tag}.json"
    log = workdir / f"{tag}.driver.log"
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if target == "cudasim":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        env["PTXJIT_DRIVER_LOG"] = str(log)
    env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cwd = workdir / f"{tag}.cwd"  # tests that write files (caching) write them here
    cwd.mkdir(exist_ok=True)
    run = ModuleRun(module, target)
    t0 = time.monotonic()
    with open(workdir / f"{tag}.stderr", "w+") as err:
        proc = subprocess.Popen(_child_cmd(module, out, target), cwd=cwd, env=env, stdout=err, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            run.returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            run.status = "timeout"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        run.wall = round(time.monotonic() - t0, 1)
        err.seek(0)
        run.stderr_tail = "\n".join(line for line in err.read().splitlines() if not line.startswith("-- "))[-3000:]
    if log.exists():
        run.driver_log = log.read_text(errors="replace")[-3000:]
    try:
        data = json.loads(out.read_text())
    except (OSError, ValueError):
        data = None
    if data is None:
        run.status = "no-result" if run.status == "ok" else run.status
        run.tests.append(TestRecord(module, "errors", f"child produced no results (rc={run.returncode})",
                                    run.stderr_tail))
        return run
    run.tests = [TestRecord(**t) for t in data["tests"]]
    run.running = data.get("running", "")
    if run.status == "ok" and run.returncode not in (0, None) and run.running:
        run.status = "crash"
    if run.running:
        what = f"timed out after {timeout:.0f} s" if run.status == "timeout" else \
            f"the process died (rc={run.returncode})"
        run.tests.append(TestRecord(run.running, "errors", what, run.stderr_tail))
    elif run.status == "ok" and run.returncode not in (0, None):
        # every test reported, then the process failed on its way out (a crash in an exit handler)
        run.status = "crash"
        run.tests.append(TestRecord(f"{module} (process exit)", "errors", f"the process died (rc={run.returncode}) "
                                    "after its last test", run.stderr_tail))
    return run


# Failure classes for the report, first match wins: (class, pattern on reason + traceback + driver log).
CLASSES: tuple[tuple[str, str], ...] = (
    ("timeout", r"^timed out after"),
    ("crash", r"^the process died|child produced no results"),
    ("out of scope", r"cuIpc|IPC|peer|CUDA_ERROR_NOT_SUPPORTED.*(?:array|texture|surface)|cuArray|nvJitLink|LTO"),
    ("ptx feature", r"ptxjit\.(?:frontend|lower|isa|passes)|PtxSyntaxError|Unsupported|not supported by ptxjit|"
                    r"unsupported (?:instruction|form|type|operand)"),
    ("driver", r"CudaAPIError|CUDA_ERROR|CUresult|cuda\.core.*Error|driver"),
    ("numerics", r"AssertionError|Not equal|Mismatch|not less than|not greater than|!="),
)


# Failures already triaged: (regular expression on test id + reason, class, what it is).  The report names the
# explanation next to the failure.
TRIAGED: tuple[tuple[str, str, str], ...] = (
    (r"test_device_arch_specific", "ptx feature",
     "tensormap.replace on a 4-byte shared array writes a field of a 128-byte tensor map past the array: "
     "ptxjit's shared-memory bounds check stops the kernel (an H100 does not check)"),
    (r"ILLEGAL_ADDRESS: 700>\] Call to cu(?:CtxGetDevice|MemAlloc|MemcpyHtoD|ModuleLoad|LinkCreate)", "sticky error",
     "an earlier kernel fault in the same process left the context unusable, as CUDA does"),
    (r"test_set_registers", "driver",
     "CU_FUNC_ATTRIBUTE_NUM_REGS ignores CU_JIT_MAX_REGISTERS: ptxjit allocates no registers and reports an "
     "estimate from the PTX"),
    (r"test_nrt_detect_linked_ptx_file", "linker",
     "two linked PTX inputs both define a weak (linkonce) variable of libcu++ (integral_constant<bool>::value); "
     "ptxjit's PTX-level linker keeps both and the load refuses the duplicate"),
    (r"test_nrt_explicit_stats_query_raises_exception_when_disabled", "driver",
     "NRT_MemSys_init stores through the memsys pointer, an address ptxjit's launch does not know as memory the "
     "kernel was given (the memory-safety check faults it); the later NRT tests fail on the sticky error"),
    (r"test_struct_model_type_arr", "test out of bounds",
     "the test's outputs are np.array((10,)), one element, and the kernel writes ten: ptxjit's bounds checks stop "
     "the write past the end (a GPU corrupts the memory behind it unnoticed)"),
    (r"\[CudaAPIError\(<CUresult\.CUDA_ERROR_ILLEGAL_ADDRESS", "sticky error",
     "an earlier kernel fault in the same process left the context unusable, as CUDA does (the test collects "
     "the errors of its threads' calls)"),
    (r"test_dispatcher_cpointer_arguments", "test out of bounds",
     "the kernel runs n=16 threads over 10-element arrays: x[10:16] and y[10:16] are read and r[10:16] written "
     "past the arrays' ends, which ptxjit's bounds checks stop (a GPU touches the memory behind them unnoticed)"),
    (r"test_external_cooperative_func", "cooperative grid size",
     "numba sizes the grid as occupancy x MULTIPROCESSOR_COUNT, 32 x 132 (an H100's SMs) = 4224 blocks of 32 "
     "threads; ptxjit keeps a cooperative grid co-resident on its worker threads, 32 blocks each (64 with 2 "
     "workers), and refuses the launch with CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"),
    (r"test_array_alignment_\dd \(", "lowering",
     "cuda.local.array / cuda.shared.array with alignment=64 or 256 (a `.local` or `.shared` array declared "
     "`.align 64` / `.align 256`): its address is 16-byte aligned only on ptxjit (address % alignment = "
     "16..240); alignments up to 16 hold"),
    (r"No module named 'ml_dtypes'|_FailedTest\.test_bfloat16\n", "test dependency",
     "the module imports ml_dtypes, which is not installed (the same error under the simulator)"),
    (r"test_print\.TestPrint\.test_(?:cuhello|dim3)\n", "simulator",
     "the simulator runs a block's threads as Python threads, and their printed lines come out interleaved"),
    (r"::test_(?:one_arg|many_args)\[", "test dependency",
     "numba's benchmarks need pytest-benchmark's `benchmark` fixture, which is not installed (the simulator skips "
     "them)"),
    (r"libcurand", "library not installed",
     "cupy.random needs cuRAND (libcurand.so), which is not installed: CuPy raises an ImportError naming it"),
    (r"CUDAAndCPUCachingTest", "host-side (numba)",
     "numba's CPU cache and numba-cuda's CUDA cache give a function jitted for both targets the same index and "
     "data file names (<function>-<line>.py311.nbi, .1.nbc), so each overwrites the other's entries: no driver "
     "call is involved (the simulator skips the test)"),
    (r"test_chained_device_function_two_calls", "ptx frontend",
     "with debug=True numba's PTX module defines the leaf device function's NumbaEnv variable twice, as "
     "`.common .global .u64` (once per caller); ptxas merges .common definitions, ptxjit's parser refuses the "
     "second as a duplicate definition (CUDA_ERROR_INVALID_PTX)"),
    (r"test_declare_device_cabi_(void|pointer)_return", "linker",
     "numba's call receives a return value from a C-ABI function whose NVRTC definition returns void; linked "
     "at the PTX level the call no longer matches its callee, which ptxjit refuses (separately compiled "
     "objects are not checked)"),
)


def triage(rec: TestRecord) -> tuple[str, str] | None:
    key = f"{rec.test}\n{rec.reason}"
    for pattern, cls, note in TRIAGED:
        if re.search(pattern, key):
            return cls, note
    return None


def classify(rec: TestRecord, run: ModuleRun) -> str:
    known = triage(rec)
    if known:
        return known[0]
    text = f"{rec.reason}\n{rec.detail}"
    for name, pattern in CLASSES[:2]:
        if re.search(pattern, rec.reason):
            return name
    for name, pattern in CLASSES[2:]:
        if re.search(pattern, text):
            return name
    return "other"


def _cell(run: ModuleRun | None) -> str:
    if run is None:
        return "-"
    c = run.counts()
    s = f"{c['passed']}/{c['failed']}/{c['skipped']}/{c['errors']}"
    if run.status != "ok":
        s += f" ({run.status})"
    return s


def write_report(runs: dict[tuple[str, str], ModuleRun], modules: list[str], targets: list[str], path: Path,
                 timeout: float, total_wall: float) -> None:
    lines = ["# numba-cuda's test suite on ptxjit", "",
             f"numba-cuda's own unittest modules, each in a child process (limit {timeout:.0f} s), on the real CUDA "
             "target with ptxjit's libcuda.so.1 (`ptxjit exec`) and on numba's simulator (`NUMBA_ENABLE_CUDASIM=1`). "
             "Cells: passed/failed/skipped/errors; wall seconds per module and target.", "",
             f"Command: `.venv/bin/python scripts/numba_cuda_suite.py {' '.join(sys.argv[1:])}`".rstrip(), "",
             "| module | " + " | ".join(targets) + " | " + " | ".join(f"{t} s" for t in targets) + " |",
             "|---" * (1 + 2 * len(targets)) + "|"]
    totals = {t: dict.fromkeys(OUTCOMES, 0) for t in targets}
    walls = dict.fromkeys(targets, 0.0)
    for m in modules:
        cells, times = [], []
        for t in targets:
            r = runs.get((m, t))
            cells.append(_cell(r))
            times.append(f"{r.wall:.0f}" if r else "-")
            if r:
                walls[t] += r.wall
                for k, v in r.counts().items():
                    totals[t][k] += v
        lines.append(f"| {m.removeprefix('numba.cuda.tests.')} | " + " | ".join(cells) + " | " + " | ".join(times)
                     + " |")
    lines.append("| **total** | " + " | ".join(
        "{passed}/{failed}/{skipped}/{errors}".format(**totals[t]) for t in targets) + " | "
        + " | ".join(f"{walls[t]:.0f}" for t in targets) + " |")
    lines += ["", f"Modules: {len(modules)}; wall time of the whole run: {total_wall:.0f} s (jobs run side by side "
              "count once); per target, summed over modules: "
              + ", ".join(f"{t} {walls[t]:.0f} s" for t in targets) + ".", ""]
    for t in targets:
        fails = [(classify(rec, r), r, rec) for (m, tt), r in sorted(runs.items()) if tt == t for rec in r.tests
                 if rec.outcome in ("failed", "errors")]
        lines += [f"## Failures on {t} ({len(fails)})", ""]
        if not fails:
            lines += ["None.", ""]
            continue
        by_class: dict[str, int] = {}
        for c, _, _ in fails:
            by_class[c] = by_class.get(c, 0) + 1
        lines += ["Classes: " + ", ".join(f"{c} {n}" for c, n in sorted(by_class.items(), key=lambda x: -x[1])), "",
                  "| test | class | reason |", "|---|---|---|"]
        for c, _, rec in sorted(fails, key=lambda x: (x[0], x[2].test)):
            known = triage(rec)
            reason = rec.reason.replace("|", "\\|").replace("\n", " ")[:200]
            if known:
                reason = f"{known[1]} ({reason[:100]})"
            lines.append(f"| {rec.test.removeprefix('numba.cuda.tests.')} | {c} | {reason} |")
        lines.append("")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _load_runs(path: Path) -> tuple[dict[tuple[str, str], ModuleRun], float, float]:
    data = json.loads(path.read_text())
    runs = {}
    for r in data["runs"]:
        r = {k: v for k, v in r.items() if k != "counts"}
        run = ModuleRun(**{**r, "tests": [TestRecord(**t) for t in r["tests"]]})
        runs[(run.module, run.target)] = run
    return runs, float(data["wall"]), float(data["timeout"])


def report_from_json(args, targets: list[str]) -> int:
    runs: dict[tuple[str, str], ModuleRun] = {}
    wall, timeout = 0.0, 0.0
    for p in args.from_json:
        more, w, t = _load_runs(p)
        runs.update(more)
        wall, timeout = wall + w, max(timeout, t)
    modules = sorted({m for m, t in runs if t in targets and (args.modules is None or re.search(args.modules, m))})
    runs = {k: v for k, v in runs.items() if k[0] in modules and k[1] in targets}
    write_report(runs, modules, targets, args.out, timeout, wall)
    print(f"report: {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", help="regular expression on the module name (default: every module)")
    ap.add_argument("--timeout", type=float, default=600.0, help="wall-clock limit per module and target, seconds")
    ap.add_argument("--jobs", type=int, default=1, help="child processes at a time")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "numba_cuda_suite.md")
    ap.add_argument("--json", type=Path, help="also write every record as JSON (default: next to --out)")
    ap.add_argument("--targets", default=",".join(TARGETS), help="comma-separated subset of ptxjit,cudasim")
    ap.add_argument("--workdir", type=Path, help="keep the children's files here (default: a temporary folder)")
    ap.add_argument("--list", action="store_true", help="print the chosen modules and stop")
    ap.add_argument("--from-json", type=Path, nargs="+", metavar="JSON",
                    help="write the report from earlier runs' JSON files (later files win) instead of running")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--target", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child_main(args.child, args.result, args.target)
    targets = [t for t in args.targets.split(",") if t]
    if bad := [t for t in targets if t not in TARGETS]:
        ap.error(f"--targets: unknown {bad}; expected a subset of {','.join(TARGETS)}")
    modules = discover(args.modules)
    if not modules:
        ap.error(f"--modules {args.modules!r} matches no module under {tests_dir()}")
    if args.list:
        print("\n".join(modules))
        return 0
    if args.from_json:
        return report_from_json(args, targets)
    if "ptxjit" in targets:
        from ptxjit.driver.build import ensure_built

        ensure_built()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="numba_cuda_suite."))
    work.mkdir(parents=True, exist_ok=True)
    jobs = [(m, t) for m in modules for t in targets]
    runs: dict[tuple[str, str], ModuleRun] = {}
    t0 = time.monotonic()

    def one(job: tuple[str, str]) -> None:
        r = run_module(job[0], job[1], args.timeout, work)
        runs[job] = r
        print(f"{r.target:8} {r.module.removeprefix('numba.cuda.tests.'):50} {_cell(r):24} {r.wall:6.0f} s",
              flush=True)

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        list(pool.map(one, jobs))
    total = time.monotonic() - t0
    write_report(runs, modules, targets, args.out, args.timeout, total)
    js = args.json or args.out.with_suffix(".json")
    js.write_text(json.dumps({"timeout": args.timeout, "wall": round(total, 1), "runs": [
        {**asdict(r), "counts": r.counts()} for r in runs.values()]}, indent=1))
    print(f"report: {args.out}  ({total:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
