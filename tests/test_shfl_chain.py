"""Butterfly chains run at their first shuffle (passes/shflchain.py, lower/rules/sync.py chain_prologue):
which chains qualify, read off the PTX by hand, and the fused chains' results against NumPy's model of
each lane's butterfly in the PTX's operand order (Triton's own chains: tests/test_triton*.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.frontend.parser import parse
from ptxjit.passes.shflchain import shuffle_chains

DATA = Path(__file__).parent / "data" / "triton"

HEAD = """
.version 8.0
.target sm_80
.address_size 64
"""


def _chains(src: str, name: str) -> list[list[int]]:
    return [[s.k for s in c.steps] for c in shuffle_chains(parse(src).functions[name])]


def _chains_as_lowered(fn):
    """The chains as lowering finds them: steps may read registers that are pure functions of the thread
    index (passes/remat.py)."""
    from ptxjit.isa.special import is_special
    from ptxjit.passes.remat import rematerializable

    remat = rematerializable(fn, {p.name for p in fn.params}, is_special)
    return shuffle_chains(fn, lambda r: r in remat or is_special(r))


def test_triton_softmax_chains():
    """softmax: a max and a sum over the warp (16..1), each followed, after the shared-memory exchange
    between the CTA's 4 warps, by a chain over those 4 values (2, 1)."""
    src = (DATA / "softmax.sm80.ptx").read_text()
    fn = next(iter(parse(src).functions.values()))
    chains = shuffle_chains(fn)
    assert [[s.k for s in c.steps] for c in chains] == [[16, 8, 4, 2, 1], [2, 1], [16, 8, 4, 2, 1], [2, 1]]
    assert [c.steps[0].ops[0].opcode for c in chains] == ["max", "max", "add", "add"]
    assert [c.result for c in chains] == ["%r20", "%r32", "%r45", "%r50"]  # read off the PTX


def _kernel(body: str, regs: int = 40) -> str:
    return HEAD + f"""
.visible .entry k(.param .u64 px, .param .u64 pout)
{{
  .reg .pred %p<10>;
  .reg .b32 %r<{regs}>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [px];
  ld.param.u64 %rd2, [pout];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mad.lo.s32 %r4, %r2, %r3, %r1;
  mul.wide.s32 %rd3, %r4, 4;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.b32 %r5, [%rd4];
{body}
  st.global.b32 [%rd5], %r9;
  ret;
}}
"""


CHAIN3 = """
  shfl.sync.bfly.b32 %r10, %r5, 4, 31, -1;
  {op} %r11, %r5, %r10;
  shfl.sync.bfly.b32 %r12, %r11, 2, 31, -1;
  {op} %r13, %r12, %r11;
  shfl.sync.bfly.b32 %r14, %r13, 1, 31, -1;
  {op} %r9, %r13, %r14;
"""


@pytest.mark.parametrize("variant,expect", [
    ("plain", [[4, 2, 1]]),
    # an intermediate read after the chain: its value would not exist (the chain from the step that
    # sends it on qualifies)
    ("reads_intermediate", [[2, 1]]),
    # a guarded operation: not every lane computes it
    ("guarded_op", []),
    # a distance that is no power of two: lane ^ 3 is not lane +- 3
    ("distance_3", [[2, 1]]),
    # a segment mask (c = 0x1c1f): not a whole-warp butterfly
    ("segments", [[2, 1]]),
    # a partial membermask
    ("membermask", [[2, 1]]),
    # the result read between the head and its operation (it would see the fused value too early):
    # the chain from the second shuffle on, after that read, still qualifies
    ("result_read_early", [[4, 2]]),
    # the value sent rewritten before the first operation reads it: the rest of the chain qualifies
    ("sent_rewritten", [[2, 1]]),
])
def test_which_chains_qualify(variant, expect):
    body = CHAIN3.format(op="add.f32")
    if variant == "reads_intermediate":
        body += "  add.f32 %r9, %r9, %r11;\n"
    elif variant == "guarded_op":
        body = body.replace("add.f32 %r13", "@%p1 add.f32 %r13")
        body = "  setp.lt.u32 %p1, %r1, 7;\n" + body
    elif variant == "distance_3":
        body = body.replace("%r5, 4, 31", "%r5, 3, 31")
    elif variant == "segments":
        body = body.replace("%r5, 4, 31", "%r5, 4, 0x1c1f")
    elif variant == "membermask":
        body = body.replace("%r5, 4, 31, -1", "%r5, 4, 31, 0xffff")
    elif variant == "result_read_early":
        body = body.replace("  shfl.sync.bfly.b32 %r12", "  mov.b32 %r20, %r9;\n  shfl.sync.bfly.b32 %r12")
    elif variant == "sent_rewritten":
        body = body.replace("  add.f32 %r11", "  mov.b32 %r5, 0;\n  add.f32 %r11")
    assert _chains(_kernel(body), "k") == expect


