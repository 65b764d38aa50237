"""Bounds checks of counted loops done once on entry (passes/ivloops.py, lower/safety/loops.py): the
results are NumPy's, and every out-of-bounds access still faults with its thread, line and element."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.frontend import ir
from ptxjit.frontend.parser import parse
from ptxjit.passes.ivloops import Lin, counted_loops

DATA = Path(__file__).parent / "data"
PTX = DATA / "counted_loops.ptx"
BITS = {"b32": 32, "s32": 32, "u32": 32, "b64": 64, "s64": 64, "u64": 64}


def _loops(path: Path, kernel: str):
    fn = parse(path.read_text()).functions[kernel]
    return counted_loops(fn, lambda x: x.opcode in ("bar", "barrier"), lambda r: BITS.get(fn.regs.get(r)))


def test_the_analysis_finds_the_counted_loops_nvcc_writes():
    # read off the PTX by hand.  strided_scale: one loop, unsigned counter %r11 += %r5 while < %r4, a load
    # and a store of [%rd4], %rd4 = %rd1 + 4 * zext(%r11): base %rd1 + 4 * %r11, delta 4 * %r5 per iteration
    (loop,) = _loops(PTX, "strided_scale")
    assert (loop.counter, loop.signed, loop.down, loop.addends, loop.bound) == \
        ("%r11", False, 0, [ir.Reg("%r5")], ir.Reg("%r4"))
    want = (Lin(((("r64", "%rd1"), 1), (("u32", "%r11"), 4))), Lin(((("u32", "%r5"), 4),)), 4)
    assert list(loop.accesses.values()) == [want, want]
    # strided_sum, as nvcc unrolls it: the remainder loop (down-counter %r25 -= 1 while != 0, the pointer
    # %rd18 += %rd3 after the load) and the main loop (%r26 += 4 * %r13; loads at &a[i], +%rd6, +2 %rd6, ...)
    rem, main = _loops(PTX, "strided_sum")
    assert (rem.counter, rem.down, rem.down_test) == ("%r25", 1, "ne")
    assert list(rem.accesses.values()) == [(Lin(((("r64", "%rd18"), 1),)), Lin(((("r64", "%rd3"), 1),)), 4)]
    assert (main.counter, main.signed, main.addends, main.bound) == ("%r26", True, [ir.Reg("%r13")] * 4, ir.Reg("%r12"))
    first = Lin(((("r64", "%rd1"), 1), (("s32", "%r26"), 4)))
    step = Lin(((("s32", "%r13"), 16),))
    rd6 = Lin(((("r64", "%rd6"), 1),))
    assert list(main.accesses.values()) == [(first, step, 4), (first + rd6, step, 4),
                                            (first + rd6 + rd6, step, 4), (first + rd6 + rd6 + rd6, step, 4)]
    # the bench's dot: a grid-stride loop (signed), two loads
    (loop,) = _loops(Path(__file__).parents[1] / "bench" / "kernels" / "ptx" / "dot.ptx", "dot")
    assert (loop.counter, loop.signed, len(loop.accesses)) == ("%r13", True, 2)


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module.from_file(PTX)


def _reference_scale(a: np.ndarray, start: int, n: int, step: int, f: float, nthreads: int) -> np.ndarray:
    out = a.copy()
    for t in range(nthreads):
        for i in range(start + t, n, step):
            out[i] = np.float32(out[i] * np.float32(f))
    return out


@pytest.mark.parametrize("start,n,step", [(0, 1000, 64), (5, 1000, 128), (900, 1000, 64), (2000, 1000, 64)])
def test_strided_scale_matches_numpy(mod, start, n, step):
    k = mod.get_function("strided_scale")
    a = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    want = _reference_scale(a, start, n, step, 1.5, 64)
    k(1, 64, (a, start, n, step, np.float32(1.5)))
    assert np.array_equal(a, want)


def test_strided_scale_one_element_short_faults_at_the_load(mod):
    k = mod.get_function("strided_scale")
    backing = np.full(1000 + 2048, -7.0, dtype=np.float32)
    a = backing[1024:1024 + 999]  # one element short of n = 1000
    a[:] = 1.0
    before = backing.copy()
    with pytest.raises(ptxjit.KernelFault) as ei:
        k(1, 64, (a, 0, 1000, 64, np.float32(2.0)))
    e = ei.value
    assert e.allocation == "strided_scale_param_0"
    assert "element [999]" in str(e)
    assert e.thread == (999 % 64, 0, 0)
    assert "counted_loops.cu:16" in str(e)  # the load of `a[i] *= f`
    # nothing outside the array was touched
    assert np.array_equal(backing[:1024], before[:1024])
    assert np.array_equal(backing[1024 + 999:], before[1024 + 999:])


def test_strided_scale_far_start_faults_without_touching_memory(mod):
    k = mod.get_function("strided_scale")
    a = np.ones(1000, np.float32)
    with pytest.raises(ptxjit.KernelFault) as ei:
        k(1, 64, (a, 0xFFFF_0000, 0xFFFF_FF00, 64, np.float32(2.0)))  # (no wrap: terminates)
    # 16 GiB past the array: the address the thread computed (the nearest allocation may be another one)
    assert ei.value.address == a.ctypes.data + 4 * (0xFFFF_0000 + ei.value.thread[0])
    assert np.array_equal(a, np.ones(1000, np.float32))


@pytest.mark.parametrize("start,n,step", [(0, 1000, 64), (3, 777, 96)])
def test_strided_sum_matches_numpy(mod, start, n, step):
    k = mod.get_function("strided_sum")
    a = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    out = np.zeros(64, np.float32)
    k(1, 64, (a, out, start, n, step))
    want = np.zeros(64, np.float32)
    for t in range(64):
        s = np.float32(0)
        for i in range(start + t, n, step):
            s = np.float32(s + a[i])
        want[t] = s
    assert np.array_equal(out, want)


def test_strided_sum_past_the_end_faults(mod):
    k = mod.get_function("strided_sum")
    a = np.ones(500, np.float32)
    out = np.zeros(64, np.float32)
    with pytest.raises(ptxjit.KernelFault) as ei:
        k(1, 64, (a, out, 0, 1000, 64))
    e = ei.value
    assert e.allocation == "strided_sum_param_0"
    # the lowest faulting thread (0: elements 512, 576, ... of the loop's unrolled loads) and one of its
    # out-of-bounds elements
    assert e.thread == (0, 0, 0)
    element = int(str(e).rsplit("element [", 1)[1].split("]")[0])
    assert element >= 500 and element % 64 == 0


def test_a_loop_that_counts_past_its_end_forever_faults(mod):
    # unsigned i += 64 while i < 0xFFFFFFFF wraps past 2**32 and never ends (on a GPU the first access,
    # 16 GiB past the array, stops the kernel): the poll every 1024 iterations sees the recorded fault
    k = mod.get_function("strided_scale")
    a = np.ones(1000, np.float32)
    with pytest.raises(ptxjit.KernelFault) as ei:
        k(1, 64, (a, 0xFFFF_0000, 0xFFFF_FFFF, 64, np.float32(2.0)), timeout=60)
    assert ei.value.address >= a.ctypes.data + 4 * 0xFFFF_0000
    assert np.array_equal(a, np.ones(1000, np.float32))
