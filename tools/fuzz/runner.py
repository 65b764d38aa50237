"""Run cases in forked children with limits, classify them, minimize reproducers, summarize.

The parent imports ptxjit once and forks one child per case (no interpreter start-up per case, and a
crash or a runaway allocation takes down only the child).  A case's result is the last JSON event its
child wrote, combined with how it ended: exit code, signal, or killed at the wall-clock limit.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import time
from collections import Counter
from dataclasses import dataclass, field

from ptxjit.jit.engine import BASELINE  # tier 0's build, what every first launch of a kernel runs
from tools.fuzz.child import OPTIMIZING, run_case

NON_CLEAN = ("internal", "signal", "hang", "fault")
# A SIGSEGV/SIGBUS while a kernel runs is a memory fault of the kernel (a mutated address or bound):
# a GPU reports it as an illegal address, ptxjit has no memory protection and the process dies.  It is
# counted apart from "signal" (a crash in ptxjit or LLVM itself: loading, compiling, the runtime).
_FAULT_SIGNALS = ("SIGSEGV", "SIGBUS")


@dataclass
class Limits:
    timeout: float = 30.0  # wall-clock seconds per case (ptxas, load and launches)
    mem_bytes: int = 8 << 30  # RLIMIT_AS of the child
    ptxas: str | None = None
    # Every case is translated and launched at the baseline; a case whose index is a multiple of
    # `opt_every` also at the optimizing level (1: every case, 0: none).  The optimizing build costs
    # about 6 times the baseline's, so sampling it keeps a long campaign cheap while both code paths
    # (the baseline's pass list, O3's pipeline and code generator) still see thousands of mutants.
    opt_every: int = 1

    def levels(self, key: object) -> tuple[int, ...]:
        """The opt levels case `key` is built at (an int key is the mutant's index)."""
        sampled = self.opt_every > 0 and (not isinstance(key, int) or key % self.opt_every == 0)
        return (BASELINE, OPTIMIZING) if sampled else (BASELINE,)


@dataclass
class Result:
    outcome: str  # ok | clean | internal | signal | fault | hang | slow
    phase: str = ""
    type: str = ""  # exception type or signal name
    msg: str = ""
    where: str = ""
    ptxas: bool | None = None
    ptxas_err: str = ""
    loaded: bool = False
    seconds: float = 0.0
    levels: list = field(default_factory=list)  # the opt levels the case was built at
    t_translate_max: float = 0.0  # its longest translation of one kernel at one level, seconds
    events: list = field(default_factory=list)

    @property
    def signature(self) -> str:
        """What makes two failures the same bug (for deduplication and minimization)."""
        return f"{self.outcome}:{self.phase}:{self.type}:{self.where}"


@dataclass
class _Running:
    key: object
    pid: int
    fd: int
    start: float
    digest: str = ""
    buf: bytes = b""
    last: float = 0.0  # when the child last reported progress (an event on its pipe)


def _spawn(text: str, limits: Limits, levels: tuple[int, ...],
           verdict: tuple[bool | None, str] | None) -> tuple[int, int]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            os.setsid()  # its own process group: a timeout kill takes ptxas and threads with it
            run_case(text, w, limits.mem_bytes, limits.ptxas, levels, verdict)
        finally:
            os._exit(70)
    os.close(w)
    return pid, r


# A case killed at its wall-clock limit is a hang only if one step (a translation, a launch under ptxjit's
# watchdog of LAUNCH_TIMEOUT) stopped making progress; a case whose steps all progressed but add up to more
# than the limit (many kernels, each translated at two levels, several spinning to the watchdog) is slow
STALL_LIMIT = 15.0


def _finish(run: _Running, status: int | None, elapsed: float, stalled: float = 0.0) -> Result:
    events = [json.loads(ln) for ln in run.buf.decode(errors="replace").splitlines() if ln.startswith("{")]
    merged: dict = {}
    for ev in events:
        merged.update(ev)
    res = Result(outcome=merged.get("outcome", ""), phase=merged.get("phase", "start"),
                 type=merged.get("type", ""), msg=merged.get("msg", ""), where=merged.get("where", ""),
                 ptxas=merged.get("ptxas"), ptxas_err=merged.get("ptxas_err", ""),
                 loaded=bool(merged.get("loaded")), seconds=round(elapsed, 2), levels=merged.get("levels", []),
                 t_translate_max=merged.get("t_translate_max", 0.0), events=events)
    if status is None:
        res.outcome = "hang" if stalled >= STALL_LIMIT else "slow"
        res.type, res.where = "timeout", merged.get("kernel", "")
    elif os.WIFSIGNALED(status):
        res.outcome, res.type = "signal", signal.Signals(os.WTERMSIG(status)).name
        res.where = merged.get("kernel", "")
        if res.phase == "launch" and res.type in _FAULT_SIGNALS and merged.get("running"):
            res.outcome = "fault"
    elif not res.outcome:  # exited without a verdict: os._exit from somewhere, or a fatal error
        res.outcome, res.type = "signal", f"exit{os.WEXITSTATUS(status)}"
    return res


def run_many(cases, limits: Limits, jobs: int, on_result=None) -> dict:
    """Run (key, text) cases, `jobs` at a time; returns {key: Result}.  `on_result(key, res)` per case."""
    it = iter(cases)
    running: dict[int, _Running] = {}
    results: dict = {}
    # ptxas's verdict by mutant text: mutants repeat (a mutation with nothing to act on leaves the corpus
    # file as it was, deletions and truncations meet), and ptxas's answer depends on the text alone
    verdicts: dict[str, tuple[bool | None, str]] = {}

    def done(run: _Running, res: Result) -> None:
        results[run.key] = res
        if limits.ptxas and res.ptxas is not None:
            verdicts.setdefault(run.digest, (res.ptxas, res.ptxas_err))
        if on_result:
            on_result(run.key, res)

    exhausted = False
    while running or not exhausted:
        while not exhausted and len(running) < jobs:
            try:
                key, text = next(it)
            except StopIteration:
                exhausted = True
                break
            digest = hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest() if limits.ptxas else ""
            pid, fd = _spawn(text, limits, limits.levels(key), verdicts.get(digest))
            now = time.monotonic()
            running[fd] = _Running(key, pid, fd, now, digest, last=now)
        if not running:
            break
        ready, _, _ = select.select(list(running), [], [], 0.2)
        for fd in ready:
            chunk = os.read(fd, 65536)
            if chunk:
                running[fd].buf += chunk
                running[fd].last = time.monotonic()
                continue
            run = running.pop(fd)  # EOF: the child is gone (or closed the pipe while dying)
            os.close(fd)
            _, status = os.waitpid(run.pid, 0)
            done(run, _finish(run, status, time.monotonic() - run.start))
        now = time.monotonic()
        for fd, run in list(running.items()):
            if now - run.start > limits.timeout:
                try:
                    os.killpg(run.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                os.waitpid(run.pid, 0)
                try:
                    while chunk := os.read(fd, 65536):
                        run.buf += chunk
                except OSError:
                    pass
                os.close(fd)
                del running[fd]
                done(run, _finish(run, None, now - run.start, now - run.last))
    return results


def run_one(text: str, limits: Limits) -> Result:
    return run_many([(0, text)], limits, 1)[0]


def minimize(text: str, signature: str, limits: Limits, max_tests: int = 150) -> str:
    """Delta debugging by lines (ddmin): the smallest set of lines that still fails the same way."""
    lines = text.split("\n")
    tests = 0
    # ptxas plays no part in the signature; both levels, so that a failure at either one reproduces
    quick = Limits(limits.timeout, limits.mem_bytes, None, opt_every=1)

    def fails(cand: list[str]) -> bool:
        nonlocal tests
        tests += 1
        return run_one("\n".join(cand), quick).signature == signature

    n = 2
    while len(lines) >= 2 and tests < max_tests:
        chunk = max(1, len(lines) // n)
        reduced = False
        for start in range(0, len(lines), chunk):
            if tests >= max_tests:
                break
            cand = lines[:start] + lines[start + chunk:]
            if cand and fails(cand):
                lines = cand
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(lines), n * 2)
    return "\n".join(lines)


def summarize(results: dict, seconds: float, ptxas: bool) -> str:
    counts = Counter(r.outcome for r in results.values())
    total = len(results)
    rows = [("mutants", str(total)), ("seconds", f"{seconds:.0f}"),
            ("built at the optimizing level too", str(sum(1 for r in results.values() if OPTIMIZING in r.levels)))]
    for k in ("ok", "clean", "internal", "signal", "hang", "fault"):
        rows.append((k, str(counts.get(k, 0))))
    rows.append(("slow (over the case limit, every step progressing)", str(counts.get("slow", 0))))
    slowest = max(results.values(), key=lambda r: r.t_translate_max, default=None)
    if slowest is not None:
        rows.append(("longest translation of one kernel, s", f"{slowest.t_translate_max:.2f}"))
    detail = Counter(f"{r.outcome} {r.type} ({r.phase})" for r in results.values() if r.outcome in NON_CLEAN)
    if ptxas:
        judged = [r for r in results.values() if r.ptxas is not None and r.outcome not in ("hang", "slow")]
        unsupported = sum(1 for r in judged if r.ptxas and not r.loaded and r.type == "UnsupportedInstructionError")
        false_rej = sum(1 for r in judged if r.ptxas and not r.loaded and r.type != "UnsupportedInstructionError")
        lenient = sum(1 for r in judged if r.ptxas is False and r.loaded)
        agree = sum(1 for r in judged if bool(r.ptxas) == r.loaded)
        rows += [("ptxas judged", str(len(judged))), ("agree with ptxas", str(agree)),
                 ("false rejections (ptxas accepts, ptxjit refuses as invalid/error)", str(false_rej)),
                 ("unsupported (ptxas accepts, ptxjit has no rule)", str(unsupported)),
                 ("leniency (ptxas rejects, ptxjit loads)", str(lenient))]
    w = max(len(a) for a, _ in rows)
    out = [f"{a:<{w}}  {b:>8}" for a, b in rows]
    if detail:
        out.append("non-clean outcomes:")
        out += [f"  {n:6d}  {k}" for k, n in detail.most_common()]
    return "\n".join(out)
