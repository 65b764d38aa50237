"""The supervision every multi-worker launch shares (launch._execute, tiers, cooperative and cluster
launches): the watchdog's deadline and the main thread's Ctrl-C hook around the run; on any exception
(Ctrl-C included) the launch is cancelled and its workers drained; afterwards the worker memory goes
back to its pool only once every worker has returned — otherwise the launch record, its arguments and
that memory are abandoned (kept alive) for the workers still inside native code.

A class rather than a generator context manager: it is on the launch path (a few µs per launch count).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from ptxjit import accounting
from ptxjit.lower import abi
from ptxjit.runtime import launch, watchdog


class supervised:  # noqa: N801 -- used like a function: `with supervised(...) as run:`
    """Run the with-block's launch of record L under the watchdog (`limit` seconds, or none); then
    `give_back()` the worker memory `mems` (their fault words cleared after an error of a checked
    launch), or abandon it (`forget()` first) when a worker may still run.  The block extends
    `run.futures` (never rebinds it: a Ctrl-C must drain what was submitted) and sets `run.settled`
    once every worker has returned normally; `run.started` is when supervision began."""

    __slots__ = ("L", "mems", "keep", "kernel_name", "checked", "give_back", "forget", "futures", "settled",
                 "started", "_wd", "_token", "_main", "_old_fd")

    def __init__(self, L, limit: float | None, mems: list, keep, kernel_name: str, checked: bool,
                 give_back: Callable[[], None], forget: Callable[[], None] | None = None) -> None:
        self.L, self.mems, self.keep, self.kernel_name, self.checked = L, mems, keep, kernel_name, checked
        self.give_back, self.forget = give_back, forget
        self.futures: list[Future] = []
        self.settled = False
        self.started = time.monotonic()
        self._wd = wd = watchdog.current or watchdog.get()
        self._token = wd.add_deadline(self.started + limit, L) if limit is not None else None
        self._main = threading.get_ident() == watchdog.MAIN_IDENT
        self._old_fd = wd.enter_main(L) if self._main else None

    def __enter__(self) -> supervised:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        L = self.L
        try:
            if exc_type is not None:
                watchdog.cancel(L, abi.ERR_CANCEL)
                self.settled = launch._drain(self.futures)
        finally:
            accounting.ran(time.monotonic() - self.started)
            if self._main:
                self._wd.leave_main(self._old_fd)
            if self._token is not None:
                self._wd.remove_deadline(self._token)
            if self.settled or all(f.done() for f in self.futures):
                if L[abi.L_ERROR] and self.checked:  # faults recorded by CTAs that were stopped or faulted
                    for m in self.mems:
                        m.fault[:] = 0
                self.give_back()
            else:
                if self.forget is not None:
                    self.forget()
                launch._abandon(L, self.keep, self.mems, self.kernel_name)
        return False  # the exception, if any, goes on
