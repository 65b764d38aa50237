"""The watchdog: one daemon thread per process that turns Ctrl-C and expired launch deadlines into the
launch record's error word (L_ERROR), which every worker polls (runtime/launch.py explains why a launch
needs it: while the main thread runs native code Python cannot run its SIGINT handler).  Launches,
stream launches, cooperative, cluster, tiered and distributed launches all use it."""

from __future__ import annotations

import os
import select
import signal
import threading
import time

import numpy as np

from ptxjit import config
from ptxjit.lower import abi


def timeout_seconds(timeout: float | None) -> float | None:
    """The launch's time limit in seconds: `timeout`, else PTXJIT_TIMEOUT, else None (no limit)."""
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float | np.integer | np.floating) \
                or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        return float(timeout)
    return config.timeout()  # cached by the value: this runs at every launch


def cancel(L: np.ndarray, code: int) -> None:
    """Ask every worker of launch L to stop (the first error recorded wins)."""
    if not L[abi.L_ERROR]:
        L[abi.L_ERROR] = code


class Watchdog:
    """A daemon thread that turns Ctrl-C and expired deadlines into L_ERROR codes while launches run.

    It reads a pipe that is the interpreter's signal wakeup fd while the main thread runs a launch
    (Python's C-level handler writes the signal number there even while the main thread is busy in
    native code); bytes for signals are passed on to the wakeup fd that was installed before.  A zero
    byte only wakes it up to look at a new deadline."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        os.set_blocking(self.w, False)
        self.lock = threading.Lock()
        self.deadlines: dict[int, tuple[float, np.ndarray]] = {}
        self.main_launch: np.ndarray | None = None
        self.forward = -1
        self.thread = threading.Thread(target=self._loop, name="ptxjit-watchdog", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            with self.lock:
                first = min((d for d, _L in self.deadlines.values()), default=None)
            timeout = None if first is None else max(0.0, first - time.monotonic())
            try:
                ready, _, _ = select.select([self.r], [], [], timeout)
                # the launch a Ctrl-C read now cancels: looked at before the read (enter_main drains
                # the bytes written before its launch, then makes it current: _drain_stale)
                L = self.main_launch
                data = os.read(self.r, 512) if ready else b""
            except BlockingIOError:
                data = b""
            except (OSError, ValueError):  # the pipe is gone (interpreter shutdown)
                return
            sigs = bytes(x for x in data if x)
            if sigs:
                fwd = self.forward
                if fwd >= 0:
                    try:
                        os.write(fwd, sigs)
                    except OSError:
                        pass
                # only when Ctrl-C will raise KeyboardInterrupt (a custom handler might not stop anything)
                if L is not None and signal.SIGINT in sigs and \
                        signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                    cancel(L, abi.ERR_CANCEL)
            now = time.monotonic()
            with self.lock:
                for token, (d, L) in list(self.deadlines.items()):
                    if now >= d:
                        cancel(L, abi.ERR_TIMEOUT)
                        del self.deadlines[token]

    def add_deadline(self, deadline: float, L: np.ndarray) -> int:
        token = id(L)
        with self.lock:
            self.deadlines[token] = (deadline, L)
        try:
            os.write(self.w, b"\0")
        except OSError:  # the pipe is full: the watchdog is awake anyway
            pass
        return token

    def remove_deadline(self, token: int) -> None:
        with self.lock:
            self.deadlines.pop(token, None)

    def enter_main(self, L: np.ndarray) -> int | None:
        """The main thread starts running launch L: Ctrl-C must reach the watchdog.  Returns the
        wakeup fd to restore afterwards (None: nothing to restore, or ours could not be installed).

        Where no wakeup fd was installed, ours stays installed between launches (the watchdog
        drains it), so that a launch costs one set_wakeup_fd call; another one (asyncio's) is put
        back after the launch and gets the signal bytes meanwhile."""
        try:
            old = signal.set_wakeup_fd(self.w, warn_on_full_buffer=False)
        except (ValueError, OSError):  # not the main interpreter, or signals unavailable
            return None
        if old != self.w:
            self.forward = old
        self._drain_stale(old)
        self.main_launch = L
        return old if old not in (-1, self.w) else None

    def _drain_stale(self, old: int) -> None:
        """Signal bytes still in the pipe were written before this launch began: a Ctrl-C that Python
        has raised (or will raise) as KeyboardInterrupt for what ran before.  Read by the watchdog
        only now (a loaded machine runs it late), it would cancel this launch instead (found in CI:
        a cooperative launch after an interrupted one was interrupted too).  So they are read here,
        before this launch becomes the one a Ctrl-C cancels, and passed on as the watchdog would;
        zero bytes (a new deadline to look at) wake the watchdog again.  The watchdog looks at the
        current launch before it reads, so a byte it reads is never one written before the launch it
        cancels."""
        try:
            data = os.read(self.r, 512)
        except (BlockingIOError, OSError, ValueError):
            return
        sigs = bytes(x for x in data if x)
        try:
            if sigs and old not in (-1, self.w):
                os.write(old, sigs)
            if len(sigs) < len(data):
                os.write(self.w, b"\0")
        except OSError:
            pass

    def leave_main(self, old: int | None) -> None:
        self.main_launch = None
        if old is None:
            return
        try:
            signal.set_wakeup_fd(old)
        except (ValueError, OSError):
            signal.set_wakeup_fd(-1)
        self.forward = -1


_lock = threading.Lock()
current: Watchdog | None = None  # the process's watchdog once a launch needed it
MAIN_IDENT = threading.main_thread().ident


def get() -> Watchdog:
    """The process's watchdog (started at the first launch that needs it)."""
    global current
    wd = current
    if wd is None:
        with _lock:
            if current is None:
                current = Watchdog()
            wd = current
    return wd


def _after_fork_in_child() -> None:
    """Threads do not survive fork: the child starts its own watchdog when it launches.  The parent's
    watchdog pipe must not stay the child's wakeup fd (the child's signals would reach the parent's
    watchdog)."""
    global current, _lock
    wd = current
    if wd is not None:
        try:
            old = signal.set_wakeup_fd(-1)
            if old != wd.w:
                signal.set_wakeup_fd(old)
        except (ValueError, OSError):
            pass
        for fd in (wd.r, wd.w):
            try:
                os.close(fd)
            except OSError:
                pass
    current, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
