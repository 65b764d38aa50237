"""cp.async, cp.async.bulk, cp.reduce.async.bulk, fence.proxy.async and mbarrier: the H100's recorded launches
byte for byte, and kernels of our own (tests/data/async/async_ops.cu) against NumPy and the PTX ISA's rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from tests.ptxsnip import snippet_kernel
from tests.unit.tcgolden import tc_test

DATA = Path(__file__).parent / "data" / "async" / "async_ops.ptx"

test_async_copy_golden = tc_test(r"^(cp_async|mbarrier)_", "cp.async/cp.async.bulk/mbarrier")
test_async_copy_golden_unchecked = tc_test(r"^(cp_async|mbarrier)_", "cp.async/cp.async.bulk/mbarrier", unchecked=True)

MODES = [pytest.param({"checked": True}, id="checked"), pytest.param({"unchecked": True}, id="unchecked")]


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("nbytes,grid", [(4096, 2), (96, 3)])
def test_bulk_copies_roundtrip(mod, mode, nbytes, grid):
    """Global -> shared bulk copies completing on an mbarrier (issued by the last thread after the others began
    spinning on try_wait), shared -> shared, then shared -> global in a bulk group."""
    rng = np.random.default_rng(nbytes)
    words = nbytes // 4
    src = rng.integers(0, 2**32, grid * words, dtype=np.uint32)
    out = np.full(grid * (words + 16), 0xCDCDCDCD, dtype=np.uint32)
    flags = np.zeros(grid * 128, dtype=np.uint32)
    mod.get_function("bulk_roundtrip")(grid, 128, (src, out, flags, np.uint32(nbytes)), **mode)
    s = src.reshape(grid, words)
    want = np.concatenate([s * np.uint32(3) + np.uint32(1), s[:, :16]], axis=1)
    assert np.array_equal(out.reshape(grid, words + 16), want)
    assert np.all(flags == 1)  # phase 0 complete (parity 0 done), phase 1 current (parity 1 not)


@pytest.mark.parametrize("mode", MODES)
def test_bulk_reductions(mod, mode):
    """cp.reduce.async.bulk .add.u32/.min.s32/.max.u32/.add.f32/.xor.b64/.inc.u32/.dec.u32 into global memory and
    .add.u32 into shared memory, against NumPy (inc/dec as atom.inc/dec: PTX ISA §9.7.13.5)."""
    n = 256
    rng = np.random.default_rng(5)
    # the source words read as u32, s32 and f32 (normal floats: no denormal flushing question) and, pairwise, b64
    src = rng.uniform(-1e3, 1e3, 2 * n).astype(np.float32).view(np.uint32)
    src[::7] = rng.integers(0, 50, len(src[::7]), dtype=np.uint32)  # small values: inc/dec wrap at them
    add_u32 = rng.integers(0, 2**32, n, dtype=np.uint32)
    min_s32 = rng.integers(-2**31, 2**31, n, dtype=np.int32)
    max_u32 = rng.integers(0, 2**32, n, dtype=np.uint32)
    add_f32 = rng.uniform(-1e3, 1e3, n).astype(np.float32)
    xor_b64 = rng.integers(0, 2**63, n, dtype=np.uint64)
    inc_u32 = rng.integers(0, 60, n, dtype=np.uint32)
    dec_u32 = rng.integers(0, 60, n, dtype=np.uint32)
    smem_sum = np.zeros(n, dtype=np.uint32)
    before = [a.copy() for a in (add_u32, min_s32, max_u32, add_f32, xor_b64, inc_u32, dec_u32)]
    mod.get_function("bulk_reduce")(1, 128, (src, add_u32, min_s32, max_u32, add_f32, xor_b64, inc_u32, dec_u32,
                                             smem_sum, np.uint32(n)), **mode)
    a_u32, a_s32, a_max, a_f32, a_xor, a_inc, a_dec = before
    v = src[:n]
    assert np.array_equal(add_u32, a_u32 + v)
    assert np.array_equal(min_s32, np.minimum(a_s32, v.view(np.int32)))
    assert np.array_equal(max_u32, np.maximum(a_max, v))
    assert np.array_equal(add_f32.view(np.uint32), (a_f32 + v.view(np.float32)).view(np.uint32))
    assert np.array_equal(xor_b64, a_xor ^ src.view(np.uint64))
    assert np.array_equal(inc_u32, np.where(a_inc >= v, 0, a_inc + 1).astype(np.uint32))
    assert np.array_equal(dec_u32, np.where((a_dec == 0) | (a_dec > v), v, a_dec - 1).astype(np.uint32))
    assert np.array_equal(smem_sum, np.arange(n, dtype=np.uint32) * np.uint32(1000) + v)


def _bf16_to_f32(h: np.ndarray) -> np.ndarray:
    return (h.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("mode", MODES)
def test_bulk_reductions_half(mod, mode):
    """cp.reduce.async.bulk .add.noftz.f16 (NumPy's correctly rounded float16 add) and .max.bf16 (the larger
    value, both operands normal or zero, no NaNs), into global memory."""
    n = 512
    rng = np.random.default_rng(6)
    src = rng.uniform(-8, 8, n).astype(np.float16)
    add_f16 = rng.uniform(-8, 8, n).astype(np.float16)
    max_bf16 = (rng.uniform(-8, 8, n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    a0, m0 = add_f16.copy(), max_bf16.copy()
    mod.get_function("bulk_reduce_half")(1, 128, (src.view(np.uint16), add_f16.view(np.uint16), max_bf16,
                                                  np.uint32(n)), **mode)
    assert np.array_equal(add_f16.view(np.uint16), (a0 + src).view(np.uint16))
    s = src.view(np.uint16)
    want = np.where(_bf16_to_f32(s) > _bf16_to_f32(m0), s, m0)
    assert np.array_equal(max_bf16, want)


@pytest.mark.parametrize("mode", MODES)
def test_mbarrier_semantics(mod, mode):
    """arrive_drop lowers the next phases' expected count; try_wait(state) waits for the arrive's phase;
    cp.async.mbarrier.arrive.noinc counts as an arrival, without .noinc it is balanced (PTX ISA §9.7.13.15)."""
    src = np.arange(64, dtype=np.uint32) * np.uint32(0x01010101) + np.uint32(7)
    flags = np.zeros(64, dtype=np.uint32)
    out = np.zeros(128, dtype=np.uint32)
    mod.get_function("mbar_semantics")(1, 64, (src, flags, out), **mode)
    assert np.all(flags == 0b11011), flags
    t = np.arange(64)
    assert np.array_equal(out[0::2], src[63 - t])
    assert np.array_equal(out[1::2], src[(t + 1) % 64])


def test_bulk_copy_out_of_bounds_faults(mod):
    """A bulk copy reading past its source array is a memory fault (checked launches), not a wild read."""
    src = np.zeros(2 * 24, dtype=np.uint32)  # 96 bytes per block for 2 blocks; 4096 asked
    out = np.zeros(2 * (1024 + 16), dtype=np.uint32)
    flags = np.zeros(256, dtype=np.uint32)
    with pytest.raises(ptxjit.KernelFault):
        mod.get_function("bulk_roundtrip")(2, 128, (src, out, flags, np.uint32(4096)), checked=True)


def test_tensor_im2col_w_refused_clearly():
    """cp.async.bulk.tensor in im2col::w mode is valid PTX that ptxjit refuses, naming the instruction and its
    line (tile mode: tests/test_tma.py; plain im2col loads: tests/test_sm90_forms.py)."""
    body = ("cp.async.bulk.tensor.3d.shared::cluster.global.im2col::w.mbarrier::complete_tx::bytes"
            " [%r1], [%rd1, {%r2, %r3, %r4}], [%r5], {%h1, %h2};")
    ptx = snippet_kernel(f"    {body}", [("u64", "out")]).replace(".target sm_80", ".target sm_90a")
    with pytest.raises(ptxjit.UnsupportedInstructionError) as ei:
        ptxjit.Module(ptx).get_function("k")(1, 1, (np.zeros(1, np.uint64),))
    msg = str(ei.value)
    assert "cp.async.bulk.tensor" in msg and "tile mode" in msg and ":18:" in msg, msg


def test_check_declines_what_it_cannot_trace(mod):
    """ptxjit check's racecheck judges a kernel on its traced accesses in their order; the order mbarrier
    waits give is not modelled yet, so racecheck is skipped with a warning naming the instruction (no false
    reports); initcheck sees the bulk copies' bytes and finds nothing; the launch runs, with the expected result."""
    src = np.arange(64, dtype=np.uint32) * np.uint32(0x01010101) + np.uint32(7)
    flags = np.zeros(64, dtype=np.uint32)
    out = np.zeros(128, dtype=np.uint32)
    with pytest.warns(ptxjit.PtxjitWarning, match="racecheck skipped.*mbarrier"):
        reports = ptxjit.check(mod.get_function("mbar_semantics"), 1, 64, (src, flags, out),
                               tools=("racecheck", "initcheck"))
    assert reports == []
    assert np.all(flags == 0b11011), flags