def _bfly_model(x: np.ndarray, steps: list[tuple[int, bool]], op) -> np.ndarray:
    """Each lane's butterfly: per step (k, own first?), v = op(own, other) or op(other, own)."""
    n = x.shape[0]
    lane = np.arange(n) % 32
    base = np.arange(n) - lane
    v = x.copy()
    for k, own_first in steps:
        other = v[base + (lane ^ k)]
        v = op(v, other) if own_first else op(other, v)
    return v


F32 = np.float32


def _fadd(a, b):
    return (a.astype(F32) + b.astype(F32)).astype(F32)


def _fmul(a, b):
    return (a.astype(F32) * b.astype(F32)).astype(F32)


OPS = {
    "add.f32": (_fadd, F32),
    "mul.f32": (_fmul, F32),
    "max.f32": (np.fmax, F32),  # PTX max: a NaN operand gives the other one
    "min.f32": (np.fmin, F32),
    "min.s32": (np.minimum, np.int32),
    "max.u32": (np.maximum, np.uint32),
    "xor.b32": (np.bitwise_xor, np.uint32),
    "add.s32": (lambda a, b: (a.astype(np.int64) + b).astype(np.int32), np.int32),
}


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("block", [32, 96, 128])
def test_fused_chain_matches_numpy(op, block, monkeypatch):
    """A chain (4, 2, 1) with the operands in both orders, on values with NaNs and infinities for the float
    operations, in CTAs of 1, 3 and 4 warps."""
    monkeypatch.setenv("PTXJIT_TIERS", "0")  # the block-specialized (region mode) code, where chains fuse
    src = _kernel(CHAIN3.format(op=op))
    assert _chains(src, "k") == [[4, 2, 1]]
    fn, dt = OPS[op]
    rng = np.random.default_rng(block)
    grid = 3
    n = grid * block
    if dt == F32:
        x = rng.uniform(-3, 3, n).astype(F32)
        x[rng.integers(0, n, 5)] = np.nan
        x[rng.integers(0, n, 3)] = np.inf
    else:
        x = rng.integers(-1000 if dt == np.int32 else 0, 1000, n).astype(dt)
    out = np.zeros(n, dt)
    ptxjit.Module(src).get_function("k")(grid, block, (x, out))
    with np.errstate(invalid="ignore", over="ignore"):
        expect = _bfly_model(x, [(4, True), (2, False), (1, True)], fn)
    if dt == F32:
        both_nan = np.isnan(out) & np.isnan(expect)
        np.testing.assert_array_equal(np.where(both_nan, 0, out), np.where(both_nan, 0, expect))
    else:
        np.testing.assert_array_equal(out, expect)


LOOPED = """
  mov.b32 %r9, 0;
  mov.b32 %r20, 0;
$L_loop:
  shfl.sync.bfly.b32 %r10, %r5, 16, 31, -1;
  add.s32 %r11, %r5, %r10;
  shfl.sync.bfly.b32 %r12, %r11, 8, 31, -1;
  add.s32 %r13, %r11, %r12;
  shfl.sync.bfly.b32 %r14, %r13, 1, 31, -1;
  add.s32 %r15, %r13, %r14;
  add.s32 %r9, %r9, %r15;
  add.s32 %r5, %r5, %r1;
  add.s32 %r20, %r20, 1;
  setp.lt.u32 %p2, %r20, 3;
  @%p2 bra $L_loop;
"""


