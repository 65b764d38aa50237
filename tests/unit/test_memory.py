"""Loads, stores and address spaces: global / shared / local / const, module variables, vectors, cache
qualifiers, dynamic shared memory.  Expectations are plain numpy / struct computations on the inputs."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tests.unit.floatutil import launch

GID = """
    mov.u32 %r60, %tid.x;
    mov.u32 %r61, %ctaid.x;
    mov.u32 %r62, %ntid.x;
    mad.lo.s32 %r63, %r61, %r62, %r60;
"""


def _bytes_input(n, seed=3):
    rng = np.random.default_rng(seed)
    b = rng.integers(0, 256, n, dtype=np.uint8)
    b[:8] = [0x00, 0x7F, 0x80, 0xFF, 0x01, 0xFE, 0x81, 0x7E]
    return b


NARROW = {"u8": (1, np.uint8), "s8": (1, np.int8), "u16": (2, np.uint16), "s16": (2, np.int16)}


@pytest.mark.parametrize("ty", list(NARROW))
@pytest.mark.parametrize("reg", ["32", "64"])
def test_ld_narrow_extends(ty, reg):
    size, dt = NARROW[ty]
    n = 64
    raw = _bytes_input(n * size, seed=size)
    r, st = ("%r1", "u32") if reg == "32" else ("%rd1", "u64")
    body = GID + f"""
    ld.param.u64 %rd40, [out];
    ld.param.u64 %rd41, [inp];
    mul.wide.u32 %rd42, %r63, {size};
    add.s64 %rd43, %rd41, %rd42;
    ld.global.{ty} {r}, [%rd43];
    mul.wide.u32 %rd44, %r63, {4 if reg == "32" else 8};
    add.s64 %rd45, %rd40, %rd44;
    st.global.{st} [%rd45], {r};
"""
    out = np.zeros(n, dtype=np.uint32 if reg == "32" else np.uint64)
    launch(body, [("u64", "out"), ("u64", "inp")], [out, raw], grid=2, block=32)
    vals = raw.view(dt).astype(np.int64)
    bits = 32 if reg == "32" else 64
    expect = np.array([int(v) & ((1 << bits) - 1) for v in vals], dtype=out.dtype)
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("ty,dt", [("u32", np.uint32), ("s32", np.int32), ("u64", np.uint64),
                                   ("s64", np.int64), ("f32", np.float32), ("f64", np.float64),
                                   ("b32", np.uint32), ("b64", np.uint64)])
def test_ld_st_roundtrip(ty, dt):
    n = 96
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 256, n * np.dtype(dt).itemsize, dtype=np.uint8)
    size = np.dtype(dt).itemsize
    reg = {"u32": "%r1", "s32": "%r1", "b32": "%r1", "u64": "%rd1", "s64": "%rd1", "b64": "%rd1",
           "f32": "%f1", "f64": "%fd1"}[ty]
    body = GID + f"""
    ld.param.u64 %rd40, [out];
    ld.param.u64 %rd41, [inp];
    mul.wide.u32 %rd42, %r63, {size};
    add.s64 %rd43, %rd41, %rd42;
    add.s64 %rd44, %rd40, %rd42;
    ld.global.{ty} {reg}, [%rd43];
    st.global.{ty} [%rd44], {reg};
"""
    out = np.zeros(n * size, dtype=np.uint8)
    launch(body, [("u64", "out"), ("u64", "inp")], [out, raw], grid=3, block=32)
    np.testing.assert_array_equal(out, raw)  # bit-exact, NaN payloads included


@pytest.mark.parametrize("ty,size,mask", [("u8", 1, 0xFF), ("u16", 2, 0xFFFF), ("b8", 1, 0xFF),
                                          ("s16", 2, 0xFFFF)])
def test_st_narrow_touches_only_its_bytes(ty, size, mask):
    n = 32
    body = GID + f"""
    ld.param.u64 %rd40, [out];
    mad.lo.s32 %r1, %r63, 0x01010101, 0x12345600;
    mul.wide.u32 %rd42, %r63, 4;
    add.s64 %rd43, %rd40, %rd42;
    st.global.{ty} [%rd43+1], %r1;
