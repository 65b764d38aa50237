"""Streams, events, host callbacks, async copies and graphs (ptxjit/streams), on nvcc's PTX of
examples/demo_kernels.cu (saxpy), tests/data/interrupts.cu (busy_loop) and tests/data/errors.cu
(trap_at); every result is compared with NumPy.  Concurrency is checked through timestamps (batch
intervals that overlap), never through speed."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.streams import scheduler
from tests.subproc_util import sigint_default

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo_kernels.ptx"
INTERRUPTS = Path(__file__).parent / "data" / "interrupts.ptx"
ERRORS = Path(__file__).parent / "data" / "errors.ptx"


@pytest.fixture(scope="module")
def saxpy():
    return ptxjit.Module.from_file(DEMO).get_function("saxpy")


@pytest.fixture(scope="module")
def busy():
    return ptxjit.Module.from_file(INTERRUPTS).get_function("busy_loop")


def _busy_expect(nthreads: int, grid: int, n: int) -> np.ndarray:
    acc = np.tile(np.arange(nthreads, dtype=np.float32), grid)
    for _ in range(n):
        acc = acc * np.float32(0.5) + np.float32(1.0)
    return acc


def _ax(saxpy, s, a: float, x: np.ndarray, y: np.ndarray) -> None:
    """y = a * x + y on stream s (small integers: exact in float32, whatever the rounding)."""
    n = x.size
    saxpy((n + 127) // 128, 128, (np.int32(n), np.float32(a), x, y), stream=s)


# ---------------------------------------------------------------- ordering


def test_dependent_chain_on_one_stream(saxpy):
    n = 3000
    x = (np.arange(n) % 7).astype(np.float32)
    y = np.ones(n, np.float32)
    ex, ey = x.copy(), y.copy()
    s = ptxjit.Stream()
    for _ in range(10):  # y = 2x + y; x = y: the order of every step matters
        _ax(saxpy, s, 2.0, x, y)
        ptxjit.copy_async(x, y, stream=s)
        ey = 2 * ex + ey
        ex = ey.copy()
    s.synchronize()
    assert s.query()
    np.testing.assert_array_equal(y, ey)
    np.testing.assert_array_equal(x, ex)


def test_launch_returns_before_the_kernel_ends(busy):
    out = np.zeros(64, np.float32)
    s = ptxjit.Stream()
    busy(1, 64, (out, np.int64(3)), stream=s)  # compiled and timed once
    s.synchronize()
    t0 = time.perf_counter()
    busy(1, 64, (out, np.int64(1_000_000)), stream=s)
    queued = time.perf_counter() - t0
    done_at_once = s.query()
    s.synchronize()
    assert not done_at_once or queued < 0.05
    np.testing.assert_array_equal(out, _busy_expect(64, 1, 1_000_000))


# ---------------------------------------------------------------- events


def test_event_query_synchronize_and_elapsed_time(saxpy, busy):
    out = np.zeros(2 * 64, np.float32)
    s = ptxjit.Stream()
    e0, e1 = ptxjit.Event(), ptxjit.Event()
    assert e0.query()  # never recorded: complete
    e0.record(s)
    busy(2, 64, (out, np.int64(300_000)), stream=s)
    e1.record(s)
    e1.synchronize()
    assert e0.query() and e1.query()
    ms = ptxjit.get_elapsed_time(e0, e1)
    assert ms > 0
    np.testing.assert_array_equal(out, _busy_expect(64, 2, 300_000))
    with pytest.raises(ValueError, match="never recorded"):
        ptxjit.get_elapsed_time(ptxjit.Event(), e1)
    with pytest.raises(ValueError, match="disable_timing"):
        ptxjit.get_elapsed_time(e0, ptxjit.Event(disable_timing=True))


def test_wait_event_orders_work_across_streams(busy):
    out = np.zeros(64, np.float32)
    dst = np.full(64, -1, np.float32)
    s1, s2 = ptxjit.Stream(non_blocking=True), ptxjit.Stream(non_blocking=True)
    e = ptxjit.Event()
    busy(1, 64, (out, np.int64(500_000)), stream=s1)
    e.record(s1)
    s2.wait_event(e)
    ptxjit.copy_async(dst, out, stream=s2)  # must see the kernel's result
    s2.synchronize()
    np.testing.assert_array_equal(dst, _busy_expect(64, 1, 500_000))
    s1.synchronize()


def test_legacy_default_stream_waits_for_blocking_streams(saxpy, busy):
    out = np.zeros(64, np.float32)
    dst = np.zeros(64, np.float32)
    s = ptxjit.Stream()
    busy(1, 64, (out, np.int64(500_000)), stream=s)
    ptxjit.copy_async(dst, out, stream=ptxjit.Stream.null)  # after s's kernel
    ptxjit.Stream.null.synchronize()
    np.testing.assert_array_equal(dst, _busy_expect(64, 1, 500_000))
    busy(1, 64, (out, np.int64(300_000)), stream=s)
    ptxjit.Stream.null.synchronize()  # nothing on the legacy stream: it waits for the blocking ones
    assert s.query()
    np.testing.assert_array_equal(out, _busy_expect(64, 1, 300_000))
    # a synchronous launch (no stream=) runs on the legacy stream too: it sees s's results
    out2 = np.zeros(64, np.float32)
    y = np.ones(64, np.float32)
    busy(1, 64, (out2, np.int64(500_000)), stream=s)
    saxpy(1, 64, (np.int32(64), np.float32(2.0), out2, y))
    np.testing.assert_array_equal(y, 2 * _busy_expect(64, 1, 500_000) + 1)
    # and work of a blocking stream enqueued after legacy-stream work waits for it
    z = np.zeros(64, np.float32)
    busy(1, 64, (out, np.int64(400_000)), stream=ptxjit.Stream.null)
    ptxjit.copy_async(z, out, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(z, _busy_expect(64, 1, 400_000))


# ---------------------------------------------------------------- concurrency


def test_two_streams_run_concurrently(busy):
    if scheduler.get_scheduler().nworkers < 2:
        pytest.skip("needs two workers")
    n = 400_000
    outs = [np.zeros(64, np.float32) for _ in range(2)]
    streams = [ptxjit.Stream(non_blocking=True) for _ in range(2)]
    busy(1, 64, (outs[0], np.int64(1)), stream=streams[0])  # compile first
    ptxjit.synchronize()
    sched = scheduler.get_scheduler()
    sched.trace = []
    try:
        for s, o in zip(streams, outs, strict=True):
            busy(1, 64, (o, np.int64(n)), stream=s)  # one CTA each: half of a two-worker machine
        ptxjit.synchronize()
        spans = list(sched.trace)
    finally:
        sched.trace = None
    for o in outs:
        np.testing.assert_array_equal(o, _busy_expect(64, 1, n))
    assert len(spans) == 2 and spans[0][2] != spans[1][2]
    (w0, _, _, a0, a1), (w1, _, _, b0, b1) = spans
    assert w0 != w1 and max(a0, b0) < min(a1, b1), spans  # the two kernels' batches overlapped in time


def test_more_urgent_priority_is_served_first(busy):
    """Batches of a launch on a priority -1 stream are taken before the remaining batches of a long
    priority 0 launch enqueued earlier: it completes first."""
    n = 60_000
    low_out, high_out = np.zeros(40 * 64, np.float32), np.zeros(2 * 64, np.float32)
    low, high = ptxjit.Stream(priority=0, non_blocking=True), ptxjit.Stream(priority=-1, non_blocking=True)
    busy(4, 64, (low_out, np.int64(n)), stream=low)  # the cost of a CTA is known: batches of ~1 CTA
    low.synchronize()
    e_low, e_high = ptxjit.Event(), ptxjit.Event()
    busy(40, 64, (low_out, np.int64(n)), stream=low)
    e_low.record(low)
    busy(2, 64, (high_out, np.int64(n)), stream=high)
    e_high.record(high)
    e_low.synchronize()
    e_high.synchronize()
    assert ptxjit.get_elapsed_time(e_high, e_low) > 0  # the urgent launch ended first
    np.testing.assert_array_equal(low_out, _busy_expect(64, 40, n))
    np.testing.assert_array_equal(high_out, _busy_expect(64, 2, n))


def test_instrumented_launch_refuses_a_stream(saxpy):
    class Probes:
        spec = None
        table = None

    with pytest.raises(ValueError, match="stream"):
        saxpy(1, 32, (np.int32(32), np.float32(1), np.ones(32, np.float32), np.ones(32, np.float32)),
              probes=Probes(), stream=ptxjit.Stream())


# ---------------------------------------------------------------- host functions, copies, graphs


def test_host_callbacks_run_in_stream_order(saxpy):
    n = 256
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    seen: list[tuple[int, float]] = []
    s = ptxjit.Stream()
    for i in range(5):
        _ax(saxpy, s, 1.0, x, y)
        s.launch_host_func(lambda i_: seen.append((i_, float(y[0]))), i)
    s.synchronize()
    assert seen == [(i, float(i + 1)) for i in range(5)]


def test_synchronous_launch_inside_a_host_function(saxpy):
    """A host function that launches synchronously (CUDA forbids it) must not wait for its own stream."""
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    s = ptxjit.Stream()
    _ax(saxpy, s, 1.0, x, y)
    s.launch_host_func(lambda _: saxpy(1, 64, (np.int32(64), np.float32(2.0), x, y)), None)
    _ax(saxpy, s, 4.0, x, y)
    s.synchronize()
    np.testing.assert_array_equal(y, np.full(64, 7, np.float32))


def test_copy_async_checks_and_device_arrays():
    a = ptxjit.to_device(np.arange(10, dtype=np.int32))
    b = ptxjit.zeros(10, np.int32)
    s = ptxjit.Stream()
    ptxjit.copy_async(b, a, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(b.copy_to_host() if hasattr(b, "copy_to_host") else b.array, np.arange(10))
    with pytest.raises(ValueError, match="bytes"):
        ptxjit.copy_async(np.zeros(3, np.int32), np.zeros(4, np.int32), stream=s)
    with pytest.raises(TypeError):
        ptxjit.copy_async([1, 2], np.zeros(2), stream=s)


def test_graph_replay_equals_eager(saxpy):
    n = 1000
    x0 = (np.arange(n) % 5).astype(np.float32)
    x, y = x0.copy(), np.ones(n, np.float32)
    s = ptxjit.Stream()
    with s.capture() as g:
        _ax(saxpy, s, 2.0, x, y)
        ptxjit.copy_async(x, y, stream=s)
        _ax(saxpy, s, -1.0, x, y)
    assert len(g) == 3
    np.testing.assert_array_equal(x, x0)  # capturing runs nothing
    g.launch(s)
    g.launch(s)
    s.synchronize()
    ex, ey = x0.copy(), np.ones(n, np.float32)
    for _ in range(2):
        ey = 2 * ex + ey
        ex = ey.copy()
        ey = -ex + ey
    np.testing.assert_array_equal(x, ex)
    np.testing.assert_array_equal(y, ey)
    with pytest.raises(RuntimeError, match="legacy"):
        with ptxjit.Stream.null.capture():
            pass


# ---------------------------------------------------------------- errors


def test_trap_raised_at_synchronize_naming_the_kernel(saxpy):
    k = ptxjit.Module.from_file(ERRORS).get_function("trap_at")
    out = np.zeros(4 * 64, np.int32)
    s = ptxjit.Stream()
    k(4, 64, (out, 2, 17), stream=s)  # returns: the error comes at synchronization
    with pytest.raises(ptxjit.KernelTrap) as ei:
        s.synchronize()
    assert ei.value.kernel == "trap_at" and ei.value.cta == (2, 0, 0) and "trap_at" in str(ei.value)
    s.synchronize()  # raised once: no longer sticky
    # through an event, and through ptxjit.synchronize()
    e = ptxjit.Event()
    k(4, 64, (out, 1, 3), stream=s)
    e.record(s)
    with pytest.raises(ptxjit.KernelTrap, match="trap_at"):
        e.synchronize()
    k(4, 64, (out, 0, 0), stream=s)
    with pytest.raises(ptxjit.KernelTrap, match="trap_at"):
        ptxjit.synchronize()
    ptxjit.synchronize()
    # the stream works on
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    _ax(saxpy, s, 3.0, x, y)
    s.synchronize()
    np.testing.assert_array_equal(y, np.full(64, 3, np.float32))


def test_fault_timeout_and_deadlock_raised_at_synchronize(saxpy, busy):
    x, y = np.ones(100, np.float32), np.zeros(100, np.float32)
    s = ptxjit.Stream()
    saxpy(2, 128, (np.int32(256), np.float32(1.0), x, y), stream=s)  # n past the arrays' end
    with pytest.raises(ptxjit.KernelFault, match="saxpy"):
        s.synchronize()
    out = np.zeros(64, np.float32)
    busy(1, 64, (out, np.int64(1 << 62)), stream=s, timeout=0.3)
    with pytest.raises(ptxjit.KernelTimeout, match="busy_loop"):
        s.synchronize()
    bar = ptxjit.Module.from_file(INTERRUPTS).get_function("bar_too_many")
    flags = np.zeros(64, np.int32)
    bar(1, 64, (flags,), stream=s)
    with pytest.raises(ptxjit.KernelDeadlock, match="bar_too_many"):
        s.synchronize()
    assert (flags == 1).all()  # every thread reached the barrier, none went past it


# ---------------------------------------------------------------- stress


def test_thousands_of_launches_over_four_streams_keep_order(saxpy):
    """Per stream, alternating y = x + y and x = y - x... : a swapped or lost launch changes the result
    (the steps form a rotation of order 6 on small integers: exact, bounded)."""
    n, per_stream, nstreams = 128, 500, 4
    streams = [ptxjit.Stream(priority=i % 2) for i in range(nstreams)]
    xs = [np.full(n, i + 1, np.float32) for i in range(nstreams)]
    ys = [np.full(n, 2 * i - 3, np.float32) for i in range(nstreams)]
    expect = [(float(x[0]), float(y[0])) for x, y in zip(xs, ys, strict=True)]
    for step in range(per_stream):
        for i, s in enumerate(streams):
            if (step + i) % 2:  # a per-stream phase: streams differ
                _ax(saxpy, s, 1.0, xs[i], ys[i])
            else:
                _ax(saxpy, s, -1.0, ys[i], xs[i])
    for i in range(nstreams):
        ex, ey = expect[i]
        for step in range(per_stream):
            if (step + i) % 2:
                ey = ex + ey
            else:
                ex = -ey + ex
        expect[i] = (ex, ey)
    ptxjit.synchronize()
    for i in range(nstreams):
        np.testing.assert_array_equal(xs[i], np.full(n, expect[i][0], np.float32))
        np.testing.assert_array_equal(ys[i], np.full(n, expect[i][1], np.float32))
        assert streams[i].query()


def test_threads_enqueueing_onto_one_stream_lose_nothing(saxpy):
    """Four Python threads launch y += 1 onto one shared stream at once (and each its own chain)."""
    import threading

    n, per = 64, 200
    shared = ptxjit.Stream()
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    own = [np.zeros(n, np.float32) for _ in range(4)]

    def body(i: int) -> None:
        s = ptxjit.Stream(non_blocking=True)
        for _ in range(per):
            _ax(saxpy, shared, 1.0, x, y)
            _ax(saxpy, s, 2.0, x, own[i])
        s.synchronize()

    threads = [threading.Thread(target=body, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    shared.synchronize()
    np.testing.assert_array_equal(y, np.full(n, 4 * per, np.float32))
    for o in own:
        np.testing.assert_array_equal(o, np.full(n, 2 * per, np.float32))


# ---------------------------------------------------------------- Ctrl-C and exit (child processes)

_CHILD = r"""
import sys, time
import numpy as np
import ptxjit

