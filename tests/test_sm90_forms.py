"""sm_90 forms that run: %pm performance counters, multimem on one device,
mapa.shared::cluster, cp.async.bulk multicast, sured, tensormap.replace / cp_fenceproxy.  Each against a
NumPy model of what the PTX ISA says the instruction does."""

from __future__ import annotations

import numpy as np
import pytest

import ptxjit

HEAD = ".version 8.5\n.target sm_90a\n.address_size 64\n"


def _run(body: str, out: np.ndarray, block: int = 1, params: str = ".param .u64 p", args: list | None = None,
         decls: str = "", **kw) -> np.ndarray:
    src = f"""{HEAD}{decls}
.visible .entry k({params})
{{
  .reg .pred %p<8>;
  .reg .b16 %h<16>;
  .reg .b32 %r<64>;
  .reg .b64 %rd<32>;
  .reg .f32 %f<32>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r0, %tid.x;
{body}
  ret;
}}
"""
    ptxjit.Module(src, "sm90_forms.ptx").get_function("k")(kw.pop("grid", 1), block, args or [out], **kw)
    return out


def test_pm_counters_are_monotone() -> None:
    """%pm0..%pm7 (32-bit) and %pm0_64.. (64-bit): performance-monitor counts; ptxjit counts cycles, so a
    later read is not smaller (the 32-bit one modulo 2^32)."""
    body = "\n".join([
        "  mov.u32 %r1, %pm0;", "  mov.u64 %rd2, %pm3_64;",
        "  mov.u32 %r3, 0;", "LOOP:", "  add.u32 %r3, %r3, 1;", "  setp.lt.u32 %p1, %r3, 1000;", "  @%p1 bra LOOP;",
        "  mov.u32 %r2, %pm0;", "  mov.u64 %rd3, %pm3_64;", "  mov.u32 %r4, %pm7;",
        "  st.global.u32 [%rd1], %r1;", "  st.global.u32 [%rd1+4], %r2;", "  st.global.u64 [%rd1+8], %rd2;",
        "  st.global.u64 [%rd1+16], %rd3;", "  st.global.u32 [%rd1+24], %r4;"])
    out = _run(body, np.zeros(8, np.uint32))
    pm0, pm0b = int(out[0]), int(out[1])
    pm3, pm3b = int(out[2]) | int(out[3]) << 32, int(out[4]) | int(out[5]) << 32
    assert 0 < (pm0b - pm0) % 2**32 < 2**31
    assert pm3b > pm3 > 0


def test_multimem_on_one_device_is_plain_memory() -> None:
    """With one device a multicast object has one copy: ld_reduce reads it, st writes it, red reduces into
    it atomically (64 threads adding their tid + 1; a v4.f32 red from each thread)."""
    body = """
  ld.global.u32 %r1, [%rd1];
  multimem.ld_reduce.relaxed.sys.global.add.u32 %r2, [%rd1];
  multimem.ld_reduce.weak.global.min.s32 %r3, [%rd1+4];
  bar.sync 0;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 st.global.u32 [%rd1+8], %r2;
  @%p1 st.global.u32 [%rd1+12], %r3;
  @%p1 multimem.st.relaxed.sys.global.b32 [%rd1+16], %r1;
  @%p1 multimem.st.global.v2.f16x2 [%rd1+24], {%r1, %r3};
  add.u32 %r4, %r0, 1;
  multimem.red.relaxed.sys.global.add.u32 [%rd1+32], %r4;
  cvt.rn.f32.u32 %f1, %r4;
  multimem.red.relaxed.gpu.global.add.v4.f32 [%rd1+48], {%f1, %f1, %f1, %f1};
"""
    buf = np.zeros(16, np.uint32)
    buf[0], buf[1], buf[8] = 0x12345678, 0xFFFFFFF0, 1000
    buf[12:16] = np.float32(0.5).view(np.uint32)
    out = _run(body, buf.copy(), block=64)
    assert out[2] == 0x12345678 and out[3] == 0xFFFFFFF0  # ld_reduce of one copy: its value
    assert out[4] == 0x12345678  # st
    assert list(out[6:8]) == [0x12345678, 0xFFFFFFF0]  # v2.f16x2 st: the bits
    assert out[8] == 1000 + sum(range(1, 65))  # red.add
    np.testing.assert_array_equal(out[12:16].view(np.float32), np.float32(0.5 + sum(range(1, 65))))