"""
    out = np.full(n, 0xA5A5A5A5, dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=n)
    for i in range(n):
        v = (i * 0x01010101 + 0x12345600) & 0xFFFFFFFF
        want = (0xA5A5A5A5 & ~(mask << 8)) | ((v & mask) << 8)
        assert int(out[i]) == want, (i, hex(int(out[i])), hex(want))


def test_vector_loads_and_stores():
    n = 32
    rng = np.random.default_rng(11)
    src = rng.integers(0, 2**32, n * 8, dtype=np.uint64).astype(np.uint32)
    body = GID + """
    ld.param.u64 %rd40, [out];
    ld.param.u64 %rd41, [inp];
    mul.wide.u32 %rd42, %r63, 32;
    add.s64 %rd43, %rd41, %rd42;
    add.s64 %rd44, %rd40, %rd42;
    ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd43];
    ld.global.v2.u64 {%rd1, %rd2}, [%rd43+16];
    st.global.v4.u32 [%rd44+16], {%r4, %r3, %r2, %r1};
    st.global.v2.u64 [%rd44], {%rd2, %rd1};
"""
    out = np.zeros(n * 8, dtype=np.uint32)
    launch(body, [("u64", "out"), ("u64", "inp")], [out, src], block=n)
    s = src.reshape(n, 8)
    o = out.reshape(n, 8)
    np.testing.assert_array_equal(o[:, 4:], s[:, 3::-1])
    np.testing.assert_array_equal(o[:, 0:2], s[:, 6:8])
    np.testing.assert_array_equal(o[:, 2:4], s[:, 4:6])


def test_vector_float_and_narrow_vectors():
    n = 16
    f = (np.arange(n * 4, dtype=np.float32) * np.float32(1.25) - 7).astype(np.float32)
    d = np.arange(n * 2, dtype=np.float64) * -0.5
    h = np.arange(n * 4, dtype=np.uint16) * 1000
    body = GID + """
    ld.param.u64 %rd40, [outf];
    ld.param.u64 %rd41, [inf];
    ld.param.u64 %rd46, [ind];
    ld.param.u64 %rd47, [outd];
    ld.param.u64 %rd48, [inh];
    ld.param.u64 %rd49, [outh];
    mul.wide.u32 %rd42, %r63, 16;
    add.s64 %rd43, %rd41, %rd42;
    add.s64 %rd44, %rd40, %rd42;
    ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd43];
    add.f32 %f1, %f1, %f4;
    st.global.v4.f32 [%rd44], {%f1, %f2, %f3, %f4};
    add.s64 %rd45, %rd46, %rd42;
    ld.global.v2.f64 {%fd1, %fd2}, [%rd45];
    add.s64 %rd45, %rd47, %rd42;
    st.global.v2.f64 [%rd45], {%fd2, %fd1};
    mul.wide.u32 %rd42, %r63, 8;
    add.s64 %rd45, %rd48, %rd42;
    ld.global.v4.u16 {%h1, %h2, %h3, %h4}, [%rd45];
    add.s64 %rd45, %rd49, %rd42;
    st.global.v4.u16 [%rd45], {%h4, %h3, %h2, %h1};
