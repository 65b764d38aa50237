"""The baseline build (tier 0) keeps registers live across a suspension point in the thread's save area
(lower/regions.py _resident_registers) and outlines numeric emulations (FnLowering.outlined): kernels with
barriers and warp collectives compute what NumPy and the optimized build (PTXJIT_TIERS=0) compute, bit for
bit, in the per-thread scheduler's generic code and in region mode, across CTAs that reuse a worker's save
area; and the baseline IR no longer grows with the registers saved at each barrier."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.jit.engine import BASELINE

ROOT = Path(__file__).resolve().parents[2]
NT = 128  # threads per CTA

# Each round: publish x, barrier, read the next thread's x, barrier, then update registers that live
# across both barriers: an f32 accumulator, x itself, a count read before any write (0 where the thread
# starts, whatever the worker's previous CTA left in the save area), a predicate and a 64-bit address.
_PTX = """
.version 7.0
.target sm_80
.address_size 64

.visible .entry rounds(.param .u64 out, .param .u64 inp, .param .u32 nrounds)
{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .f32 %f<8>;
    .reg .b64 %rd<10>;
    .shared .align 4 .b32 buf[128];

    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [inp];
    ld.param.u32 %r1, [nrounds];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %ctaid.x;
    mad.lo.u32 %r5, %r4, %r3, %r2;
    cvta.to.global.u64 %rd3, %rd2;
    mul.wide.u32 %rd4, %r5, 4;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.f32 %f1, [%rd5];
    mov.f32 %f2, 0f00000000;
    mov.u32 %r6, 0;
    mov.u32 %r10, buf;
    shl.b32 %r7, %r2, 2;
    add.u32 %r8, %r10, %r7;
    add.u32 %r9, %r2, 1;
    rem.u32 %r9, %r9, %r3;
    shl.b32 %r9, %r9, 2;
    add.u32 %r11, %r10, %r9;
    setp.eq.u32 %p3, %r2, 0;
LOOP:
    st.shared.f32 [%r8], %f1;
    BARRIER;
    ld.shared.f32 %f3, [%r11];
    BARRIER;
    fma.rn.f32 %f2, %f3, 0f3F000000, %f2;
    add.f32 %f1, %f1, %f3;
    setp.gt.f32 %p1, %f3, 0f00000000;
    @%p1 add.u32 %r12, %r12, 1;
    @%p3 add.u32 %r12, %r12, 1000;
    add.u32 %r6, %r6, 1;
    setp.lt.u32 %p2, %r6, %r1;
    @%p2 bra LOOP;
    cvta.to.global.u64 %rd6, %rd1;
    mul.wide.u32 %rd7, %r5, 12;
    add.s64 %rd8, %rd6, %rd7;
    st.global.f32 [%rd8], %f2;
    st.global.f32 [%rd8+4], %f1;
    st.global.u32 [%rd8+8], %r12;
    ret;
}
"""

# `bar.sync 0;` runs in the per-thread scheduler's generic code at tier 0; a thread count makes the kernel
# block-specialized (region mode: tiers/state.py _generic_ok)
BARRIERS = {"generic": "bar.sync 0", "region": f"bar.sync 0, {NT}"}


def _reference(x: np.ndarray, rounds: int) -> np.ndarray:
    x = x.reshape(-1, NT).copy()
    acc = np.zeros_like(x)
    count = np.zeros(x.shape, np.uint32)
    count[:, 0] = 1000 * rounds
    for _ in range(rounds):
        nb = np.roll(x, -1, axis=1)
        acc = (acc + np.float32(0.5) * nb).astype(np.float32)  # fma: 0.5 * nb is exact, one rounding
        x = (x + nb).astype(np.float32)
        count += (nb > 0).astype(np.uint32)
    out = np.zeros((x.size, 3), np.uint32)
    out[:, 0] = acc.ravel().view(np.uint32)
    out[:, 1] = x.ravel().view(np.uint32)
    out[:, 2] = count.ravel()
    return out


def _run(ptx: str, x: np.ndarray, rounds: int) -> np.ndarray:
    out = np.full((x.size, 3), 0xCDCDCDCD, np.uint32)
    ptxjit.Module(ptx).get_function("rounds")(x.size // NT, NT, [out, x, np.uint32(rounds)])
    return out


@pytest.mark.parametrize("mode", list(BARRIERS))
def test_registers_across_barriers_match_numpy_and_the_optimized_build(mode: str, monkeypatch) -> None:
    ptx = _PTX.replace("BARRIER", BARRIERS[mode])
    rng = np.random.default_rng(7)
    x = rng.standard_normal(16 * NT).astype(np.float32)  # 16 CTAs: workers run several, reusing their areas
    want = _reference(x, 5)
    monkeypatch.setenv("PTXJIT_TIERS", "1")  # a first launch: tier 0's baseline build
    baseline = _run(ptx, x, 5)
    monkeypatch.setenv("PTXJIT_TIERS", "0")  # the optimized build
    optimized = _run(ptx, x, 5)
    np.testing.assert_array_equal(baseline, want)
    np.testing.assert_array_equal(optimized, want)


def test_bitonic_sort_at_tier_0(monkeypatch) -> None:
    """55 barriers, with the pure functions of %tid kept in the save area instead of recomputed."""
    monkeypatch.setenv("PTXJIT_TIERS", "1")
    rng = np.random.default_rng(3)
    src = rng.integers(0, 2**32, 8 * 1024, dtype=np.uint32)
    dst = np.zeros_like(src)
    ptxjit.Module.from_file(ROOT / "bench" / "kernels" / "ptx" / "bitonic.ptx").get_function("bitonic")(
        src.size // 1024, 512, [src, dst])
    np.testing.assert_array_equal(dst, np.sort(src.reshape(-1, 1024), axis=1).ravel())


def _baseline_ir_lines(ptx: str, block: tuple[int, int, int] | None) -> int:
    # (a text of its own: the translation of the launch tests, found in a cache, would not count its lines)
    mod = ptxjit.Module(ptx + "\n// tests/unit/test_region_save_area.py: IR lines\n")
    lines = mod.translation(mod.get_function("rounds").fn, block, True, opt_level=BASELINE).llvm_lines
    assert lines > 0
    return lines


def test_baseline_ir_does_not_grow_with_the_registers_saved_at_each_barrier(tmp_path, monkeypatch) -> None:
    """Twenty more barriers with every register of the loop live across them: a few lines each in the
    generic code (the suspension and its resume block; 83 when each live register was saved and restored)
    and a region's loop over the threads in region mode (96; 253 before), no save and restore of each."""
    monkeypatch.setenv("PTXJIT_CACHE_DIR", str(tmp_path))
    for mode, block, most in (("generic", None, 20), ("region", (NT, 1, 1), 150)):
        ptx = _PTX.replace("BARRIER", BARRIERS[mode])
        more = ptx.replace(f"    {BARRIERS[mode]};\n    fma", f"    {BARRIERS[mode]};\n" * 21 + "    fma")
        grown = _baseline_ir_lines(more, block) - _baseline_ir_lines(ptx, block)
        assert grown < 20 * most, (mode, grown)


