"""alloca / stacksave / stackrestore (PTX ISA 7.3+, §9.7.17): a per-thread dynamic stack in local memory.

Real input: nvcc's PTX for CUDA kernels calling alloca (tests/data/alloca/alloca.cu, regen.sh), against
NumPy; hand-written PTX for stacksave/stackrestore (what clang emits around a VLA in a loop) and for the
ISA's alignment rule (the pointer is aligned to max(immAlign, 8)).  Overflowing the stack (set by
ptxjit.set_stack_size, default 1 KiB, like cudaLimitStackSize) is a KernelFault naming the alloca's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit

DATA = Path(__file__).parent / "data" / "alloca" / "alloca.ptx"
MODES = [pytest.param({"checked": True}, id="checked"), pytest.param({"unchecked": True}, id="unchecked")]


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA)


@pytest.mark.parametrize("mode", MODES)
def test_alloca_buffer_survives_barrier(mod, mode):
    """Each thread allocas n[t] floats (0..200: up to 800 of the 1024 bytes), fills them, waits at
    __syncthreads() and reads them back."""
    grid, block = 2, 64
    nt = grid * block
    rng = np.random.default_rng(3)
    n = rng.integers(0, 201, nt).astype(np.int32)
    x = rng.standard_normal(nt).astype(np.float32)
    out = np.zeros(nt, dtype=np.float32)
    first = np.zeros(nt, dtype=np.float32)
    mod.get_function("alloca_barrier")(grid, block, (n, x, out, first), **mode)
    want = np.array([sum((np.float32(x[t]) + np.float32(i)) * np.float32(i + 1) for i in range(n[t]))
                     for t in range(nt)], dtype=np.float32)
    assert np.allclose(out, want, rtol=1e-5, atol=1e-3)
    assert np.array_equal(first, np.where(n > 0, x, np.float32(-1)))


@pytest.mark.parametrize("mode", MODES)
def test_alloca_released_at_return(mod, mode):
    """A device function allocas 100 int64s (800 bytes) per call, 40 calls per thread: only release on
    return keeps that within the 1 KiB stack."""
    grid, block, calls = 2, 32, 40
    nt = grid * block
    n = np.full(nt, 100, dtype=np.int32)
    n[::3] = 7
    out = np.zeros(nt, dtype=np.int64)
    mod.get_function("alloca_calls")(grid, block, (n, out, np.int32(calls)), **mode)
    want = []
    for t in range(nt):
        m = int(n[t])
        i = np.arange(m, dtype=np.int64)
        want.append(sum(int(np.sum((t + c) * (i + 3) * ((t + c) * (m - 1 - i + 3)))) for c in range(calls)))
    assert out.tolist() == want


@pytest.mark.parametrize("mode", MODES)
def test_alloca_overflow_faults(mod, mode):
    """More than the stack holds: a KernelFault at the alloca's PTX line, naming local memory."""
    f = mod.get_function("alloca_big")
    out = np.zeros(4, dtype=np.uint8)
    f(1, 4, (np.int32(1000), out), **mode)  # fits: 1000 bytes
    assert out.tolist() == [1000 % 256 - 1] * 4
    line = next(i for i, s in enumerate(DATA.read_text().splitlines(), 1)
                if "alloca.u64" in s and _in_kernel(i, "alloca_big"))
    with pytest.raises(ptxjit.KernelFault, match=rf"alloca\.ptx:{line}.*alloca\.u64") as ei:
        f(1, 4, (np.int32(1100), out), **mode)
    assert ei.value.allocation == "local"


def _in_kernel(line: int, name: str) -> bool:
    """Is PTX line `line` (1-based) inside the body of entry `name`?"""
    lines = DATA.read_text().splitlines()
    start = next(i for i, s in enumerate(lines, 1) if s.startswith(".visible .entry " + name))
    end = next((i for i, s in enumerate(lines, 1) if i > start and s.startswith(".visible .entry")), len(lines) + 1)
    return start < line < end