def test_multimem_ld_reduce_v8_reads_the_bits() -> None:
    """A vector ld_reduce of packed halves (.acc::f32 changes how copies are added: one copy, nothing added)."""
    regs = ",".join(f"%r{i}" for i in range(1, 9))
    body = (f"  multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v8.f16x2 {{{regs}}}, [%rd1];\n"
            + "\n".join(f"  st.global.b32 [%rd1+{32 + 4 * i}], %r{i + 1};" for i in range(8)))
    buf = np.zeros(16, np.uint32)
    buf[:8] = np.arange(8, dtype=np.uint32) * 0x01010101 + 0x3C003C00
    out = _run(body, buf.copy())
    np.testing.assert_array_equal(out[8:], buf[:8])


MCAST = """
  .shared .align 16 .b8 buf[256];
  .shared .align 8 .b64 bar;
"""


def _mcast_body(mask: int) -> str:
    return f"""
  ld.param.u64 %rd2, [q];
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r10, buf;
  mov.u32 %r11, bar;
  // every thread fills its block's buffer with 0xEE bytes; thread 0 sets the mbarrier up
  shl.b32 %r3, %r0, 2;
  add.u32 %r4, %r10, %r3;
  st.shared.u32 [%r4], 0xEEEEEEEE;
  setp.eq.u32 %p1, %r0, 0;
  shr.u32 %r5, %r3, 2;
  mov.u32 %r6, 1;
  shl.b32 %r6, %r6, %r2;
  and.b32 %r6, %r6, {mask};
  setp.ne.u32 %p2, %r6, 0;           // this block is a destination
  and.pred %p3, %p1, %p2;
  @%p1 mbarrier.init.shared::cta.b64 [%r11], 1;
  @%p3 mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r11], 256;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  // rank 1 multicasts 256 bytes from global to the blocks of the mask
  setp.eq.u32 %p4, %r2, 1;
  and.pred %p4, %p4, %p1;
  mov.u16 %h1, {mask};
  @%p4 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster \
[%r10], [%rd1], 256, [%r11], %h1;
  @!%p2 bra DONE;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r11], 0;
  @!%p5 bra WAIT;
DONE:
  bar.sync 0;
  // thread t copies word t of this block's buffer to q[ctaid][t]
  ld.shared.u32 %r7, [%r4];
  mad.lo.u32 %r8, %r1, 64, %r0;
  mul.wide.u32 %rd3, %r8, 4;
  add.u64 %rd3, %rd2, %rd3;
  st.global.u32 [%rd3], %r7;
  barrier.cluster.arrive;
  barrier.cluster.wait;
"""


@pytest.mark.parametrize("mask", [0b1011, 0b0110, 0xFFFF])
def test_bulk_multicast_lands_in_every_block_of_the_mask(mask: int) -> None:
    """cp.async.bulk .multicast::cluster from rank 1 of a 4-block cluster: the bytes land at the same offset in
    each block whose rank bit is set in ctaMask (bits past the cluster are ignored), whose mbarrier phase then
    completes; the other blocks keep their own bytes."""
    src = np.arange(64, dtype=np.uint32) * 0x01000193 + 7
    out = np.zeros((4, 64), np.uint32)
    _run(_mcast_body(mask), out, block=64, params=".param .u64 p, .param .u64 q", args=[src, out], decls=MCAST,
         grid=4, cluster=(4, 1, 1), timeout=60)
    for r in range(4):
        want = src if mask >> r & 1 else np.full(64, 0xEEEEEEEE, np.uint32)
        np.testing.assert_array_equal(out[r], want, err_msg=f"rank {r}")


