""".b128 data (PTX ISA 8.3, sm_90): ld/st.b128 in global, shared and local memory, mov.b128 pack/unpack, and
atom.{exch,cas}.b128 (16-byte exchange / compare-and-swap) in global and shared memory, against NumPy and the
ISA's definitions (§9.7.9.8 ld, §9.7.9.10 st, §9.7.13.5 atom: cas stores c where memory equals b; both return
the old 16 bytes).  The bounds checks cover all 16 bytes; a misaligned 128-bit atomic traps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit

HEAD = """.version 8.7
.target sm_90a
.address_size 64
"""
REGS = """  .reg .pred %p<8>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<32>;
  .reg .b128 %q<8>;
"""

# out[i] = in[i] with its two 64-bit halves swapped, moved global -> shared -> local -> global
ROUNDTRIP = HEAD + """
.visible .entry roundtrip(.param .u64 pin, .param .u64 pout)
{
""" + REGS + """  .shared .align 16 .b8 sbuf[2048];
  .local .align 16 .b8 lbuf[16];
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 16;
  add.u64 %rd4, %rd1, %rd3;
  ld.global.b128 %q1, [%rd4];
  mov.u32 %r2, sbuf;
  mul.lo.u32 %r3, %r1, 16;
  add.u32 %r2, %r2, %r3;
  st.shared.b128 [%r2], %q1;
  bar.sync 0;
  ld.shared.b128 %q2, [%r2];
  st.local.b128 [lbuf], %q2;
  ld.local.b128 %q3, [lbuf];
  mov.b128 {%rd10, %rd11}, %q3;
  mov.b128 %q4, {%rd11, %rd10};
  add.u64 %rd5, %rd2, %rd3;
  st.global.b128 [%rd5], %q4;
  ret;
}
"""

# every thread adds (1, 2) to the 128-bit pair at [ctr] with a compare-and-swap loop: a torn 16-byte
# exchange would break hi == 2 * lo
CAS_COUNT = HEAD + """
.visible .entry cas_count(.param .u64 pctr, .param .u32 iters)
{
""" + REGS + """  .shared .align 16 .b8 sctr[16];
  ld.param.u64 %rd1, [pctr];
  ld.param.u32 %r5, [iters];
  mov.u32 %r1, %tid.x;
  mov.u32 %r9, sctr;
  setp.ne.u32 %p3, %r1, 0;
  @%p3 bra START;
  mov.u64 %rd20, 0;
  mov.b128 %q7, {%rd20, %rd20};
  st.shared.b128 [%r9], %q7;
START:
  bar.sync 0;
  mov.u32 %r6, 0;
ITER:
  ld.volatile.global.u64 %rd10, [%rd1];
  ld.volatile.global.u64 %rd11, [%rd1+8];
  mov.b128 %q1, {%rd10, %rd11};
RETRY:
  mov.b128 {%rd12, %rd13}, %q1;
  add.u64 %rd12, %rd12, 1;
  add.u64 %rd13, %rd13, 2;
  mov.b128 %q2, {%rd12, %rd13};
  atom.global.cas.b128 %q3, [%rd1], %q1, %q2;
  mov.b128 {%rd14, %rd15}, %q3;
  setp.ne.u64 %p1, %rd14, %rd10;
  setp.ne.u64 %p2, %rd15, %rd11;
  or.pred %p1, %p1, %p2;
  mov.b128 %q1, %q3;
  mov.u64 %rd10, %rd14;
  mov.u64 %rd11, %rd15;
  @%p1 bra RETRY;
  atom.shared.cas.b128 %q4, [%r9], %q4, %q4;
SRETRY:
  mov.b128 {%rd12, %rd13}, %q4;
  add.u64 %rd12, %rd12, 1;
  add.u64 %rd13, %rd13, 2;
  mov.b128 %q5, {%rd12, %rd13};
  atom.shared.cas.b128 %q6, [%r9], %q4, %q5;
  mov.b128 {%rd16, %rd17}, %q6;
  mov.b128 {%rd18, %rd19}, %q4;
  setp.ne.u64 %p1, %rd16, %rd18;
  setp.ne.u64 %p2, %rd17, %rd19;
  or.pred %p1, %p1, %p2;
  mov.b128 %q4, %q6;
  @%p1 bra SRETRY;
  add.u32 %r6, %r6, 1;
  setp.lt.u32 %p4, %r6, %r5;
  @%p4 bra ITER;
  bar.sync 0;
  @%p3 bra DONE;
  ld.shared.b128 %q1, [%r9];
  mov.u32 %r7, %ctaid.x;
  mul.wide.u32 %rd21, %r7, 16;
  add.u64 %rd21, %rd21, 16;
  add.u64 %rd21, %rd1, %rd21;
  st.global.b128 [%rd21], %q1;
DONE:
  ret;
}
"""

# every thread exchanges its own pair (gid, ~gid) into [slot]; the old pairs it gets back go to out[gid]
EXCH = HEAD + """
.visible .entry exch(.param .u64 pslot, .param .u64 pout, .param .u64 paddr)
{
""" + REGS + """  ld.param.u64 %rd1, [pslot];
  ld.param.u64 %rd2, [pout];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %ctaid.x;
  mad.lo.u32 %r4, %r3, %r2, %r1;
  cvt.u64.u32 %rd3, %r4;
  not.b64 %rd4, %rd3;
  mov.b128 %q1, {%rd3, %rd4};
  atom.global.exch.b128 %q2, [%rd1], %q1;
  mul.wide.u32 %rd5, %r4, 16;
  add.u64 %rd5, %rd2, %rd5;
  st.global.b128 [%rd5], %q2;
  ret;
}