LOOP = """.version 8.7
.target sm_90a
.address_size 64

// for (k = 0; k < iters; k++) { save; p = alloca(size[k], 64); p[j] = k*j ...; out[k] = sum; restore }
.visible .entry vla_loop(.param .u64 psize, .param .u64 pout, .param .u64 paddr, .param .u32 iters)
{
  .reg .pred %p<4>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<32>;
  ld.param.u64 %rd1, [psize];
  ld.param.u64 %rd2, [pout];
  ld.param.u64 %rd3, [paddr];
  ld.param.u32 %r1, [iters];
  mov.u32 %r2, 0;
LOOP:
  stacksave.u64 %rd10;
  mul.wide.u32 %rd4, %r2, 8;
  add.u64 %rd5, %rd1, %rd4;
  ld.global.u64 %rd6, [%rd5];
  alloca.u64 %rd11, %rd6, 64;
  add.u64 %rd7, %rd3, %rd4;
  st.global.u64 [%rd7], %rd11;
  shr.u64 %rd12, %rd6, 2;
  cvt.u32.u64 %r3, %rd12;
  mov.u32 %r4, 0;
  mov.u64 %rd20, 0;
FILL:
  setp.ge.u32 %p1, %r4, %r3;
  @%p1 bra SUM;
  mul.lo.u32 %r5, %r4, %r2;
  mul.wide.u32 %rd13, %r4, 4;
  add.u64 %rd14, %rd11, %rd13;
  st.local.u32 [%rd14], %r5;
  add.u32 %r4, %r4, 1;
  bra FILL;
SUM:
  mov.u32 %r4, 0;
ADD:
  setp.ge.u32 %p1, %r4, %r3;
  @%p1 bra NEXT;
  mul.wide.u32 %rd13, %r4, 4;
  add.u64 %rd14, %rd11, %rd13;
  ld.local.u32 %r6, [%rd14];
  cvt.u64.u32 %rd15, %r6;
  add.u64 %rd20, %rd20, %rd15;
  add.u32 %r4, %r4, 1;
  bra ADD;
NEXT:
  add.u64 %rd8, %rd2, %rd4;
  st.global.u64 [%rd8], %rd20;
  stackrestore.u64 %rd10;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p2, %r2, %r1;
  @%p2 bra LOOP;
  ret;
}

.visible .entry two(.param .u64 pout)
{
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [pout];
  stacksave.u64 %rd2;
  alloca.u64 %rd3, 3;
  alloca.u64 %rd4, 5, 32;
  alloca.u64 %rd5, 1;
  stacksave.u64 %rd6;
  st.global.v4.u64 [%rd1], {%rd2, %rd3, %rd4, %rd5};
  st.global.u64 [%rd1+32], %rd6;
  ret;
}
"""


@pytest.mark.parametrize("mode", MODES)
def test_stacksave_restore_in_a_loop(mode):
    """A VLA in a loop (stacksave / alloca / stackrestore per iteration): 200 iterations of up to 800
    bytes reuse the same 1 KiB, every iteration gets the same address, and the sums are NumPy's."""
    iters = 200
    sizes = np.random.default_rng(7).integers(1, 201, iters).astype(np.uint64) * 4
    out = np.zeros(iters, dtype=np.uint64)
    addr = np.zeros(iters, dtype=np.uint64)
    ptxjit.Module(LOOP).get_function("vla_loop")(1, 1, (sizes, out, addr, np.uint32(iters)), **mode)
    k = np.arange(iters, dtype=np.uint64)
    want = [int(np.sum(np.arange(int(s) // 4, dtype=np.uint64) * kk)) for s, kk in zip(sizes, k, strict=True)]
    assert out.tolist() == want
    assert np.all(addr % 64 == 0)
    # each address is the stack top minus the size, rounded down to 64: the top is fixed
    tops = addr + sizes
    assert np.all(tops - tops.min() < 64)


@pytest.mark.parametrize("mode", MODES)
def test_alloca_alignment_and_stacksave(mode):
    """Stack grows down; each pointer is aligned to max(immAlign, 8) (ISA: 8 is the default and the
    minimum) and sits right below the previous one; stacksave reads the stack pointer."""
    out = np.zeros(5, dtype=np.uint64)
    ptxjit.Module(LOOP).get_function("two")(1, 1, (out,), **mode)
    top, p3, p5, p1, sp = (int(v) for v in out)
    assert p3 == (top - 3) & ~7
    assert p5 == (p3 - 5) & ~31
    assert p1 == (p5 - 1) & ~7
    assert sp == p1


def test_stack_size_setting():
    """set_stack_size applies to modules loaded afterwards: 2 KiB holds what 1 KiB does not."""
    out = np.zeros(4, dtype=np.uint8)
    old = ptxjit.stack_size()
    try:
        ptxjit.set_stack_size(2048)
        m = ptxjit.Module.from_file(DATA)
        m.get_function("alloca_big")(1, 4, (np.int32(2000), out))
        assert out.tolist() == [2000 % 256 - 1] * 4
    finally:
        ptxjit.set_stack_size(old)
    with pytest.raises(ptxjit.KernelFault):
        ptxjit.Module.from_file(DATA).get_function("alloca_big")(1, 4, (np.int32(2000), out))
    with pytest.raises(ValueError, match="multiple of 16"):
        ptxjit.set_stack_size(1000)


def test_alloca_u32_refused():
    """32-bit local addresses are refused at load, naming the place."""
    ptx = LOOP.replace("alloca.u64 %rd5, 1;", ".reg .b32 %q<2>;\n  alloca.u32 %q1, 1;")
    with pytest.raises(ptxjit.UnsupportedInstructionError, match=r"alloca\.u32.*64-bit"):
        ptxjit.Module(ptx)
