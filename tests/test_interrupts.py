"""A launch must never take down or hang the process: Ctrl-C, timeouts, deadlocked barriers, named
barriers with thread counts, and spin-waits that need forward progress (Volta+ independent thread
scheduling).  Kernels: tests/data/interrupts.cu (nvcc's PTX next to it).  Ctrl-C runs in child
processes, which must raise KeyboardInterrupt promptly and then launch again correctly."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from tests.subproc_util import sigint_default

DATA = Path(__file__).parent / "data" / "interrupts.ptx"


@pytest.fixture(scope="module")
def mod():
    return ptxjit.Module.from_file(DATA)


@pytest.fixture
def workers():
    """Set the worker count for one test, restoring the default after it."""
    def set_(n):
        ptxjit.set_workers(n)
    yield set_
    ptxjit.set_workers(None)


def _busy_expect(nthreads: int, grid: int, n: int) -> np.ndarray:
    acc = np.tile(np.arange(nthreads, dtype=np.float32), grid)
    for _ in range(n):
        acc = acc * np.float32(0.5) + np.float32(1.0)
    return acc


# ---------------------------------------------------------------- Ctrl-C (child processes)

_CHILD = r"""
import sys, time
import numpy as np
import ptxjit

workers, kernel, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ptxjit.set_workers(workers)
m = ptxjit.Module.from_file(path)
grid = 1 if workers == 1 else 8
if kernel == "spin_until":
    flag = np.ones(1, np.int32)
    out = np.zeros(grid * 64, np.int32)
    k = m.get_function("spin_until")
    k(grid, 64, (flag, out))  # compiles; the flag is set, so it returns at once
    flag[0] = 0
    args = (flag, out)
else:
    out = np.zeros(grid * 64, np.float32)
    k = m.get_function("busy_loop")
    k(grid, 64, (out, np.int64(1)))
    args = (out, np.int64(1 << 62))
m.get_function("busy_loop")(grid, 64, (np.zeros(grid * 64, np.float32), np.int64(1)))
print("READY", flush=True)
try:
    k(grid, 64, args)
    print("RETURNED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", time.monotonic(), flush=True)
# the process and the module still work
out2 = np.zeros(grid * 64, np.float32)
m.get_function("busy_loop")(grid, 64, (out2, np.int64(3)))
acc = np.tile(np.arange(64, dtype=np.float32), grid)
for _ in range(3):
    acc = acc * np.float32(0.5) + np.float32(1.0)
