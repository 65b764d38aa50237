"""CTA barrier forms in region code with spin waits: bar.arrive with and without a matching bar.sync,
more arrivals than the count, bar.red, barrier.sync.aligned with a count, named ids in divergent
code and in loops, register operands, counts that never complete.  Every kernel either computes what
the GPU computes (NumPy references below) or stops with a KernelDeadlock naming the kernel and the
barrier: never a signal.  Each case runs in a child process, so that a crash is a failed test, not a
crashed test run.  Kernels: tests/data/barrier_forms.cu (nvcc's PTX next to it, accepted by ptxas);
the bar.sync -> bar.arrive rewrites of interrupts.ptx below were checked with ptxas -arch=sm_80."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).parent / "data"
THREADS = 64

_CHILD = r"""
import json, sys
import numpy as np
import ptxjit

path, kernel, nout, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
ptxjit.set_workers(1)
m = ptxjit.Module.from_file(path)
k = m.get_function(kernel)
out = np.zeros(nout, np.int32)
args = [out]
for a in extra:
    args.append(np.zeros(1, np.int32) if a == "flag" else a)
try:
    k(1, THREADS, tuple(args), timeout=20.0)
except ptxjit.KernelError as e:
    print(json.dumps({"error": type(e).__name__, "msg": str(e)}))
else:
    print(json.dumps({"out": out.tolist()}))
""".replace("THREADS", str(THREADS))


def _run(path: Path, kernel: str, extra: list, nout: int = THREADS + 1) -> dict:
    """Launch `kernel` (one CTA of 64 threads, out[] zeroed, then `extra` arguments: "flag" is a zeroed
    int32 word) in a child process; its result, or a failure naming the signal that killed it."""
    r = subprocess.run([sys.executable, "-c", _CHILD, str(path), kernel, str(nout), json.dumps(extra)],
                       capture_output=True, text=True, timeout=300)
    if r.returncode < 0:
        pytest.fail(f"{kernel}: the process died of {signal.Signals(-r.returncode).name}")
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _out(res: dict) -> np.ndarray:
    assert "out" in res, res
    return np.array(res["out"], np.int64)


def _handoff_ref(rest: np.ndarray) -> np.ndarray:
    """out[0] = 7 * 6 from the spin wait, then the per-thread values."""
    return np.concatenate([[42], rest])


t = np.arange(THREADS)
lane = t % 32

# kernel, extra launch arguments, the expected out[] (NumPy)
CORRECT = [
    ("arrive_unsynced", [], _handoff_ref(t)),
    ("arrive_surplus", [], _handoff_ref(2 * t)),
    ("arrive_then_sync", ["flag"], np.concatenate([[18], np.where(t < 32, lane, lane * 5 + 1)])),
    ("red_spin", [], _handoff_ref(np.full(THREADS, 10 * np.count_nonzero(t % 3 == 0) + 1))),
    ("divergent_named", ["flag"], np.concatenate([[0], np.where(t < 32, 100 + 31 - t, -t)])),
    ("loop_named_nanosleep", [5], np.concatenate([[0], np.full(THREADS, np.arange(1, 6).sum())])),
    ("aligned_count", ["flag"], np.concatenate([[0], (THREADS - 1 - t) * 3])),
    ("register_operands", ["flag", 1, 64], np.concatenate([[1], np.where(t < 32, 0, lane + 11)])),
]


@pytest.mark.parametrize("kernel,extra,expect", CORRECT, ids=[c[0] for c in CORRECT])
def test_barrier_form_runs_correctly(kernel, extra, expect):
    np.testing.assert_array_equal(_out(_run(DATA / "barrier_forms.ptx", kernel, extra)), expect)


@pytest.mark.parametrize("kernel,need", [("count_never_completes", "64 threads but only 32 arrived"),
                                         ("arrive_short", "96 threads but the block has only 64")])
def test_barrier_that_never_completes_is_a_deadlock(kernel, need):
    res = _run(DATA / "barrier_forms.ptx", kernel, ["flag"])
    assert res.get("error") == "KernelDeadlock", res
    assert f"kernel '{kernel}'" in res["msg"] and "barrier 1 at " in res["msg"] and need in res["msg"], res


def _intra_spin_shared(line: int, form: str) -> str:
    """interrupts.ptx with only its kernel intra_spin_shared, whose `line`-th bar.sync (0 or 1) is `form`."""
    text = (DATA / "interrupts.ptx").read_text()
    header = text[:text.index(".visible .entry")]
    body = re.search(r"\.visible \.entry intra_spin_shared\(.*?\n}\n", text, re.S).group(0)
    syncs = [m.start() for m in re.finditer(r"bar\.sync \t0;", body)]
    at = syncs[line]
    return header + body[:at] + form + body[at + len("bar.sync \t0;"):]


# the first or the second of the kernel's two __syncthreads() made an arrive on another id or on id 0,
# with a count below, equal to and above the CTA's threads
ARRIVES = [(0, "bar.arrive 1, 64;"), (0, "bar.arrive 2, 32;"), (1, "bar.arrive 0, 32;"), (1, "bar.arrive 0, 64;"),
           (1, "bar.arrive 0, 256;"), (1, "bar.arrive 3, 64;")]


@pytest.mark.parametrize("line,form", ARRIVES, ids=[f"{k}-{f[11:-1].replace(', ', '-')}" for k, f in ARRIVES])
def test_sync_made_arrive_in_spin_kernel(line, form):
    """Thread 0 spins on a shared flag the last thread sets; one barrier became bar.arrive.  The second
    one (after the spin): the spin still ends on the GPU, and every thread writes out[t + 1] = t.  The
    first one: thread 0's flag = 0 now races with the setter's flag = 1, so the GPU may also spin
    forever, which ptxjit reports as an error of the kernel; either way the process lives."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "k.ptx"
        p.write_text(_intra_spin_shared(line, form))
        res = _run(p, "intra_spin_shared", [], nout=THREADS + 1)
    if line == 0 and "error" in res:
        assert "intra_spin_shared" in res["msg"], res
        return
    np.testing.assert_array_equal(_out(res)[1:], t)
