"""Tensor-core math: mma.sync (every type), wmma and wgmma replayed byte for byte against the H100's recorded
launches (shared/gpu-golden/tc), and a small GEMM of our own (tests/data/tc/mma_gemm.cu) against NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from tests.unit.tcgolden import tc_test

DATA = Path(__file__).parent / "data" / "tc" / "mma_gemm.ptx"

test_mma_golden = tc_test(r"^mma_", "mma.sync")  # fp8 included: two f16 HMMAs, then + C
test_wmma_golden = tc_test(r"^wmma_", "wmma.load/mma/store")
test_wgmma_golden = tc_test(r"^wgmma_", "wgmma.mma_async")


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA)


@pytest.mark.parametrize("shape", [(16, 8, 16), (32, 16, 64), (48, 24, 128)])
def test_gemm_f16_f32_matches_numpy(mod: ptxjit.Module, shape: tuple[int, int, int]) -> None:
    """C = A @ B on m16n8k16 f16 tensor cores equals NumPy's float64 product of the same f16 inputs within
    the accumulation error of f32 sums (products of f16 are exact; each mma rounds toward zero)."""
    m, n, k = shape
    rng = np.random.default_rng(m * 1000 + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    warps = (m // 16) * (n // 8)
    mod.get_function("gemm_f16_f32")((warps,), (32,), [a, b, c, np.int32(m), np.int32(n), np.int32(k)])
    ref = a.astype(np.float64) @ b.astype(np.float64)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    # k/16 mma steps, each loses < 2 ulp of f32 (truncated alignment plus the rounding toward zero)
    tol = mag * (k / 16 + 1) * 2.0**-22
    assert np.all(np.abs(c - ref) <= tol), np.max(np.abs(c - ref) / np.maximum(mag, 1e-30))


def test_gemm_tf32_f32_matches_numpy(mod: ptxjit.Module) -> None:
    """The tf32 path (m16n8k8) reads 10 mantissa bits of each f32 input: NumPy on inputs cut the same way."""
    m, n, k = 32, 16, 64
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    mod.get_function("gemm_tf32_f32")(((m // 16) * (n // 8),), (32,), [a, b, c, np.int32(m), np.int32(n),
                                                                      np.int32(k)])

    def tf32(x: np.ndarray) -> np.ndarray:
        return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)

    ref = tf32(a) @ tf32(b)
    mag = np.abs(tf32(a)) @ np.abs(tf32(b))
    assert np.all(np.abs(c - ref) <= mag * (k / 8 + 1) * 2.0**-22)
    # and not the full-precision f32 product: the low mantissa bits were really dropped
    full = a.astype(np.float64) @ b.astype(np.float64)
    assert np.max(np.abs(c - full)) > np.max(np.abs(c - ref))


def test_wgmma_gemm_two_warpgroups_matches_numpy() -> None:
    """Two warpgroups per CTA, several k steps (scale-d 0, then 1) of wgmma m64n16k16 from shared memory
    descriptors (tests/data/tc/wgmma_gemm.cu) against NumPy's product of the same f16 inputs."""
    mod = ptxjit.Module.from_file(DATA.with_name("wgmma_gemm.ptx"))
    m, k = 256, 64
    rng = np.random.default_rng(11)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, 16)).astype(np.float16)
    c = np.full((m, 16), np.nan, np.float32)
    mod.get_function("wgmma_gemm")((m // 128,), (256,), [a, b, c, np.int32(k)])
    ref = a.astype(np.float64) @ b.astype(np.float64)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(c - ref) <= mag * (k / 16 + 1) * 2.0**-22)


@pytest.mark.parametrize("body,expected", [
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32.sp {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, {%r5,%r6}, "
     "{%f5,%f6,%f7,%f8};", None),
    ("wmma.load.a.sync.aligned.row.m8n32k16.global.f16 {%r1,%r2,%r3,%r4,%r5,%r6,%r7,%r8}, [%rd1];",
     "only the m16n16k16 and m16n16k8 shapes are supported"),
    ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4,%f5,%f6,%f7,%f8}, {%r1,%r2}, {%r3,%r4}, "
     "{%f9,%f10,%f11,%f12,%f13,%f14,%f15,%f16};", "is not supported"),
])
def test_unsupported_tensor_forms_refused_with_place(body: str, expected: str | None) -> None:
    """Forms ptxjit does not run are refused at load, naming the line and the instruction (never an internal
    error at launch)."""
    from tests.ptxsnip import snippet_kernel

    ptx = snippet_kernel(f"    {body}", [("u64", "out")])
    with pytest.raises(ptxjit.UnsupportedInstructionError) as ei:
        ptxjit.Module(ptx, "tc.ptx").get_function("k")
    msg = str(ei.value)
    line = next(i for i, t in enumerate(ptx.splitlines(), 1) if body in t)
    assert f"tc.ptx:{line}:" in msg and body.split()[0].split(".")[0] in msg, msg
    if expected:
        assert expected in msg, msg