"""
    of = np.zeros_like(f)
    od = np.zeros_like(d)
    oh = np.zeros_like(h)
    params = [("u64", n) for n in ("outf", "inf", "ind", "outd", "inh", "outh")]
    launch(body, params, [of, f, d, od, h, oh], block=n)
    ef = f.reshape(n, 4).copy()
    ef[:, 0] = ef[:, 0] + ef[:, 3]
    np.testing.assert_array_equal(of.reshape(n, 4), ef)
    np.testing.assert_array_equal(od.reshape(n, 2), d.reshape(n, 2)[:, ::-1])
    np.testing.assert_array_equal(oh.reshape(n, 4), h.reshape(n, 4)[:, ::-1])


def test_negative_offsets_and_immediate_addressing():
    n = 32
    src = np.arange(n + 4, dtype=np.int32) * 3 - 50
    body = GID + """
    ld.param.u64 %rd40, [out];
    ld.param.u64 %rd41, [inp];
    mul.wide.u32 %rd42, %r63, 4;
    add.s64 %rd43, %rd41, %rd42;
    add.s64 %rd43, %rd43, 16;
    ld.global.s32 %r1, [%rd43+-16];
    ld.global.s32 %r2, [%rd43+-4];
    ld.global.s32 %r3, [%rd43];
    sub.s32 %r4, %r2, %r1;
    mul.wide.u32 %rd46, %r63, 8;
    add.s64 %rd44, %rd40, %rd46;
    add.s64 %rd44, %rd44, 8;
    st.global.s32 [%rd44+-8], %r4;
    st.global.s32 [%rd44+-4], %r3;
"""
    out = np.zeros(2 * n, dtype=np.int32)
    launch(body, [("u64", "out"), ("u64", "inp")], [out, src], block=n)
    i = np.arange(n)
    np.testing.assert_array_equal(out[0::2], src[i + 3] - src[i])
    np.testing.assert_array_equal(out[1::2], src[i + 4])


@pytest.mark.parametrize("qual", ["ld.global.nc.u32", "ldu.global.u32", "ld.global.ca.u32",
                                  "ld.global.cg.u32",
                                  "ld.global.cs.u32", "ld.global.lu.u32", "ld.global.cv.u32",
                                  "ld.global.L1::no_allocate.u32", "ld.global.L1::evict_last.u32",
                                  "ld.global.L2::128B.u32", "ld.global.nc.L1::no_allocate.u32",
                                  "ld.volatile.global.u32", "ld.relaxed.gpu.global.u32",
                                  "ld.acquire.gpu.global.u32", "ld.u32"])
def test_load_cache_qualifiers(qual):
    n = 64
    src = (np.arange(n, dtype=np.uint32) * 2654435761) & 0xFFFFFFFF
    src = src.astype(np.uint32)
    body = GID + f"""
    ld.param.u64 %rd40, [out];
    ld.param.u64 %rd41, [inp];
    mul.wide.u32 %rd42, %r63, 4;
    add.s64 %rd43, %rd41, %rd42;
    add.s64 %rd44, %rd40, %rd42;
    {qual} %r1, [%rd43];
    xor.b32 %r1, %r1, 0x5a5a5a5a;
    st.global.u32 [%rd44], %r1;
"""
    out = np.zeros(n, dtype=np.uint32)
    launch(body, [("u64", "out"), ("u64", "inp")], [out, src], grid=2, block=32)
    np.testing.assert_array_equal(out, src ^ np.uint32(0x5A5A5A5A))


@pytest.mark.parametrize("qual", ["st.global.wb.u32", "st.global.cg.u32", "st.global.cs.u32",
                                  "st.global.wt.u32",
                                  "st.global.L1::no_allocate.u32", "st.volatile.global.u32",
                                  "st.relaxed.gpu.global.u32", "st.release.gpu.global.u32", "st.u32"])
def test_store_cache_qualifiers_and_no_effect_ops(qual):
    n = 64
    body = GID + f"""
    ld.param.u64 %rd40, [out];
    mul.wide.u32 %rd42, %r63, 4;
    add.s64 %rd44, %rd40, %rd42;
    prefetch.global.L2 [%rd44];
    prefetch.global.L1 [%rd44];
    prefetch.global.L2::evict_last [%rd44];
    prefetchu.L1 [%rd44];
    mul.lo.u32 %r1, %r63, %r63;
    membar.gl;
    membar.cta;
    membar.sys;
    fence.acq_rel.gpu;
    fence.sc.sys;
    fence.sc.cta;
    {qual} [%rd44], %r1;
