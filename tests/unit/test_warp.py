"""Warp collectives (shfl, vote, match, redux, activemask, bar.warp.sync) and CTA barriers (bar.sync,
barrier.sync, bar.red).  Expectations are computed per warp in Python from the PTX ISA pseudocode."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.floatutil import launch

GID = """
    mov.u32 %r60, %tid.x;
    mov.u32 %r61, %ctaid.x;
    mov.u32 %r62, %ntid.x;
    mad.lo.s32 %r63, %r61, %r62, %r60;
"""

FULL = "0xffffffff"


def shfl_model(mode: str, vals, b, c: int):
    """PTX ISA shfl.sync pseudocode for one warp: returns (d[32], p[32])."""
    cval = c & 0x1F
    mask = (c >> 8) & 0x1F
    d, p = [], []
    for lane in range(32):
        bval = (b[lane] if isinstance(b, list) else b) & 0x1F
        max_lane = (lane & mask) | (cval & ~mask & 0x1F)
        min_lane = lane & mask
        if mode == "up":
            j = lane - bval
            pv = j >= max_lane
        elif mode == "down":
            j = lane + bval
            pv = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            pv = j <= max_lane
        else:
            j = min_lane | (bval & ~mask & 0x1F)
            pv = j <= max_lane
        if not pv:
            j = lane
        d.append(vals[j])
        p.append(int(pv))
    return d, p


SHFL_B = [0, 1, 3, 5, 16, 31, 33]
SHFL_C = [0x1F, 0x0, 0x101F, 0x181F, 0x1C1F, 0x1000, 0x1800, 0x0F, 0x1E07]


SHFL_MODES = ["up", "down", "bfly", "idx"]


def test_shfl_sync_modes_clamps_and_segments():
    # one kernel, looping over (b, c) configurations held in memory (register operands b and c)
    configs = [(b, c) for b in SHFL_B for c in SHFL_C]
    nthreads = 64
    lines = [GID, """
    ld.param.u64 %rd40, [out];
    ld.param.u64 %rd41, [cfg];
    ld.param.u32 %r50, [ncfg];
    mad.lo.s32 %r1, %r63, 7, 100;
    mov.u32 %r20, 0;
$L_cfg:
    mul.wide.u32 %rd1, %r20, 8;
    add.s64 %rd2, %rd41, %rd1;
    ld.global.v2.u32 {%r21, %r22}, [%rd2];"""]
    for m, mode in enumerate(SHFL_MODES):
        lines += [f"    shfl.sync.{mode}.b32 %r{2 + m}|%p{1 + m}, %r1, %r21, %r22, {FULL};",
                  f"    selp.u32 %r{10 + m}, {1 << m}, 0, %p{1 + m};"]
    lines.append(f"""
    or.b32 %r10, %r10, %r11;
    or.b32 %r10, %r10, %r12;
    or.b32 %r10, %r10, %r13;
    mad.lo.s32 %r14, %r20, {nthreads}, %r63;
    mul.wide.u32 %rd3, %r14, 32;
    add.s64 %rd4, %rd40, %rd3;
    st.global.v4.u32 [%rd4], {{%r2, %r3, %r4, %r5}};
    st.global.u32 [%rd4+16], %r10;
    add.u32 %r20, %r20, 1;
    setp.lt.u32 %p8, %r20, %r50;
    @%p8 bra $L_cfg;""")
    cfg = np.array(configs, dtype=np.uint32)
    out = np.zeros((len(configs), nthreads, 8), dtype=np.uint32)  # 32-byte records keep v4 stores aligned
    launch("\n".join(lines), [("u64", "out"), ("u64", "cfg"), ("u32", "ncfg")],
           [out, cfg, np.uint32(len(configs))], block=nthreads)
    bad = []
    for k, (b, c) in enumerate(configs):
        for w in range(2):
            vals = [(w * 32 + lane) * 7 + 100 for lane in range(32)]
            for m, mode in enumerate(SHFL_MODES):
                d, p = shfl_model(mode, vals, b, c)
                got_d = [int(x) for x in out[k, w * 32:(w + 1) * 32, m]]
                got_p = [(int(x) >> m) & 1 for x in out[k, w * 32:(w + 1) * 32, 4]]
                if got_d != d or got_p != p:
                    bad.append(f"shfl.{mode} b={b} c={c:#x} warp {w}: d={got_d} (want {d}) p={got_p} "
                               f"(want {p})")
    assert not bad, f"{len(bad)} failing configurations:\n" + "\n".join(bad[:6])


def test_shfl_sync_idx_register_lane_and_no_predicate():
    body = GID + f"""
    ld.param.u64 %rd40, [out];
    mov.u32 %r5, %laneid;
    mul.lo.u32 %r6, %r5, 5;
    add.u32 %r6, %r6, 3;
    mul.lo.u32 %r1, %r63, %r63;
    shfl.sync.idx.b32 %r2, %r1, %r6, 0x1f, {FULL};
    cvt.rn.f32.u32 %f1, %r63;
    shfl.sync.bfly.b32 %r7, %r63, 0x10, 0x1f, {FULL};
    mov.b32 %r8, %f1;
    shfl.sync.down.b32 %r9|%p1, %r8, 2, 0x1f, {FULL};
    mov.b32 %f2, %r9;
    @!%p1 mov.f32 %f2, 0fBF800000;
    mov.b32 %r10, %f2;
    mul.wide.u32 %rd41, %r63, 16;
    add.s64 %rd42, %rd40, %rd41;
    st.global.v4.u32 [%rd42], {{%r2, %r7, %r10, %r6}};
