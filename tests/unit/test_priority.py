"""jit/priority.py: a background build waits while a foreground translation runs and for a quiet moment
after it, and never longer than its limit."""

from __future__ import annotations

import threading
import time

from ptxjit.jit import priority


def test_background_waits_for_the_foreground_and_a_quiet_moment():
    started = threading.Event()
    release = threading.Event()

    def translate():
        with priority.foreground():
            started.set()
            release.wait(5)

    th = threading.Thread(target=translate)
    th.start()
    started.wait(5)
    waited: list[float] = []
    bg = threading.Thread(target=lambda: waited.append(priority.wait_for_quiet(max_wait_s=10)))
    t0 = time.monotonic()
    bg.start()
    time.sleep(0.3)
    assert bg.is_alive()  # the foreground translation still runs
    release.set()
    th.join(5)
    ended = time.monotonic()
    bg.join(5)
    assert not bg.is_alive()
    assert time.monotonic() - ended >= priority.QUIET_S * 0.9  # then the quiet moment
    assert waited[0] >= time.monotonic() - t0 - 0.1


def test_a_background_build_waits_at_most_its_limit():
    with priority.foreground():
        t0 = time.monotonic()
        waited = priority.wait_for_quiet(max_wait_s=0.2)
    assert 0.15 <= waited < 2.0 and time.monotonic() - t0 < 2.0
