"""Independent warp shuffles share one suspension point (passes/shflsched.py, lower/rules/sync.py),
and `mad.wide` onto a pointer stays a pointer (passes/pointers.py): the schedule against facts read
off the PTX by hand, the kernels' results against NumPy's model of the shuffles."""

from __future__ import annotations

import numpy as np
import pytest

import ptxjit
from ptxjit.frontend.parser import parse
from ptxjit.passes.pointers import pointer_registers
from ptxjit.passes.shflsched import batched_shfls, group_shuffles

# Four butterfly sums written chain by chain (as Triton writes tl.sum over rows), debug labels between
# them; then independent up (with its predicate), down (clamped) and idx shuffles, and a dependent pair.
PTX = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry chains(.param .u64 px, .param .u64 pout)
{
  .reg .pred %p<4>;
  .reg .b32 %r<90>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [px];
  ld.param.u64 %rd2, [pout];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mad.lo.s32 %r4, %r2, %r3, %r1;
  mad.wide.s32 %rd4, %r4, 16, %rd1;
  ld.global.v4.b32 {%r10, %r20, %r30, %r40}, [%rd4];
$L__tmp0:
  shfl.sync.bfly.b32 %r11, %r10, 16, 31, -1;
  add.f32 %r12, %r10, %r11;
  shfl.sync.bfly.b32 %r13, %r12, 8, 31, -1;
  add.f32 %r14, %r12, %r13;
$L__tmp1:
  shfl.sync.bfly.b32 %r15, %r14, 4, 31, -1;
  add.f32 %r16, %r14, %r15;
  shfl.sync.bfly.b32 %r17, %r16, 2, 31, -1;
  add.f32 %r18, %r16, %r17;
  shfl.sync.bfly.b32 %r19, %r18, 1, 31, -1;
  add.f32 %r9, %r18, %r19;
$L__tmp2:
  shfl.sync.bfly.b32 %r21, %r20, 16, 31, -1;
  add.f32 %r22, %r20, %r21;
  shfl.sync.bfly.b32 %r23, %r22, 8, 31, -1;
  add.f32 %r24, %r22, %r23;
  shfl.sync.bfly.b32 %r25, %r24, 4, 31, -1;
  add.f32 %r26, %r24, %r25;
  shfl.sync.bfly.b32 %r27, %r26, 2, 31, -1;
  add.f32 %r28, %r26, %r27;
  shfl.sync.bfly.b32 %r29, %r28, 1, 31, -1;
  add.f32 %r8, %r28, %r29;
  shfl.sync.bfly.b32 %r31, %r30, 16, 31, -1;
  add.f32 %r32, %r30, %r31;
  shfl.sync.bfly.b32 %r33, %r32, 8, 31, -1;
  add.f32 %r34, %r32, %r33;
  shfl.sync.bfly.b32 %r35, %r34, 4, 31, -1;
  add.f32 %r36, %r34, %r35;
  shfl.sync.bfly.b32 %r37, %r36, 2, 31, -1;
  add.f32 %r38, %r36, %r37;
  shfl.sync.bfly.b32 %r39, %r38, 1, 31, -1;
  add.f32 %r7, %r38, %r39;
  shfl.sync.bfly.b32 %r41, %r40, 16, 31, -1;
  add.f32 %r42, %r40, %r41;
  shfl.sync.bfly.b32 %r43, %r42, 8, 31, -1;
  add.f32 %r44, %r42, %r43;
  shfl.sync.bfly.b32 %r45, %r44, 4, 31, -1;
  add.f32 %r46, %r44, %r45;
  shfl.sync.bfly.b32 %r47, %r46, 2, 31, -1;
  add.f32 %r48, %r46, %r47;
  shfl.sync.bfly.b32 %r49, %r48, 1, 31, -1;
  add.f32 %r6, %r48, %r49;
  and.b32 %r50, %r1, 31;
  mad.lo.s32 %r51, %r50, 7, 3;
  shfl.sync.up.b32 %r52|%p1, %r4, 1, 0, -1;
  shfl.sync.down.b32 %r53, %r4, 2, 31, -1;
  shfl.sync.idx.b32 %r54, %r4, %r51, 31, -1;
  shfl.sync.bfly.b32 %r55, %r4, 1, 31, -1;
  shfl.sync.bfly.b32 %r56, %r55, 2, 31, -1;
  selp.u32 %r57, 1, 0, %p1;
  mul.wide.s32 %rd5, %r4, 40;
  add.s64 %rd6, %rd2, %rd5;
  st.global.v4.b32 [%rd6], {%r9, %r8, %r7, %r6};
  st.global.v4.b32 [%rd6+16], {%r52, %r57, %r53, %r54};
  st.global.v2.b32 [%rd6+32], {%r55, %r56};
  ret;
}
"""


def _shfls(fn):
    return [i for i in fn.instructions if i.opcode == "shfl"]


def _dst(ins) -> str:
    d = ins.operands[0]
    return d.first.name if hasattr(d, "first") else d.name


def test_group_shuffles_puts_equal_depths_back_to_back():
    fn = parse(PTX).functions["chains"]
    g = group_shuffles(fn)
    order = [_dst(i) for i in _shfls(g)]
    # depth 0: the first shuffle of each chain and the six that read %r4 or nothing shuffled
    assert set(order[:8]) == {"%r11", "%r21", "%r31", "%r41", "%r52", "%r53", "%r54", "%r55"}
    # depth 1: each chain's second shuffle and the dependent one (%r56 reads %r55)
    assert set(order[8:13]) == {"%r13", "%r23", "%r33", "%r43", "%r56"}
    assert [set(order[k:k + 4]) for k in (13, 17, 21)] == [
        {f"%r{c}{s}" for c in (1, 2, 3, 4)} for s in (5, 7, 9)]
    body = g.instructions
    pos = {id(i): k for k, i in enumerate(body)}
    shfl = _shfls(g)
    # each group stands back to back: 8 + 5 + 4 + 4 + 4 shuffles, 5 suspension points of 25
    runs = [1]
    for a, b in zip(shfl, shfl[1:], strict=False):
        if pos[id(b)] == pos[id(a)] + 1:
            runs[-1] += 1
        else:
            runs.append(1)
    assert runs == [8, 5, 4, 4, 4]
    assert len(batched_shfls(g)) == 25 - 5
    # the stores keep their order, after every shuffle
    stores = [k for k, i in enumerate(body) if i.opcode == "st"]
    assert stores == sorted(stores) and min(stores) > max(pos[id(s)] for s in shfl)
    # the original order (no two independent shuffles adjacent): 2 of the tail's pairs share a point
    assert len(batched_shfls(fn)) == 3  # %r52/%r53/%r54/%r55 run; %r56 reads %r55


def test_dependent_or_ordered_shuffles_are_not_batched():
    src = PTX.replace("shfl.sync.bfly.b32 %r56, %r55, 2, 31, -1;",
                      "st.global.b32 [%rd1], %r55;\n  shfl.sync.bfly.b32 %r56, %r4, 2, 31, -1;")
    g = group_shuffles(parse(src).functions["chains"])
    body = g.instructions
    st = next(k for k, i in enumerate(body) if i.opcode == "st")
    late = next(k for k, i in enumerate(body) if i.opcode == "shfl" and _dst(i) == "%r56")
    early = next(k for k, i in enumerate(body) if i.opcode == "shfl" and _dst(i) == "%r55")
    assert early < st < late  # a store stays between the shuffles it stood between


def test_carry_chain_keeps_its_order():
    """addc reads the carry flag the add.cc before it wrote: an implicit register the dependences do not
    name.  Here the shuffle needs the second add.cc (its operand and its place), not the addc: as a pure
    instruction the addc would be left for after the shuffle, behind the second add.cc, and add the
    wrong carry."""
    src = PTX.replace("shfl.sync.bfly.b32 %r56, %r55, 2, 31, -1;",
                      "add.cc.u32 %r60, %r1, %r2;\n  addc.u32 %r61, %r1, 0;\n  add.cc.u32 %r62, %r2, %r2;\n"
                      "  shfl.sync.bfly.b32 %r56, %r62, 2, 31, -1;")
    g = group_shuffles(parse(src).functions["chains"])
    ops = [_dst(i) for i in g.instructions if i.opcode in ("add", "addc") and _dst(i) in ("%r60", "%r61", "%r62")]
    assert ops == ["%r60", "%r61", "%r62"]


def test_mad_wide_onto_a_pointer_is_a_pointer():
    fn = parse(PTX).functions["chains"]
    ptrs = pointer_registers(fn, {p.name for p in fn.params})
    assert {"%rd1", "%rd2", "%rd4", "%rd6"} <= ptrs and "%rd5" not in ptrs


def _model(x: np.ndarray, nthreads: int) -> np.ndarray:
    """Per thread: the four butterfly sums, up by 1 and its predicate, down by 2, idx, bfly 1, bfly 1 then 2."""
    n = x.shape[0]
    lane = np.arange(n) % 32
    base = np.arange(n) - lane

    def bfly(v, k):
        return v[base + (lane ^ k)]

    out = np.zeros((n, 10), np.uint32)
    for c in range(4):
        v = x[:, c].copy()
        for k in (16, 8, 4, 2, 1):
            v = (v + bfly(v, k)).astype(np.float32)
        out[:, c] = v.view(np.uint32)
    g = np.arange(n, dtype=np.uint32)
    out[:, 4] = np.where(lane >= 1, g - 1, g)
    out[:, 5] = lane >= 1
    out[:, 6] = np.where(lane + 2 <= 31, g + 2, g)
    out[:, 7] = g[base + (lane * 7 + 3) % 32]
    out[:, 8] = g[base + (lane ^ 1)]
    out[:, 9] = out[base + (lane ^ 2), 8]
    return out


@pytest.mark.parametrize("grid,block", [(1, 32), (3, 64), (2, 96), (5, 128)])
def test_batched_shuffles_match_numpy(grid, block, monkeypatch):
    monkeypatch.setenv("PTXJIT_TIERS", "0")  # the block-specialized (region mode) code, where runs batch
    rng = np.random.default_rng(grid * block)
    n = grid * block
    x = rng.standard_normal((n, 4)).astype(np.float32)
    out = np.zeros((n, 10), np.uint32)
    ptxjit.Module(PTX).get_function("chains")(grid, block, (x, out))
    np.testing.assert_array_equal(out, _model(x, block))


BFLY_ANY = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry bfly_any(.param .u64 pout)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pout];
  mov.u32 %r1, %tid.x;
  shfl.sync.bfly.b32 %r2, %r1, 3, 31, -1;
  shfl.sync.bfly.b32 %r3, %r1, 5, 31, -1;
  shfl.sync.bfly.b32 %r4, %r1, 4, 31, -1;
  shfl.sync.bfly.b32 %r5, %r1, 0, 31, -1;
  shfl.sync.bfly.b32 %r6, %r1, 31, 31, -1;
  mul.wide.u32 %rd2, %r1, 20;
  add.s64 %rd3, %rd1, %rd2;
  st.global.v4.b32 [%rd3], {%r2, %r3, %r4, %r5};
  st.global.b32 [%rd3+16], %r6;
  ret;
}
"""


@pytest.mark.parametrize("block", [32, 64])
def test_butterfly_with_any_literal_distance(block, monkeypatch):
    """lane ^ k is lane +- k only for a power of two k: 3, 5 and 31 read other lanes (lane 1 ^ 3 = 2)."""
    monkeypatch.setenv("PTXJIT_TIERS", "0")
    out = np.zeros((block, 5), np.uint32)
    ptxjit.Module(BFLY_ANY).get_function("bfly_any")(1, block, (out,))
    t = np.arange(block, dtype=np.uint32)
    base, lane = t & ~np.uint32(31), t & np.uint32(31)
    np.testing.assert_array_equal(out, np.stack([base + (lane ^ k) for k in (3, 5, 4, 0, 31)], axis=1))