"""
    out = np.zeros((64, 4), dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=64)
    for g in range(64):
        w, lane = divmod(g, 32)
        src = (lane * 5 + 3) & 31
        assert int(out[g, 0]) == (w * 32 + src) ** 2
        assert int(out[g, 1]) == w * 32 + (lane ^ 16)
        want = float(w * 32 + lane + 2) if lane + 2 <= 31 else -1.0
        assert out[g, 2:3].view(np.float32)[0] == want


def test_shfl_warp_sum_reduction_butterfly():
    body = GID + f"""
    ld.param.u64 %rd40, [out];
    ld.param.u64 %rd41, [inp];
    mul.wide.u32 %rd42, %r63, 4;
    add.s64 %rd43, %rd41, %rd42;
    ld.global.u32 %r1, [%rd43];
    mov.u32 %r3, 16;
$L_red:
    shfl.sync.bfly.b32 %r2, %r1, %r3, 0x1f, {FULL};
    add.u32 %r1, %r1, %r2;
    shr.u32 %r3, %r3, 1;
    setp.ne.u32 %p1, %r3, 0;
    @%p1 bra $L_red;
    add.s64 %rd44, %rd40, %rd42;
    st.global.u32 [%rd44], %r1;
"""
    rng = np.random.default_rng(2)
    inp = rng.integers(0, 1000, 128, dtype=np.uint32)
    out = np.zeros(128, dtype=np.uint32)
    launch(body, [("u64", "out"), ("u64", "inp")], [out, inp], grid=2, block=64)
    for w in range(4):
        assert np.all(out[w * 32:(w + 1) * 32] == inp[w * 32:(w + 1) * 32].sum())


PRED_PATTERNS = {
    "mod3": lambda g, lane: lane % 3 == 0,
    "all": lambda g, lane: True,
    "none": lambda g, lane: False,
    "warp1": lambda g, lane: g >= 32,
    "lane7": lambda g, lane: lane == 7,
}

VOTE_BODY = GID + f"""
    ld.param.u64 %rd40, [out];
    ld.param.u64 %rd43, [preds];
    mul.wide.u32 %rd44, %r63, 4;
    add.s64 %rd45, %rd43, %rd44;
    ld.global.u32 %r6, [%rd45];
    setp.ne.u32 %p1, %r6, 0;
    vote.sync.all.pred %p2, %p1, {FULL};
    vote.sync.any.pred %p3, %p1, {FULL};
    vote.sync.uni.pred %p4, %p1, {FULL};
    vote.sync.ballot.b32 %r7, %p1, {FULL};
    vote.sync.any.pred %p5, !%p1, {FULL};
    vote.sync.ballot.b32 %r8, !%p1, {FULL};
    selp.u32 %r9, 1, 0, %p2;
    selp.u32 %r10, 2, 0, %p3;
    selp.u32 %r11, 4, 0, %p4;
    selp.u32 %r12, 8, 0, %p5;
    or.b32 %r9, %r9, %r10;
    or.b32 %r9, %r9, %r11;
    or.b32 %r9, %r9, %r12;
    mul.wide.u32 %rd41, %r63, 12;
    add.s64 %rd42, %rd40, %rd41;
    st.global.u32 [%rd42], %r9;
    st.global.u32 [%rd42+4], %r7;
    st.global.u32 [%rd42+8], %r8;