def test_mapa_shared_cluster_maps_own_rank_and_stops_at_another() -> None:
    """mapa.shared::cluster.u32 to the block's own rank gives the address itself (stores through it land in
    the block's variable); to another rank ptxjit has no 32-bit address: an illegal-address error naming the
    line, not a wrong access."""
    body = """
  mov.u32 %r1, buf;
  mov.u32 %r2, %cluster_ctarank;
  mapa.shared::cluster.u32 %r3, %r1, %r2;
  st.shared::cluster.u32 [%r3+4], 99;
  ld.shared.u32 %r4, [%r1+4];
  mov.u32 %r5, %ctaid.x;
  mul.wide.u32 %rd2, %r5, 8;
  add.u64 %rd2, %rd1, %rd2;
  sub.u32 %r6, %r3, %r1;
  st.global.v2.u32 [%rd2], {%r4, %r6};
"""
    out = _run(body, np.zeros((2, 2), np.uint32), decls=MCAST, grid=2, cluster=(2, 1, 1))
    np.testing.assert_array_equal(out, [[99, 0], [99, 0]])
    other = body.replace("mapa.shared::cluster.u32 %r3, %r1, %r2;", "xor.b32 %r2, %r2, 1;\n"
                         "  mapa.shared::cluster.u32 %r3, %r1, %r2;")
    with pytest.raises(ptxjit.KernelError, match=r"sm90_forms.ptx:\d+.*mapa"):
        _run(other, np.zeros((2, 2), np.uint32), decls=MCAST, grid=2, cluster=(2, 1, 1))


def _surface(data: np.ndarray, bits: int, kind: int):
    from ptxjit import texture as T

    # 64-bit elements: two 32-bit channels (CUDA has no 64-bit channel formats)
    desc = T.ChannelFormatDescriptor(32, 32, 0, 0, kind) if bits == 64 else T.ChannelFormatDescriptor(bits, 0, 0, 0,
                                                                                                      kind)
    extent = list(reversed(data.shape)) + [0] * (3 - data.ndim)
    arr = T.CUDAarray(desc, *extent, flags=T.cudaArraySurfaceLoadStore)
    arr.copy_from(data.view(np.uint32).reshape(*data.shape, 2) if bits == 64 else data)
    return T.SurfaceObject(T.ResourceDescriptor(T.cudaResourceTypeArray, cuArr=arr)), arr


@pytest.mark.parametrize("op,ctype,geom", [("add", "u32", "1d"), ("min", "s32", "2d"), ("max", "u32", "2d"),
                                           ("or", "b32", "1d"), ("add", "u64", "1d"), ("and", "b64", "2d")])
def test_sured_reduces_atomically(op: str, ctype: str, geom: str) -> None:
    """sured.b: 2 blocks x 64 threads reduce value v(tid, block) into element (tid % 16) of a 16-wide surface
    (2-D: 16 x 2, row = block): NumPy's reduction of the same values, whatever the order."""
    from ptxjit import texture as T

    bits = int(ctype[1:])
    dt = {"u32": np.uint32, "s32": np.int32, "b32": np.uint32, "u64": np.uint64, "b64": np.uint64}[ctype]
    shape = (2, 16) if geom == "2d" else (16,)
    rng = np.random.default_rng(len(op) * 100 + bits)
    init = rng.integers(0, 2**31, shape).astype(dt)
    if op == "and":
        init = np.full(shape, np.iinfo(dt).max, dt)
    vals = rng.integers(-2**31 if ctype == "s32" else 0, 2**31, (2, 64)).astype(dt)
    surf, arr = _surface(init, bits, T.cudaChannelFormatKindSigned if ctype == "s32"
                         else T.cudaChannelFormatKindUnsigned)
    reg = "%rd10" if bits == 64 else "%r10"
    coords = "{%r2}" if geom == "1d" else "{%r2, %r3}"
    body = f"""
  mov.u32 %r3, %ctaid.x;
  mad.lo.u32 %r4, %r3, 64, %r0;
  mul.wide.u32 %rd2, %r4, {bits // 8};
  add.u64 %rd2, %rd1, %rd2;
  ld.global.b{bits} {reg}, [%rd2];
  and.b32 %r2, %r0, 15;
  mul.lo.u32 %r2, %r2, {bits // 8};
  ld.param.u64 %rd9, [h];
  sured.b.{op}.{geom}.{ctype}.trap [%rd9, {coords}], {reg};
"""
    _run(body, vals, block=64, params=".param .u64 p, .param .u64 h", args=[vals, surf], grid=2)
    got = np.zeros_like(init)
    arr.copy_to(got.view(np.uint32).reshape(*got.shape, 2) if bits == 64 else got)
    want = init.copy()
    ufunc = {"add": np.add, "min": np.minimum, "max": np.maximum, "or": np.bitwise_or, "and": np.bitwise_and}[op]
    for blk in range(2):
        for t in range(64):
            if geom == "2d":
                want[blk, t % 16] = ufunc(want[blk, t % 16], vals[blk, t])
            else:
                want[t % 16] = ufunc(want[t % 16], vals[blk, t])
    np.testing.assert_array_equal(got, want)


