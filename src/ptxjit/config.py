"""Every PTXJIT_* environment variable: one record each (VARS), the accessors that read them, and the
table docs/configuration.md shows (markdown_table(); `python -m ptxjit.config` prints it).

Each accessor reads the environment when it is called, so a variable set while the process runs counts
wherever the record says it is read at each use; where a record says "once", its reader calls the
accessor once (at import, or when a library loads) and keeps the value.  The reads on the launch path
(PTXJIT_TIERS, PTXJIT_WORKERS, PTXJIT_TIMEOUT, PTXJIT_CHECKED/UNCHECKED) go to os.environ's own bytes
dict (ptxjit.util.ENV_DATA) with the record's pre-encoded `key`: os.environ.get costs ~0.7 us.

This module sits at the bottom of the import graph: it imports nothing from ptxjit but ptxjit.util."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from ptxjit.util import ENV_DATA, getenv

Kind = Literal["flag", "int", "float", "path", "choice", "text"]

_OFF = ("0", "false", "no", "off")  # what turns a flag off where any other value turns it on


@dataclass(frozen=True)
class Var:
    """One environment variable: what it accepts, what unset means, what it does, who reads it, when."""

    name: str
    kind: Kind
    values: str  # what it accepts, in the table's words
    default: str  # what leaving it unset (or empty) means
    meaning: str  # one line for users
    reader: str  # the component that reads it
    once: bool  # read once (at import, or when a library loads) rather than at each use
    when: str  # precisely when it is read
    key: bytes = field(init=False, repr=False, compare=False)  # os.fsencode(name), for ENV_DATA

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", os.fsencode(self.name))

    def raw(self) -> str | None:
        """The variable's value as it is, None when unset."""
        return getenv(self.name, self.key)

    def text(self) -> str:
        """The value with surrounding blanks removed; "" when unset."""
        v = getenv(self.name, self.key)
        return "" if v is None else v.strip()


# ---------------------------------------------------------------------------------------- the records
TIERS = Var(
    "PTXJIT_TIERS", "flag", "`0`, `false`, `no`, `off`: off; any other value: on", "on",
    "Tiered translation: launches start on quick code and move to profile-guided re-optimized versions "
    "([tiers.md](tiers.md)); off: the single O3 translation per block shape.",
    "ptxjit.tiers", False, "each launch")
WORKERS = Var(
    "PTXJIT_WORKERS", "int", "a positive integer (anything else: the launch raises ValueError)", "all cores",
    "Worker threads a launch runs on (`ptxjit.set_workers(n)` overrides it).",
    "ptxjit.runtime.launch", False, "each launch")
TIMEOUT = Var(
    "PTXJIT_TIMEOUT", "float", "seconds, > 0 (anything else: the launch raises ValueError)", "no limit",
    "A launch's time limit: a launch that runs longer is stopped and raises `ptxjit.KernelTimeout` "
    "(a launch's `timeout=` overrides it).",
    "ptxjit.runtime.watchdog", False, "each launch")
UNCHECKED = Var(
    "PTXJIT_UNCHECKED", "flag", "`0`, `false`, `no`, `off`: off; any other non-empty value: on", "off",
    "On: launches that do not pass `checked=`/`unchecked=` run without bounds checks (**unsafe**: an "
    "out-of-bounds access can corrupt the process); wins over `PTXJIT_CHECKED`.",
    "ptxjit.runtime.args", False, "each launch")
CHECKED = Var(
    "PTXJIT_CHECKED", "flag", "`0`, `false`, `no`, `off`: off; any other value: on", "on",
    "Off: the same as `PTXJIT_UNCHECKED=1`.",
    "ptxjit.runtime.args", False, "each launch")
FMAD = Var(
    "PTXJIT_FMAD", "flag", "`0`, `false`, `no`, `off`: off; any other value: on", "on",
    "Fuse mul + add into fma as `ptxas --fmad` does (`Module(fmad=)` and `ptxjit run --no-fmad` "
    "override it).",
    "ptxjit.api", False, "each `Module()`")
CACHE_DIR = Var(
    "PTXJIT_CACHE_DIR", "path", "a directory (created; used only when it is the user's own)",
    "`$XDG_CACHE_HOME/ptxjit`, else `~/.cache/ptxjit`",
    "The on-disk caches: translations (`kernels/`) and NVRTC's PTX (`nvrtc/`); `ptxjit cache` "
    "inspects or clears them.",
    "ptxjit.jit.cache_dir", False, "each cache access")
