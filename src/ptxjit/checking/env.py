"""PTXJIT_CHECK=memcheck,racecheck python app.py: every launch of an unmodified program runs under
ptxjit.check.  `import ptxjit` reads the variable once and, when it is set, installs the launch hook that
hands each plain launch here (ptxjit/env_launchers.py check_launcher).  Reports are printed to stderr as
they come, compute-sanitizer's ERROR SUMMARY at exit.  A launch that faults or deadlocks still raises as
it would unchecked, after its report.
PTXJIT_CHECK_PRINT_LIMIT=N prints at most N reports (the summary counts them all).
PTXJIT_CHECK_ERROR_EXITCODE=N: when there were reports, the process exits with status N after the summary
(compute-sanitizer's --error-exitcode: a CI job fails on any finding).
"""

from __future__ import annotations

import atexit
import sys
import threading

from ptxjit import config
from ptxjit.checking.core import check, tool_list
from ptxjit.checking.report import PREFIX, Report, summary_line

_active = threading.local()  # the check's own launches (the plain launch after a fault) run unchecked
_lock = threading.Lock()
_state: dict = {"errors": 0, "printed": 0, "registered": False, "tools": None, "spec": None}


def _tools(spec: str) -> tuple[str, ...]:
    if _state["spec"] != spec:
        _state["tools"], _state["spec"] = tool_list(spec), spec
    return _state["tools"]


def checked_launch(kernel, spec: str, grid, block, args, shared_mem, timeout, checked, unchecked) -> bool:
    """Run one launch under the tools PTXJIT_CHECK names; False when this launch is not to be checked (a
    launch asked unchecked, or one the check itself makes): the caller then launches it plainly."""
    if getattr(_active, "on", False) or unchecked or checked is False:
        return False
    tools = _tools(spec)
    _active.on = True
    try:
        reports = check(kernel, grid, block, args, shared_mem, tools, timeout=timeout)
    finally:
        _active.on = False
    record(reports)
    for r in reports:
        err = r.extra.get("error")
        if err is not None:
            raise err
    return True


def start(spec: str) -> None:
    """The tools `spec` names watch this process: the ERROR SUMMARY is printed at exit, also when no launch
    was checked (as compute-sanitizer prints it)."""
    try:
        _tools(spec)
    except ValueError as exc:
        raise ValueError(f"{config.CHECK.name}={spec!r}: {exc}") from None
    with _lock:
        if not _state["registered"]:
            atexit.register(_summary)
            _state["registered"] = True


def record(reports: list[Report]) -> None:
    """Print reports as they come (up to the print limit) and count them for the summary at exit."""
    limit = _print_limit()
    with _lock:
        if not _state["registered"]:
            atexit.register(_summary)
            _state["registered"] = True
        for r in reports:
            _state["errors"] += 1
            if limit is None or _state["printed"] < limit:
                _state["printed"] += 1
                print(r.format(), file=sys.stderr, flush=True)


def _print_limit() -> int | None:
    return config.check_print_limit()


def _summary() -> None:
    if "memcheck" in (_state["tools"] or ()):  # device malloc'd blocks never freed: the leaks at exit
        from ptxjit.checking.memcheck import leak_reports

        record(leak_reports())
    n = _state["errors"]
    if _state["printed"] < n:
        print(f"{PREFIX}Printing limit reached: {n - _state['printed']} more reports not printed",
              file=sys.stderr)
    print(summary_line(n), file=sys.stderr, flush=True)
    code = config.check_error_exitcode()
    if n and code:
        _exit_now(code)


def _exit_now(code: int) -> None:
    """End the process with `code` from an exit handler: what it printed (Python's and C's buffered output)
    is written first; the exit handlers not yet run are skipped, as with any _exit."""
    import ctypes
    import os

    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except (OSError, ValueError):
            pass
    try:
        ctypes.CDLL(None).fflush(None)  # a C program's stdout buffer (a program under ptxjit exec)
    except (OSError, AttributeError):
        pass
    os._exit(code)


def errors() -> int:
    """Reports counted so far in this process."""
    return int(_state["errors"])