def test_sured_trap_outside_the_surface() -> None:
    from ptxjit import texture as T

    surf, _ = _surface(np.zeros(16, np.uint32), 32, T.cudaChannelFormatKindUnsigned)
    body = "  ld.param.u64 %rd9, [h];\n  mov.u32 %r2, 64;\n  sured.b.add.1d.u32.trap [%rd9, {%r2}], %r0;"
    with pytest.raises(ptxjit.KernelError):
        _run(body, np.zeros(1), params=".param .u64 p, .param .u64 h", args=[np.zeros(1), surf])


TMAP_KERNEL = HEAD + """
.shared .align 128 .b8 smap[128];
.shared .align 128 .b8 tile[512];
.shared .align 8 .b64 tbar;
.visible .entry k(.param .align 128 .b8 tmap[128], .param .u64 arr, .param .u32 d0, .param .u32 d1,
                  .param .u64 stride, .param .u64 gmap, .param .u32 c0, .param .u32 c1, .param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<16>;
  mov.u32 %r0, %tid.x;
  mov.b64 %rd1, tmap;
  cvta.param.u64 %rd1, %rd1;
  mul.wide.u32 %rd2, %r0, 4;
  add.u64 %rd3, %rd1, %rd2;
  ld.u32 %r1, [%rd3];
  mov.u32 %r2, smap;
  shl.b32 %r3, %r0, 2;
  add.u32 %r4, %r2, %r3;
  st.shared.u32 [%r4], %r1;
  bar.sync 0;
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra EDITED;
  ld.param.u64 %rd4, [arr];
  ld.param.u32 %r5, [d0];
  ld.param.u32 %r6, [d1];
  ld.param.u64 %rd5, [stride];
  tensormap.replace.tile.global_address.shared::cta.b1024.b64 [smap], %rd4;
  tensormap.replace.tile.rank.shared::cta.b1024.b32 [smap], 1;
  tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [smap], 0, %r5;
  tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [smap], 1, %r6;
  tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [smap], 0, %rd5;
  tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [smap], 0, 8;
  tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [smap], 1, 4;
  tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [smap], 1, 1;
  tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [smap], 7;
  tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [smap], 0;
  tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [smap], 0;
EDITED:
  bar.sync 0;
  ld.param.u64 %rd6, [gmap];
  cvta.to.global.u64 %rd6, %rd6;
  tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd6], [smap], 128;
  @!%p1 bra LOADED;
  mov.u32 %r7, tbar;
  mbarrier.init.shared::cta.b64 [%r7], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd7, [%r7], 128;
  ld.param.u32 %r8, [c0];
  ld.param.u32 %r9, [c1];
  mov.u32 %r10, tile;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r10], [%rd6, {%r8, %r9}], [%r7];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r7], 0;
  @!%p2 bra WAIT;
LOADED:
  bar.sync 0;
  mov.u32 %r11, tile;
  add.u32 %r12, %r11, %r3;
  ld.shared.u32 %r13, [%r12];
  ld.param.u64 %rd8, [out];
  cvta.to.global.u64 %rd8, %rd8;
  add.u64 %rd9, %rd8, %rd2;
  st.global.u32 [%rd9], %r13;
  ret;
}
"""