assert np.array_equal(out2, acc), out2
flag2 = np.ones(1, np.int32)
out3 = np.zeros(grid * 64, np.int32)
m.get_function("spin_until")(grid, 64, (flag2, out3))
assert out3.sum() == grid * 64
print("OK", flush=True)
"""


def _readline(p: subprocess.Popen, timeout: float) -> str:
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    if not ready:
        p.kill()
        pytest.fail(f"child produced no output within {timeout} s: {p.communicate()[1]}")
    return p.stdout.readline()


@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery to a child process")
@pytest.mark.parametrize("kernel", ["spin_until", "busy_loop"])
@pytest.mark.parametrize("nworkers", [1, 2])
def test_ctrl_c_stops_launch_and_process_stays_usable(nworkers, kernel):
    p = subprocess.Popen([sys.executable, "-c", _CHILD, str(nworkers), kernel, str(DATA)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    try:
        line = _readline(p, 180)
        assert line.strip() == "READY", (line, p.stderr.read() if p.poll() is not None else "")
        time.sleep(0.3)  # well inside the launch
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, f"child failed ({p.returncode}):\n{out}\n{err}"
    lines = out.split("\n")
    got = [ln for ln in lines if ln.startswith("INTERRUPTED")]
    assert got, f"no KeyboardInterrupt:\n{out}\n{err}"
    latency = float(got[0].split()[1]) - sent
    assert latency < 1.0, f"KeyboardInterrupt {latency:.2f} s after SIGINT"
    assert "OK" in lines, out + err


# ---------------------------------------------------------------- timeouts


@pytest.mark.parametrize("nworkers", [1, 2])
def test_timeout_raises_kernel_timeout(mod, workers, nworkers):
    workers(nworkers)
    out = np.zeros(4 * 64, np.float32)
    k = mod.get_function("busy_loop")
    t0 = time.monotonic()
    with pytest.raises(ptxjit.KernelTimeout) as ei:
        k(4, 64, (out, np.int64(1 << 62)), timeout=0.3)
    elapsed = time.monotonic() - t0
    assert 0.25 < elapsed < 2.0
    assert "busy_loop" in str(ei.value) and "timed out after 0.3" in str(ei.value)
    assert isinstance(ei.value, ptxjit.KernelError) and ei.value.elapsed >= 0.3
    k(4, 64, (out, np.int64(3)))  # the module is still usable
    np.testing.assert_array_equal(out, _busy_expect(64, 4, 3))


def test_timeout_of_spinning_kernel(mod):
    flag = np.zeros(1, np.int32)
    out = np.zeros(2 * 64, np.int32)
    with pytest.raises(ptxjit.KernelTimeout, match="spin_until"):
        mod.get_function("spin_until")(2, 64, (flag, out), timeout=0.3)
    flag[0] = 1
    mod.get_function("spin_until")(2, 64, (flag, out))
    assert out.sum() == 2 * 64


def test_timeout_from_environment(mod, monkeypatch):
    monkeypatch.setenv("PTXJIT_TIMEOUT", "0.3")
    out = np.zeros(64, np.float32)
    with pytest.raises(ptxjit.KernelTimeout):
        mod.get_function("busy_loop")(1, 64, (out, np.int64(1 << 62)))
    mod.get_function("busy_loop")(1, 64, (out, np.int64(2)))  # within the limit
    np.testing.assert_array_equal(out, _busy_expect(64, 1, 2))
    monkeypatch.setenv("PTXJIT_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="PTXJIT_TIMEOUT"):
        mod.get_function("busy_loop")(1, 64, (out, np.int64(2)))


def test_timeout_in_a_worker_thread(mod):
    """A launch from another thread than the main one: the watchdog enforces its timeout too."""
    out = np.zeros(64, np.float32)
    caught: list[BaseException] = []

    def launch():
        try:
            mod.get_function("busy_loop")(1, 64, (out, np.int64(1 << 62)), timeout=0.3)
        except BaseException as e:  # noqa: BLE001 - reported below
            caught.append(e)

    th = threading.Thread(target=launch)
    th.start()
    th.join(10)
    assert not th.is_alive()
    assert len(caught) == 1 and isinstance(caught[0], ptxjit.KernelTimeout)


@pytest.mark.parametrize("bad", [0, -1, "1", True])
def test_timeout_must_be_positive(mod, bad):
    with pytest.raises(ValueError, match="timeout"):
        mod.get_function("busy_loop")(1, 32, (np.zeros(32, np.float32), np.int64(1)), timeout=bad)


# ---------------------------------------------------------------- barriers


def test_named_barrier_with_too_many_threads_deadlocks(mod):
    out = np.zeros(64, np.int32)
    with pytest.raises(ptxjit.KernelDeadlock) as ei:
        mod.get_function("bar_too_many")(1, 64, (out,))
    msg = str(ei.value)
    assert "bar_too_many" in msg and "barrier 1" in msg and "interrupts.ptx:" in msg
    assert "128 threads" in msg and "only 64" in msg
    assert (out == 1).all()  # every thread reached the barrier; none went past it


def test_barrier_missing_threads_deadlocks(mod):
    out = np.zeros(64, np.int32)
    with pytest.raises(ptxjit.KernelDeadlock) as ei:
        mod.get_function("bar_missing")(1, 64, (out,))
    msg = str(ei.value)
    assert "barrier 2" in msg and "waits for 64 threads but only 32 arrived" in msg
    assert "thread (0, 0, 0)" in msg and "32 threads exited" in msg
    assert not out.any()
    busy = np.zeros(64, np.float32)  # the module stays usable after a deadlock
    mod.get_function("busy_loop")(1, 64, (busy, np.int64(2)))
    np.testing.assert_array_equal(busy, _busy_expect(64, 1, 2))


@pytest.mark.parametrize("nworkers", [1, 2])
@pytest.mark.parametrize("iters", [1, 5, 8])
def test_named_barriers_producer_consumer(mod, workers, nworkers, iters):
    workers(nworkers)
    grid = 3
    rng = np.random.default_rng(iters)
    inp = rng.integers(-1000, 1000, iters * 32).astype(np.int32)
    out = np.zeros(iters * 32, np.int32)
    other = np.zeros(32, np.int32)
    # every CTA writes the same values: several CTAs (on several workers) must all get them right
    mod.get_function("prod_cons")(grid, 96, (inp, out, other, np.int32(iters)))
    np.testing.assert_array_equal(out, inp * 2 + np.repeat(np.arange(iters, dtype=np.int32), 32))
    np.testing.assert_array_equal(other, np.arange(32) * 3)


@pytest.mark.parametrize("nthreads", [64, 256])
@pytest.mark.parametrize("iters", [1, 3, 5, 8])
def test_one_barrier_at_two_instructions(mod, nthreads, iters):
    """Odd and even threads wait at different __syncthreads(): each completion releases both
    groups, and a group that loops back to its instruction waits for the next completion."""
    out = np.zeros(nthreads, np.int32)
    mod.get_function("divergent_sync")(2, nthreads, (out, np.int32(iters)))
    t = np.arange(nthreads)
    its = np.arange(iters)[:, None]
    odd = ((t + 1) % nthreads) * 3 + its
    even = 2 * (((t + 5) % nthreads) * 3 + its)
    np.testing.assert_array_equal(out, np.where(t & 1, odd, even).sum(axis=0))


# ---------------------------------------------------------------- forward progress


@pytest.mark.parametrize("nthreads", [64, 128, 1024])
def test_intra_cta_spin_on_later_thread(mod, nthreads):
    out = np.zeros(nthreads + 1, np.int32)
    flag = np.zeros(1, np.int32)
    data = np.zeros(1, np.int32)
    mod.get_function("intra_spin")(1, nthreads, (out, flag, data), timeout=30)
    assert out[0] == 43 and flag[0] == 1 and data[0] == 42
    np.testing.assert_array_equal(out[1:], np.arange(nthreads) * 2)


@pytest.mark.parametrize("nthreads", [64, 256])
def test_intra_cta_spin_on_shared_flag(mod, nthreads):
    out = np.zeros(nthreads + 1, np.int32)
    mod.get_function("intra_spin_shared")(2, nthreads, (out,), timeout=30)
    assert out[0] == 42
    np.testing.assert_array_equal(out[1:], np.arange(nthreads))


@pytest.mark.parametrize("nworkers", [1, 2, 4])
def test_decoupled_lookback_across_ctas(mod, workers, nworkers):
    workers(nworkers)
    nb = 512
    inp = np.random.default_rng(nworkers).integers(-100, 100, nb * 256).astype(np.int32)
    excl = np.zeros(nb, np.int32)
    flags = np.zeros(nb, np.int32)
    incl = np.zeros(nb, np.int32)
    mod.get_function("lookback")(nb, 256, (inp, excl, flags, incl), timeout=60)
    sums = inp.reshape(nb, 256).sum(axis=1)
    np.testing.assert_array_equal(incl, np.cumsum(sums))
    np.testing.assert_array_equal(excl, np.concatenate([[0], np.cumsum(sums)[:-1]]))
    assert flags.all()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_launch_in_forked_child(mod, workers):
    """After fork the child has neither the parent's pool threads nor its watchdog: it starts its
    own, and its signals do not reach the parent's watchdog."""
    workers(2)
    out = np.zeros(4 * 64, np.float32)
    mod.get_function("busy_loop")(4, 64, (out, np.int64(2)), timeout=30)  # pool and watchdog exist
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        code = 1
        try:
            o = np.zeros(4 * 64, np.float32)
            mod.get_function("busy_loop")(4, 64, (o, np.int64(3)), timeout=30)
            code = 0 if np.array_equal(o, _busy_expect(64, 4, 3)) else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    mod.get_function("busy_loop")(4, 64, (out, np.int64(2)))
    np.testing.assert_array_equal(out, _busy_expect(64, 4, 2))


