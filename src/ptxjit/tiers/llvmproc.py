"""LLVM optimization and code generation of background tier-1 builds, in a child process.

Why a process: a build inside LLVM cannot be interrupted, and a process that exits while one of its
threads is inside LLVM aborts (LLVM's global state is torn down under it; measured: "An asserting
value handle still pointed to this value!", exit status 134).  Waiting for the build instead makes
the exit wait for up to one O3 build of the kernel (bitonic: 15-35 s on a loaded 2-core machine).
A child process is simply killed at exit.  It runs ptxjit/jit/engine.py's own optimize_to_object
(loaded by path: only llvmlite is imported, about 0.2 s) on the same host, so the object code is the
one an in-process build gives; only linking it (load_object, milliseconds) stays in this process.
Should the child fail to start or die, the build runs in this process as before.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

from ptxjit import config
from ptxjit.jit import engine

_CHILD = r"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("_ptxjit_engine_child", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = mod
spec.loader.exec_module(mod)
ir_text = sys.stdin.buffer.read().decode()
sys.stdout.buffer.write(mod.optimize_to_object(ir_text, opt_level=int(sys.argv[2]), name=sys.argv[3]))
"""

_children: set[subprocess.Popen] = set()
_lock = threading.Lock()
_closed = False  # set at exit: no child starts any more
ENABLED = True  # False: always in this process (tests compare both)


class Cancelled(Exception):
    """The process is exiting: the build stops."""


def optimize_to_object(ir_text: str, opt_level: int = 3, name: str = "kernel") -> bytes:
    """engine.optimize_to_object, run in a child process (killed if this process exits)."""
    if not ENABLED or config.DUMP_DIR.raw():
        return engine.optimize_to_object(ir_text, opt_level, name)
    with _lock:
        if _closed:
            raise Cancelled("exiting")
        try:
            p = subprocess.Popen([sys.executable, "-c", _CHILD, str(Path(engine.__file__)), str(opt_level), name],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError:
            p = None
        if p is not None:
            _children.add(p)
    if p is None:
        return engine.optimize_to_object(ir_text, opt_level, name)
    _no_sigpipe()
    try:
        out, _err = p.communicate(ir_text.encode())
    finally:
        with _lock:
            _children.discard(p)
    if p.returncode == 0 and out:
        return out
    if _closed:
        raise Cancelled("exiting")
    return engine.optimize_to_object(ir_text, opt_level, name)  # the child failed: here, as before


def _no_sigpipe() -> None:
    """A child killed at exit while this thread writes its input must give EPIPE, not SIGPIPE: a Python
    process ignores SIGPIPE, but an interpreter started inside a C program (ptxjit's libcuda.so.1) does
    not, and the signal would end the program.  Blocked in this (background) thread only."""
    if threading.current_thread() is not threading.main_thread() and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPIPE})


def kill_all() -> None:
    """At exit: stop every child build (their results are not needed any more)."""
    global _closed
    with _lock:
        _closed = True
        children = list(_children)
    for p in children:
        try:
            p.kill()
        except OSError:
            pass


def after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()
    _children.clear()