def test_wgmma_back_to_back_matches_numpy() -> None:
    """Two wgmma in a row without a barrier between them (one warp may reach the second while the others
    still finish the first: the exchange must neither deadlock nor mix them up), against NumPy."""
    mod = ptxjit.Module.from_file(DATA.with_name("wgmma_gemm.ptx"))
    rng = np.random.default_rng(12)
    a = rng.standard_normal((256, 32)).astype(np.float16)
    b = rng.standard_normal((32, 16)).astype(np.float16)
    c = np.full((256, 16), np.nan, np.float32)
    mod.get_function("wgmma_gemm_k32_back_to_back")((2,), (256,), [a, b, c], timeout=60)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(c - ref) <= mag * 3 * 2.0**-22)


_WGMMA_DESC_PTX = """.version 8.0
.target sm_90a
.address_size 64
.shared .align 128 .b8 smem[4096];
.visible .entry k(.param .u64 da, .param .u64 db, .param .u64 out)
{
    .reg .b64 %rd<4>;
    .reg .f32 %f<4>;
    ld.param.u64 %rd1, [da];
    ld.param.u64 %rd2, [db];
    ld.param.u64 %rd3, [out];
    mov.f32 %f0, 0f3F800000;
    mov.f32 %f1, 0f3F800000;
    mov.f32 %f2, 0f3F800000;
    mov.f32 %f3, 0f3F800000;
    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f0,%f1,%f2,%f3}, %rd1, %rd2, 1, 1, 1, 0, 0;
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    st.global.f32 [%rd3], %f0;
    ret;
}
"""


def test_wgmma_descriptor_past_shared_memory_faults() -> None:
    """A descriptor reaching past the CTA's shared memory (here a 128B-swizzled one starting at 255 KiB) stops
    the launch with a fault naming the wgmma, never a read outside the window.  Zeroed shared memory with a
    plain descriptor gives D = C.  (Swizzled layouts themselves: tests/test_wgmma_layouts.py.)"""
    k = ptxjit.Module(_WGMMA_DESC_PTX, "wg.ptx").get_function("k")
    out = np.zeros(1, np.float32)
    k((1,), (128,), [np.uint64(0), np.uint64(0), out])
    assert out[0] == 1.0
    with pytest.raises(ptxjit.KernelError) as ei:
        k((1,), (128,), [np.uint64(1 << 62 | 0x3FF0), np.uint64(0), out])
    line = next(i for i, t in enumerate(_WGMMA_DESC_PTX.splitlines(), 1) if "mma_async" in t)
    assert f"wg.ptx:{line}:" in str(ei.value) and "wgmma" in str(ei.value), str(ei.value)


