"""atom / red on global and shared memory: final values and returned old values, checked against
order-independent properties computed in Python (sums, permutations, multisets, extrema); the H100's
floating-point corner cases (flushing, NaN results) and the vector forms one cell per thread against a
Python model; and a replay of every atom/red case of the H100 golden set."""

from __future__ import annotations

from collections import Counter
from unittest import mock

import numpy as np
import pytest

import tests.ptxsnip
from tests.markers import golden_needs
from tests.unit.floatutil import (
    BF16,
    F16,
    F32,
    F64,
    Fmt,
    ftz_in,
    is_inf,
    is_nan,
    is_zero,
    launch,
    round_fraction,
    sign_of,
    to_fraction,
)
from tests.unit.goldenutil import golden_cases, replay_case

GID = """
    mov.u32 %r60, %tid.x;
    mov.u32 %r61, %ctaid.x;
    mov.u32 %r62, %ntid.x;
    mad.lo.s32 %r63, %r61, %r62, %r60;
"""

NB, NT = 4, 64
N = NB * NT

REG = {"u32": "%r", "s32": "%r", "b32": "%r", "u64": "%rd", "s64": "%rd", "b64": "%rd",
       "f32": "%f", "f64": "%fd"}
DT = {"u32": np.uint32, "s32": np.int32, "b32": np.uint32, "u64": np.uint64, "s64": np.int64,
      "b64": np.uint64, "f32": np.float32, "f64": np.float64}


def _atomic_single_cell(instr, ty, vals, init, *, ret=True, grid=NB, block=NT):
    """Every thread applies `instr [cell], vals[gid]`.

    Returns (final cell value, per-thread returned old values or None)."""
    r = REG[ty]
    size = np.dtype(DT[ty]).itemsize
    n = grid * block
    ld = "u32" if size == 4 else "u64"
    vreg, oreg = f"{r}1", f"{r}2"
    operands = vreg
    if ret:
        op_line = f"{instr} {oreg}, [%rd45], {operands};"
        store = f"""    mul.wide.u32 %rd46, %r63, {size};
    add.s64 %rd47, %rd41, %rd46;
    st.global.{ty} [%rd47], {oreg};"""
    else:
        op_line = f"{instr} [%rd45], {operands};"
        store = ""
    body = GID + f"""
    ld.param.u64 %rd40, [cell];
    ld.param.u64 %rd41, [rets];
    ld.param.u64 %rd42, [vals];
    mul.wide.u32 %rd43, %r63, {size};
    add.s64 %rd44, %rd42, %rd43;
    ld.global.{ty if ty[0] == "f" else ld} {vreg}, [%rd44];
    mov.u64 %rd45, %rd40;
    {op_line}
{store}
"""
    cell = np.array([init], dtype=DT[ty])
    rets = np.zeros(n, dtype=DT[ty])
    v = np.asarray(vals, dtype=DT[ty])
    assert len(v) == n
    launch(body, [("u64", "cell"), ("u64", "rets"), ("u64", "vals")], [cell, rets, v], grid=grid, block=block)
    return cell[0], (rets if ret else None)


@pytest.mark.parametrize("ty", ["u32", "u64", "s32"])
def test_atom_add_int_returns_permutation(ty):
    final, rets = _atomic_single_cell(f"atom.global.add.{ty}", ty, np.ones(N), 0)
    assert int(final) == N
    assert sorted(int(x) for x in rets) == list(range(N))


def test_atom_add_u32_wraps():
    vals = np.full(N, 0x01000000, dtype=np.uint32)
    final, rets = _atomic_single_cell("atom.global.add.u32", "u32", vals, 0xFFFFFF00)
    assert int(final) == (0xFFFFFF00 + N * 0x01000000) & 0xFFFFFFFF
    want = Counter((0xFFFFFF00 + k * 0x01000000) & 0xFFFFFFFF for k in range(N))
    assert Counter(int(x) for x in rets) == want


def test_atom_add_s32_negative_values():
    vals = np.array([(-1) ** i * (i + 1) for i in range(N)], dtype=np.int32)
    final, _ = _atomic_single_cell("atom.global.add.s32", "s32", vals, 1000)
    assert int(final) == 1000 + int(vals.sum())


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_atom_add_float(ty):
    # halves of small integers: every partial sum is exact, so the final value is order independent
    vals = (np.arange(N) % 7) * 0.5
    final, rets = _atomic_single_cell(f"atom.global.add.{ty}", ty, vals, 0.25)
    assert float(final) == 0.25 + float(vals.sum())
    assert float(np.min(rets)) == 0.25
    # each returned old value plus its own addend is either another old value or the final value
    olds = Counter(float(x) for x in rets)
    news = Counter(float(r) + float(v) for r, v in zip(rets, vals.astype(DT[ty]), strict=True))
    olds_plus_final = olds + Counter([float(final)])
    news_plus_init = news + Counter([0.25])
    assert olds_plus_final == news_plus_init