"""
    out = np.zeros(n, dtype=np.uint32)
    launch(body, [("u64", "out")], [out], grid=2, block=32)
    np.testing.assert_array_equal(out, (np.arange(n, dtype=np.uint32) ** 2).astype(np.uint32))


# ----------------------------------------------------------------------------------------------------------
# shared memory
# ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scope", ["module", "function"])
def test_static_shared_reverse_per_block(scope):
    decl = ".shared .align 4 .b8 s[1024];"
    nb, nt = 3, 64
    body = ("    " + decl + "\n" if scope == "function" else "") + GID + """
    ld.param.u64 %rd40, [out];
    mov.u32 %r1, s;
    shl.b32 %r2, %r60, 2;
    add.s32 %r3, %r1, %r2;
    mad.lo.s32 %r4, %r61, 1000, %r60;
    st.shared.u32 [%r3], %r4;
    bar.sync 0;
    sub.s32 %r5, 63, %r60;
    shl.b32 %r6, %r5, 2;
    add.s32 %r7, %r1, %r6;
    ld.shared.u32 %r8, [%r7];
    ld.shared.u32 %r9, [s+8];
    mul.wide.u32 %rd42, %r63, 8;
    add.s64 %rd44, %rd40, %rd42;
    st.global.v2.u32 [%rd44], {%r8, %r9};
"""
    out = np.zeros((nb * nt, 2), dtype=np.uint32)
    launch(body, [("u64", "out")], [out], grid=nb, block=nt, extra_decls=decl if scope == "module" else "")
    for b in range(nb):
        for t in range(nt):
            assert int(out[b * nt + t, 0]) == b * 1000 + (63 - t)
            assert int(out[b * nt + t, 1]) == b * 1000 + 2


def test_shared_generic_addressing_and_isspacep():
    decl = ".shared .align 8 .b8 sm[512];"
    body = GID + """
    ld.param.u64 %rd40, [out];
    mov.u64 %rd1, sm;
    cvta.shared.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r60, 4;
    add.s64 %rd4, %rd2, %rd3;
    add.s32 %r1, %r60, 100;
    st.u32 [%rd4], %r1;
    bar.sync 0;
    cvta.to.shared.u64 %rd5, %rd2;
    xor.b32 %r2, %r60, 1;
    mul.wide.u32 %rd6, %r2, 4;
    add.s64 %rd7, %rd5, %rd6;
    ld.shared.u32 %r3, [%rd7];
    add.s64 %rd8, %rd2, %rd6;
    ld.u32 %r4, [%rd8];
    cvta.global.u64 %rd9, %rd40;
    isspacep.shared %p1, %rd4;
    isspacep.global %p2, %rd4;
    isspacep.global %p3, %rd9;
    isspacep.shared %p4, %rd9;
    selp.u32 %r5, 1, 0, %p1;
    selp.u32 %r6, 2, 0, %p2;
    selp.u32 %r7, 4, 0, %p3;
    selp.u32 %r8, 8, 0, %p4;
    or.b32 %r5, %r5, %r6;
    or.b32 %r5, %r5, %r7;
    or.b32 %r5, %r5, %r8;
    mul.wide.u32 %rd10, %r60, 12;
    add.s64 %rd11, %rd40, %rd10;
    st.global.u32 [%rd11], %r3;
    st.global.u32 [%rd11+4], %r4;
    st.global.u32 [%rd11+8], %r5;