_RUN_PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 inp, .param .u64 out)
{
    .reg .b32 %r<80>;
    .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [inp];
    ld.param.u64 %rd2, [out];
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd3, %r0, 56;
    add.u64 %rd4, %rd1, %rd3;
    ld.global.v4.b32 {%r10, %r11, %r12, %r13}, [%rd4];
    ld.global.v4.b32 {%r14, %r15, %r16, %r17}, [%rd4+16];
    ld.global.v4.b32 {%r18, %r19, %r20, %r21}, [%rd4+32];
    ld.global.v2.b32 {%r22, %r23}, [%rd4+48];
    MMA.f32.f16.f16.f32 {%r30,%r31,%r32,%r33}, {%r10,%r11,%r12,%r13}, {%r18,%r19}, {%r20,%r21,%r22,%r23};
    MMA.f32.f16.f16.f32 {%r34,%r35,%r36,%r37}, {%r14,%r15,%r16,%r17}, {%r18,%r19}, {%r20,%r21,%r22,%r23};
    MMA.f32.f16.f16.f32 {%r20,%r21,%r22,%r23}, {%r14,%r15,%r16,%r17}, {%r18,%r19}, {%r30,%r31,%r32,%r33};
    MMA.f16.f16.f16.f16 {%r38,%r39}, {%r10,%r11,%r12,%r13}, {%r18,%r19}, {%r10,%r11};
    MMA.f32.f16.f16.f32 {%r40,%r41,%r42,%r43}, {%r10,%r11,%r12,%r13}, {%r18,%r19}, {%r20,%r21,%r22,%r23};
    mul.wide.u32 %rd5, %r0, 72;
    add.u64 %rd6, %rd2, %rd5;
    st.global.v4.b32 [%rd6], {%r30, %r31, %r32, %r33};
    st.global.v4.b32 [%rd6+16], {%r34, %r35, %r36, %r37};
    st.global.v4.b32 [%rd6+32], {%r20, %r21, %r22, %r23};
    st.global.v4.b32 [%rd6+48], {%r40, %r41, %r42, %r43};
    st.global.v2.b32 [%rd6+64], {%r38, %r39};
    ret;
}
""".replace("MMA", "mma.sync.aligned.m16n8k16.row.col")


def _frag_a(words: np.ndarray) -> np.ndarray:
    """m16n8k16 f16 A fragments (lane, 4 registers) -> the 16 x 16 matrix (PTX ISA layout)."""
    h = words.view(np.float16).reshape(32, 4, 2).astype(np.float64)
    a = np.zeros((16, 16))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for j in range(4):
            for e in range(2):
                a[g + 8 * (j % 2), 2 * t + e + 8 * (j // 2)] = h[lane, j, e]
    return a


def _frag_b(words: np.ndarray) -> np.ndarray:
    h = words.view(np.float16).reshape(32, 2, 2).astype(np.float64)
    b = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for j in range(2):
            for e in range(2):
                b[2 * t + e + 8 * j, g] = h[lane, j, e]
    return b


def _frag_c(vals: np.ndarray) -> np.ndarray:
    """Accumulator fragments (lane, 4 elements) -> the 16 x 8 matrix."""
    c = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(4):
            c[g + 8 * (i // 2), 2 * t + i % 2] = vals[lane, i]
    return c


def test_mma_back_to_back_runs_match_numpy() -> None:
    """Five mma.sync in a row (lowering lets a run of independent ones share one suspension): two
    independent ones, one whose C is the first's D (and overwrites the C registers the others read),
    an f16-accumulator one whose C registers are A registers, and one reading the overwritten C again;
    each against NumPy's float64 product of the same f16 inputs (k = 16: < 2 ulp of f32 each)."""
    rng = np.random.default_rng(5)
    a1, a2 = (rng.standard_normal(32 * 8).astype(np.float16).view(np.uint32).reshape(32, 4) for _ in range(2))
    bw = rng.standard_normal(32 * 4).astype(np.float16).view(np.uint32).reshape(32, 2)
    cw = rng.standard_normal((32, 4)).astype(np.float32)
    inp = np.concatenate([a1, a2, bw, cw.view(np.uint32)], axis=1)
    out = np.zeros((32, 18), np.uint32)
    ptxjit.Module(_RUN_PTX, "run.ptx").get_function("k")((1,), (32,), [inp, out])
    A1, A2, B, C = _frag_a(a1), _frag_a(a2), _frag_b(bw), _frag_c(cw)
    d1 = A1 @ B + C
    f32 = out[:, :16].view(np.float32).reshape(32, 4, 4)
    f16 = out[:, 16:].view(np.float16).reshape(32, 4).astype(np.float64)
    c16 = _frag_c(a1[:, :2].view(np.float16).astype(np.float64))  # C = a1's first two registers as f16x2
    for got, want, mag in [
        (_frag_c(f32[:, 0]), d1, np.abs(A1) @ np.abs(B) + np.abs(C)),
        (_frag_c(f32[:, 1]), A2 @ B + C, np.abs(A2) @ np.abs(B) + np.abs(C)),
        (_frag_c(f32[:, 2]), A2 @ B + d1, np.abs(A2) @ np.abs(B) + np.abs(d1)),
        (_frag_c(f32[:, 3]), A1 @ B + (A2 @ B + d1), np.abs(A1) @ np.abs(B) + np.abs(A2 @ B + d1)),
    ]:
        assert np.all(np.abs(got - want) <= mag * 2.0**-21), np.max(np.abs(got - want) / mag)
    want16 = A1 @ B + c16
    mag16 = np.abs(A1) @ np.abs(B) + np.abs(c16)
    assert np.all(np.abs(_frag_c(f16) - want16) <= mag16 * 2.0**-10 + 2.0**-24)
