"""Device malloc/free (runtime/heap.py): the checked device heap, and memcheck's heap checks.

The kernels are CUDA C++ in tests/data/check/heap_*.cu (PTX by regen.sh: nvcc -lineinfo).  Expected
results come from NumPy; expected lines from `// BUG: ...` / `// ALLOC` markers in the .cu; expected
threads, sizes and counts from the kernels' code read by hand, never from the heap itself.
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
from ptxjit.checking import format_reports
from ptxjit.runtime import heap

DATA = Path(__file__).parent / "data" / "check"
ROOT = Path(__file__).parent.parent


def kernel(name: str, fn: str | None = None) -> ptxjit.Kernel:
    return ptxjit.Module.from_file(DATA / f"{name}.ptx").get_function(fn or name)


def marker(name: str, tag: str) -> int:
    """The 1-based line of heap_<name>.cu carrying the comment `// <tag>`."""
    lines = (DATA / f"{name}.cu").read_text().splitlines()
    hits = [i + 1 for i, ln in enumerate(lines) if re.search(rf"//\s*{re.escape(tag)}\s*$", ln)]
    assert len(hits) == 1, (name, tag, hits)
    return hits[0]


@pytest.fixture(autouse=True)
def fresh_heap():
    """Each test starts from an empty heap of CUDA's default size (blocks persist across launches,
    so one test's leaks would otherwise be the next one's)."""
    def reset():
        with heap._py_lock:
            heap._release()
            heap._state[heap.S_SIZE] = heap.DEFAULT_HEAP_SIZE
    reset()
    yield
    reset()


def test_malloc_free_matches_numpy_and_reports_nothing():
    n, k = 300, 7
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    kern = kernel("heap_ok")
    kern(3, 128, (x, out, np.int32(n), np.int32(k)))
    np.testing.assert_allclose(out, x * (k * (k + 1) // 2), rtol=1e-6)
    assert ptxjit.heap_leaks() == []
    out[:] = 0
    assert ptxjit.check(kern, 3, 128, (x, out, np.int32(n), np.int32(k)), leak_check=True) == []
    np.testing.assert_allclose(out, x * (k * (k + 1) // 2), rtol=1e-6)


def test_malloc_in_one_launch_free_in_the_next():
    n = 100
    x = np.arange(n, dtype=np.float32)
    slots = np.zeros(n, np.uint64)
    out = np.zeros(n, np.float32)
    kernel("heap_persist", "heap_alloc")(1, 128, (slots, x, np.int32(n)))
    assert np.all(slots != 0) and len(np.unique(slots)) == n
    assert len(ptxjit.heap_leaks()) == n and {b.size for b in ptxjit.heap_leaks()} == {8}
    kernel("heap_persist", "heap_release")(1, 128, (slots, out, np.int32(n)))
    np.testing.assert_array_equal(out, 3 * x)
    assert ptxjit.heap_leaks() == []


def test_out_of_bounds_past_a_malloced_block():
    out = np.zeros(32, np.float32)
    reports = ptxjit.check(kernel("heap_oob"), 1, 32, (out, np.int32(32)))
    assert len(reports) == 1
    (r,) = reports
    assert r.kind == "out-of-bounds" and r.tool == "memcheck"
    assert r.source == ("heap_oob.cu", marker("heap_oob", "BUG: out-of-bounds"))
    assert r.thread == (3, 0, 0) and r.access == "write" and r.size == 4
    alloc = marker("heap_oob", "ALLOC")
    assert f"0 bytes past the end of a 64-byte block allocated by device malloc at heap_oob.cu:{alloc}" in r.detail
    text = r.format()
    assert text.splitlines()[0] == "========= Invalid __global__ write of size 4 bytes"
    with pytest.raises(ptxjit.KernelFault, match="past the end of a 64-byte block allocated by device malloc"):
        kernel("heap_oob")(1, 32, (out, np.int32(32)))


def test_use_after_free():
    out = np.zeros(4, np.float32)
    (r,) = ptxjit.check(kernel("heap_uaf"), 1, 4, (out,))
    assert r.kind == "out-of-bounds" and r.access == "read"
    assert r.source == ("heap_uaf.cu", marker("heap_uaf", "BUG: use after free"))
    assert "use after free" in r.detail
    assert f"32-byte block allocated by device malloc at heap_uaf.cu:{marker('heap_uaf', 'ALLOC')}" in r.detail


def test_double_free_and_interior_free_are_errors_not_aborts():
    out = np.zeros(4, np.float32)
    (r,) = ptxjit.check(kernel("heap_double_free"), 1, 4, (out,))
    assert r.kind == "double free" and r.thread == (0, 0, 0)
    assert r.source == ("heap_double_free.cu", marker("heap_double_free", "BUG: double free"))
    assert r.format().splitlines()[0] == "========= Malloc/Free error encountered : Double free"
    np.testing.assert_array_equal(out, np.full(4, 2.0, np.float32))  # the kernel ran; the process lives
    with pytest.raises(ptxjit.KernelFault, match="double free of a 32-byte block"):
        kernel("heap_double_free")(1, 4, (out,))
    (r,) = ptxjit.check(kernel("heap_double_free", "heap_interior_free"), 1, 4, (out,))
    assert r.kind == "invalid free" and r.thread == (0, 0, 0)
    assert r.source == ("heap_double_free.cu", marker("heap_double_free", "BUG: invalid free"))
    assert "not the start of a block but byte 4" in r.detail
    # a free of memory device malloc never returned (the kernel's own argument): in a subprocess, where a
    # libc free would abort the process
    code = (f"import numpy as np, ptxjit\n"
            f"k = ptxjit.Module.from_file({str(DATA / 'heap_double_free.ptx')!r}).get_function('heap_free_arg')\n"
            f"out = np.zeros(2, np.float32)\n"
            f"try:\n    k(1, 2, (out,))\nexcept ptxjit.KernelFault as e:\n    print('FAULT', e)\n"
            f"print(out.tolist())\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    line = marker("heap_double_free", "BUG: free of an argument")
    assert f"heap_double_free.cu:{line}" in p.stdout and "not a pointer device malloc returned" in p.stdout
    assert p.stdout.strip().endswith("[1.0, 1.0]")
    r = ptxjit.check(kernel("heap_double_free", "heap_free_arg"), 1, 2, (np.zeros(2, np.float32),))
    assert [x.kind for x in r] == ["invalid free"] and r[0].source == ("heap_double_free.cu", line)


def test_leaks_reported_with_size():
    out = np.zeros(8, np.int32)
    reports = ptxjit.check(kernel("heap_leak"), 1, 8, (out,), leak_check=True)
    np.testing.assert_array_equal(out, np.arange(8, dtype=np.int32))
    assert [r.kind for r in reports] == ["leak"] * 4  # the odd threads never free their 24 bytes
    assert sorted(r.thread[0] for r in reports) == [1, 3, 5, 7]
    alloc = marker("heap_leak", "ALLOC")
    for r in reports:
        assert r.size == 24 and r.source == ("heap_leak.cu", alloc) and (r.warp, r.lane) == (0, r.thread[0])
        assert r.format().splitlines()[0] == f"========= Leaked 24 bytes at {r.address:#x} allocated by device malloc"
    assert "ERROR SUMMARY: 4 errors" in format_reports(reports)
    assert sorted(b.address for b in ptxjit.heap_leaks()) == sorted(r.address for r in reports)
    assert ptxjit.check(kernel("heap_leak"), 1, 8, (out,)) == []  # no leak check asked: no leak reports


def test_null_beyond_the_heap_limit():
    got = np.full(4, 7, np.int32)
    k = kernel("heap_leak", "heap_free_null")
    assert ptxjit.check(k, 1, 4, (got, np.uint64(9 << 20)), leak_check=True) == []  # free(NULL): a no-op
    np.testing.assert_array_equal(got, np.zeros(4, np.int32))
    out = np.zeros(8, np.uint64)
    assert ptxjit.heap_size() == 8 << 20  # CUDA's default cudaLimitMallocHeapSize
    kernel("heap_leak", "heap_limit")(1, 8, (out, np.uint64(9 << 20)))  # one block larger than the heap
    assert np.all(out == 0)
    ptxjit.set_heap_size(4096)
    kernel("heap_leak", "heap_limit")(1, 8, (out, np.uint64(1000)))
    got = np.sort(out[out != 0]).astype(np.int64)
    assert 1 <= len(got) <= 4  # 8 x 1000 bytes cannot fit in 4096: some get NULL
    assert np.all(np.diff(got) >= 1000)  # the blocks that fit do not overlap
    with pytest.raises(RuntimeError, match="live blocks"):
        ptxjit.set_heap_size(1 << 20)  # like CUDA: not while blocks are live
    with pytest.raises(ValueError, match="positive number of bytes"):
        ptxjit.set_heap_size(-1)


def test_cli_leak_check_full():
    from click.testing import CliRunner

    from ptxjit.cli import main

    args = ["check", str(DATA / "heap_leak.ptx"), "heap_leak", "--grid", "1", "--block", "8",
            "--arg", "zeros:int32:8"]
    res = CliRunner().invoke(main, [*args, "--leak-check", "full", "--error-exitcode", "3"])
    assert res.exit_code == 3, res.output
    assert res.output.count("Leaked 24 bytes at 0x") == 4 and "ERROR SUMMARY: 4 errors" in res.output


def test_env_memcheck_prints_leaks_at_exit(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(f"""
import numpy as np, ptxjit
k = ptxjit.Module.from_file({str(DATA / 'heap_leak.ptx')!r}).get_function('heap_leak')
out = np.zeros(8, np.int32)
k(1, 8, (out,))
print('result', out.tolist())
""")
    env = {**os.environ, "PTXJIT_CHECK": "memcheck"}
    res = subprocess.run([sys.executable, str(app)], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"result {list(range(8))}"
    assert res.stderr.count("Leaked 24 bytes at 0x") == 4
    assert res.stderr.rstrip().endswith("========= ERROR SUMMARY: 4 errors")


def test_argument_accesses_of_a_heap_module_still_checked():
    a, b = np.zeros(256, np.float32), np.zeros(256, np.float32)
    k = kernel("heap_persist", "heap_select")
    k(2, 128, (a, b, np.int32(1), np.int32(256)))
    np.testing.assert_array_equal(a, 2.0 * np.arange(256, dtype=np.float32))
    assert not b.any()
    k(2, 128, (a, b, np.int32(0), np.int32(200)))
    np.testing.assert_array_equal(b[:200], 2.0 * np.arange(200, dtype=np.float32))
    small = np.zeros(100, np.float32)
    (r,) = ptxjit.check(k, 2, 128, (a, small, np.int32(0), np.int32(256)))
    assert r.kind == "out-of-bounds" and r.thread == (100, 0, 0) and r.cta == (0, 0, 0)
    assert r.source == ("heap_persist.cu", marker("heap_persist", "BUG: out-of-bounds when n exceeds the array"))
    assert "0 bytes past the end of argument 1" in r.detail