"""


@pytest.mark.parametrize("pattern", list(PRED_PATTERNS))
def test_vote_sync(pattern):
    fn = PRED_PATTERNS[pattern]
    preds = np.array([int(fn(g, g % 32)) for g in range(64)], dtype=np.uint32)
    out = np.zeros((64, 3), dtype=np.uint32)
    launch(VOTE_BODY, [("u64", "out"), ("u64", "preds")], [out, preds], block=64)
    for w in range(2):
        pw = [bool(x) for x in preds[w * 32:(w + 1) * 32]]
        ballot = sum(1 << lane for lane in range(32) if pw[lane])
        flags = (int(all(pw)) | (2 * int(any(pw))) | (4 * int(all(pw) or not any(pw)))
                 | (8 * int(not all(pw))))
        for lane in range(32):
            g = w * 32 + lane
            assert int(out[g, 0]) == flags, (pattern, w, lane)
            assert int(out[g, 1]) == ballot
            assert int(out[g, 2]) == ballot ^ 0xFFFFFFFF


MATCH_BODY = GID + f"""
    ld.param.u64 %rd40, [out];
    ld.param.u32 %r9, [modulus];
    mov.u32 %r5, %laneid;
    rem.u32 %r1, %r5, %r9;
    add.u32 %r1, %r1, %r61;
    match.any.sync.b32 %r2, %r1, {FULL};
    match.all.sync.b32 %r3|%p1, %r1, {FULL};
    selp.u32 %r4, 1, 0, %p1;
    cvt.u64.u32 %rd1, %r1;
    shl.b64 %rd1, %rd1, 33;
    match.any.sync.b64 %r6, %rd1, {FULL};
    match.all.sync.b64 %r7, %rd1, {FULL};
    mul.wide.u32 %rd41, %r63, 20;
    add.s64 %rd42, %rd40, %rd41;
    st.global.u32 [%rd42], %r2;
    st.global.u32 [%rd42+4], %r3;
    st.global.u32 [%rd42+8], %r4;
    st.global.u32 [%rd42+12], %r6;
    st.global.u32 [%rd42+16], %r7;
"""


@pytest.mark.parametrize("modulus", [1, 5, 32])
def test_match_sync(modulus):
    out = np.zeros((64, 5), dtype=np.uint32)
    launch(MATCH_BODY, [("u64", "out"), ("u32", "modulus")], [out, np.uint32(modulus)], grid=2, block=32)
    uniform = modulus == 1
    for g in range(64):
        lane = g % 32
        same = sum(1 << k for k in range(32) if k % modulus == lane % modulus)
        assert int(out[g, 0]) == same
        assert int(out[g, 1]) == (0xFFFFFFFF if uniform else 0)
        assert int(out[g, 2]) == int(uniform)
        assert int(out[g, 3]) == same
        assert int(out[g, 4]) == (0xFFFFFFFF if uniform else 0)


REDUX = {
    "add.u32": lambda xs: sum(xs) & 0xFFFFFFFF,
    "min.u32": min,
    "max.u32": max,
    "min.s32": lambda xs: min(_s32(x) for x in xs) & 0xFFFFFFFF,
    "max.s32": lambda xs: max(_s32(x) for x in xs) & 0xFFFFFFFF,
    "add.s32": lambda xs: sum(_s32(x) for x in xs) & 0xFFFFFFFF,
    "and.b32": lambda xs: _fold(xs, lambda a, b: a & b),
    "or.b32": lambda xs: _fold(xs, lambda a, b: a | b),
    "xor.b32": lambda xs: _fold(xs, lambda a, b: a ^ b),
}


def _s32(x: int) -> int:
    return x - (1 << 32) if x & 0x80000000 else x


def _fold(xs, f):
    acc = xs[0]
    for x in xs[1:]:
        acc = f(acc, x)
    return acc


@pytest.mark.parametrize("op", list(REDUX))
def test_redux_sync(op):
    body = GID + f"""
    ld.param.u64 %rd40, [out];
    ld.param.u64 %rd41, [inp];
    mul.wide.u32 %rd42, %r63, 4;
    add.s64 %rd43, %rd41, %rd42;
    ld.global.u32 %r1, [%rd43];
    redux.sync.{op} %r2, %r1, {FULL};
    add.s64 %rd44, %rd40, %rd42;
    st.global.u32 [%rd44], %r2;