def test_chain_in_a_loop_and_in_some_warps(monkeypatch):
    """The chain in a loop (three releases of its point, the values changing between), and behind a
    branch that only the even warps take (the odd ones never reach the point: the guarded copy)."""
    monkeypatch.setenv("PTXJIT_TIERS", "0")
    body = ("  shr.u32 %r30, %r1, 5;\n  and.b32 %r31, %r30, 1;\n  mov.b32 %r9, -1;\n"
            "  setp.ne.u32 %p3, %r31, 0;\n  @%p3 bra $L_skip;\n" + LOOPED + "$L_skip:\n")
    src = _kernel(body)
    assert _chains(src, "k") == [[16, 8, 1]]
    block, grid = 128, 2
    n = block * grid
    x = np.random.default_rng(5).integers(-50, 50, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    ptxjit.Module(src).get_function("k")(grid, block, (x, out))
    tid = np.arange(n) % block
    v, acc = x.astype(np.int64), np.zeros(n, np.int64)
    for _ in range(3):
        acc += _bfly_model(v, [(16, True), (8, True), (1, True)], np.add)
        v = v + tid
    expect = np.where((tid >> 5) & 1, -1, acc).astype(np.int32)
    np.testing.assert_array_equal(out, expect)


TWO_CHAINS = """
  mul.lo.s32 %r6, %r5, 3;
  shfl.sync.bfly.b32 %r10, %r5, 16, 31, -1;
  add.s32 %r11, %r5, %r10;
  shfl.sync.bfly.b32 %r12, %r11, 2, 31, -1;
  add.s32 %r13, %r11, %r12;
  shfl.sync.bfly.b32 %r20, %r6, 1, 31, -1;
  max.s32 %r21, %r20, %r6;
  shfl.sync.bfly.b32 %r22, %r21, 8, 31, -1;
  max.s32 %r23, %r22, %r21;
  shfl.sync.bfly.b32 %r24, %r23, 4, 31, -1;
  max.s32 %r25, %r23, %r24;
  mul.lo.s32 %r26, %r25, 1000;
  add.s32 %r9, %r13, %r26;
"""


def test_chains_sharing_one_suspension(monkeypatch):
    """Two chains written one after the other (as Triton writes reductions of several rows): the shuffle
    scheduler puts their first shuffles back to back, and both chains run at that one point."""
    monkeypatch.setenv("PTXJIT_TIERS", "0")
    from ptxjit.passes.shflsched import batched_shfls, group_shuffles

    src = _kernel(TWO_CHAINS)
    g = group_shuffles(parse(src).functions["k"])
    chains = shuffle_chains(g)
    assert [[s.k for s in c.steps] for c in chains] == [[16, 2], [1, 8, 4]]
    skip = {id(i) for c in chains for i in c.members()}
    assert {id(c.head) for c in chains} & batched_shfls(g, skip) == {id(chains[1].head)}  # one point
    block, grid = 64, 3
    n = block * grid
    x = np.random.default_rng(9).integers(-99, 99, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    ptxjit.Module(src).get_function("k")(grid, block, (x, out))
    a = _bfly_model(x.astype(np.int64), [(16, True), (2, True)], np.add)
    m = _bfly_model(x.astype(np.int64) * 3, [(1, False), (8, False), (4, True)], np.maximum)
    np.testing.assert_array_equal(out, (a + m * 1000).astype(np.int32))


# nvcc's warp scan (`__shfl_up_sync` in a loop, unrolled): distances in registers set by mov, a lane test
# computed from %tid (a pure function of the thread index, recomputed per thread in the chain), selp, add;
# then a down-shuffle reduction whose last step also uses the shuffle's own predicate
UP_DOWN = """
  and.b32 %r11, %r1, 31;
  mov.u32 %r13, 4;
  mov.u32 %r14, 0;
  mov.u32 %r15, 1;
  mov.u32 %r16, -1;
  shfl.sync.up.b32 %r17|%p1, %r5, %r15, %r14, %r16;
  setp.eq.s32 %p2, %r11, 0;
  selp.b32 %r18, 0, %r17, %p2;
  add.s32 %r19, %r18, %r5;
  mov.u32 %r20, 2;
  shfl.sync.up.b32 %r21|%p3, %r19, %r20, %r14, %r16;
  setp.lt.u32 %p4, %r11, 2;
  selp.b32 %r22, 0, %r21, %p4;
  add.s32 %r23, %r22, %r19;
  shfl.sync.up.b32 %r24|%p5, %r23, %r13, %r14, %r16;
  setp.lt.u32 %p6, %r11, 4;
  selp.b32 %r25, 0, %r24, %p6;
  add.s32 %r26, %r25, %r23;
  shl.b32 %r27, %r26, 1;
  shfl.sync.down.b32 %r28, %r27, 8, 31, -1;
  xor.b32 %r29, %r28, %r27;
  shfl.sync.down.b32 %r30|%p7, %r29, 3, 31, -1;
  selp.b32 %r31, %r30, 0, %p7;
  add.s32 %r9, %r31, %r29;
"""


def test_up_and_down_chains_match_numpy(monkeypatch):
    """A scan then a down reduction of its result, as nvcc-style code writes them: one chain of five steps,
    against NumPy's model of each shuffle (out-of-range lanes keep their own value)."""
    monkeypatch.setenv("PTXJIT_TIERS", "0")
    src = _kernel(UP_DOWN)
    chains = _chains_as_lowered(parse(src).functions["k"])
    # one chain: the down shuffles send what the scan's last step computed (its shl is part of that step)
    assert [[(s.mode, s.k) for s in c.steps] for c in chains] == [
        [("up", 1), ("up", 2), ("up", 4), ("down", 8), ("down", 3)]]
    assert [c.result for c in chains] == ["%r9"] and sorted(chains[0].steps[1].outside) == ["%p4"]
    block, grid = 96, 4
    n = block * grid
    x = np.random.default_rng(3).integers(-1000, 1000, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    ptxjit.Module(src).get_function("k")(grid, block, (x, out))
    lane = np.arange(n) % 32
    v = x.astype(np.int64)
    for k in (1, 2, 4):
        up = np.where(lane >= k, v[np.arange(n) - k], v)
        v = np.where(lane < k, 0, up) + v
    w = (v * 2) & 0xFFFFFFFF
    ok8 = lane + 8 <= 31
    w = np.where(ok8, w[np.minimum(np.arange(n) + 8, n - 1)], w) ^ w
    ok3 = lane + 3 <= 31
    w = np.where(ok3, w[np.minimum(np.arange(n) + 3, n - 1)], 0) + w
    np.testing.assert_array_equal(out, (w & 0xFFFFFFFF).astype(np.uint32).view(np.int32))


NVCC = Path(__file__).parent / "data" / "shfl_chains.ptx"  # from shfl_chains.cu (tests/data/regen.sh)


def _shift(v: np.ndarray, k: int, mode: str) -> np.ndarray:
    """Each lane's shuffle result (out-of-range lanes keep their own value, as the hardware does)."""
    n = v.shape[0]
    t = np.arange(n)
    lane = t % 32
    if mode == "bfly":
        return v[t - lane + (lane ^ k)]
    if mode == "down":
        return np.where(lane + k <= 31, v[np.minimum(t + k, n - 1)], v)
    return np.where(lane >= k, v[t - k], v)


@pytest.mark.parametrize("block", [64, 128])
def test_nvcc_warp_reductions_and_scans(block, monkeypatch):
    """CUDA's warp-level loops compiled by nvcc: the float sum (bits shuffled, the float added), a max by
    shuffle-down, an int scan by shuffle-up with the lane test, fused as chains; a double's sum (two
    shuffles per step: batched, not a chain) beside them; all against NumPy's per-lane model."""
    monkeypatch.setenv("PTXJIT_TIERS", "0")
    src = NVCC.read_text()
    fns = parse(src).functions
    found = {name: [[(s.mode, s.k) for s in c.steps] for c in _chains_as_lowered(fns[name])]
             for name in ("warp_sum_f32", "warp_max_down", "warp_scan_i32", "warp_sum_f64")}
    assert found == {"warp_sum_f32": [[("bfly", k) for k in (16, 8, 4, 2, 1)]],
                     "warp_max_down": [[("down", k) for k in (16, 8, 4, 2, 1)]],
                     "warp_scan_i32": [[("up", k) for k in (1, 2, 4, 8, 16)]],
                     "warp_sum_f64": []}
    m = ptxjit.Module(src)
    grid = 3
    n = grid * block
    rng = np.random.default_rng(block)
    x = rng.standard_normal(n).astype(F32)
    x[[3, 77]] = np.nan
    out = np.zeros(n, F32)
    m.get_function("warp_sum_f32")(grid, block, (x, out))
    v = x.copy()
    for k in (16, 8, 4, 2, 1):
        v = (v + _shift(v, k, "bfly")).astype(F32)
    np.testing.assert_array_equal(out, v)  # (NaN == NaN for assert_array_equal)
    m.get_function("warp_max_down")(grid, block, (x, out))
    v = x.copy()
    for k in (16, 8, 4, 2, 1):
        v = np.fmax(v, _shift(v, k, "down"))
    np.testing.assert_array_equal(out, v)
    xi = rng.integers(-10**6, 10**6, n).astype(np.int32)
    scan, share = np.zeros(n, np.int32), np.zeros(n, np.int32)
    m.get_function("warp_scan_i32")(grid, block, (xi, scan, share))
    w = xi.astype(np.int64).reshape(-1, 32).cumsum(axis=1)
    np.testing.assert_array_equal(scan, w.ravel().astype(np.int32))
    np.testing.assert_array_equal(share, (w[:, -1:] - w).ravel().astype(np.int32))
    xd = rng.standard_normal(n)
    outd = np.zeros(n)
    m.get_function("warp_sum_f64")(grid, block, (xd, outd))
    v = xd.copy()
    for k in (1, 2, 4, 8, 16):
        v = v + _shift(v, k, "bfly")
    np.testing.assert_array_equal(outd, v)
