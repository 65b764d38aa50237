"""ptxjit.check / `ptxjit check` / PTXJIT_CHECK (src/ptxjit/checking): compute-sanitizer's tools on the CPU.

The corpus (tests/data/check/*.cu, compiled by regen.sh with nvcc -lineinfo; the tests read only the PTX)
has one planted bug per kernel, marked in the .cu by a `// BUG: <kind>` comment on its line (and, for
races, `// PEER` on the other access's line), and clean controls.  Expected lines come from those
markers, expected threads and addresses from the kernels' code read by hand, never from the checker.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.checking import TOOLS, Report, empty, format_reports, mark_initialized

DATA = Path(__file__).parent / "data" / "check"
BENCH = Path(__file__).parent.parent / "bench" / "kernels" / "ptx"
ROOT = Path(__file__).parent.parent


def kernel(name: str, fn: str | None = None) -> ptxjit.Kernel:
    return ptxjit.Module.from_file(DATA / f"{name}.ptx").get_function(fn or name)


def marker(name: str, tag: str) -> int:
    """The 1-based line of the .cu that carries the marker comment `// <tag>`."""
    lines = (DATA / f"{name}.cu").read_text().splitlines()
    hits = [i + 1 for i, ln in enumerate(lines) if re.search(rf"//\s*{re.escape(tag)}\b", ln)]
    assert len(hits) == 1, (name, tag, hits)
    return hits[0]


def bug_kind(name: str) -> str:
    m = re.search(r"//\s*BUG: ([a-zA-Z -]+?)\s*$", (DATA / f"{name}.cu").read_text(), re.M)
    assert m, name
    return m.group(1)


# (file, grid, block, args) of each buggy kernel; the tool that must find it
def _oob_global():
    return (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), 64)


def _ballot_input() -> np.ndarray:
    return (np.arange(64) % 5 - 1).astype(np.int32)  # -1, 0, 1, 2, 3, ...: v > 0 and v >= 0 differ


def _tile_words(n: int) -> np.ndarray:
    """n b32 words of distinct b16 halves (k + 1, k + 2 in word k)."""
    k = np.arange(n, dtype=np.uint32)
    return (k + 1) | (k + 2) << 16


def _wmma_inputs() -> tuple[np.ndarray, np.ndarray]:
    """A (row-major) and B (column-major: B^T row-major) of a 16x16x16 half product, small integers (exact)."""
    rng = np.random.default_rng(11)
    return rng.integers(-3, 4, (16, 16)).astype(np.float16), rng.integers(-3, 4, (16, 16)).astype(np.float16)


BUGGY = {
    "oob_global": ("memcheck", 1, 64, _oob_global),
    "oob_shared": ("memcheck", 1, 64, lambda: (np.zeros(64, np.float32),)),
    "oob_local": ("memcheck", 1, 32, lambda: (np.where(np.arange(32) == 5, 4000, 0).astype(np.int32),
                                              np.zeros(32, np.int32))),
    "misaligned": ("memcheck", 1, 32, lambda: (np.zeros(256, np.uint8), np.zeros(32, np.float32))),
    "race_shared_raw": ("racecheck", 1, 128, lambda: (np.ones(128, np.float32), np.zeros(128, np.float32))),
    "race_shared_war": ("racecheck", 1, 128, lambda: (np.ones(128, np.float32),)),
    "race_shared_waw": ("racecheck", 2, 64, lambda: (np.ones(128, np.int32), np.zeros(2, np.int32))),
    "race_global_cta": ("racecheck", 2, 64, lambda: (np.zeros(128, np.float32), np.zeros(128, np.float32))),
    "race_global_grid": ("racecheck", 2, 64, lambda: (np.zeros(128, np.float32), np.zeros(128, np.float32))),
    "sync_divergent": ("synccheck", 1, 64, lambda: (np.zeros(64, np.float32),)),
    "sync_count": ("synccheck", 1, 96, lambda: (np.zeros(96, np.float32),)),
    "sync_warp_mask": ("synccheck", 1, 64, lambda: (np.arange(64, dtype=np.int32), np.zeros(64, np.int32))),
    # member masks computed at run time: a parameter naming lanes that returned, a ballot of another subset
    "sync_mask_param": ("synccheck", 1, 64, lambda: (np.arange(64, dtype=np.int32), np.zeros(64, np.int32),
                                                     np.uint32(0xFFFFFFFF), 16)),
    "sync_ballot_mask": ("synccheck", 1, 64, lambda: (_ballot_input(), np.zeros(64, np.int32), 0)),
    # matrix moves and bulk copies: each lane's ldmatrix row, the issuing thread's bulk byte range
    "race_ldmatrix": ("racecheck", 1, 64, lambda: (_tile_words(32), np.zeros(32, np.uint32), 0)),
    "race_bulk_store": ("racecheck", 1, 64, lambda: (_tile_words(64), np.zeros(64, np.uint32), 0)),
    "init_ldmatrix": ("initcheck", 1, 32, lambda: (_tile_words(32), np.zeros(32, np.uint32))),
    "race_wmma": ("racecheck", 1, 64, lambda: (*_wmma_inputs(), np.zeros((16, 16), np.float32), 0)),
    "init_shared": ("initcheck", 1, 128, lambda: (np.zeros(128, np.float32),)),
    "init_local": ("initcheck", 1, 32, lambda: (np.arange(32, dtype=np.int32), np.zeros(32, np.int32))),
}
KINDS = {"out-of-bounds": "out-of-bounds", "misaligned": "misaligned", "race RAW": "race RAW",
         "race WAR": "race WAR", "race WAW": "race WAW", "divergent barrier": "divergent barrier",
         "barrier count mismatch": "barrier count mismatch", "warp collective mask": "warp collective mask",
         "uninitialized read": "uninitialized read"}


@pytest.mark.parametrize("name", sorted(BUGGY))
def test_each_bug_reported_once_at_its_line(name):
    tool, grid, block, make = BUGGY[name]
    reports = ptxjit.check(kernel(name), grid, block, make(), tools=TOOLS)  # every tool: still one report
    assert len(reports) == 1, format_reports(reports)
    r = reports[0]
    assert isinstance(r, Report)
    assert r.tool == tool and r.kind == KINDS[bug_kind(name)]
    assert r.source == (f"{name}.cu", marker(name, "BUG"))
    assert r.kernel == name and r.ptx_line is not None
    assert r.warp == (r.thread[0] + block * r.thread[1]) // 32 and r.lane == r.thread[0] % 32
    if r.kind.startswith("race"):
        peer = marker(name, "BUG") if r.kind == "race WAW" else marker(name, "PEER")
        assert r.other is not None and r.other.source == (f"{name}.cu", peer)
        assert (r.other.thread, r.other.cta) != (r.thread, r.cta)
    # the tool alone finds it too
    assert [x.kind for x in ptxjit.check(kernel(name), grid, block, make(), tools=(tool,))] == [r.kind]


def test_out_of_bounds_details():
    a, out, n = _oob_global()
    (r,) = ptxjit.check(kernel("oob_global"), 1, 64, (a, out, n))
    # thread 63 (i = n - 1) reads in[64]: 256 bytes past the start of `in`
    assert r.thread == (63, 0, 0) and r.cta == (0, 0, 0) and r.warp == 1 and r.lane == 31
    assert r.address == a.ctypes.data + 256 and r.size == 4 and r.space == "global" and r.access == "read"
    text = r.format()
    assert text.splitlines()[0] == "========= Invalid __global__ read of size 4 bytes"
    assert "=========     at oob_global in oob_global.cu:5 (PTX " in text
    assert "=========     by thread (63,0,0) in block (0,0,0)" in text
    assert all(ln.startswith("=========") for ln in text.splitlines())


def test_local_read_far_past_its_end():
    (r,) = ptxjit.check(kernel("oob_local"), 1, 32, BUGGY["oob_local"][3]())
    assert r.thread == (5, 0, 0) and r.space == "local" and r.access == "read"  # idx[5] = 4000


def test_shared_write_past_the_tile():
    out = np.zeros(64, np.float32)
    (r,) = ptxjit.check(kernel("oob_shared"), 1, 64, (out,))
    assert r.thread == (63, 0, 0) and r.space == "shared" and r.access == "write" and r.address == 256


def test_misaligned_folds_every_thread_into_one_report():
    raw, out = np.zeros(256, np.uint8), np.zeros(32, np.float32)
    (r,) = ptxjit.check(kernel("misaligned"), 1, 32, (raw, out))
    assert r.count == 32 and r.thread == (0, 0, 0) and r.address == raw.ctypes.data + 2 and r.size == 4


def test_uninitialized_shared_and_local_counts():
    (r,) = ptxjit.check(kernel("init_shared"), 1, 128, (np.zeros(128, np.float32),), tools=("initcheck",))
    assert r.count == 64 and r.thread == (64, 0, 0) and r.space == "shared" and r.address == 256
    (r,) = ptxjit.check(kernel("init_local"), 1, 32, BUGGY["init_local"][3](), tools=("initcheck",))
    assert r.count == 16 and r.thread == (16, 0, 0) and r.space == "local"  # buf[16..31] never written


def test_uninitialized_global_buffer_across_launches():
    n = 1000
    buf = empty(n, np.float32)
    out = np.zeros(n, np.float32)
    assert ptxjit.check(kernel("init_global", "fill_half"), 4, 256, (buf, n), tools=("initcheck",)) == []
    (r,) = ptxjit.check(kernel("init_global", "scale"), 4, 256, (buf, out, n), tools=("initcheck",))
    assert r.source == ("init_global.cu", marker("init_global", "BUG")) and r.count == n - n // 2
    assert r.thread == (244, 0, 0) and r.cta == (1, 0, 0)  # i = 500 = 256 + 244: the first unwritten element
    assert r.address == buf.ptr + 4 * (n // 2)
    np.testing.assert_array_equal(out[: n // 2], 2 * np.arange(n // 2, dtype=np.float32))
    mark_initialized(buf)  # e.g. the host filled it
    assert ptxjit.check(kernel("init_global", "scale"), 4, 256, (buf, out, n), tools=("initcheck",)) == []
    # a plain NumPy array is initialized memory: nothing to report
    assert ptxjit.check(kernel("init_global", "scale"), 4, 256, (np.ones(n, np.float32), out, n),
                        tools=("initcheck",)) == []


def test_ptxjit_empty_buffers_are_uninitialized():
    """ptxjit.empty (cudaMalloc) marks its DeviceArray `uninitialized`: tracked from its first checked
    launch on; ptxjit.zeros is initialized memory."""
    n = 256
    assert ptxjit.check(kernel("init_global", "scale"), 1, 256, (ptxjit.zeros(n, np.float32), np.zeros(n, np.float32),
                                                                  n), tools=("initcheck",)) == []
    buf = ptxjit.empty(n, np.float32)
    assert buf.uninitialized
    (r,) = ptxjit.check(kernel("init_global", "scale"), 1, 256, (buf, np.zeros(n, np.float32), n),
                        tools=("initcheck",))
    assert r.kind == "uninitialized read" and r.count == n and r.thread == (0, 0, 0)


def test_race_inside_one_warp_without_syncwarp():
    """One warp, no __syncwarp(): lanes are not lockstep since Volta, so the hazard is reported."""
    (r,) = ptxjit.check(kernel("race_shared_raw"), 1, 32, (np.ones(32, np.float32), np.zeros(32, np.float32)),
                        tools=("racecheck",))
    assert r.kind == "race RAW" and r.warp == 0 and r.other.warp == 0


def test_warp_collective_mask_names_the_missing_lanes():
    """A full-mask shuffle only lanes 0-15 of each warp execute; the source line is the user's, where the
    intrinsic from sm_30_intrinsics.hpp was inlined (`.loc ... inlined_at`)."""
    (r,) = ptxjit.check(kernel("sync_warp_mask"), 1, 64, BUGGY["sync_warp_mask"][3](), tools=("synccheck",))
    assert r.count == 2 and "lanes 16-31" in r.detail and r.source == ("sync_warp_mask.cu", 7)


def test_runtime_masks_name_the_lanes():
    """The mask's value at run time against the lanes at the same collective, once per bad warp."""
    (r,) = ptxjit.check(kernel("sync_mask_param"), 1, 64, BUGGY["sync_mask_param"][3](), tools=("synccheck",))
    assert r.count == 2 and "0xffffffff" in r.detail and "lanes 16-31 it names do not execute it" in r.detail
    (r,) = ptxjit.check(kernel("sync_ballot_mask"), 1, 64, BUGGY["sync_ballot_mask"][3](), tools=("synccheck",))
    # warp 0: v == 0 at lanes 1, 6, ..., 31 (t % 5 == 1): they reduce without being in the ballot
    assert r.count == 2 and "lanes 1,6,11,16,21,26,31 execute it without being named" in r.detail
    assert r.warp == 0 and r.lane == 1 and r.thread == (1, 0, 0)  # the first of them