"""
    rng = np.random.default_rng(list(REDUX).index(op))
    inp = rng.integers(0, 2**32, 96, dtype=np.uint64).astype(np.uint32)
    inp[5] = 0x80000000
    inp[40] = 0x7FFFFFFF
    out = np.zeros(96, dtype=np.uint32)
    launch(body, [("u64", "out"), ("u64", "inp")], [out, inp], block=96)
    for w in range(3):
        xs = [int(x) for x in inp[w * 32:(w + 1) * 32]]
        assert np.all(out[w * 32:(w + 1) * 32] == REDUX[op](xs)), (op, w)


def test_activemask_full_and_partial_warp():
    body = GID + """
    ld.param.u64 %rd40, [out];
    activemask.b32 %r1;
    mul.wide.u32 %rd42, %r63, 4;
    add.s64 %rd44, %rd40, %rd42;
    st.global.u32 [%rd44], %r1;
"""
    out = np.zeros(48, dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=48)
    assert np.all(out[:32] == 0xFFFFFFFF)
    assert np.all(out[32:] == 0x0000FFFF)  # the second warp only has 16 threads


@pytest.mark.parametrize("mask,divergent", [(0xFFFFFFFF, False), (0xAAAAAAAA, True)])
def test_elect_sync(mask, divergent):
    """elect.sync d|p, membermask (PTX ISA 8.0): the leader is one member lane -- the lowest -- and every
    member learns its lane id; divergent: only the odd lanes reach it (and the mask names them), lane 1 leads."""
    branch = """
    and.b32 %r9, %r60, 1;
    setp.eq.u32 %p3, %r9, 0;
    @%p3 bra SKIP;
""" if divergent else ""
    body = GID + f"""
    ld.param.u64 %rd40, [out];
    mov.u32 %r1, 99;
    mov.u32 %r2, 7;
{branch}    elect.sync %r1|%p1, {mask};
    selp.u32 %r2, 1, 0, %p1;
SKIP:
    mul.wide.u32 %rd42, %r63, 8;
    add.s64 %rd44, %rd40, %rd42;
    st.global.v2.u32 [%rd44], {{%r1, %r2}};
"""
    out = np.zeros((64, 2), dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=64)
    lanes = np.arange(64) % 32
    active = (lanes % 2 == 1) if divergent else np.ones(64, bool)
    members = active & ((mask >> lanes) & 1).astype(bool)
    leader = 1 if divergent else (lanes[np.flatnonzero(members)[0]] if members.any() else 0)
    np.testing.assert_array_equal(out[members, 0], leader)
    np.testing.assert_array_equal(out[members, 1], (lanes[members] == leader).astype(np.uint32))
    assert np.all(out[~active] == [99, 7])


def test_bar_warp_sync_exchange_through_shared():
    body = """
    .shared .align 4 .u32 buf[64];
""" + GID + """
    ld.param.u64 %rd40, [out];
    mov.u32 %r1, buf;
    shl.b32 %r2, %r60, 2;
    add.s32 %r3, %r1, %r2;
    mul.lo.u32 %r4, %r60, 3;
    st.shared.u32 [%r3], %r4;
    bar.warp.sync 0xffffffff;
    xor.b32 %r5, %r60, 1;
    shl.b32 %r6, %r5, 2;
    add.s32 %r7, %r1, %r6;
    ld.shared.u32 %r8, [%r7];
    mul.wide.u32 %rd42, %r63, 4;
    add.s64 %rd44, %rd40, %rd42;
    st.global.u32 [%rd44], %r8;
"""
    out = np.zeros(64, dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=64)
    assert [int(x) for x in out] == [(t ^ 1) * 3 for t in range(64)]


def test_collectives_in_branch_taken_by_warp0_only():
    body = GID + f"""
    ld.param.u64 %rd40, [out];
    mul.wide.u32 %rd42, %r63, 12;
    add.s64 %rd44, %rd40, %rd42;
    setp.ge.u32 %p1, %r60, 32;
    @%p1 bra $L_skip;
    shfl.sync.down.b32 %r1, %r60, 1, 0x1f, {FULL};
    and.b32 %r9, %r60, 1;
    setp.eq.u32 %p2, %r9, 1;
    vote.sync.ballot.b32 %r2, %p2, {FULL};
    redux.sync.add.u32 %r3, %r60, {FULL};
    st.global.u32 [%rd44], %r1;
    st.global.u32 [%rd44+4], %r2;
    st.global.u32 [%rd44+8], %r3;