.visible .entry atom_at(.param .u64 pa)
{
""" + REGS + """  ld.param.u64 %rd1, [pa];
  mov.u64 %rd2, 5;
  mov.b128 %q1, {%rd2, %rd2};
  atom.global.exch.b128 %q2, [%rd1], %q1;
  ret;
}

.visible .entry ld_at(.param .u64 pa, .param .u64 pout, .param .u64 poff)
{
""" + REGS + """  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pout];
  ld.param.u64 %rd3, [poff];
  add.u64 %rd1, %rd1, %rd3;
  ld.global.b128 %q1, [%rd1];
  st.global.b128 [%rd2], %q1;
  ret;
}

.visible .entry cas_once(.param .u64 pa, .param .u64 pout, .param .u64 b0, .param .u64 b1)
{
""" + REGS + """  .shared .align 16 .b8 s[16];
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pout];
  ld.param.u64 %rd3, [b0];
  ld.param.u64 %rd4, [b1];
  mov.b128 %q1, {%rd3, %rd4};
  mov.u64 %rd5, 0x1111;
  mov.u64 %rd6, 0x2222;
  mov.b128 %q2, {%rd5, %rd6};
  atom.global.cas.b128 %q3, [%rd1], %q1, %q2;
  st.global.b128 [%rd2], %q3;
  ld.global.b128 %q4, [%rd1];
  st.shared.b128 [s], %q4;
  atom.shared.cas.b128 %q5, [s], %q1, %q2;
  st.global.b128 [%rd2+16], %q5;
  ld.shared.b128 %q6, [s];
  st.global.b128 [%rd2+32], %q6;
  atom.shared.exch.b128 %q7, [s], %q1;
  st.global.b128 [%rd2+48], %q7;
  ld.shared.b128 %q6, [s];
  st.global.b128 [%rd2+64], %q6;
  ret;
}
"""

MODES = [pytest.param({"checked": True}, id="checked"), pytest.param({"unchecked": True}, id="unchecked")]


@pytest.mark.parametrize("mode", MODES)
def test_ld_st_mov_roundtrip(mode):
    """16 bytes through global, shared and local memory; mov.b128 unpacks low half first (ISA §9.7.9.7)."""
    n = 96
    src = np.random.default_rng(1).integers(0, 2**63, 2 * n, dtype=np.uint64)
    out = np.zeros(2 * n, dtype=np.uint64)
    ptxjit.Module(ROUNDTRIP).get_function("roundtrip")(1, n, (src, out), **mode)
    assert np.array_equal(out.reshape(n, 2), src.reshape(n, 2)[:, ::-1])


@pytest.mark.parametrize("mode", MODES)
def test_cas_loop_is_atomic(mode):
    """Many threads on several workers increment a 128-bit pair by (1, 2) with CAS loops: no update is
    lost and no pair is torn; the same in shared memory per block."""
    grid, block, iters = 4, 64, 20
    ctr = np.zeros(2 * (1 + grid), dtype=np.uint64)
    ptxjit.Module(CAS_COUNT).get_function("cas_count")(grid, block, (ctr, np.uint32(iters)), **mode)
    total = grid * block * iters
    assert ctr[0] == total and ctr[1] == 2 * total
    per_block = ctr[2:].reshape(grid, 2)
    assert np.all(per_block[:, 0] == block * iters) and np.all(per_block[:, 1] == 2 * block * iters)


@pytest.mark.parametrize("mode", MODES)
def test_exchange_is_a_permutation(mode):
    """atom.exch.b128 from 256 threads: the old values returned plus the final one are exactly the initial
    value and every thread's value, each once, and every pair is whole."""
    grid, block = 4, 64
    n = grid * block
    slot = np.array([0xAAAA, 0xBBBB], dtype=np.uint64)
    out = np.zeros(2 * n, dtype=np.uint64)
    ptxjit.Module(EXCH).get_function("exch")(grid, block, (slot, out, np.uint64(0)), **mode)
    pairs = np.concatenate([out.reshape(n, 2), slot.reshape(1, 2)])
    g = np.arange(n, dtype=np.uint64)
    want = np.concatenate([np.stack([g, ~g], axis=1), np.array([[0xAAAA, 0xBBBB]], dtype=np.uint64)])
    assert sorted(map(tuple, pairs.tolist())) == sorted(map(tuple, want.tolist()))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("match", [True, False])
