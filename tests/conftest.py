"""Test-session setup: keep ptxjit's on-disk caches inside a temporary directory; the session's launch mode
(tests/launch_modes.py).  Tests mark themselves `golden` or `slow` with tests/markers.py."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

# set before any test imports ptxjit's cache users; tests needing their own directory monkeypatch it
os.environ.setdefault("PTXJIT_CACHE_DIR", tempfile.mkdtemp(prefix="ptxjit-test-cache-"))


def _mode_name() -> str:
    from ptxjit import config

    return config.TEST_LAUNCH_MODE.text()


def pytest_configure(config: pytest.Config) -> None:
    name = _mode_name()
    if name:
        from tests.launch_modes import MODES

        if name not in MODES:
            raise pytest.UsageError(f"PTXJIT_TEST_LAUNCH_MODE={name!r}: no such launch mode; modes: "
                                    f"{', '.join(sorted(MODES))} (tests/launch_modes.py)")


@pytest.fixture(scope="session", autouse=True)
def launch_mode() -> Iterator[str | None]:
    """The launch mode every launch of this session runs in (PTXJIT_TEST_LAUNCH_MODE, installed as a
    launch hook for the whole session), None for plain launches.  The mode suites set it for a child
    pytest (tests/launch_modes.py run_suite)."""
    name = _mode_name()
    if not name:
        yield None
        return
    from ptxjit.api import launch_hook
    from tests.launch_modes import MODES

    with launch_hook(MODES[name]):
        yield name


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The mode's launch count, which run_suite reads: a mode that was not in force fails its suite."""
    name = _mode_name()
    if name:
        from tests.launch_modes import MODES, summary_line

        terminalreporter.write_line(summary_line(MODES[name]))