def test_spin_on_a_plain_load():
    """Thread 0 spins on a plain (weak) ld.global of a flag that thread 63 of its CTA sets.  The loop
    writes no memory and the address never changes, so LLVM would hoist the load and spin forever; such
    a load is read again in every iteration, and the spin point lets thread 63 run."""
    from tests.ptxsnip import snippet_kernel

    body = """
    ld.param.u64 %rd1, [flag];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra NOT0;
SPIN:
    ld.global.u32 %r2, [%rd1];
    setp.eq.u32 %p2, %r2, 0;
    @%p2 bra SPIN;
    st.global.u32 [%rd2], %r2;
    bra DONE;
NOT0:
    setp.ne.u32 %p3, %r1, 63;
    @%p3 bra DONE;
    mov.u32 %r3, 7;
    st.global.u32 [%rd1], %r3;
DONE:
"""
    m = ptxjit.Module(snippet_kernel(body, [("u64", "flag"), ("u64", "out")]), "plain_spin.ptx")
    flag = np.zeros(1, np.uint32)
    out = np.zeros(1, np.uint32)
    m.get_function("k")(1, 64, (flag, out), timeout=30)
    assert out[0] == 7 and flag[0] == 7


@pytest.mark.skipif(os.name != "posix" or threading.current_thread() is not threading.main_thread(),
                    reason="the signal wakeup fd is the main thread's")
def test_a_ctrl_c_read_late_does_not_cancel_the_next_launch():
    """A Ctrl-C whose byte the watchdog reads only after the next launch began (a loaded machine: CI saw
    a cooperative launch after an interrupted one interrupted too) belongs to what ran before: the next
    launch must not be cancelled by it, while a Ctrl-C during that launch still is."""
    from ptxjit.lower import abi
    from ptxjit.runtime import watchdog

    # Python's own Ctrl-C handling, as in an interactive program (a test run started in the background
    # without job control inherits SIGINT ignored, and the watchdog then leaves Ctrl-C alone)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        wd = watchdog.get()
        L = np.zeros(abi.L_SIZE, np.int64)
        with wd.lock:  # the watchdog stops at the top of its loop (after the wake-up below)...
            os.write(wd.w, b"\0")
            time.sleep(0.3)
            os.write(wd.w, bytes([signal.SIGINT]))  # ...while a Ctrl-C of the last launch waits in the pipe
            old = wd.enter_main(L)
        try:
            time.sleep(0.3)  # the watchdog runs again
            assert L[abi.L_ERROR] == 0
            os.write(wd.w, bytes([signal.SIGINT]))  # a Ctrl-C during this launch
            deadline = time.monotonic() + 10
            while not L[abi.L_ERROR] and time.monotonic() < deadline:
                time.sleep(0.01)
            assert L[abi.L_ERROR] == abi.ERR_CANCEL
        finally:
            wd.leave_main(old)
    finally:
        signal.signal(signal.SIGINT, previous)