"""
    n = 32
    out = np.zeros((n, 3), dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=n, extra_decls=decl)
    for t in range(n):
        assert int(out[t, 0]) == (t ^ 1) + 100
        assert int(out[t, 1]) == (t ^ 1) + 100
        assert int(out[t, 2]) == 1 | 4  # shared ptr: shared, not global; global ptr: global, not shared


def test_dynamic_shared_memory():
    decl = ".extern .shared .align 16 .b8 dsm[];"
    nt = 128
    body = GID + """
    ld.param.u64 %rd40, [out];
    mov.u32 %r1, dsm;
    shl.b32 %r2, %r60, 3;
    add.s32 %r3, %r1, %r2;
    cvt.u64.u32 %rd1, %r60;
    mul.lo.u64 %rd1, %rd1, 0x100000001;
    st.shared.u64 [%r3], %rd1;
    bar.sync 0;
    sub.s32 %r4, 127, %r60;
    shl.b32 %r5, %r4, 3;
    add.s32 %r6, %r1, %r5;
    ld.shared.u64 %rd2, [%r6];
    mul.wide.u32 %rd42, %r63, 8;
    add.s64 %rd44, %rd40, %rd42;
    st.global.u64 [%rd44], %rd2;
"""
    out = np.zeros(2 * nt, dtype=np.uint64)
    launch(body, [("u64", "out")], [out], grid=2, block=nt, shared_mem=nt * 8, extra_decls=decl)
    rev = np.array([(127 - t) * 0x100000001 for t in range(nt)], dtype=np.uint64)
    np.testing.assert_array_equal(out, np.concatenate([rev, rev]))


def test_static_and_dynamic_shared_do_not_alias():
    decl = ".shared .align 4 .u32 st_arr[32];\n.extern .shared .align 16 .b8 dyn[];"
    body = GID + """
    ld.param.u64 %rd40, [out];
    mov.u32 %r1, st_arr;
    mov.u32 %r2, dyn;
    shl.b32 %r3, %r60, 2;
    add.s32 %r4, %r1, %r3;
    add.s32 %r5, %r2, %r3;
    st.shared.u32 [%r4], 7;
    st.shared.u32 [%r5], 9;
    bar.sync 0;
    ld.shared.u32 %r6, [%r4];
    ld.shared.u32 %r7, [%r5];
    mad.lo.s32 %r8, %r6, 10, %r7;
    mul.wide.u32 %rd42, %r63, 4;
    add.s64 %rd44, %rd40, %rd42;
    st.global.u32 [%rd44], %r8;
"""
    out = np.zeros(32, dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=32, shared_mem=256, extra_decls=decl)
    assert np.all(out == 79)


# ----------------------------------------------------------------------------------------------------------
# local memory
# ----------------------------------------------------------------------------------------------------------


def test_local_array_is_private_per_thread():
    body = """
    .local .align 8 .b8 loc[64];
""" + GID + """
    ld.param.u64 %rd40, [out];
    mov.u64 %rd1, loc;
    mov.u32 %r1, 0;
$L_fill:
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    mad.lo.s32 %r2, %r63, 100, %r1;
    st.local.u32 [%rd3], %r2;
    add.s32 %r1, %r1, 1;
    setp.lt.u32 %p1, %r1, 16;
    @%p1 bra $L_fill;
    bar.sync 0;
    ld.local.u32 %r3, [loc+60];
    ld.local.u32 %r4, [%rd1+4];
    cvta.local.u64 %rd5, %rd1;
    ld.u32 %r5, [%rd5+8];
    isspacep.local %p2, %rd5;
    selp.u32 %r6, 1, 0, %p2;
    mul.wide.u32 %rd42, %r63, 16;
    add.s64 %rd44, %rd40, %rd42;
    st.global.v4.u32 [%rd44], {%r3, %r4, %r5, %r6};
