"""Foreground translations first: background builds wait while a launch waits for its translation.

A program's first launch of each kernel waits for that kernel's translation (the foreground); the tiers'
builds of kernels already running (ptxjit/tiers) are wanted, but not now.  Both lower PTX in Python, so
they share one interpreter lock and each module's lock: a background build that starts lowering just
as the program reaches its next kernel makes that first launch wait for most of the build.  Measured on
a sort of three kernels launched in turn (CUDA C++ under `ptxjit exec`, 2 cores): about a second of its
2.4 s went to such waits.  So a background build starts lowering only once no foreground translation
has run for QUIET_S, and waits at most MAX_DEFER_S for that (a program that translates without pause
still gets its tier-1 code).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

QUIET_S = 0.25  # a program's next first launch usually follows its last within this
MAX_DEFER_S = 3.0

_cond = threading.Condition()
_active = 0  # foreground translations running now
_last_end = 0.0  # time.monotonic() when the last one ended


@contextmanager
def foreground() -> Iterator[None]:
    """Around a translation that a launch waits for."""
    global _active, _last_end
    with _cond:
        _active += 1
    try:
        yield
    finally:
        with _cond:
            _active -= 1
            _last_end = time.monotonic()
            _cond.notify_all()


def wait_for_quiet(max_wait_s: float = MAX_DEFER_S) -> float:
    """Block a background build until no foreground translation has run for QUIET_S (at most
    `max_wait_s`); return the seconds waited."""
    start = time.monotonic()
    deadline = start + max_wait_s
    with _cond:
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            quiet_at = _last_end + QUIET_S
            if _active == 0 and now >= quiet_at:
                break
            _cond.wait(min(deadline, quiet_at if _active == 0 else deadline) - now)
    return time.monotonic() - start