$L_skip:
    bar.sync 0;
"""
    out = np.full((128, 3), 7, dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=128)
    for t in range(32):
        assert int(out[t, 0]) == min(t + 1, 31)
        assert int(out[t, 1]) == 0xAAAAAAAA
        assert int(out[t, 2]) == sum(range(32))
    assert np.all(out[32:] == 7)


def test_bar_sync_with_early_exited_threads():
    body = """
    .shared .align 4 .u32 buf[64];
""" + GID + """
    ld.param.u64 %rd40, [out];
    setp.ge.u32 %p1, %r60, 40;
    @%p1 bra $L_exit;
    mov.u32 %r1, buf;
    shl.b32 %r2, %r60, 2;
    add.s32 %r3, %r1, %r2;
    add.u32 %r4, %r60, 1000;
    st.shared.u32 [%r3], %r4;
    bar.sync 0;
    sub.u32 %r5, 39, %r60;
    shl.b32 %r6, %r5, 2;
    add.s32 %r7, %r1, %r6;
    ld.shared.u32 %r8, [%r7];
    mul.wide.u32 %rd42, %r63, 4;
    add.s64 %rd44, %rd40, %rd42;
    st.global.u32 [%rd44], %r8;
$L_exit:
    exit;
"""
    out = np.zeros(64, dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=64)
    assert [int(x) for x in out[:40]] == [1000 + 39 - t for t in range(40)]
    assert np.all(out[40:] == 0)


LOOP_BODY = """
    .shared .align 4 .u32 buf[96];
""" + GID + """
    ld.param.u64 %rd40, [out];
    ld.param.u32 %r11, [iters];
    mov.u32 %r1, buf;
    shl.b32 %r2, %r60, 2;
    add.s32 %r3, %r1, %r2;
    st.shared.u32 [%r3], %r60;
    bar.sync 0;
    add.u32 %r4, %r60, 1;
    rem.u32 %r4, %r4, 96;
    shl.b32 %r5, %r4, 2;
    add.s32 %r6, %r1, %r5;
    mov.u32 %r7, 0;
$L_loop:
    ld.shared.u32 %r8, [%r6];
    barrier.sync.aligned 1;
    mad.lo.u32 %r9, %r8, 3, %r60;
    st.shared.u32 [%r3], %r9;
    bar.sync 2, 96;
    add.u32 %r7, %r7, 1;
    setp.lt.u32 %p1, %r7, %r11;
    @%p1 bra $L_loop;
    barrier.sync 0;
    ld.shared.u32 %r10, [%r3];
    mul.wide.u32 %rd42, %r63, 4;
    add.s64 %rd44, %rd40, %rd42;
    st.global.u32 [%rd44], %r10;
"""


@pytest.mark.parametrize("iters", [1, 6])
def test_bar_sync_in_loop(iters):
    n = 96
    out = np.zeros(2 * n, dtype=np.uint32)
    launch(LOOP_BODY, [("u64", "out"), ("u32", "iters")], [out, np.uint32(iters)], grid=2, block=n)
    s = list(range(n))
    for _ in range(iters):
        s = [(s[(t + 1) % n] * 3 + t) & 0xFFFFFFFF for t in range(n)]
    assert [int(x) for x in out[:n]] == s
    assert [int(x) for x in out[n:]] == s


BAR_RED_BODY = GID + """
    ld.param.u64 %rd40, [out];
    ld.param.u64 %rd41, [preds];
    mul.wide.u32 %rd42, %r63, 4;
    add.s64 %rd43, %rd41, %rd42;
    ld.global.u32 %r1, [%rd43];
    setp.ne.u32 %p1, %r1, 0;
    bar.red.popc.u32 %r2, 0, %p1;
    bar.red.and.pred %p2, 1, %p1;
    barrier.red.or.pred %p3, 0, !%p1;
    selp.u32 %r5, 1, 0, %p2;
    selp.u32 %r6, 2, 0, %p3;
    or.b32 %r5, %r5, %r6;
    mul.wide.u32 %rd44, %r63, 8;
    add.s64 %rd45, %rd40, %rd44;
    st.global.v2.u32 [%rd45], {%r2, %r5};