"""
    n = 64
    out = np.zeros((n, 4), dtype=np.uint32)
    launch(body, [("u64", "out")], [out], grid=2, block=32)
    for g in range(n):
        assert list(out[g]) == [g * 100 + 15, g * 100 + 1, g * 100 + 2, 1]


# ----------------------------------------------------------------------------------------------------------
# module variables: .global / .const with initializers
# ----------------------------------------------------------------------------------------------------------

MODULE_VARS = """
.global .align 4 .u32 tab[4] = {1, 2, 3, 4};
.global .align 8 .f64 gd[2] = {1.5, -2.25};
.global .align 1 .u8 gb[4] = {1, 2, 3, 255};
.global .align 4 .s32 gneg = -5;
.global .align 4 .u32 counter;
.const .align 4 .u32 ctab[4] = {10, 20, 30, 40};
.const .align 4 .f32 cf[2] = {0f3FC00000, 0fC0200000};
.const .align 8 .u64 cbig = 0x123456789ABCDEF0;
"""


def test_module_variables_with_initializers():
    body = """
    ld.param.u64 %rd40, [out];
    mov.u32 %r60, %tid.x;
    mul.wide.u32 %rd1, %r60, 4;
    mov.u64 %rd2, tab;
    add.s64 %rd3, %rd2, %rd1;
    ld.global.u32 %r1, [%rd3];
    mov.u64 %rd4, ctab;
    add.s64 %rd5, %rd4, %rd1;
    ld.const.u32 %r2, [%rd5];
    ld.global.u32 %r3, [tab+8];
    ld.const.u32 %r4, [ctab+12];
    ld.global.f64 %fd1, [gd+8];
    ld.global.u8 %r5, [gb+3];
    ld.global.s32 %r6, [gneg];
    ld.const.f32 %f1, [cf+4];
    ld.const.u64 %rd6, [cbig];
    mul.wide.u32 %rd7, %r60, 48;
    add.s64 %rd8, %rd40, %rd7;
    st.global.u32 [%rd8], %r1;
    st.global.u32 [%rd8+4], %r2;
    st.global.u32 [%rd8+8], %r3;
    st.global.u32 [%rd8+12], %r4;
    st.global.f64 [%rd8+16], %fd1;
    st.global.u32 [%rd8+24], %r5;
    st.global.s32 [%rd8+28], %r6;
    st.global.f32 [%rd8+32], %f1;
    st.global.u64 [%rd8+40], %rd6;
"""
    out = np.zeros(4 * 48, dtype=np.uint8)
    launch(body, [("u64", "out")], [out], block=4, extra_decls=MODULE_VARS)
    for t in range(4):
        rec = struct.unpack("<IIIIdIifIQ", out[t * 48:(t + 1) * 48].tobytes())
        assert rec[:4] == (t + 1, 10 * (t + 1), 3, 40)
        assert rec[4] == -2.25
        assert rec[5] == 255 and rec[6] == -5 and rec[7] == -2.5
        assert rec[9] == 0x123456789ABCDEF0


def test_global_variable_is_writable_and_shared_across_blocks():
    body = GID + """
    ld.param.u64 %rd40, [out];
    mov.u64 %rd1, counter;
    atom.global.add.u32 %r1, [%rd1], 1;
    bar.sync 0;
    membar.gl;
    mul.wide.u32 %rd2, %r63, 4;
    add.s64 %rd3, %rd40, %rd2;
    st.global.u32 [%rd3], %r1;
"""
    out = np.zeros(64, dtype=np.uint32)
    launch(body, [("u64", "out")], [out], grid=2, block=32, extra_decls=MODULE_VARS)
    assert sorted(int(x) for x in out) == list(range(64))


@pytest.mark.parametrize(("space", "var", "offset", "value"), [("global", "tab", 12, 4), ("const", "ctab", 8, 30)],
                         ids=["global", "const"])
def test_module_variable_generic_address(space, var, offset, value):
    """cvta.<space> of a module variable gives a generic address that loads it and isspacep.<space> accepts."""
    body = f"""
    ld.param.u64 %rd40, [out];
    mov.u64 %rd1, {var};
    cvta.{space}.u64 %rd2, %rd1;
    ld.u32 %r1, [%rd2+{offset}];
    isspacep.{space} %p1, %rd2;
    selp.u32 %r2, 1, 0, %p1;
    st.global.v2.u32 [%rd40], {{%r1, %r2}};