@pytest.mark.parametrize("coords", [(4, 3), (30, 18), (-3, -1)])
def test_tensormap_replace_then_tma_load_reads_the_new_tensor(coords: tuple[int, int]) -> None:
    """A kernel copies a grid-constant map (of another, 1-D u16 array) into shared memory, replaces its
    address, rank, dims, stride, box and element type (ISA values: rank - 1, the stride of dimension 1 in
    bytes), publishes it with tensormap.cp_fenceproxy and loads a box through it: NumPy's box of the new
    (20 x 36 f32) tensor, zeros outside it."""
    from ptxjit.lower.rules.tma import encode_tensor_map
    from tests.test_tma import box_of

    rng = np.random.default_rng(5)
    t = rng.standard_normal((20, 36)).astype(np.float32)  # rows of 144 bytes
    old = np.zeros(64, np.uint16)
    tmap = encode_tensor_map(old, (16,))
    store = np.zeros(256 // 4, np.uint32)
    gmap = store[(-store.ctypes.data % 128) // 4:][:32]  # 128-byte aligned
    out = np.zeros(32, np.uint32)
    fn = ptxjit.Module(TMAP_KERNEL, "tensormap.ptx").get_function("k")
    fn(1, 32, [tmap, t, np.uint32(36), np.uint32(20), np.uint64(144), gmap, np.int32(coords[0]),
               np.int32(coords[1]), out])
    np.testing.assert_array_equal(out.view(np.float32), box_of(t, coords, (8, 4)).ravel())
    assert gmap.view(np.uint8)[12] == 2 and gmap.view(np.uint8)[13] == 4  # rank 2, 4-byte elements


def test_tensormap_replace_values_ptxjit_cannot_hold_trap() -> None:
    """An interleaved layout (ptxjit's maps have none) stops the kernel instead of being dropped."""
    body = "  tensormap.replace.tile.interleave_layout.global.b1024.b32 [%rd1], 1;"
    with pytest.raises(ptxjit.KernelError):
        _run(body, np.zeros(32, np.uint32))


IM2COL_KERNEL = HEAD + """
.shared .align 128 .b8 itile[512];
.shared .align 8 .b64 ibar;
.visible .entry k(.param .align 128 .b8 tmap[128], .param .u32 w, .param .u32 h, .param .u32 n, .param .u32 ow,
                  .param .u32 oh, .param .u64 out)
{
  .reg .pred %p<4>;
  .reg .b16 %h<4>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<16>;
  mov.u32 %r0, %tid.x;
  setp.eq.u32 %p1, %r0, 0;
  @!%p1 bra LOADED;
  mov.b64 %rd1, tmap;
  cvta.param.u64 %rd1, %rd1;
  mov.u32 %r7, ibar;
  mbarrier.init.shared::cta.b64 [%r7], 1;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd7, [%r7], 512;
  ld.param.u32 %r1, [w];
  ld.param.u32 %r2, [h];
  ld.param.u32 %r3, [n];
  ld.param.u32 %r4, [ow];
  ld.param.u32 %r5, [oh];
  cvt.u16.u32 %h1, %r4;
  cvt.u16.u32 %h2, %r5;
  mov.u32 %r9, 0;
  mov.u32 %r10, itile;
  cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%r10], \
[%rd1, {%r9, %r1, %r2, %r3}], [%r7], {%h1, %h2};
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r7], 0;
  @!%p2 bra WAIT;
LOADED:
  bar.sync 0;
  mov.u32 %r11, itile;
  shl.b32 %r3, %r0, 2;
  add.u32 %r12, %r11, %r3;
  ld.shared.u32 %r13, [%r12];
  ld.param.u64 %rd8, [out];
  cvta.to.global.u64 %rd8, %rd8;
  mul.wide.u32 %rd2, %r0, 4;
  add.u64 %rd9, %rd8, %rd2;
  st.global.u32 [%rd9], %r13;
  ret;
}
"""


@pytest.mark.parametrize("start,tap", [(0, (0, 0)), (5, (1, 2)), (27, (2, 2)), (57, (2, 1))])
def test_tma_im2col_load_is_numpy_im2col(start: int, tap: tuple[int, int]) -> None:
    """A 3x3, padding-1 convolution's im2col through TMA: an NHWC tensor (2 x 5 x 6 x 16 f32), bounding box
    corners -1 / -1 (W, H), 8 pixels of 16 channels from output pixel `start` (row-major over n, oh, ow) at
    filter tap (r, s) as the im2col offsets: NumPy's zero-padded input at (n, oh + r, ow + s), zeros past the
    last image."""
    from ptxjit.lower.rules.tma_im2col import encode_im2col_tensor_map

    nn, hh, ww, cc = 2, 5, 6, 16
    x = np.random.default_rng(start).standard_normal((nn, hh, ww, cc)).astype(np.float32)
    tmap = encode_im2col_tensor_map(x, [-1, -1], [-1, -1], cc, 8)
    n, rem = divmod(start, hh * ww)
    oh, ow = divmod(rem, ww)
    out = np.zeros((8, cc), np.float32)
    fn = ptxjit.Module(IM2COL_KERNEL, "im2col.ptx").get_function("k")
    r, s = tap
    fn(1, 128, [tmap, np.int32(ow - 1), np.int32(oh - 1), np.int32(n), np.uint32(s), np.uint32(r), out])
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((8, cc), np.float32)
    for i, q in enumerate(range(start, start + 8)):
        if q < nn * hh * ww:
            qn, qr = divmod(q, hh * ww)
            qh, qw = divmod(qr, ww)
            want[i] = padded[qn, qh + r, qw + s]
    np.testing.assert_array_equal(out, want)


ALLCAST = """
  .shared .align 16 .b8 buf[256];
  .shared .align 8 .b64 bar;
"""


def test_bulk_multicast_all_to_all_phases() -> None:
    """CUTLASS's pattern, 40 times over: every block of a 4-block cluster multicasts its 64-byte slice to all
    four (slot = its rank) and then expects 256 bytes on its own mbarrier, with no barrier in between, so other
    blocks' complete_tx race with its own arrive.expect_tx (the count may go negative first); each phase must
    complete with all four slices in every block."""
    body = """
  ld.param.u64 %rd2, [q];
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %cluster_ctarank;
  mov.u32 %r10, buf;
  mov.u32 %r11, bar;
  setp.eq.u32 %p1, %r0, 0;
  @%p1 mbarrier.init.shared::cta.b64 [%r11], 1;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  shl.b32 %r3, %r2, 6;
  add.u32 %r4, %r10, %r3;              // this rank's slot
  mul.wide.u32 %rd3, %r2, 64;
  add.u64 %rd3, %rd1, %rd3;            // its 64 source bytes
  mov.u16 %h1, 15;
  mov.u32 %r5, 0;                      // iteration = phase parity source
ITER:
  @%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster \
[%r4], [%rd3], 64, [%r11], %h1;
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 %rd5, [%r11], 256;
  and.b32 %r6, %r5, 1;
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r11], %r6;
  @!%p2 bra WAIT;
  // every thread checks one word of the buffer against the source, counting mismatches
  shl.b32 %r7, %r0, 2;
  add.u32 %r8, %r10, %r7;
  ld.shared.u32 %r9, [%r8];
  mul.wide.u32 %rd6, %r0, 4;
  add.u64 %rd6, %rd1, %rd6;
  ld.global.u32 %r12, [%rd6];
  setp.ne.u32 %p3, %r9, %r12;
  selp.u32 %r13, 1, 0, %p3;
  add.u32 %r20, %r20, %r13;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  // clear the buffer for the next phase (after every block has read its own)
  st.shared.u32 [%r8], 0;
  barrier.cluster.arrive;
  barrier.cluster.wait;
  add.u32 %r5, %r5, 1;
  setp.lt.u32 %p4, %r5, 40;
  @%p4 bra ITER;
  mad.lo.u32 %r14, %r1, 64, %r0;
  mul.wide.u32 %rd7, %r14, 4;
  add.u64 %rd7, %rd2, %rd7;
  st.global.u32 [%rd7], %r20;
"""
    body = body.replace("  mov.u32 %r5, 0;", "  mov.u32 %r20, 0;\n  mov.u32 %r5, 0;")
    src = (np.arange(64, dtype=np.uint64) * 2654435761 % 2**32).astype(np.uint32)
    bad = np.full((4, 64), 7, np.uint32)
    _run(body, bad, block=64, params=".param .u64 p, .param .u64 q", args=[src, bad],
         decls=ALLCAST, grid=4, cluster=(4, 1, 1), timeout=120)
    np.testing.assert_array_equal(bad, 0)