def test_numeric_units_are_outlined_at_the_baseline_only(tmp_path, monkeypatch) -> None:
    """div.full and ex2.approx (softmax): one function each in the baseline build's module, called per use."""
    monkeypatch.setenv("PTXJIT_CACHE_DIR", str(tmp_path))
    # (a text of its own: a translation cached on disk by another test would not be lowered here)
    path = ROOT / "tests" / "data" / "triton" / "softmax.sm80.ptx"
    mod = ptxjit.Module(path.read_text() + "\n// tests/unit/test_region_save_area.py\n")
    fn = next(f for f in mod.ir.functions.values() if f.is_entry and f.body is not None)
    import ptxjit.jit.translate as translate

    texts = []
    real = translate.optimize_to_object

    def keep(text, *a, **k):
        texts.append(text)
        return real(text, *a, **k)

    translate.optimize_to_object = keep
    try:
        mod.translation(fn, None, True, opt_level=BASELINE)
        mod.translation(fn, None, True, opt_level=3)
    finally:
        translate.optimize_to_object = real
    base, opt = texts[-2], texts[-1]
    for unit in ("mufu_ex2_f32", "div_full_f32"):
        assert f'define internal i32 @"__ptxjit_{unit}"' in base
        assert f"__ptxjit_{unit}" not in opt