def test_atom_add_f32_ones_return_permutation():
    final, rets = _atomic_single_cell("atom.global.add.f32", "f32", np.ones(N), 0.0)
    assert float(final) == N
    assert sorted(float(x) for x in rets) == [float(k) for k in range(N)]


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("ty", ["s32", "u32", "s64", "u64"])
def test_atom_min_max(op, ty):
    rng = np.random.default_rng(5)
    info = np.iinfo(DT[ty])
    vals = rng.integers(info.min, info.max, N, dtype=DT[ty], endpoint=True)
    init = DT[ty](0 if ty[0] == "s" else info.max // 2)
    final, rets = _atomic_single_cell(f"atom.global.{op}.{ty}", ty, vals, init)
    pyvals = [int(v) for v in vals] + [int(init)]
    want = min(pyvals) if op == "min" else max(pyvals)
    assert int(final) == want
    # the returned old values are all between init and the final value
    for r in rets:
        r = int(r)
        assert (want <= r <= int(init)) if op == "min" else (int(init) <= r <= want)


def test_atom_min_signed_vs_unsigned():
    vals = np.array([-1] + [5] * (N - 1), dtype=np.int32)
    final_s, _ = _atomic_single_cell("atom.global.min.s32", "s32", vals, 3)
    final_u, _ = _atomic_single_cell("atom.global.min.u32", "u32", vals.view(np.uint32), 3)
    assert int(final_s) == -1 and int(final_u) == 3


@pytest.mark.parametrize("init,bound", [(0, 10), (7, 9), (0, 0xFFFFFFFF), (3, 1000)])
def test_atom_inc(init, bound):
    vals = np.full(N, bound, dtype=np.uint32)
    final, rets = _atomic_single_cell("atom.global.inc.u32", "u32", vals, init)
    m = bound + 1
    assert int(final) == (init + N) % m
    assert Counter(int(x) for x in rets) == Counter((init + k) % m for k in range(N))


@pytest.mark.parametrize("init,bound", [(5, 10), (0, 9), (200, 255)])
def test_atom_dec(init, bound):
    vals = np.full(N, bound, dtype=np.uint32)
    final, rets = _atomic_single_cell("atom.global.dec.u32", "u32", vals, init)
    m = bound + 1
    assert int(final) == (init - N) % m
    assert Counter(int(x) for x in rets) == Counter((init - k) % m for k in range(N))


def test_atom_inc_dec_out_of_range_start():
    # inc: old >= b -> 0 ; dec: old == 0 or old > b -> b
    f1, r1 = _atomic_single_cell("atom.global.inc.u32", "u32", [10], 100, grid=1, block=1)
    f2, r2 = _atomic_single_cell("atom.global.dec.u32", "u32", [10], 100, grid=1, block=1)
    f3, r3 = _atomic_single_cell("atom.global.dec.u32", "u32", [10], 0, grid=1, block=1)
    f4, r4 = _atomic_single_cell("atom.global.inc.u32", "u32", [10], 10, grid=1, block=1)
    assert (int(f1), int(r1[0])) == (0, 100)
    assert (int(f2), int(r2[0])) == (10, 100)
    assert (int(f3), int(r3[0])) == (10, 0)
    assert (int(f4), int(r4[0])) == (0, 10)


@pytest.mark.parametrize("ty", ["b32", "b64"])
def test_atom_bitwise(ty):
    bits = 32 if ty == "b32" else 64
    ones = (1 << bits) - 1
    one_hot = np.array([1 << (i % bits) for i in range(N)], dtype=DT[ty])
    f_or, r_or = _atomic_single_cell(f"atom.global.or.{ty}", ty, one_hot, 0)
    assert int(f_or) == ones
    f_and, _ = _atomic_single_cell(f"atom.global.and.{ty}", ty, ~one_hot, ones)
    assert int(f_and) == 0
    rng = np.random.default_rng(9)
    xs = rng.integers(0, 2**bits - 1, N, dtype=np.uint64, endpoint=True).astype(DT[ty])
    f_xor, _ = _atomic_single_cell(f"atom.global.xor.{ty}", ty, xs, 0x5A)
    want = 0x5A
    for x in xs:
        want ^= int(x)
    assert int(f_xor) == want
    for r in r_or:  # an OR never clears bits, so every old value is a subset of the final one
        assert int(r) & ~int(f_or) == 0


@pytest.mark.parametrize("ty", ["b32", "b64"])
def test_atom_exch(ty):
    ids = np.arange(1, N + 1, dtype=DT[ty]) * 3
    final, rets = _atomic_single_cell(f"atom.global.exch.{ty}", ty, ids, 7)
    assert Counter([int(x) for x in rets] + [int(final)]) == Counter([7] + [int(x) for x in ids])


@pytest.mark.parametrize("ty", ["b32", "b64"])
def test_atom_cas_semantics(ty):
    # compare matches: new value stored; compare fails: memory untouched; both return the old value
    r = REG[ty]
    size = 4 if ty == "b32" else 8
    body = f"""
    ld.param.u64 %rd40, [cell];
    ld.param.u64 %rd41, [rets];
    atom.global.cas.{ty} {r}1, [%rd40], 5, 42;
    atom.global.cas.{ty} {r}2, [%rd40], 5, 99;
    atom.global.cas.{ty} {r}3, [%rd40+{size}], 0, -1;
    st.global.{ty} [%rd41], {r}1;
    st.global.{ty} [%rd41+{size}], {r}2;
    st.global.{ty} [%rd41+{2 * size}], {r}3;
"""
    cell = np.array([5, 0], dtype=DT[ty])
    rets = np.zeros(3, dtype=DT[ty])
    launch(body, [("u64", "cell"), ("u64", "rets")], [cell, rets], block=1)
    assert [int(x) for x in rets] == [5, 42, 0]
    assert int(cell[0]) == 42 and int(cell[1]) == (1 << (8 * size)) - 1


@pytest.mark.parametrize("ty", ["b32", "b64"])
def test_atom_cas_lock_free_increment(ty):
    r = REG[ty]
    ldt = "u32" if ty == "b32" else "u64"
    body = GID + f"""
    ld.param.u64 %rd40, [cell];
    ld.volatile.global.{ldt} {r}1, [%rd40];
$L_retry:
    add.s{ty[1:]} {r}2, {r}1, 1;
    atom.global.cas.{ty} {r}3, [%rd40], {r}1, {r}2;
    setp.ne.{ty} %p1, {r}3, {r}1;
    mov.b{ty[1:]} {r}1, {r}3;
    @%p1 bra $L_retry;
"""
    cell = np.zeros(1, dtype=DT[ty])
    launch(body, [("u64", "cell")], [cell], grid=NB, block=NT)
    assert int(cell[0]) == N


@pytest.mark.parametrize("instr,ty,vals,init,want", [
    ("red.global.add.u32", "u32", np.arange(N), 5, 5 + N * (N - 1) // 2),
    ("red.global.add.u64", "u64", np.arange(N) * 2**33, 1, 1 + 2**33 * N * (N - 1) // 2),
    ("red.global.add.f32", "f32", np.ones(N) * 0.5, 0.0, N * 0.5),
    ("red.global.add.f64", "f64", np.ones(N) * 0.25, 1.0, 1.0 + N * 0.25),
    ("red.global.min.s32", "s32", np.arange(N) - 100, 0, -100),
    ("red.global.max.u32", "u32", np.arange(N) * 3, 7, 3 * (N - 1)),
    ("red.global.and.b32", "b32", np.full(N, 0xF0F0F0F0), 0xFFFF00FF, 0xF0F000F0),
    ("red.global.or.b64", "b64", np.arange(N), 1 << 40, (1 << 40) | 0xFF),
    ("red.global.xor.b32", "b32", np.full(N, 0x11), 0x3, 0x3),
    ("red.global.inc.u32", "u32", np.full(N, 99), 0, N % 100),
    ("red.global.dec.u32", "u32", np.full(N, 99), 0, (0 - N) % 100),
    ("red.relaxed.gpu.global.add.u32", "u32", np.ones(N), 0, N),
    ("red.add.u32", "u32", np.ones(N), 0, N),
])
def test_red(instr, ty, vals, init, want):
    final, _ = _atomic_single_cell(instr, ty, vals, init, ret=False)
    if ty[0] == "f":
        assert float(final) == want
    else:
        assert int(final) == want


@pytest.mark.parametrize("instr", [
    "atom.relaxed.gpu.global.add.u32", "atom.acq_rel.gpu.global.add.u32", "atom.acquire.sys.global.add.u32",
    "atom.release.cta.global.add.u32", "atom.gpu.global.add.u32", "atom.sys.global.add.u32",
    "atom.cta.global.add.u32", "atom.add.u32", "atom.relaxed.sys.add.u32",
])
def test_atom_scope_and_semantics_qualifiers(instr):
    final, rets = _atomic_single_cell(instr, "u32", np.ones(N), 0)
    assert int(final) == N
    assert sorted(int(x) for x in rets) == list(range(N))


# ----------------------------------------------------------------------------------------------------------
# shared memory atomics
# ----------------------------------------------------------------------------------------------------------


def _shared_atomic_kernel(op_lines, result_lines):
    return """
    .shared .align 8 .b8 sm[64];
""" + GID + """
    ld.param.u64 %rd40, [out];
    ld.param.u64 %rd41, [rets];
    setp.ne.u32 %p1, %r60, 0;
    @%p1 bra $L_skip_init;
    st.shared.u32 [sm], 0;
    st.shared.u32 [sm+4], 0xFFFFFFFF;
    st.shared.u32 [sm+8], 1000;
    st.shared.u64 [sm+16], 0;
    st.shared.f32 [sm+24], 0f00000000;
    st.shared.u32 [sm+28], 0;
    st.shared.f64 [sm+32], 0d0000000000000000;
    st.shared.u32 [sm+40], 0;
$L_skip_init:
    bar.sync 0;
""" + op_lines + """
    bar.sync 0;
    @%p1 bra $L_done;
    mul.wide.u32 %rd42, %r61, 64;
    add.s64 %rd43, %rd40, %rd42;
""" + result_lines + """
$L_done:
"""


def test_shared_atomics():
    ops = """
    atom.shared.add.u32 %r1, [sm], 1;
    atom.shared.and.b32 %r2, [sm+4], 0xFFFFFFFE;
    atom.shared.min.s32 %r3, [sm+8], %r60;
    atom.shared.add.u64 %rd1, [sm+16], 3;
    atom.shared.add.f32 %f1, [sm+24], 0f3F000000;
    red.shared.add.u32 [sm+28], 2;
    atom.shared.add.f64 %fd1, [sm+32], 0d3FF0000000000000;
    atom.shared.inc.u32 %r5, [sm+40], 9;
    mul.wide.u32 %rd6, %r63, 4;
    add.s64 %rd7, %rd41, %rd6;
    st.global.u32 [%rd7], %r1;
"""
    res = """
    ld.shared.u32 %r10, [sm];
    ld.shared.u32 %r11, [sm+4];
    ld.shared.u32 %r12, [sm+8];
    ld.shared.u64 %rd10, [sm+16];
    ld.shared.f32 %f10, [sm+24];
    ld.shared.u32 %r13, [sm+28];
    ld.shared.f64 %fd10, [sm+32];
    ld.shared.u32 %r14, [sm+40];
    st.global.u32 [%rd43], %r10;
    st.global.u32 [%rd43+4], %r11;
    st.global.u32 [%rd43+8], %r12;
    st.global.u64 [%rd43+16], %rd10;
    st.global.f32 [%rd43+24], %f10;
    st.global.u32 [%rd43+28], %r13;
    st.global.f64 [%rd43+32], %fd10;
    st.global.u32 [%rd43+40], %r14;
"""
    body = _shared_atomic_kernel(ops, res)
    out = np.zeros(NB * 64, dtype=np.uint8)
    rets = np.zeros(N, dtype=np.uint32)
    launch(body, [("u64", "out"), ("u64", "rets")], [out, rets], grid=NB, block=NT)
    for b in range(NB):
        rec = out[b * 64:(b + 1) * 64]
        w = rec.view(np.uint32)
        assert int(w[0]) == NT  # each block has its own shared memory
        assert int(w[1]) == 0xFFFFFFFE
        assert int(w[2]) == 0
        assert int(rec[16:24].view(np.uint64)[0]) == 3 * NT
        assert float(rec[24:28].view(np.float32)[0]) == 0.5 * NT
        assert int(w[7]) == 2 * NT
        assert float(rec[32:40].view(np.float64)[0]) == float(NT)
        assert int(w[10]) == NT % 10
        assert sorted(int(x) for x in rets[b * NT:(b + 1) * NT]) == list(range(NT))


def test_shared_cas_and_exch_and_generic_atomics():
    ops = """
    mov.u64 %rd20, sm;
    cvta.shared.u64 %rd21, %rd20;
    atom.add.u32 %r1, [%rd21], 1;
    atom.shared.exch.b32 %r2, [sm+8], %r60;
$L_retry:
    ld.volatile.shared.u32 %r3, [sm+28];
    add.u32 %r4, %r3, %r60;
    atom.shared.cas.b32 %r5, [sm+28], %r3, %r4;
    setp.ne.u32 %p2, %r5, %r3;
    @%p2 bra $L_retry;
    mul.wide.u32 %rd6, %r63, 4;
    add.s64 %rd7, %rd41, %rd6;
    st.global.u32 [%rd7], %r2;
"""
    res = """
    ld.shared.u32 %r10, [sm];
    ld.shared.u32 %r11, [sm+8];
    ld.shared.u32 %r12, [sm+28];
    st.global.u32 [%rd43], %r10;
    st.global.u32 [%rd43+4], %r11;
    st.global.u32 [%rd43+8], %r12;
"""
    body = _shared_atomic_kernel(ops, res)
    out = np.zeros(NB * 16, dtype=np.uint32)
    rets = np.zeros(N, dtype=np.uint32)
    launch(body, [("u64", "out"), ("u64", "rets")], [out, rets], grid=NB, block=NT)
    for b in range(NB):
        assert int(out[b * 16]) == NT
        assert int(out[b * 16 + 2]) == NT * (NT - 1) // 2
        final = int(out[b * 16 + 1])
        olds = [int(x) for x in rets[b * NT:(b + 1) * NT]]
        assert Counter(olds + [final]) == Counter([1000] + list(range(NT)))


def test_atom_add_noftz_f16x2_and_f16():
    # every thread adds (1.0, 0.5) to a packed f16x2 cell and 1.0 to an f16 cell; all sums are exact
    body = GID + """
    ld.param.u64 %rd40, [cell];
    mov.b32 %hh1, 0x38003C00;
    atom.global.add.noftz.f16x2 %hh2, [%rd40], %hh1;
    mov.b16 %h1, 0x3C00;
    atom.global.add.noftz.f16 %h2, [%rd40+4], %h1;
"""
    cell = np.zeros(4, dtype=np.uint16)
    launch(body, [("u64", "cell")], [cell], grid=2, block=64)
    vals = cell.view(np.float16)
    assert float(vals[0]) == 128.0 and float(vals[1]) == 64.0 and float(vals[2]) == 128.0


def test_atom_cas_b16():
    body = """
    ld.param.u64 %rd40, [cell];
    ld.param.u64 %rd41, [rets];
    mov.b16 %h1, 0x1234;
    mov.b16 %h2, 0xBEEF;
    mov.b16 %h3, 0x7777;
    atom.global.cas.b16 %h4, [%rd40+2], %h1, %h2;
    atom.global.cas.b16 %h5, [%rd40+2], %h1, %h3;
    st.global.b16 [%rd41], %h4;
    st.global.b16 [%rd41+2], %h5;
"""
    cell = np.array([0xAAAA, 0x1234, 0x5555, 0], dtype=np.uint16)
    rets = np.zeros(2, dtype=np.uint16)
    launch(body, [("u64", "cell"), ("u64", "rets")], [cell, rets], block=1)
    assert [int(x) for x in rets] == [0x1234, 0xBEEF]
    assert [int(x) for x in cell] == [0xAAAA, 0xBEEF, 0x5555, 0]  # neighbours untouched


def test_atom_exch_and_cas_b64_shared():
    body = """
    .shared .align 8 .u64 cell;
""" + GID + """
    ld.param.u64 %rd40, [out];
    setp.ne.u32 %p1, %r60, 0;
    @%p1 bra $L_w;
    st.shared.u64 [cell], 0;
$L_w:
    bar.sync 0;
$L_retry:
    ld.volatile.shared.u64 %rd1, [cell];
    cvt.u64.u32 %rd2, %r60;
    add.u64 %rd2, %rd2, 0x100000000;
    add.u64 %rd3, %rd1, %rd2;
    atom.shared.cas.b64 %rd4, [cell], %rd1, %rd3;
    setp.ne.u64 %p2, %rd4, %rd1;
    @%p2 bra $L_retry;
    bar.sync 0;
    @%p1 bra $L_end;
    ld.shared.u64 %rd5, [cell];
    atom.shared.exch.b64 %rd6, [cell], 7;
    ld.shared.u64 %rd7, [cell];
    st.global.v2.u64 [%rd40], {%rd6, %rd7};
$L_end:
"""
    out = np.zeros(2, dtype=np.uint64)
    launch(body, [("u64", "out")], [out], block=64)
    assert int(out[0]) == (64 << 32) + sum(range(64))
    assert int(out[1]) == 7


# ----------------------------------------------------------------------------------------------------------
# floating-point results bit for bit: one cell per thread (order-independent), against the H100's rules
# ----------------------------------------------------------------------------------------------------------

_F32_SPECIAL = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000, 0x00800000,
                0x80800000, 0x3F800000, 0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000,
                0xFFC00001, 0x7F800001, 0x3FC00000, 0x4B800001]
_F64_SPECIAL = [0x0, 0x8000000000000000, 0x1, 0x800FFFFFFFFFFFFF, 0x0010000000000000, 0x3FF0000000000000,
                0xBFF8000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000,
                0x7FF8000000000000, 0xFFF80000ABCDEF01, 0x7FF0000000000001, 0xFFF0000000000123, 0x7FF4000000000000]


def _ieee_add(fmt: Fmt, a: int, b: int) -> int | None:
    """Correctly rounded a + b for non-NaN operands; None for inf - inf."""
    if is_inf(fmt, a) and is_inf(fmt, b):
        return a if sign_of(fmt, a) == sign_of(fmt, b) else None
    if is_inf(fmt, a) or is_inf(fmt, b):
        return a if is_inf(fmt, a) else b
    v = to_fraction(fmt, a) + to_fraction(fmt, b)
    zs = sign_of(fmt, a) if is_zero(fmt, a) and is_zero(fmt, b) and sign_of(fmt, a) == sign_of(fmt, b) else 0
    return round_fraction(fmt, v, "rn", zs)


def add_f32(old: int, v: int, global_mem: bool) -> int:
    """atom/red.add.f32: global memory flushes subnormal operands and results (isa_atom_global_add_f32,
    isa_red_global_add_f32), shared memory keeps them (isa_atom_shared_add_f32); NaN is 0x7FFFFFFF."""
    if global_mem:
        old, v = ftz_in(F32, old), ftz_in(F32, v)
    r = None if is_nan(F32, old) or is_nan(F32, v) else _ieee_add(F32, old, v)
    if r is None:
        return 0x7FFFFFFF
    return ftz_in(F32, r) if global_mem else r


def add_f64(old: int, v: int, global_mem: bool) -> int:
    """atom/red.add.f64: in global memory a NaN operand comes back unchanged, the added value's first
    (isa_atom_global_add_f64); in shared memory quieted, memory's first (isa_atom_shared_add_f64).  Invalid:
    the default NaN 0xFFF8000000000000."""
    quiet = 0 if global_mem else 1 << 51
    order = (v, old) if global_mem else (old, v)
    for x in order:
        if is_nan(F64, x):
            return x | quiet
    r = _ieee_add(F64, old, v)
    return 0xFFF8000000000000 if r is None else r


def half_op(fmt: Fmt, op: str, x: int, y: int) -> int:
    """add/min/max.noftz on one f16/bf16 lane: subnormals kept; NaN: add gives 0x7FFF, min/max the other
    operand, 0x7FFF when both are NaN (isa_atom_global_min_noftz_v2_f16x2); -0 < +0."""
    if op == "add":
        r = None if is_nan(fmt, x) or is_nan(fmt, y) else _ieee_add(fmt, x, y)
        return 0x7FFF if r is None else r
    if is_nan(fmt, x) and is_nan(fmt, y):
        return 0x7FFF
    if is_nan(fmt, x) or is_nan(fmt, y):
        return y if is_nan(fmt, x) else x

    def key(b: int):
        return (to_fraction(fmt, b) if not is_inf(fmt, b) else (-1 if sign_of(fmt, b) else 1) * 10 ** 40,
                0 if sign_of(fmt, b) else 1)

    return min(x, y, key=key) if op == "min" else max(x, y, key=key)


def half2_op(fmt: Fmt, op: str, x: int, y: int) -> int:
    return half_op(fmt, op, x & 0xFFFF, y & 0xFFFF) | (half_op(fmt, op, x >> 16, y >> 16) << 16)


_REGS = {2: "%h", 4: "%r", 8: "%rd"}


SM90 = ".version 8.1\n.target sm_90\n.address_size 64\n"  # vector atomics need PTX 8.1 and sm_90


def _launch90(body: str, params, args, **kw) -> None:
    with mock.patch.object(tests.ptxsnip, "HEADER", SM90):
        launch(body, params, args, **kw)


def _per_thread(instr: str, size: int, vec: int, init: list[int], vals: list[int], *, shared: bool = False,
                ret: bool = True, sm90: bool = False) -> tuple[list[int], list[int]]:
    """Thread i applies `instr` (e.g. 'atom.global.add.f32') to its own cell i (vec elements of `size`
    bytes) with value i.  Returns (final cells, returned old values) as raw bits, element by element."""
    n = len(init) // vec
    dt = {2: np.uint16, 4: np.uint32, 8: np.uint64}[size]
    bt = f"b{8 * size}"
    r = _REGS[size]
    stride = size * vec

    def regs(first: int) -> str:
        return f"{r}{first}" if vec == 1 else "{" + ", ".join(f"{r}{first + k}" for k in range(vec)) + "}"

    vreg, oreg = regs(1), regs(11)
    lines = [GID, "    ld.param.u64 %rd40, [cell];", "    ld.param.u64 %rd41, [rets];",
             "    ld.param.u64 %rd42, [vals];", f"    mul.wide.u32 %rd43, %r63, {stride};",
             "    add.s64 %rd44, %rd40, %rd43;", "    add.s64 %rd45, %rd41, %rd43;", "    add.s64 %rd46, %rd42, %rd43;"]
    lines += [f"    ld.global.{bt} {r}{1 + k}, [%rd46+{k * size}];" for k in range(vec)]
    where = "[%rd44]"
    if shared:
        lines += [f"    ld.global.{bt} {r}{21 + k}, [%rd44+{k * size}];" for k in range(vec)]
        lines += ["    mov.u32 %r30, sm;", f"    mul.lo.u32 %r31, %r60, {stride};", "    add.u32 %r32, %r30, %r31;"]
        lines += [f"    st.shared.{bt} [%r32+{k * size}], {r}{21 + k};" for k in range(vec)]
        where = "[%r32]"
    lines.append(f"    {instr} {oreg + ', ' if ret else ''}{where}, {vreg};")
    if shared:
        lines += [f"    ld.shared.{bt} {r}{21 + k}, [%r32+{k * size}];" for k in range(vec)]
        lines += [f"    st.global.{bt} [%rd44+{k * size}], {r}{21 + k};" for k in range(vec)]
    if ret:
        lines += [f"    st.global.{bt} [%rd45+{k * size}], {r}{11 + k};" for k in range(vec)]
    decls = f".shared .align 16 .b8 sm[{stride * n}];" if shared else ""
    cell = np.array(init, dtype=dt)
    rets = np.zeros(len(init), dtype=dt)
    v = np.array(vals, dtype=dt)
    (_launch90 if sm90 else launch)("\n".join(lines), [("u64", "cell"), ("u64", "rets"), ("u64", "vals")],
                                    [cell, rets, v], grid=1, block=n, extra_decls=decls)
    return [int(x) for x in cell], [int(x) for x in rets]


def _check_bits(got: list[int], exp: list[int], init: list[int], vals: list[int], what: str) -> None:
    bad = [i for i, (g, e) in enumerate(zip(got, exp, strict=True)) if g != e]
    assert not bad, f"{what}: {len(bad)}/{len(got)} differ; " + "; ".join(
        f"[{i}] 0x{init[i]:x} op 0x{vals[i]:x}: expected 0x{exp[i]:x} got 0x{got[i]:x}" for i in bad[:6])


def _special_pairs(special: list[int]) -> tuple[list[int], list[int]]:
    a = [x for x in special for _ in special]
    b = [y for _ in special for y in special]
    return a, b


@pytest.mark.parametrize("shared", [False, True], ids=["global", "shared"])
def test_atom_add_f32_flush_and_nan(shared):
    init, vals = _special_pairs(_F32_SPECIAL)
    space = "shared" if shared else "global"
    final, olds = _per_thread(f"atom.{space}.add.f32", 4, 1, init, vals, shared=shared)
    assert olds == init
    _check_bits(final, [add_f32(x, y, not shared) for x, y in zip(init, vals, strict=True)], init, vals,
                f"atom.{space}.add.f32")
    final, _ = _per_thread(f"red.{space}.add.f32", 4, 1, init, vals, shared=shared, ret=False)
    _check_bits(final, [add_f32(x, y, not shared) for x, y in zip(init, vals, strict=True)], init, vals,
                f"red.{space}.add.f32")


@pytest.mark.parametrize("shared", [False, True], ids=["global", "shared"])
def test_atom_add_f64_nan(shared):
    init, vals = _special_pairs(_F64_SPECIAL)
    space = "shared" if shared else "global"
    final, olds = _per_thread(f"atom.{space}.add.f64", 8, 1, init, vals, shared=shared)
    assert olds == init
    _check_bits(final, [add_f64(x, y, not shared) for x, y in zip(init, vals, strict=True)], init, vals,
                f"atom.{space}.add.f64")


def test_atom_add_f32_immediate_operand():
    final, olds = _per_thread("atom.global.add.f32", 4, 1, [0x3F800000, 0x00000001], [0, 0])
    assert olds == [0x3F800000, 0x00000001]
    body = GID + """
    ld.param.u64 %rd40, [cell];
    atom.global.add.f32 %f1, [%rd40], 0f3F000000;
    red.global.add.f32 [%rd40+4], 0f40000000;
"""
    cell = np.array([1.0, 0.0], dtype=np.float32)
    launch(body, [("u64", "cell")], [cell], grid=1, block=4)
    assert cell.tolist() == [3.0, 8.0]


_HALF_SPECIAL = {"f16": [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7C00,
                         0xFC00, 0x7E00, 0xFE55, 0x7C01, 0x3555],
                 "bf16": [0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80,
                          0x7FC0, 0xFFC1, 0x7F81, 0x3EAB, 0x4049]}


@pytest.mark.parametrize("op", ["add", "min", "max"])
@pytest.mark.parametrize("t", ["f16x2", "bf16x2"])
def test_atom_vector_half2(t, op):
    """atom.global.<op>.noftz.v2.f16x2 / .bf16x2: per element and per lane (golden isa_atom_global_*_v2_*)."""
    fmt = BF16 if t.startswith("bf") else F16
    sp = _HALF_SPECIAL[t[:-2]]
    a, b = _special_pairs(sp)
    words_a = [a[i] | (a[-1 - i] << 16) for i in range(len(a))]
    words_b = [b[i] | (b[(i * 7) % len(b)] << 16) for i in range(len(b))]
    final, olds = _per_thread(f"atom.global.{op}.noftz.v2.{t}", 4, 2, words_a, words_b, sm90=True)
    assert olds == words_a
    _check_bits(final, [half2_op(fmt, op, x, y) for x, y in zip(words_a, words_b, strict=True)], words_a, words_b,
                f"atom.global.{op}.noftz.v2.{t}")


@pytest.mark.parametrize("op", ["add", "min", "max"])
@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_red_vector_half_v8(t, op):
    fmt = BF16 if t == "bf16" else F16
    a, b = _special_pairs(_HALF_SPECIAL[t])
    final, _ = _per_thread(f"red.global.{op}.noftz.v8.{t}", 2, 8, a, b, ret=False, sm90=True)
    _check_bits(final, [half_op(fmt, op, x, y) for x, y in zip(a, b, strict=True)], a, b,
                f"red.global.{op}.noftz.v8.{t}")


@pytest.mark.parametrize("vec", [2, 4])
def test_atom_red_vector_f32(vec):
    init, vals = _special_pairs(_F32_SPECIAL)
    final, olds = _per_thread(f"atom.global.add.v{vec}.f32", 4, vec, init, vals, sm90=True)
    assert olds == init
    exp = [add_f32(x, y, True) for x, y in zip(init, vals, strict=True)]
    _check_bits(final, exp, init, vals, f"atom.global.add.v{vec}.f32")
    final, _ = _per_thread(f"red.global.add.v{vec}.f32", 4, vec, init, vals, ret=False, sm90=True)
    _check_bits(final, exp, init, vals, f"red.global.add.v{vec}.f32")


def test_vector_atomics_are_atomic_per_element():
    """Every thread adds (1, 2) to one shared v2.f32 cell: both sums come out exact."""
    body = GID + """
    ld.param.u64 %rd40, [cell];
    mov.f32 %f1, 0f3F800000;
    mov.f32 %f2, 0f40000000;
    red.global.add.v2.f32 [%rd40], {%f1, %f2};
"""
    cell = np.zeros(2, dtype=np.float32)
    _launch90(body, [("u64", "cell")], [cell], grid=4, block=64)
    assert cell.tolist() == [256.0, 512.0]


def test_models_match_hand_values():
    assert add_f32(0x00400000, 0x00800000, True) == 0x00800000  # the subnormal operand is flushed
    assert add_f32(0x00400000, 0x00800000, False) == 0x00C00000
    assert add_f32(0x7F800000, 0xFF800000, False) == 0x7FFFFFFF
    assert add_f64(0, 0x7FF0000000000001, True) == 0x7FF0000000000001
    assert add_f64(0, 0x7FF0000000000001, False) == 0x7FF8000000000001
    assert half_op(F16, "min", 0x0000, 0x8000) == 0x8000 and half_op(F16, "max", 0x8000, 0x0000) == 0x0000
    assert half_op(F16, "min", 0x7E00, 0x3C00) == 0x3C00 and half_op(BF16, "max", 0x7FC0, 0xFFC1) == 0x7FFF


# ----------------------------------------------------------------------------------------------------------
# the H100 golden set
# ----------------------------------------------------------------------------------------------------------

GOLDEN_ATOM = golden_cases(r"^isa_(atom|red)_")


@golden_needs("isa")
@pytest.mark.parametrize("case", GOLDEN_ATOM or ["absent"])
def test_golden(case):
    assert replay_case(case) == []