CHECK_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")  # compute-sanitizer's, ptxjit/checking
CHECK = Var(
    "PTXJIT_CHECK", "choice", "tools, comma-separated: `memcheck`, `racecheck`, `synccheck`, `initcheck`",
    "none",
    "Every launch of a program runs under these checking tools; reports on stderr, a summary at exit "
    "([checking.md](checking.md)).",
    "ptxjit", True, "once, when ptxjit is imported")
CHECK_PRINT_LIMIT = Var(
    "PTXJIT_CHECK_PRINT_LIMIT", "int", "a positive integer (anything else: no limit)", "no limit",
    "At most this many `PTXJIT_CHECK` reports printed (the summary at exit counts them all).",
    "ptxjit.checking.env", False, "each checked launch")
CHECK_ERROR_EXITCODE = Var(
    "PTXJIT_CHECK_ERROR_EXITCODE", "int", "an exit status, 1 to 255 (anything else: off)", "off",
    "When the `PTXJIT_CHECK` tools reported errors, the process exits with this status after the summary "
    "(compute-sanitizer's `--error-exitcode`; `ptxjit exec --error-exitcode`).",
    "ptxjit.checking.env", False, "at exit")
TRACE_POOL = Var(
    "PTXJIT_TRACE_POOL", "int", "bytes; `0` or a non-integer: no pool", "an eighth of the physical memory",
    "The most bytes of trace record buffers kept for reuse by later traces.",
    "ptxjit.instrument.buffers", True, "once, when ptxjit.instrument is imported")
DEVICE = Var(
    "PTXJIT_DEVICE", "choice",
    "`sm_90` (also `90`, `compute_90`, `9.0`): H100; `sm_80` (and the like): A100; others: `cuInit` fails",
    "`sm_90`",
    "The virtual GPU the driver library models.",
    "ptxjit.driver.device", True, "once, at `cuInit`")
DRIVER_LOG = Var(
    "PTXJIT_DRIVER_LOG", "path", "a file (appended to)", "stderr",
    "Where the driver and runtime libraries write their reports and notes (`ptxjit exec --log`).",
    "ptxjit.driver.errors", False, "each message")
STATS = Var(
    "PTXJIT_STATS", "choice",
    "`1` (or any path not ending in `.json`): one line in the driver log; `FILE.json`: one JSON record "
    "appended to it; `0`: off", "off",
    "At exit, where the process's time went: translations, kernel runs, copies (`ptxjit exec --stats`).",
    "ptxjit.accounting", False, "when the driver or runtime library loads, and at exit")
BACKEND = Var(
    "PTXJIT_BACKEND", "choice", "`ray`", "this process",
    "`ray`: every `Kernel.__call__` not on a stream is distributed over Ray actors "
    "([distributed.md](distributed.md)).",
    "ptxjit", True, "once, when ptxjit is imported")
RAY_ACTORS = Var(
    "PTXJIT_RAY_ACTORS", "int", "a number of actors (not an integer: ValueError)", "one per alive node",
    "How many Ray actors a distributed launch starts when the program did not call "
    "`ptxjit.distributed.init`.",
    "ptxjit.distributed.driver", True, "once, at the first distributed launch")
RAY_ADDRESS = Var(
    "PTXJIT_RAY_ADDRESS", "text", "a Ray cluster address", "a local Ray cluster",
    "The Ray cluster a distributed launch connects to when the program did not call "
    "`ptxjit.distributed.init`.",
    "ptxjit.distributed.driver", True, "once, at the first distributed launch")
DUMP_DIR = Var(
    "PTXJIT_DUMP_DIR", "path", "a directory (created)", "none",
    "Each translation's LLVM IR before and after optimization, assembly and object, and each linked PTX "
    "image, written there; load addresses printed; translations bypass the disk cache.",
    "ptxjit.jit", False, "each translation and code load")
PERF_MAP = Var(
    "PTXJIT_PERF_MAP", "flag", "`0`: off; any other non-empty value: on", "off",
    "Each loaded translation's code range appended to `/tmp/perf-<pid>.map`, so Linux `perf` names "
    "kernels.",
    "ptxjit.jit.engine", False, "each code load")
DEBUG = Var(
    "PTXJIT_DEBUG", "flag", "any non-empty value: on", "off",
    "A `ptxjit` command that fails with an internal error shows its traceback.",
    "ptxjit.cli", False, "when a command fails")
ISA_STRICT = Var(
    "PTXJIT_ISA_STRICT", "flag", "any non-empty value: on", "off",
    "A defect in the instruction validation table raises instead of letting the PTX load (for developers).",
    "ptxjit.lower.validate", False, "each validated instruction")