def test_cas_semantics(mode, match):
    """cas returns the old 16 bytes and stores c only where memory equals b (both halves compared)."""
    mem = np.array([7, 9], dtype=np.uint64)
    b = (7, 9) if match else (7, 8)
    out = np.zeros(10, dtype=np.uint64)
    ptxjit.Module(EXCH).get_function("cas_once")(1, 1, (mem, out, np.uint64(b[0]), np.uint64(b[1])), **mode)
    new = [0x1111, 0x2222] if match else [7, 9]
    assert mem.tolist() == new
    assert out[0:2].tolist() == [7, 9]      # global cas: old
    assert out[2:4].tolist() == new         # shared cas on a copy of memory after the global one: old
    # shared: a second cas with the same b matches only where the first left b there (never: b != c)
    assert out[4:6].tolist() == new
    assert out[6:8].tolist() == new         # shared exch: old
    assert out[8:10].tolist() == list(b)    # shared exch stored b


def test_bounds_cover_16_bytes():
    """A 16-byte load of the last 16 bytes of a 24-byte array runs; one starting 8 bytes before its end
    faults (default checks), and so does a 16-byte store there."""
    a = np.arange(3, dtype=np.uint64)
    out = np.zeros(2, dtype=np.uint64)
    f = ptxjit.Module(EXCH).get_function("ld_at")
    f(1, 1, (a, out, np.uint64(8)))
    assert out.tolist() == [1, 2]
    with pytest.raises(ptxjit.KernelFault, match=r"ld\.global\.b128"):
        f(1, 1, (a, out, np.uint64(16)))
    with pytest.raises(ptxjit.KernelFault, match=r"st\.global\.b128"):
        f(1, 1, (out, a[2:], np.uint64(0)))  # 16 bytes into an 8-byte array


@pytest.mark.parametrize("mode", MODES)
def test_misaligned_atomic_traps(mode):
    """A 128-bit atomic at an address that is not 16-byte aligned stops the kernel (the GPU reports a
    misaligned address) instead of crashing the process."""
    a = np.zeros(6, dtype=np.uint64)
    off = 8 if a.ctypes.data % 16 == 0 else 16  # 8-byte aligned, 16-byte misaligned
    view = a.view(np.uint8)[off:off + 16]
    with pytest.raises(ptxjit.KernelTrap, match=r"atom\.global\.exch\.b128"):
        ptxjit.Module(EXCH).get_function("atom_at")(1, 1, (view,), **mode)
    assert not a.any()


INT128 = Path(__file__).parent / "data" / "b128" / "int128.ptx"  # nvcc's PTX for unsigned __int128 (int128.cu)
M128 = (1 << 128) - 1


def _u128(words: np.ndarray) -> list[int]:
    return [int(lo) | int(hi) << 64 for lo, hi in words.reshape(-1, 2)]


@pytest.mark.parametrize("mode", MODES)
def test_nvcc_int128_exchange(mode):
    """nvcc's atomicExch on unsigned __int128 (atom.global.exch.b128) and 128-bit arithmetic in a
    device function, against Python integers."""
    n = 64
    x = np.random.default_rng(11).integers(0, 2**63, 4 * n, dtype=np.uint64)
    s = (0x0123456789ABCDEF << 64) | 0xFEDCBA9876543210
    before = _u128(x)
    ptxjit.Module.from_file(INT128).get_function("int128_exch")(
        1, n, (x, s.to_bytes(16, "little")), **mode)  # a 16-byte .b8 array parameter
    after = _u128(x)
    for t in range(n):
        v = before[t]
        assert after[t] == ((v * s + (v >> 3)) & M128) ^ before[t + n], t
        assert after[t + n] == v, t


@pytest.mark.parametrize("mode", MODES)
def test_nvcc_int128_cas_sum(mode):
    """nvcc's atomicCAS loop on unsigned __int128 (atom.global.cas.b128) from 4 blocks of 96 threads."""
    ctr = np.array([5, 7], dtype=np.uint64)
    grid, block = 4, 96
    ptxjit.Module.from_file(INT128).get_function("int128_cas_sum")(grid, block, (ctr,), **mode)
    want = (5 | 7 << 64) + sum(((t + 1) << 64 | 1) for t in range(block)) * grid
    assert _u128(ctr) == [want & M128]