"""
    out = np.zeros(2, dtype=np.uint32)
    launch(body, [("u64", "out")], [out], block=1, extra_decls=MODULE_VARS)
    assert list(out) == [value, 1]


def test_scalar_param_types():
    params = [("u64", "out"), ("u8", "pu8"), ("s8", "ps8"), ("u16", "pu16"), ("s16", "ps16"), ("u32", "pu32"),
              ("s32", "ps32"), ("u64", "pu64"), ("s64", "ps64"), ("f32", "pf32"), ("f64", "pf64"),
              ("b32", "pb32")]
    body = """
    ld.param.u64 %rd40, [out];
    ld.param.u8 %r1, [pu8];
    ld.param.s8 %r2, [ps8];
    ld.param.u16 %r3, [pu16];
    ld.param.s16 %r4, [ps16];
    ld.param.u32 %r5, [pu32];
    ld.param.s32 %r6, [ps32];
    ld.param.u64 %rd1, [pu64];
    ld.param.s64 %rd2, [ps64];
    ld.param.f32 %f1, [pf32];
    ld.param.f64 %fd1, [pf64];
    ld.param.b32 %r7, [pb32];
    st.global.v4.u32 [%rd40], {%r1, %r2, %r3, %r4};
    st.global.v4.u32 [%rd40+16], {%r5, %r6, %r7, %r7};
    st.global.v2.u64 [%rd40+32], {%rd1, %rd2};
    st.global.f32 [%rd40+48], %f1;
    st.global.f64 [%rd40+56], %fd1;
"""
    out = np.zeros(64, dtype=np.uint8)
    args = [out, 200, -5, 60000, -300, 4000000000, -7, 2**63 + 5, -(2**40), 1.5, -2.25, 0xDEADBEEF]
    launch(body, params, args, block=1)
    rec = struct.unpack("<IiIiIiIIQqfxxxxd", out.tobytes())
    assert rec[:8] == (200, -5, 60000, -300, 4000000000, -7, 0xDEADBEEF, 0xDEADBEEF)
    assert rec[8] == 2**63 + 5 and rec[9] == -(2**40)
    assert rec[10] == 1.5 and rec[11] == -2.25


def test_two_static_shared_arrays_do_not_alias():
    decl = ".shared .align 4 .u32 sa[64];\n.shared .align 8 .u64 sb[64];"
    body = """
    ld.param.u64 %rd40, [out];
    mov.u32 %r60, %tid.x;
    shl.b32 %r1, %r60, 2;
    mov.u32 %r2, sa;
    add.s32 %r3, %r2, %r1;
    st.shared.u32 [%r3], %r60;
    shl.b32 %r4, %r60, 3;
    mov.u32 %r5, sb;
    add.s32 %r6, %r5, %r4;
    cvt.u64.u32 %rd1, %r60;
    not.b64 %rd1, %rd1;
    st.shared.u64 [%r6], %rd1;
    bar.sync 0;
    ld.shared.u32 %r7, [%r3];
    ld.shared.u64 %rd2, [%r6];
    mul.wide.u32 %rd3, %r60, 16;
    add.s64 %rd4, %rd40, %rd3;
    cvt.u64.u32 %rd5, %r7;
    st.global.v2.u64 [%rd4], {%rd5, %rd2};
"""
    out = np.zeros((64, 2), dtype=np.uint64)
    launch(body, [("u64", "out")], [out], block=64, extra_decls=decl)
    assert [int(x) for x in out[:, 0]] == list(range(64))
    assert [int(x) for x in out[:, 1]] == [t ^ 0xFFFFFFFFFFFFFFFF for t in range(64)]