NVRTC = Var(
    "PTXJIT_NVRTC", "path", "a `libnvrtc.so` file", "the `nvidia-cuda-nvrtc` wheel's",
    "The NVRTC library that compiles CUDA C++, tried before the installed ones.",
    "ptxjit.cuda", True, "once, at the first CUDA C++ compile")
DRIVER_LIBDIR = Var(
    "PTXJIT_DRIVER_LIBDIR", "path", "a directory",
    "`src/ptxjit/driver/lib` when writable, else `$XDG_CACHE_HOME/ptxjit/driver` (`~/.cache/...`)",
    "Where the driver and runtime libraries (`libcuda.so.1`, `libcudart.so.13`) are built and found.",
    "ptxjit.driver.build", False, "each build or `ptxjit exec`")
DRIVER_PYTHONPATH = Var(
    "PTXJIT_DRIVER_PYTHONPATH", "path", "folders, `:`-separated", "none",
    "Where a program's driver library looks for ptxjit, before the build's own site folders, when it "
    "cannot import it.",
    "the driver library's start-up code", True, "once, when the driver library loads")
DRIVER_TRACE = Var(
    "PTXJIT_DRIVER_TRACE", "flag", "any non-empty value: on", "off",
    "Every driver API call named in the driver log (debugging a client).",
    "ptxjit.driver.capi", True, "once, when the driver library loads")

# the test suite's own (tests/); they change what the tests run, not what ptxjit does
GOLDEN = Var(
    "PTXJIT_GOLDEN", "choice", "`full`", "a fixed third of the variants",
    "`full`: the test suite replays every H100 golden variant ([bit-exactness.md](bit-exactness.md)).",
    "test suite", True, "once, at test collection")
TEST_SLOW = Var(
    "PTXJIT_TEST_SLOW", "flag", "any non-empty value: on", "off",
    "The test suite also runs its slow translations.",
    "test suite", True, "once, at test collection")
TEST_PTXAS = Var(
    "PTXJIT_TEST_PTXAS", "choice", "`1`: also assemble; `only`: assemble, do not run", "off",
    "The unit tests assemble each kernel they run with `ptxas` (when it is on PATH).",
    "test suite", False, "each test kernel")
TEST_LAUNCH_MODE = Var(
    "PTXJIT_TEST_LAUNCH_MODE", "choice", "`trace`, `patterns`, `tier1` (the launch modes of `tests/launch_modes.py`)",
    "plain launches",
    "Every launch the tests make goes through this launch mode: `trace`: through `ptxjit.trace` with every "
    "record type; `patterns`: on tier 0's counting code with its pattern sampling; `tier1`: every tiered "
    "launch on a tier-1 version specialized on its scalar parameters.",
    "test suite", True, "once, when the test session starts")
TEST_TIER1_LOG = Var(
    "PTXJIT_TEST_TIER1_LOG", "path", "a file", "none",
    "Where the `tier1` launch mode (`PTXJIT_TEST_LAUNCH_MODE`) writes the specializations it made.",
    "test suite", False, "each specialization")
PROBE_TRACEBACK = Var(
    "PTXJIT_PROBE_TRACEBACK", "flag", "set (any value): on", "off",
    "The CuPy API probe (`tests/cupy_programs/api_probe.py`) prints each failing call's traceback.",
    "test suite", False, "each failing call")

VARS: tuple[Var, ...] = tuple(v for v in globals().values() if isinstance(v, Var))
BY_NAME: dict[str, Var] = {v.name: v for v in VARS}


# ---------------------------------------------------------------------------------------- accessors
TIERS_DEFAULT_ON = True  # tiering when PTXJIT_TIERS is not set
_tiers_parsed: dict[bytes, bool] = {}  # the variable's bytes -> its meaning (this runs at every launch)


def tiers_enabled() -> bool:
    """PTXJIT_TIERS (read at every launch, about 50 ns when it is not set): on unless 0/false/no/off."""
    env = ENV_DATA
    if env is not None:
        raw = env.get(_TIERS_KEY)
        if raw is None:
            return TIERS_DEFAULT_ON
        hit = _tiers_parsed.get(raw)
        if hit is not None:
            return hit
    v = getenv(TIERS.name, _TIERS_KEY)
    on = TIERS_DEFAULT_ON if v is None or not v.strip() else v.strip().lower() not in _OFF
    if env is not None and v is not None and len(_tiers_parsed) < 16:
        _tiers_parsed[os.fsencode(v)] = on
    return on


_TIERS_KEY = TIERS.key


