"""Launch hooks (ptxjit.api.launch_hook): what a hook sees, running, changing and skipping a launch,
nesting, a hook's own launches, instrumented launches, errors, and threads.  Results against NumPy."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.api import Launch, add_launch_hook, launch_hook, launch_hooks

EXAMPLES = Path(__file__).parent.parent / "examples"
N = 1000


@pytest.fixture(scope="module")
def saxpy() -> ptxjit.Kernel:
    return ptxjit.Module.from_file(EXAMPLES / "demo_kernels.ptx").get_function("saxpy")


def _data():
    rng = np.random.default_rng(0)
    return rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)


def _launch(k, x, y, a=2.0, **kw):
    return k((N + 127) // 128, (128,), (N, a, x, y), **kw)


def _want(x, y, a=2.0):
    """a * x + y: `a` a power of two, so that the product is exact and fma or not rounds the same."""
    return (np.float32(a) * x + y).astype(np.float32)


def test_a_hook_sees_the_launch_and_runs_it(saxpy):
    x, y = _data()
    want = _want(x, y)
    seen: list[Launch] = []

    def hook(launch: Launch, proceed):
        seen.append(launch)
        return proceed()

    with launch_hook(hook):
        assert launch_hooks() == (hook,)
        _launch(saxpy, x, y, timeout=30.0)
    assert launch_hooks() == ()
    np.testing.assert_array_equal(y, want)
    (launch,) = seen
    assert launch.kernel is saxpy and launch.grid == 8 and launch.block == (128,) and launch.args[0] == N
    assert (launch.grid_dims, launch.block_dims) == ((8, 1, 1), (128, 1, 1))
    assert launch.timeout == 30.0 and launch.checked is None and not launch.unchecked and launch.stream is None
    _launch(saxpy, x, y)  # removed: not seen
    assert len(seen) == 1


def test_a_hook_changes_or_skips_a_launch(saxpy):
    x, y = _data()
    want = _want(x, y, 4.0)
    with launch_hook(lambda launch, proceed: proceed(launch.replace(args=(N, 4.0, x, y)))):
        _launch(saxpy, x, y)
    np.testing.assert_array_equal(y, want)
    with launch_hook(lambda launch, proceed: "skipped"):
        assert _launch(saxpy, x, y) == "skipped"  # what the hook returns, the launch returns
    np.testing.assert_array_equal(y, want)


def test_hooks_nest_newest_first_and_a_hooks_own_launches_skip_it(saxpy):
    x, y = _data()
    order = []

    def outer(launch, proceed):
        order.append(("outer", launch.args[1]))
        return proceed()

    def inner(launch, proceed):
        order.append(("inner", launch.args[1]))
        scratch = np.zeros(N, np.float32)
        # its own launch: through the hooks below it (outer), never back into itself
        launch.kernel(launch.grid, launch.block, (N, 0.5, x, scratch))
        np.testing.assert_array_equal(scratch, _want(x, np.zeros(N, np.float32), 0.5))
        return proceed()

    with launch_hook(outer), launch_hook(inner):
        assert launch_hooks() == (inner, outer)
        _launch(saxpy, x, y)
    assert order == [("inner", 2.0), ("outer", 0.5), ("outer", 2.0)]


def test_the_same_hook_twice_and_removal_once(saxpy):
    x, y = _data()
    calls = []

    def hook(launch, proceed):
        calls.append(1)
        return proceed()

    remove = add_launch_hook(hook)
    try:
        with launch_hook(hook):
            _launch(saxpy, x, y)
        assert len(calls) == 2 and launch_hooks() == (hook,)
    finally:
        remove()
        remove()  # a second call does nothing
    assert launch_hooks() == ()
    with pytest.raises(TypeError):
        add_launch_hook("not callable")


def test_instrumented_launches_skip_the_hooks(saxpy):
    """ptxjit.trace inside a hook: its probed runs do not come back to the hook."""
    x, y = _data()
    want = _want(x, y)
    seen = []

    def traced(launch, proceed):
        seen.append(launch)
        t = ptxjit.trace(launch.kernel, launch.grid, launch.block, launch.args, records=("blocks",))
        assert sum(t.counts().values()) > 0

    with launch_hook(traced):
        _launch(saxpy, x, y)
        ptxjit.trace(saxpy, 1, 32, (N, 1.0, x, np.zeros(N, np.float32)), records=("blocks",))
    assert len(seen) == 1
    np.testing.assert_array_equal(y, want)


def test_errors_pass_through_and_the_hooks_stay_usable(saxpy):
    x, y = _data()

    def failing(launch, proceed):
        raise RuntimeError("hook failed")

    with launch_hook(failing), pytest.raises(RuntimeError, match="hook failed"):
        _launch(saxpy, x, y)
    assert launch_hooks() == ()
    seen = []
    with launch_hook(lambda launch, proceed: seen.append(1) or proceed()):
        with pytest.raises(ValueError, match="block"):
            saxpy(1, 0, (N, 2.0, x, y))  # the launch's own error, through the hook
        _launch(saxpy, x, y)
    np.testing.assert_array_equal(y, _want(*_data()))
    assert len(seen) == 2


def test_hooks_see_every_threads_launches(saxpy):
    x, _ = _data()
    lock = threading.Lock()
    count = [0]

    def counting(launch, proceed):
        with lock:
            count[0] += 1
        return proceed()

    outs = [np.zeros(N, np.float32) for _ in range(4)]

    def work(out):
        for _ in range(10):
            _launch(saxpy, x, out, a=1.0)

    with launch_hook(counting):
        threads = [threading.Thread(target=work, args=(out,)) for out in outs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert count[0] == 40
    want = np.zeros(N, np.float32)
    for _ in range(10):
        want = x + want
    for out in outs:
        np.testing.assert_array_equal(out, want)