mode, path = sys.argv[1], sys.argv[2]
k = ptxjit.Module.from_file(path).get_function("busy_loop")
out = np.zeros(4 * 64, np.float32)
k(4, 64, (out, np.int64(1)))
s = ptxjit.Stream()
for _ in range(3):
    k(4, 64, (out, np.int64(1 << 62)), stream=s)
print("READY", flush=True)
if mode == "exit":
    sys.exit(0)  # outstanding work: atexit cancels it
try:
    s.synchronize()
    print("RETURNED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", time.monotonic(), flush=True)
out2 = np.zeros(2 * 64, np.float32)
k(2, 64, (out2, np.int64(3)), stream=s)
s.synchronize()
acc = np.tile(np.arange(64, dtype=np.float32), 2)
for _ in range(3):
    acc = acc * np.float32(0.5) + np.float32(1.0)
assert np.array_equal(out2, acc), out2
print("OK", flush=True)
"""


def _run_child(mode: str) -> tuple[subprocess.Popen, float]:
    p = subprocess.Popen([sys.executable, "-c", _CHILD, mode, str(INTERRUPTS)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    ready, _, _ = select.select([p.stdout], [], [], 180)
    if not ready:
        p.kill()
        pytest.fail(f"child produced no output: {p.communicate()[1]}")
    line = p.stdout.readline()
    assert line.strip() == "READY", (line, p.stderr.read() if p.poll() is not None else "")
    return p, time.monotonic()


@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery to a child process")
def test_ctrl_c_in_synchronize_cancels_the_stream():
    p, _ = _run_child("sigint")
    try:
        time.sleep(0.3)
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, f"child failed ({p.returncode}):\n{out}\n{err}"
    got = [ln for ln in out.split("\n") if ln.startswith("INTERRUPTED")]
    assert got, out + err
    assert float(got[0].split()[1]) - sent < 1.0
    assert "OK" in out.split("\n"), out + err


def test_exit_with_outstanding_work_does_not_crash():
    p, t0 = _run_child("exit")
    try:
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, f"child failed ({p.returncode}):\n{out}\n{err}"
    assert time.monotonic() - t0 < 30