def _warp_reduce(v: np.ndarray, members: np.ndarray, op) -> np.ndarray:
    """Per lane: op over the lanes of its warp in `members`."""
    out = np.zeros_like(v)
    for w in range(len(v) // 32):
        sl = slice(32 * w, 32 * w + 32)
        out[sl] = op(v[sl][members[sl]]) if members[sl].any() else 0
    return out


def test_runtime_mask_controls_are_clean():
    """Masks equal to the arriving lanes: a parameter naming exactly the lanes that stay, the ballot of the
    branch's own condition, `__activemask()`; results as a GPU computes them (NumPy reference)."""
    x = np.arange(64, dtype=np.int32)
    out = np.zeros(64, np.int32)
    assert ptxjit.check(kernel("sync_mask_param"), 1, 64, (x, out, np.uint32(0xFFFF), 16), tools=TOOLS) == []
    stay = x % 32 < 16
    np.testing.assert_array_equal(out[stay], (x + (x ^ 1))[stay])
    v, out = _ballot_input(), np.zeros(64, np.int32)
    assert ptxjit.check(kernel("sync_ballot_mask"), 1, 64, (v, out, 1), tools=TOOLS) == []
    np.testing.assert_array_equal(out, np.where(v > 0, _warp_reduce(v, v > 0, np.sum), v))
    v, out = np.random.default_rng(5).integers(0, 100, 64).astype(np.int32), np.zeros(64, np.int32)
    assert ptxjit.check(kernel("clean_active_mask"), 1, 64, (v, out), tools=TOOLS) == []
    taken = v % 3 != 0
    want = _warp_reduce(v, taken, np.sum) + _warp_reduce(v, taken, np.max)
    np.testing.assert_array_equal(out, np.where(taken, want, v))


def test_tensor_access_controls_are_clean():
    """With the barrier (or a whole tile staged) the same kernels report nothing and compute what a GPU
    does: ldmatrix .x1 gives lane l the b32 word l of the 8x8 b16 tile (its row l / 4, columns 2(l % 4)
    and 2(l % 4) + 1), stmatrix stores the same layout, and the bulk copies move their bytes."""
    w = _tile_words(64)
    out = np.zeros(32, np.uint32)
    assert ptxjit.check(kernel("race_ldmatrix"), 1, 64, (w[:32].copy(), out, 1), tools=TOOLS) == []
    np.testing.assert_array_equal(out, w[:32])
    out = np.zeros(32, np.uint32)
    assert ptxjit.check(kernel("clean_stmatrix"), 1, 64, (w[:32].copy(), out), tools=TOOLS) == []
    np.testing.assert_array_equal(out, w[:32])  # without stmatrix's probe: 32 uninitialized reads
    out = np.zeros(64, np.uint32)
    assert ptxjit.check(kernel("race_bulk_store"), 1, 64, (w, out, 1), tools=TOOLS) == []
    np.testing.assert_array_equal(out, w + 1)
    a, bt = _wmma_inputs()
    d = np.zeros((16, 16), np.float32)
    assert ptxjit.check(kernel("race_wmma"), 1, 64, (a, bt, d, 1), tools=TOOLS) == []
    np.testing.assert_array_equal(d, a.astype(np.float32) @ bt.T.astype(np.float32))


def test_bulk_copy_on_mbarrier_initcheck():
    """A cp.async.bulk completing on an mbarrier: initcheck sees the copied bytes (128 of the 256 the
    threads read: threads 32-63 read unwritten words, one report; all 256: clean).  racecheck does not
    model the mbarrier's order yet and is skipped with a warning naming it."""
    w = _tile_words(64)
    for full, n_bad in ((0, 32), (1, 0)):
        out = np.zeros(64, np.uint32)
        with pytest.warns(ptxjit.PtxjitWarning, match="racecheck skipped -- the order the waits of 'mbarrier"):
            reports = ptxjit.check(kernel("init_bulk"), 1, 64, (w, out, full), tools=TOOLS)
        assert [(r.kind, r.source, r.count, r.thread) for r in reports] == (
            [("uninitialized read", ("init_bulk.cu", marker("init_bulk", "BUG")), n_bad, (32, 0, 0))]
            if n_bad else [])
        np.testing.assert_array_equal(out[:64 - n_bad], w[:64 - n_bad])


def test_race_between_ctas_names_both_blocks():
    (r,) = ptxjit.check(kernel("race_global_grid"), 2, 64, BUGGY["race_global_grid"][3](), tools=("racecheck",))
    assert {r.cta, r.other.cta} == {(0, 0, 0), (1, 0, 0)} and r.space == "global"


# --------------------------------------------------------------------------- clean controls, results
def _clean_cases(rng):
    x = rng.random(1000).astype(np.float32)
    keys = rng.integers(0, 1000, 3000).astype(np.uint32)
    return {
        "clean_reduce": (4, 256, (x, np.zeros(1, np.float32), 1000),
                         lambda a: np.testing.assert_allclose(a[1][0], x.sum(dtype=np.float64), rtol=1e-4)),
        "clean_stencil": (3, 128, (x[:300].copy(), np.zeros(300, np.float32), 300),
                          lambda a: np.testing.assert_allclose(
                              a[1], 0.25 * np.r_[0, x[:299]] + 0.5 * x[:300] + 0.25 * np.r_[x[1:300], 0],
                              rtol=1e-6)),
        "clean_local": (1, 64, (np.arange(64, dtype=np.int32), np.zeros(64, np.int32)),
                        lambda a: np.testing.assert_array_equal(a[1], np.arange(64) * (np.arange(64) & 15))),
        "clean_histogram": (4, 128, (keys, np.zeros(64, np.uint32), 3000),
                            lambda a: np.testing.assert_array_equal(a[1], np.bincount(keys & 63, minlength=64))),
        "clean_warp": (1, 64, (np.arange(64, dtype=np.int32), np.zeros(64, np.int32)),
                       lambda a: np.testing.assert_array_equal(
                           a[1], (np.arange(64) ^ 1)[(np.arange(64) + 1) % 32 + np.arange(64) // 32 * 32] + 1)),
    }


@pytest.mark.parametrize("name", ["clean_reduce", "clean_stencil", "clean_local", "clean_histogram", "clean_warp"])
def test_clean_controls_have_no_report_and_run_once(name):
    grid, block, args, verify = _clean_cases(np.random.default_rng(3))[name]
    assert ptxjit.check(kernel(name), grid, block, args, tools=TOOLS) == []
    verify(args)  # the arrays end as one launch leaves them (clean_reduce/histogram accumulate: run once)


def test_arrays_end_as_one_launch_leaves_them():
    x = np.arange(1, 129, dtype=np.float32)
    out = np.full(128, -1, np.float32)
    ptxjit.check(kernel("race_shared_raw"), 1, 128, (x, out), tools=TOOLS)
    # a racy kernel: each thread reads its neighbour's element before or after the neighbour wrote it
    # (before: whatever shared memory held, uninitialized as on a GPU), whichever order the translation's
    # schedule gives -- the traced code's may differ from the plain code's, LLVM vectorizing the loop
    # over threads differently; every thread stores exactly once
    assert not (out == -1).any()
    d = np.zeros(96, np.float32)
    ptxjit.check(kernel("sync_count"), 1, 96, (d,), tools=("synccheck",))
    np.testing.assert_array_equal(d, 3.0)


class _Checked:
    """Stands in for a Kernel in the benchmark suite's launch code: every launch runs ptxjit.check."""

    def __init__(self, k: ptxjit.Kernel) -> None:
        self.k = k
        self.reports: list[Report] = []
        self.launches = 0

    def __call__(self, grid, block, args, shared_mem=0):
        self.launches += 1
        self.reports += ptxjit.check(self.k, grid, block, args, shared_mem, tools=TOOLS)


@pytest.mark.parametrize("name", ["vadd", "saxpy", "dot", "sgemm", "jacobi", "histogram", "transpose", "nbody",
                                  "blackscholes", "bitonic", "scan"])
def test_bench_kernels_have_no_report(name):
    sys.path.insert(0, str(ROOT / "bench"))
    from ptxbench.suite import CASES

    case = CASES[name]
    n = case.sizes["tiny"]
    d = case.make(n, np.random.default_rng(0))
    expected = case.reference(d)
    checked = _Checked(ptxjit.Module.from_file(BENCH / f"{name}.ptx").get_function(name))
    case.ptxjit(checked, d, n)()
    assert checked.launches and checked.reports == [], format_reports(checked.reports)
    assert case.check(d, expected) == []


def _corpus(stem: str, name: str) -> ptxjit.Kernel:
    return ptxjit.Module.from_file(ROOT / "corpus" / "ptx" / f"{stem}.ptx").get_function(name)


def test_valid_synchronization_idioms_are_not_reported():
    """From the real-kernel corpus: an early `return` before `__syncthreads()` (valid since Volta: the
    barrier counts only threads that have not exited), an atomicMax-for-floats CAS loop (its plain read
    races with nothing the atomics do) and the __threadfence() "last block" reduction."""
    rng = np.random.default_rng(7)
    n = 999
    inp = rng.integers(0, 1000, n).astype(np.int32)
    out = np.full(n, -99, np.int32)
    assert ptxjit.check(_corpus("elementwise", "early_exit_sync"), 4, 256, (inp, out, n), tools=TOOLS) == []
    x = rng.standard_normal(5000).astype(np.float32)
    mx = np.full(37, -np.inf, np.float32)
    assert ptxjit.check(_corpus("atomics", "atomic_cas_fmax"), 20, 256, (x, mx, 37, 5000), tools=TOOLS) == []
    np.testing.assert_array_equal(mx, [x[k::37].max() for k in range(37)])
    xi = rng.integers(-1000, 1000, 5000).astype(np.int32)
    nb = 40
    partials, ticket, result = np.zeros(nb, np.int32), np.zeros(1, np.uint32), np.full(2, -1, np.int32)
    assert ptxjit.check(_corpus("compact", "last_block_sum"), nb, 128, (xi, partials, ticket, result, 5000),
                        tools=TOOLS) == []
    assert int(result[0]) == int(xi.sum()) and int(ticket[0]) == nb


# --------------------------------------------------------------------------- text, CLI, PTXJIT_CHECK
def test_summary_and_print_limit():
    reports = [ptxjit.check(kernel(n), BUGGY[n][1], BUGGY[n][2], BUGGY[n][3](), tools=TOOLS)[0]
               for n in ("oob_global", "sync_divergent", "init_shared")]
    text = format_reports(reports, print_limit=2)
    assert text.endswith("========= ERROR SUMMARY: 3 errors")
    assert "Printing limit reached: 1 more reports not printed" in text
    assert "Uninitialized __shared__" not in text and "Divergent thread(s) in block" in text
    assert format_reports([]) == "========= ERROR SUMMARY: 0 errors"


def test_bad_tool_name():
    with pytest.raises(ValueError, match="tools must be"):
        ptxjit.check(kernel("clean_local"), 1, 32, (np.zeros(32, np.int32), np.zeros(32, np.int32)),
                     tools=("memchek",))


def test_cli_check():
    from click.testing import CliRunner

    from ptxjit.cli import main

    runner = CliRunner()
    args = ["check", "--tool", "racecheck", "--tool", "initcheck", str(DATA / "race_shared_raw.ptx"),
            "race_shared_raw", "--grid", "1", "--block", "128", "--arg", "rand:float32:128",
            "--arg", "zeros:float32:128"]
    res = runner.invoke(main, args + ["--error-exitcode", "7"])
    assert res.exit_code == 7, res.output
    assert "Error: Race reported between Write access at race_shared_raw in race_shared_raw.cu:5" in res.output
    assert "and Read access at race_shared_raw in race_shared_raw.cu:6" in res.output
    assert res.output.rstrip().endswith("ERROR SUMMARY: 1 error")
    assert runner.invoke(main, args).exit_code == 0  # no --error-exitcode: 0, as compute-sanitizer
    clean = runner.invoke(main, ["check", "--tool", "memcheck,synccheck", str(DATA / "clean_local.ptx"),
                                 "clean_local", "--block", "32", "--arg", "arange:int32:32", "--arg",
                                 "zeros:int32:32", "--error-exitcode", "7"])
    assert clean.exit_code == 0 and "ERROR SUMMARY: 0 errors" in clean.output
    bad = runner.invoke(main, ["check", "--tool", "nope", str(DATA / "clean_local.ptx"), "clean_local"])
    assert bad.exit_code == 2 and "--tool" in bad.output


def test_env_checks_every_launch_of_an_unmodified_program(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(f"""
import numpy as np, ptxjit
k = ptxjit.Module.from_file({str(DATA / 'race_shared_raw.ptx')!r}).get_function('race_shared_raw')
out = np.zeros(128, np.float32)
k(1, 128, (np.arange(128, dtype=np.float32), out))
print('result', int(out[0]), int(out[127]))
k2 = ptxjit.Module.from_file({str(DATA / 'oob_global.ptx')!r}).get_function('oob_global')
try:
    k2(1, 64, (np.ones(64, np.float32), np.zeros(64, np.float32), 64))
except ptxjit.KernelFault:
    print('fault raised')
c = ptxjit.Module.from_file({str(DATA / 'clean_local.ptx')!r}).get_function('clean_local')
c(1, 32, (np.arange(32, dtype=np.int32), np.zeros(32, np.int32)))
""")
    env = {**os.environ, "PTXJIT_CHECK": "memcheck,racecheck"}
    res = subprocess.run([sys.executable, str(app)], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:2] == ["result 1 0", "fault raised"]  # the program runs as it would
    assert res.stderr.count("Error: Race reported") == 1
    assert res.stderr.count("Invalid __global__ read of size 4 bytes") == 1
    assert res.stderr.rstrip().endswith("========= ERROR SUMMARY: 2 errors")
    plain = subprocess.run([sys.executable, str(app)], capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != "PTXJIT_CHECK"}, timeout=120)
    assert plain.returncode == 0 and "=========" not in plain.stderr


# --------------------------------------------------------------------------- memcheck without a trace
def _bench(name: str) -> ptxjit.Kernel:
    return ptxjit.Module.from_file(BENCH / f"{name}.ptx").get_function(name)


def test_memcheck_on_provably_aligned_launch_needs_no_trace(monkeypatch):
    """Every access of these launches is `pointer + i * 4` on 4-aligned pointers: memcheck runs one plain
    bounds-checked launch (the trace would fail here) and still finds the out-of-bounds read."""
    import ptxjit.instrument.trace as tr

    def no_trace(*a, **k):
        raise AssertionError("traced")

    monkeypatch.setattr(tr, "trace", no_trace)
    a, out, n = _oob_global()
    (r,) = ptxjit.check(kernel("oob_global"), 1, 64, (a, out, n))
    assert r.kind == "out-of-bounds" and r.thread == (63, 0, 0)
    x = np.arange(1000, dtype=np.float32)
    c = np.zeros(1000, np.float32)
    assert ptxjit.check(_bench("vadd"), 4, 256, (x, x, c, 1000)) == []
    np.testing.assert_array_equal(c, 2 * x)
    # racecheck: a race-free launch is decided by the shadow-memory screen alone, a racy one is traced
    assert ptxjit.check(_bench("vadd"), 4, 256, (x, x, c, 1000), tools=("racecheck", "memcheck")) == []
    np.testing.assert_array_equal(c, 2 * x)
    with pytest.raises(AssertionError, match="traced"):
        ptxjit.check(kernel("race_shared_raw"), 1, 128, (np.ones(128, np.float32), np.zeros(128, np.float32)),
                     tools=("racecheck",))


def test_initcheck_without_trace_when_nothing_can_be_uninitialized(monkeypatch):
    """initcheck with no shared/local access and no tracked buffer has nothing to judge (one plain launch);
    with shared memory, a launch whose every shared read finds its bytes already written by the CTA is
    decided by the byte-map screen alone (initscreen.py); a launch reading unwritten shared bytes is traced
    (the exact analysis names the site)."""
    import ptxjit.instrument.trace as tr

    def no_trace(*a, **k):
        raise AssertionError("traced")

    monkeypatch.setattr(tr, "trace", no_trace)
    x = np.arange(1000, dtype=np.float32)
    c = np.zeros(1000, np.float32)
    assert ptxjit.check(_bench("vadd"), 4, 256, (x, x, c, 1000), tools=("initcheck",)) == []
    np.testing.assert_array_equal(c, 2 * x)
    grid, block, args, verify = _clean_cases(np.random.default_rng(3))["clean_reduce"]
    assert ptxjit.check(kernel("clean_reduce"), grid, block, args, tools=("initcheck", "memcheck")) == []
    verify(args)  # the screened run is the launch: run once
    w = _tile_words(32)
    out = np.zeros(32, np.uint32)
    assert ptxjit.check(kernel("clean_stmatrix"), 1, 64, (w, out), tools=("initcheck",)) == []
    np.testing.assert_array_equal(out, w)
    for name in ("init_shared", "init_ldmatrix"):
        with pytest.raises(AssertionError, match="traced"):
            ptxjit.check(kernel(name), BUGGY[name][1], BUGGY[name][2], BUGGY[name][3](), tools=("initcheck",))


@pytest.mark.parametrize("name", [n for n, v in BUGGY.items() if v[0] == "racecheck"])
def test_race_screen_counts_every_planted_race(name):
    """The shadow-memory screen (checking/shadow.py) over-approximates racecheck: a launch with a race
    must count hazards (else check() would return it clean without the exact analysis)."""
    from ptxjit.checking.shadow import screen

    _tool, grid, block, make = BUGGY[name]
    assert screen(kernel(name), (grid, 1, 1), (block, 1, 1), make(), 0, None) > 0


def test_race_screen_is_clean_on_race_free_kernels():
    """...and counts nothing on race-free launches (vadd; a transpose through a shared tile, ordered by
    its barrier), so those never pay for a trace."""
    from ptxjit.checking.shadow import screen

    x = np.arange(1000, dtype=np.float32)
    c = np.zeros(1000, np.float32)
    assert screen(_bench("vadd"), (4, 1, 1), (256, 1, 1), (x, x, c, 1000), 0, None) == 0
    np.testing.assert_array_equal(c, 2 * x)
    n = 64
    src = np.arange(n * n, dtype=np.float32)
    dst = np.zeros(n * n, np.float32)
    assert screen(_bench("transpose"), (n // 32, n // 32, 1), (32, 8, 1), (src, dst, n), 0, None) == 0
    np.testing.assert_array_equal(dst.reshape(n, n), src.reshape(n, n).T)


def test_misaligned_argument_pointer_is_traced_and_found():
    """vadd's code is aligned for aligned arrays; an output array one byte off is not: no proof, so the
    launch is traced and every store is misaligned."""
    n = 300
    x = np.arange(n, dtype=np.float32)
    raw = np.zeros(4 * n + 4, np.uint8)
    c = raw[1:4 * n + 1].view(np.float32)
    assert c.ctypes.data % 4 == 1
    (r,) = ptxjit.check(_bench("vadd"), 2, 256, (x, x, c, n))
    assert r.kind == "misaligned" and r.access == "write" and r.count == n and r.address == c.ctypes.data
    np.testing.assert_array_equal(c, 2 * x)  # x86 ran the accesses: the results are there


def test_screen_leaves_thread_private_arrays_unwatched():
    """checking/private.py: an array every thread touches only its own part of (vadd's c[i], i the global
    thread index) cannot race; nor can one nothing writes.  The proof must fail where threads share words:
    a jacobi grid wider than its rows (rows of guarded-out threads overlap the next row), a neighbour read."""
    from ptxjit.checking.private import unshadowed
    from ptxjit.instrument.trace import lowered_kernel

    def private(k, grid, block, args):
        return unshadowed(k, lowered_kernel(k, block), grid, block, args)[0]

    x = np.zeros(1000, np.float32)
    vadd = _bench("vadd")
    assert private(vadd, (4, 1, 1), (256, 1, 1), (x, x.copy(), x.copy(), 1000)) == {0, 1, 2}
    jac = _bench("jacobi")
    for n, grid, out_private in ((64, (2, 8, 1), True), (70, (3, 9, 1), False)):
        a, b = np.zeros(n * n, np.float32), np.zeros(n * n, np.float32)
        assert (1 in private(jac, grid, (32, 8, 1), (a, b, n))) == out_private
        assert 0 in private(jac, grid, (32, 8, 1), (a, b, n))  # read only
    buf, out = np.zeros(128, np.float32), np.zeros(128, np.float32)
    for name in ("race_global_cta", "race_global_grid"):  # buf: another thread's word is read
        assert 0 not in private(kernel(name), (2, 1, 1), (64, 1, 1), (buf, out))
    y = np.zeros(1000, np.float32)  # the same array for x and y: overlapping arrays prove nothing
    assert private(vadd, (4, 1, 1), (256, 1, 1), (y, y, y, 1000)) == set()
