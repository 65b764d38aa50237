"""The supervision every multi-worker launch shares (launch._execute, tiers, cooperative and cluster
launches): the watchdog's deadline and the main thread's Ctrl-C hook around the run; on any exception
(Ctrl-C included) the launch is cancelled and its workers drained; afterwards the worker memory goes
back to its pool only once every worker has returned — otherwise the launch record, its arguments and
that memory are abandoned (kept alive) for the workers still inside native code."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field

from ptxjit.lower import abi
from ptxjit.runtime import launch


@dataclass
class Supervised:
    """What the supervised block sets: `futures` (extend it, don't rebind it: a Ctrl-C must drain what
    was submitted) and `settled` once every worker has returned normally."""

    futures: list[Future] = field(default_factory=list)
    settled: bool = False
    started: float = field(default_factory=time.monotonic)


@contextmanager
def supervised(L, limit: float | None, mems: list, keep, kernel_name: str, checked: bool,
               give_back: Callable[[], None], forget: Callable[[], None] | None = None) -> Iterator[Supervised]:
    """Run the with-block's launch of record L under the watchdog (`limit` seconds, or none); then
    `give_back()` the worker memory `mems` (their fault words cleared after an error of a checked
    launch), or abandon it (`forget()` first) when a worker may still run."""
    run = Supervised()
    wd = launch._watchdog or launch._get_watchdog()
    token = wd.add_deadline(run.started + limit, L) if limit is not None else None
    main = threading.get_ident() == launch._MAIN_IDENT
    old_fd = wd.enter_main(L) if main else None
    try:
        yield run
    except BaseException:
        launch._cancel(L, abi.ERR_CANCEL)
        run.settled = launch._drain(run.futures)
        raise
    finally:
        if main:
            wd.leave_main(old_fd)
        if token is not None:
            wd.remove_deadline(token)
        if run.settled or all(f.done() for f in run.futures):
            if L[abi.L_ERROR] and checked:  # faults recorded by CTAs that were stopped or faulted
                for m in mems:
                    m.fault[:] = 0
            give_back()
        else:
            if forget is not None:
                forget()
            launch._abandon(L, keep, mems, kernel_name)
