"""wgmma.mma_async with every shared-memory layout a matrix descriptor names (PTX ISA §9.7.15.5.1.2): K-major
and MN-major (imm-trans) operands, no swizzle and the 32/64/128-byte swizzles, the matrix base offset, for
f16/bf16/tf32/e4m3/e5m2/s8/u8, against NumPy's product of the logical matrices.

The host lays each logical matrix out in a shared-memory image by the ISA's canonical layouts (`place`, written
from the ISA's description in bytes, not from the lowering's formula), with junk in the gaps and around the
operand; the kernel copies the image into shared memory with plain stores, runs one wgmma (C = 1, scale-d 1)
and stores D by the accumulator layout.  Small integers make every product and sum exact, so D must equal
A @ B + 1 exactly.  A second kernel loads the tiles with TMA (cp.async.bulk.tensor, 128-byte swizzled tensor
maps) and steps the descriptors along K the way Triton's sm_90 matmuls do: the swizzle TMA writes and the one
wgmma reads must agree.
"""

from __future__ import annotations

import numpy as np
import pytest

import ptxjit
from ptxjit.lower.rules.tma import encode_tensor_map

ES = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}
KDIM = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}
MODE = {0: 0, 128: 1, 64: 2, 32: 3}  # swizzle bytes -> descriptor bits 62-63
# fp8 bit patterns of the small integers 0..4 (sign bit 0x80): e4m3 bias 7, e5m2 bias 15
FP8 = {"e4m3": [0x00, 0x38, 0x40, 0x44, 0x48], "e5m2": [0x00, 0x3C, 0x40, 0x42, 0x44]}


def values(rng: np.random.Generator, t: str, shape: tuple[int, int]) -> np.ndarray:
    """Small integers of type t: exact products and sums in every accumulator."""
    if t == "u8":
        return rng.integers(0, 16, shape)
    if t == "s8":
        return rng.integers(-8, 9, shape)
    return rng.integers(-4, 5, shape)