"""


@pytest.mark.parametrize("pattern", ["mod3", "all", "none", "last"])
def test_bar_red(pattern):
    n = 96
    fn = {"mod3": lambda t: t % 3 == 0, "all": lambda t: True, "none": lambda t: False,
          "last": lambda t: t == n - 1}[pattern]
    preds = np.array([int(fn(g % n)) for g in range(2 * n)], dtype=np.uint32)
    out = np.zeros((2 * n, 2), dtype=np.uint32)
    launch(BAR_RED_BODY, [("u64", "out"), ("u64", "preds")], [out, preds], grid=2, block=n)
    ps = [bool(fn(t)) for t in range(n)]
    assert np.all(out[:, 0] == sum(ps))  # popc over the whole CTA
    flags = int(all(ps)) | (2 * int(any(not p for p in ps)))
    assert np.all(out[:, 1] == flags)


def test_collectives_with_partial_member_masks():
    # lanes 0-15 and 16-31 take different branches and run collectives over their own half-warp only
    body = GID + """
    ld.param.u64 %rd40, [out];
    mov.u32 %r5, %laneid;
    mul.wide.u32 %rd41, %r63, 16;
    add.s64 %rd42, %rd40, %rd41;
    mul.lo.u32 %r1, %r5, %r5;
    and.b32 %r9, %r5, 3;
    setp.eq.u32 %p2, %r9, 1;
    setp.ge.u32 %p1, %r5, 16;
    @%p1 bra $L_hi;
    redux.sync.add.u32 %r2, %r1, 0x0000ffff;
    vote.sync.ballot.b32 %r3, %p2, 0x0000ffff;
    shfl.sync.idx.b32 %r4, %r1, 3, 0x1f, 0x0000ffff;
    bra.uni $L_join;
$L_hi:
    redux.sync.max.u32 %r2, %r1, 0xffff0000;
    vote.sync.ballot.b32 %r3, %p2, 0xffff0000;
    shfl.sync.idx.b32 %r4, %r1, 20, 0x1f, 0xffff0000;
$L_join:
    activemask.b32 %r6;
    st.global.v4.u32 [%rd42], {%r2, %r3, %r4, %r6};
"""
    out = np.zeros((64, 4), dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=64)
    lo_sum = sum(k * k for k in range(16))
    ballot_lo = sum(1 << k for k in range(16) if k % 4 == 1)
    ballot_hi = sum(1 << k for k in range(16, 32) if k % 4 == 1)
    for g in range(64):
        lane = g % 32
        if lane < 16:
            assert [int(v) for v in out[g, :3]] == [lo_sum, ballot_lo, 9], g
        else:
            assert [int(v) for v in out[g, :3]] == [31 * 31, ballot_hi, 400], g
        # PTX does not promise reconvergence right after the branch, only that the caller is active
        assert (int(out[g, 3]) >> lane) & 1 == 1


def test_named_barrier_producer_consumer():
    # warp 0 produces and arrives, warp 1 waits on the same named barrier and consumes
    body = """
    .shared .align 4 .u32 buf[32];
""" + GID + """
    ld.param.u64 %rd40, [out];
    mov.u32 %r1, buf;
    and.b32 %r2, %r60, 31;
    shl.b32 %r3, %r2, 2;
    add.s32 %r4, %r1, %r3;
    setp.ge.u32 %p1, %r60, 32;
    @%p1 bra $L_consumer;
    mad.lo.u32 %r5, %r2, 11, 5;
    st.shared.u32 [%r4], %r5;
    bar.arrive 1, 64;
    bra.uni $L_end;
$L_consumer:
    bar.sync 1, 64;
    xor.b32 %r6, %r2, 31;
    shl.b32 %r7, %r6, 2;
    add.s32 %r8, %r1, %r7;
    ld.shared.u32 %r9, [%r8];
    mul.wide.u32 %rd41, %r2, 4;
    add.s64 %rd42, %rd40, %rd41;
    st.global.u32 [%rd42], %r9;
$L_end:
"""
    out = np.zeros(32, dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=64)
    assert [int(v) for v in out] == [(lane ^ 31) * 11 + 5 for lane in range(32)]
