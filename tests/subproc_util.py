"""Helpers for tests that run a child Python process and interrupt it."""

from __future__ import annotations

import signal


def sigint_default() -> None:
    """Popen's preexec_fn for a child that gets SIGINT: the default disposition, so that Python installs
    its KeyboardInterrupt handler as in an interactive program.  A test run started in the background
    without job control (`(pytest &)` in a script) ignores SIGINT, its children inherit that, and Python
    keeps a SIGINT it finds ignored ignored: Ctrl-C then never reaches the launch under test."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