def encode(v: np.ndarray, t: str) -> np.ndarray:
    """The element bits of integer values v as type t (unsigned array of the element's size)."""
    if t == "f16":
        return v.astype(np.float16).view(np.uint16)
    if t == "bf16":
        return (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if t == "tf32":
        return v.astype(np.float32).view(np.uint32)
    if t in FP8:
        mag = np.array(FP8[t], np.uint8)[np.abs(v)]
        return np.where(v < 0, mag | 0x80, mag).astype(np.uint8)
    return v.astype(np.int8 if t == "s8" else np.uint8).view(np.uint8)


def place(img: np.ndarray, raw: np.ndarray, mn_major: bool, swizzle: int, start: int, lbo: int, sbo: int,
          pattern_start: int = 0) -> None:
    """Write the R x K matrix `raw` (element bits; R along M or N) into the byte image `img` as a descriptor
    (start, lbo, sbo, swizzle) describes it.  The ISA's canonical layouts, in bytes: a row is 16 bytes
    without swizzle, 16 W with a swizzle of 16 W bytes; K-major rows run along K (8 rows along MN per core
    matrix / atom, SBO between those along MN; without swizzle LBO between 16-byte columns along K);
    MN-major rows run along MN (8 rows along K, SBO between those groups when swizzled, LBO without;
    the other offset steps along MN between 16-byte columns (no swizzle) or swizzle atoms).  The swizzle
    XORs the 16-byte chunk of each address with its row bits counted from the pattern's start."""
    rows, cols = raw.shape
    es = raw.itemsize
    w = swizzle // 16 or 1
    pitch = 16 * w
    mn, k = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    if not mn_major:
        kb = k * es
        off = (mn % 8) * pitch + (mn // 8) * sbo + kb % pitch + (kb // pitch) * lbo
    else:
        mb = mn * es
        along_mn, along_k = (lbo, sbo) if swizzle else (sbo, lbo)
        off = mb % pitch + (mb // pitch) * along_mn + (k % 8) * pitch + (k // 8) * along_k
    addr = start + off
    if swizzle:
        addr = addr ^ ((((addr - pattern_start) >> 7) & (w - 1)) << 4)
    by = raw.view(np.uint8).reshape(rows, cols, es)
    for j in range(es):
        img[addr + j] = by[:, :, j]
    assert len(np.unique(addr)) == addr.size  # no two elements in one place


def descriptor(start: int, lbo: int, sbo: int, swizzle: int, base_offset: int = 0) -> int:
    return ((start >> 4) & 0x3FFF) | ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 \
        | (base_offset & 7) << 49 | MODE[swizzle] << 62


def layout(rows: int, k: int, es: int, mn_major: bool, swizzle: int, base: int) -> tuple[int, int, int, int]:
    """(start, lbo, sbo, end) of an operand at `base`, with gaps between core matrices / atoms and, where
    swizzled, the operand not at the atom's start (as a K loop over a wider tile steps it)."""
    w = swizzle // 16 or 1
    if not mn_major:
        if not swizzle:
            sbo, lbo = 128, rows // 8 * 128 + 128
            return base, lbo, sbo, base + lbo * (k * es // 16)
        sbo = 2 * 128 * w  # a gap atom after each one along MN
        return base + 16 * w - 32, 16, sbo, base + sbo * (rows // 8)  # the last 32 bytes of each row
    if not swizzle:
        sbo, lbo = 128, rows * es // 16 * 128 + 256
        return base, lbo, sbo, base + lbo * (k // 8)
    sbo = 128 * w  # 8-row groups along K: one junk group first, then the operand's
    lbo = sbo * (k // 8 + 2)
    atoms = -(-rows * es // (16 * w))
    return base + sbo, lbo, sbo, base + lbo * atoms


def kernel_ptx(shape: str, types: str, acc_t: str, nacc: int, n: int, a_regs: int, tail: str, smem: int) -> str:
    """A kernel: copy the image into shared memory, one wgmma (C = 1), D to out (row-major, N columns)."""
    a_op = "{" + ",".join(f"%a{j}" for j in range(a_regs)) + "}" if a_regs else "%rd2"
    acc = ",".join(f"%acc{i}" for i in range(nacc))
    one = "0f3F800000" if acc_t == "f32" else "1"
    lines = [
        ".version 8.0", ".target sm_90a", ".address_size 64", f".shared .align 1024 .b8 smem[{smem}];",
        ".visible .entry wg(.param .u64 img, .param .u32 nwords, .param .u64 da, .param .u64 db, "
        ".param .u64 afrag, .param .u64 out)", "{",
        "    .reg .pred %p<4>;", "    .reg .b32 %r<32>;", "    .reg .b64 %rd<32>;", "    .reg .b32 %a<8>;",
        f"    .reg .{acc_t} %acc<{nacc}>;",
        "    ld.param.u64 %rd1, [img];", "    ld.param.u32 %r1, [nwords];", "    ld.param.u64 %rd2, [da];",
        "    ld.param.u64 %rd3, [db];", "    ld.param.u64 %rd4, [afrag];", "    ld.param.u64 %rd5, [out];",
        "    mov.u32 %r2, %tid.x;", "    mov.u32 %r3, smem;", "    mov.u32 %r4, %r2;",
        "COPY:", "    setp.ge.u32 %p1, %r4, %r1;", "    @%p1 bra COPIED;", "    mul.wide.u32 %rd6, %r4, 4;",
        "    add.u64 %rd7, %rd1, %rd6;", "    ld.global.u32 %r5, [%rd7];", "    shl.b32 %r6, %r4, 2;",
        "    add.u32 %r7, %r3, %r6;", "    st.shared.u32 [%r7], %r5;", "    add.u32 %r4, %r4, 128;",
        "    bra COPY;", "COPIED:", "    bar.sync 0;",
        # the descriptors' start addresses are relative to smem: add its shared address
        "    cvt.u64.u32 %rd8, %r3;", "    shr.u64 %rd8, %rd8, 4;", "    add.u64 %rd2, %rd2, %rd8;",
        "    add.u64 %rd3, %rd3, %rd8;", f"    mul.wide.u32 %rd9, %r2, {4 * max(a_regs, 1)};",
        "    add.u64 %rd9, %rd4, %rd9;",
        *[f"    ld.global.b32 %a{j}, [%rd9+{4 * j}];" for j in range(a_regs)],
        *[f"    mov.{acc_t} %acc{i}, {one};" for i in range(nacc)],
        "    fence.proxy.async.shared::cta;", "    wgmma.fence.sync.aligned;",
        f"    wgmma.mma_async.sync.aligned.{shape}.{types} {{{acc}}}, {a_op}, %rd3, 1{tail};",
        "    wgmma.commit_group.sync.aligned;", "    wgmma.wait_group.sync.aligned 0;",
        # element i of thread (w, g, t): row 16w + g + 8 ((i % 4) / 2), column 8 (i / 4) + 2t + i % 2
        "    shr.u32 %r8, %r2, 5;", "    and.b32 %r9, %r2, 31;", "    shr.u32 %r10, %r9, 2;",
        "    and.b32 %r11, %r9, 3;", "    shl.b32 %r12, %r8, 4;", "    add.u32 %r12, %r12, %r10;",
        "    shl.b32 %r13, %r11, 1;", f"    mad.lo.u32 %r14, %r12, {n}, %r13;", "    mul.wide.u32 %rd10, %r14, 4;",
        "    add.u64 %rd10, %rd5, %rd10;",
    ]
    for i in range(nacc):
        off = 8 * ((i % 4) // 2) * n + 8 * (i // 4) + i % 2
        lines.append(f"    st.global.{acc_t} [%rd10+{4 * off}], %acc{i};")
    lines += ["    ret;", "}", ""]
    return "\n".join(lines)


def a_fragments(raw: np.ndarray) -> np.ndarray:
    """A (64 x 16, 16-bit bits) as the "rs" form's registers: warp w holds rows 16w.. in mma.sync's
    m16n8k16 A layout (per thread: (g, 2t..), (g + 8, 2t..), (g, 2t + 8..), (g + 8, 2t + 8..))."""
    out = np.zeros((128, 4), np.uint32)
    for tid in range(128):
        w, g, t = tid >> 5, (tid & 31) >> 2, tid & 3
        for j, (dr, dk) in enumerate([(0, 0), (8, 0), (0, 8), (8, 8)]):
            r, k = 16 * w + g + dr, 2 * t + dk
            out[tid, j] = int(raw[r, k]) | int(raw[r, k + 1]) << 16
    return out


def run_case(at: str, bt: str, swz_a: int, swz_b: int, ta: int, tb: int, n: int, rs: bool = False,
             a_base_extra: int = 0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One wgmma m64nNk* with A (64 x K) and B (K x N) laid out as asked: (D, NumPy's A @ B + 1)."""
    rng = np.random.default_rng(seed)
    k = KDIM[at]
    a, b = values(rng, at, (64, k)), values(rng, bt, (k, n))
    ra, rb = encode(a, at), encode(b, bt)
    img = rng.integers(0, 256, 64 * 1024, dtype=np.uint8)  # junk wherever no element lies
    abase = 1024 + a_base_extra
    if rs:
        da, end_a = 0, abase
    else:
        sa, la, sba, end_a = layout(64, k, ES[at], bool(ta), swz_a, abase)
        place(img, ra, bool(ta), swz_a, sa, la, sba, pattern_start=abase)
        da = descriptor(sa, la, sba, swz_a, (abase >> 7) & 7 if swz_a else 0)
    bbase = -(-end_a // 1024) * 1024 + 1024
    sb, lb, sbb, end_b = layout(n, k, ES[bt], bool(tb), swz_b, bbase)
    place(img, np.ascontiguousarray(rb.T), bool(tb), swz_b, sb, lb, sbb)
    db = descriptor(sb, lb, sbb, swz_b)
    size = -(-end_b // 1024) * 1024 + 1024
    img = img[:size]
    float_ab = at not in ("s8", "u8")
    dt = "f32" if float_ab else "s32"
    nacc = n // 2
    if not float_ab:
        tail = ""
    elif at in ("f16", "bf16"):
        tail = ", 1, 1" + ("" if rs else f", {ta}") + f", {tb}"
    else:
        tail = ", 1, 1"
    ptx = kernel_ptx(f"m64n{n}k{k}", f"{dt}.{at}.{bt}", dt, nacc, n, 4 if rs else 0, tail, size)
    fn = ptxjit.Module(ptx, "wgmma_layouts.ptx").get_function("wg")
    out = np.zeros((64, n), np.float32 if float_ab else np.int32)
    afrag = a_fragments(ra) if rs else np.zeros((128, 1), np.uint32)
    fn((1,), (128,), [img.view(np.uint32), np.uint32(size // 4), np.uint64(da), np.uint64(db), afrag, out],
       timeout=120)
    want = a.astype(np.int64) @ b.astype(np.int64) + 1
    return out, want


CASES = [
    # (A type, B type, A swizzle, B swizzle, A MN-major, B MN-major, N)
    ("f16", "f16", 0, 0, 0, 0, 16),
    ("f16", "f16", 32, 32, 0, 0, 16),
    ("f16", "f16", 64, 64, 0, 0, 32),
    ("f16", "f16", 128, 128, 0, 0, 32),
    ("f16", "f16", 0, 0, 1, 1, 32),
    ("f16", "f16", 32, 32, 1, 1, 48),
    ("f16", "f16", 64, 64, 1, 1, 64),
    ("f16", "f16", 128, 128, 1, 1, 128),
    ("bf16", "bf16", 128, 128, 0, 1, 64),  # Triton's matmul: A K-major, B MN-major
    ("bf16", "bf16", 64, 0, 1, 0, 24),
    ("f16", "f16", 0, 128, 0, 1, 16),
    ("tf32", "tf32", 0, 0, 0, 0, 16),
    ("tf32", "tf32", 32, 64, 0, 0, 16),
    ("tf32", "tf32", 128, 128, 0, 0, 32),
    ("e4m3", "e5m2", 128, 32, 0, 0, 16),
    ("e5m2", "e4m3", 0, 64, 0, 0, 8),
    ("s8", "s8", 0, 0, 0, 0, 16),
    ("s8", "u8", 128, 128, 0, 0, 32),
    ("u8", "u8", 32, 64, 0, 0, 16),
]


def _case_id(c: tuple) -> str:
    """e.g. bf16.bf16-sw128.128-KN-n64: A K-major, B N-major (MN-major), both with 128-byte swizzles."""
    return f"{c[0]}.{c[1]}-sw{c[2]}.{c[3]}-{'KM'[c[4]]}{'KN'[c[5]]}-n{c[6]}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_wgmma_layout_against_numpy(case) -> None:
    at, bt, swz_a, swz_b, ta, tb, n = case
    got, want = run_case(at, bt, swz_a, swz_b, ta, tb, n)
    assert np.array_equal(got, want.astype(got.dtype)), np.argwhere(got != want)[:5]


@pytest.mark.parametrize("extra", [384, 640])
def test_wgmma_matrix_base_offset(extra: int) -> None:
    """A 128-byte swizzled A whose repeating pattern starts 384 (640) bytes past a 1024-byte boundary: the
    descriptor's base offset (bits 49-51, (pattern start >> 7) & 7) moves the swizzle's rows with it."""
    got, want = run_case("f16", "f16", 128, 0, 0, 0, 16, a_base_extra=extra)
    assert np.array_equal(got, want.astype(got.dtype))


@pytest.mark.parametrize("swz", [0, 128])
def test_wgmma_rs_with_mn_major_b(swz: int) -> None:
    """A in registers ("rs", as Triton's attention), B MN-major through imm-trans-b."""
    got, want = run_case("f16", "f16", 0, swz, 0, 1, 64, rs=True)
    assert np.array_equal(got, want.astype(got.dtype))


_TMA_PTX = """.version 8.0
.target sm_90a
.address_size 64
.shared .align 1024 .b8 ta[8192];
.shared .align 1024 .b8 tb[8192];
.shared .align 8 .b64 bar;
.visible .entry tma_wg(.param .align 128 .b8 ma[128], .param .align 128 .b8 mb[128], .param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<40>;
    .reg .f32 %acc<NACC>;
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, bar;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra INITED;
    mbarrier.init.shared::cta.b64 [%r3], 1;
    fence.proxy.async.shared::cta;
INITED:
    bar.sync 0;
    @%p1 bra WAIT;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r3], TXBYTES;
    mov.b64 %rd1, ma;
    cvta.param.u64 %rd1, %rd1;
    mov.b64 %rd2, mb;
    cvta.param.u64 %rd2, %rd2;
    mov.u32 %r4, ta;
    mov.u32 %r5, tb;
    mov.u32 %r6, 0;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r4], [%rd1, {%r6, %r6}], [%r3];
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r5], [%rd2, {%r6, %r6}], [%r3];
WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;
    @!%p2 bra WAIT;
    mov.u32 %r7, ta;
    cvt.u64.u32 %rd3, %r7;
    shr.u64 %rd3, %rd3, 4;
    or.b64 %rd3, %rd3, DESC_A;
    mov.u32 %r8, tb;
    cvt.u64.u32 %rd4, %r8;
    shr.u64 %rd4, %rd4, 4;
    or.b64 %rd4, %rd4, DESC_B;
BODY
    ld.param.u64 %rd5, [out];
    shr.u32 %r9, %r2, 5;
    and.b32 %r10, %r2, 31;
    shr.u32 %r11, %r10, 2;
    and.b32 %r12, %r10, 3;
    shl.b32 %r13, %r9, 4;
    add.u32 %r13, %r13, %r11;
    shl.b32 %r14, %r12, 1;
    mad.lo.u32 %r15, %r13, NCOLS, %r14;
    mul.wide.u32 %rd6, %r15, 4;
    add.u64 %rd6, %rd5, %rd6;
STORES
    ret;
}
"""


@pytest.mark.parametrize("swz", [32, 64, 128])
def test_wgmma_reads_what_tma_swizzled(swz: int) -> None:
    """Triton's sm_90 matmul in small: TMA loads A (64 x Kt f16, K contiguous) and B (Kt x N, N contiguous)
    with `swz`-byte swizzles (rows of swz bytes: Kt = N = swz / 2); Kt / 16 wgmma m64nNk16 step the
    descriptors along K (A K-major: SBO 8 rows, start + 32 bytes a step; B MN-major: SBO 8 k rows, start +
    16 rows a step).  D = A @ B exactly (small integers): TMA's swizzle and wgmma's agree."""
    n = kt = swz // 2
    nacc = n // 2
    acc = ",".join(f"%acc{i}" for i in range(nacc))
    body = [f"    mov.f32 %acc{i}, 0f00000000;" for i in range(nacc)]
    body += ["    fence.proxy.async.shared::cta;", "    wgmma.fence.sync.aligned;"]
    for s in range(kt // 16):
        body += [f"    add.u64 %rd{10 + s}, %rd3, {32 * s >> 4};",
                 f"    add.u64 %rd{20 + s}, %rd4, {16 * swz * s >> 4};",
                 f"    wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{{acc}}}, %rd{10 + s}, %rd{20 + s}, "
                 "1, 1, 1, 0, 1;"]
    body += ["    wgmma.commit_group.sync.aligned;", "    wgmma.wait_group.sync.aligned 0;"]
    stores = [f"    st.global.f32 [%rd6+{4 * (8 * ((i % 4) // 2) * n + 8 * (i // 4) + i % 2)}], %acc{i};"
              for i in range(nacc)]
    # start addresses 0 here (the tiles' own are or-ed in by the kernel); B's LBO (between 64-element atoms
    # along N) is unused with one atom: a junk value that must not matter
    desc_a = descriptor(0, 16, 8 * swz, swz)
    desc_b = descriptor(0, 8192, 8 * swz, swz)
    ptx = (_TMA_PTX.replace("BODY", "\n".join(body)).replace("STORES", "\n".join(stores))
           .replace("NACC", str(nacc)).replace("NCOLS", str(n)).replace("TXBYTES", str((64 + kt) * swz))
           .replace("DESC_A", str(desc_a)).replace("DESC_B", str(desc_b)))
    rng = np.random.default_rng(swz)
    a = rng.integers(-4, 5, (64, kt))
    b = rng.integers(-4, 5, (kt, n))
    ma = encode_tensor_map(a.astype(np.float16), (kt, 64), swizzle=swz)
    mb = encode_tensor_map(b.astype(np.float16), (n, kt), swizzle=swz)
    out = np.full((64, n), np.nan, np.float32)
    ptxjit.Module(ptx, "tma_wgmma.ptx").get_function("tma_wg")((1,), (128,), [ma, mb, out], timeout=120)
    assert np.array_equal(out, (a @ b).astype(np.float32))


def _refusal(line: str) -> str:
    ptx = kernel_ptx("m64n8k8", "f32.tf32.tf32", "f32", 4, 8, 0, "", 1024)
    ptx = ptx.replace(next(t for t in ptx.splitlines() if "mma_async" in t), "    " + line)
    with pytest.raises(ptxjit.UnsupportedInstructionError) as ei:
        ptxjit.Module(ptx, "refuse.ptx").get_function("wg")
    n = next(i for i, t in enumerate(ptx.splitlines(), 1) if line in t)
    msg = str(ei.value)
    assert f"refuse.ptx:{n}:" in msg and "wgmma" in msg, msg
    return msg


@pytest.mark.parametrize("line,expected", [
    ("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%acc0,%acc1,%acc2,%acc3}, %rd2, %rd3, 1, 1, 1, 0, 1;",
     "only .f16/.bf16 operands may be MN-major"),
    ("wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%acc0,%acc1,%acc2,%acc3}, %rd2, %rd3, 1, 1, 1, 1, 0;",
     "only .f16/.bf16 operands may be MN-major"),
    ("wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.s8 {%acc0,%acc1,%acc2,%acc3}, %rd2, %rd3, 1, 1, 1;",
     "takes no imm-scale-a/b or imm-trans-a/b operands"),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%acc0,%acc1,%acc2,%acc3}, %rd2, %rd3, 1, 1, 1, 2, 0;",
     "must be the immediate 0 (K-major) or 1 (MN-major"),
])
def test_wgmma_layout_refusals_name_the_place(line: str, expected: str) -> None:
    """Transposed tf32/fp8 operands (the ISA has no imm-trans for them), imm operands on the integer form and
    an imm-trans other than 0/1 are refused at load, naming the line."""
    assert expected in _refusal(line)


def test_wgmma_descriptor_outside_shared_memory_faults() -> None:
    """A descriptor whose elements lie past the CTA's shared memory stops the launch with a fault naming the
    wgmma and the offset (never a read outside the window)."""
    ptx = kernel_ptx("m64n8k16", "f32.f16.f16", "f32", 4, 8, 0, ", 1, 1, 0, 0", 1024)
    fn = ptxjit.Module(ptx, "wg.ptx").get_function("wg")
    img = np.zeros(256, np.uint32)
    out = np.zeros((64, 8), np.float32)
    fn((1,), (128,), [img, np.uint32(256), np.uint64(0), np.uint64(0), np.zeros(128, np.uint32), out])
    assert np.all(out == 1.0)  # zeros inside the window: D = C
    far = descriptor(0x3FF0 << 4, 16, 128, 128)
    with pytest.raises(ptxjit.KernelFault) as ei:
        fn((1,), (128,), [img, np.uint32(256), np.uint64(0), np.uint64(far), np.zeros(128, np.uint32), out])
    line = next(i for i, t in enumerate(ptx.splitlines(), 1) if "mma_async" in t)
    assert f"wg.ptx:{line}:" in str(ei.value) and "wgmma" in str(ei.value), str(ei.value)
    assert "shared memory offset" in str(ei.value), str(ei.value)