class _ReadAtLaunch:
    """A variable read at every launch: its value parsed once per distinct setting (a repeated value
    is a bytes comparison, not a parse)."""

    def __init__(self, var: Var, parse, doc: str) -> None:
        self.var, self.parse, self.__doc__ = var, parse, doc
        self.last: tuple[bytes | None, object] | None = None  # (the variable's bytes or None, its meaning)

    def __call__(self):
        env = ENV_DATA
        if env is not None:
            last = self.last
            if last is not None and last[0] == env.get(self.var.key):
                return last[1]
        v = getenv(self.var.name, self.var.key)
        value = self.parse(v)
        if env is not None:
            self.last = (None if v is None else os.fsencode(v), value)
        return value


def _parse_workers(v: str | None) -> int:
    if not v:
        return os.cpu_count() or 1
    try:
        n = int(v)
    except ValueError as e:
        raise ValueError(f"{WORKERS.name} must be a positive integer, got {v!r}") from e
    if n < 1:
        raise ValueError(f"{WORKERS.name} must be a positive integer, got {v!r}")
    return n


def _parse_timeout(v: str | None) -> float | None:
    if not v:
        return None
    try:
        limit = float(v)
    except ValueError:
        limit = -1.0
    if not limit > 0:
        raise ValueError(f"{TIMEOUT.name} must be a positive number of seconds, got {v!r}")
    return limit


workers = _ReadAtLaunch(WORKERS, _parse_workers, "PTXJIT_WORKERS, else all cores; raises ValueError for a "
                                                 "value that is not a positive integer.")
timeout = _ReadAtLaunch(TIMEOUT, _parse_timeout, "PTXJIT_TIMEOUT in seconds, None when unset or empty; raises "
                                                 "ValueError for a value that is not a positive number.")


def launch_checked() -> bool:
    """Bounds checks for a launch that does not choose: off with PTXJIT_UNCHECKED on (non-empty, not
    0/false/no/off) or PTXJIT_CHECKED off (0/false/no/off), else on.  Callers on the launch path first
    test that neither key is in ENV_DATA (about 50 ns) and call this only when one is."""
    v = getenv(UNCHECKED.name, UNCHECKED.key)
    if v and v.strip().lower() not in _OFF:
        return False
    v = getenv(CHECKED.name, CHECKED.key)
    return v is None or v.strip().lower() not in _OFF


def fmad() -> bool:
    """PTXJIT_FMAD: contraction on unless 0/false/no/off (unset and "" are on)."""
    v = getenv(FMAD.name, FMAD.key)
    return v is None or v.strip().lower() not in _OFF


def stats() -> str | None:
    """PTXJIT_STATS stripped: None when unset, empty or `0` (no report), else `1` or a path."""
    v = STATS.text()
    return None if v in ("", "0") else v


def perf_map() -> bool:
    """PTXJIT_PERF_MAP: on for any value but "" and `0`."""
    return getenv(PERF_MAP.name, PERF_MAP.key) not in (None, "", "0")


def check_print_limit() -> int | None:
    """PTXJIT_CHECK_PRINT_LIMIT as a positive integer; None (no limit) when unset or anything else."""
    v = CHECK_PRINT_LIMIT.text()
    return int(v) if v.isdigit() and int(v) > 0 else None


def check_error_exitcode() -> int:
    """PTXJIT_CHECK_ERROR_EXITCODE as an exit status in 1..255; 0 (off) when unset or anything else."""
    v = CHECK_ERROR_EXITCODE.text()
    return int(v) if v.isdigit() and 1 <= int(v) <= 255 else 0


def trace_pool_bytes() -> int:
    """PTXJIT_TRACE_POOL in bytes (0: no pool, also for a value that is not an integer); unset: an eighth
    of the physical memory (0 where the system does not say)."""
    env = getenv(TRACE_POOL.name, TRACE_POOL.key)
    try:
        return int(env) if env is not None else os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 8
    except (ValueError, OSError, AttributeError):
        return 0


def ray_actors() -> int | None:
    """PTXJIT_RAY_ACTORS as an integer, None when unset; raises ValueError for a non-integer."""
    v = getenv(RAY_ACTORS.name, RAY_ACTORS.key)
    return None if v is None else int(v)


# ---------------------------------------------------------------------------------------- the table
def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def markdown_table() -> str:
    """The table of every variable docs/configuration.md shows (a test keeps the two equal)."""
    rows = ["| Variable | Values | Default | Meaning | Read by | Read |",
            "| --- | --- | --- | --- | --- | --- |"]
    for v in VARS:
        reader = v.reader if " " in v.reader else f"`{v.reader}`"
        rows.append("| " + " | ".join(_cell(c) for c in (f"`{v.name}`", v.values, v.default, v.meaning, reader,
                                                          v.when)) + " |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
