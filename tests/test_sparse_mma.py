"""Sparse mma (mma.sp.sync.aligned, PTX ISA §9.7.14.6) against a NumPy model written from the ISA text:
the packed A fragment has the layout of the dense shape with half the k, the metadata places each packed
element in its 4-wide (tf32: 2-wide) chunk, and the sparsity selector picks the lanes of each group of four
whose metadata counts.  D = expand(A) @ B + C in float64 / int64 on inputs whose products and sums are
exact, so any layout or metadata mistake shows as a wrong element."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import ptxjit

BITS = {"f16": 16, "bf16": 16, "tf32": 32, "s8": 8, "u8": 8, "e4m3": 8, "e5m2": 8, "s4": 4, "u4": 4}
# fp8 bit patterns of the integers 0..4 (sign bit 0x80): e4m3 bias 7, e5m2 bias 15
FP8 = {"e4m3": [0x00, 0x38, 0x40, 0x44, 0x48], "e5m2": [0x00, 0x3C, 0x40, 0x42, 0x44]}


def _a_pos(at: str, i: int, g: int, t: int) -> tuple[int, int]:
    """(row, packed column) of A fragment element i (ISA: the dense m16n8k(K/2) A layouts, .row)."""
    if at == "tf32":
        return g + 8 * (i % 2), t + 4 * (i // 2)
    if BITS[at] == 16:
        return g + 8 * ((i // 2) % 2), 2 * t + i % 2 + 8 * (i // 4)
    if BITS[at] == 4:
        return g + 8 * ((i // 8) % 2), 8 * t + i % 8 + 32 * (i // 16)
    return g + 8 * ((i // 4) % 2), 4 * t + i % 4 + 16 * (i // 8)


def _b_pos(bt: str, i: int, g: int, t: int) -> tuple[int, int]:
    """(k, n) of B fragment element i (ISA: dense mma B layouts, .col)."""
    if bt == "tf32":
        return t + 4 * i, g
    if BITS[bt] == 16:
        return 2 * t + i % 2 + 8 * (i // 2), g
    if BITS[bt] == 4:
        return 8 * t + i % 8 + 32 * (i // 8), g
    return 4 * t + i % 4 + 16 * (i // 4), g


def _encode(x: np.ndarray, t: str) -> np.ndarray:
    """Element bit patterns (uint32) of values exactly representable in type t."""
    if t == "f16":
        return x.astype(np.float16).view(np.uint16).astype(np.uint32)
    if t == "bf16":
        return x.astype(np.float32).view(np.uint32) >> 16
    if t == "tf32":
        return x.astype(np.float32).view(np.uint32)
    if t in FP8:
        v = x.astype(np.int64)
        mag = np.array(FP8[t], np.uint32)[np.abs(v)]
        return np.where(v < 0, mag | 0x80, mag).astype(np.uint32)
    return x.astype(np.int64).astype(np.uint32) & (0xF if t in ("s4", "u4") else 0xFF)


def _pack_words(elems: list[int], bits: int) -> list[int]:
    per = 32 // bits
    out = []
    for j in range(0, len(elems), per):
        w = 0
        for e, v in enumerate(elems[j:j + per]):
            w |= int(v) << (bits * e)
        out.append(w)
    return out


def _sparsify(rng: np.random.Generator, at: str, m: int, k: int, sel: int, vals: np.ndarray | None = None):
    """(dense A with structured zeros, packed A, per-thread metadata words) following the ISA's rules
    (m = 64: wgmma, warp w holding rows 16w .. 16w + 15 the way one mma.sp warp holds its 16)."""
    chunk, keep = {"tf32": (2, 1), "s4": (8, 4), "u4": (8, 4)}.get(at, (4, 2))
    nchunks = k // chunk
    if vals is not None:
        pass
    elif at in ("s8", "u8", "s4", "u4"):
        top = 1 << (BITS[at] - 1)
        vals = rng.integers(-top if at[0] == "s" else 0, top if at[0] == "s" else 2 * top, (m, k // 2))
    else:
        vals = rng.integers(-8, 9, (m, k // 2)).astype(np.float64)
    dense = np.zeros((m, k), dtype=vals.dtype)
    nib = np.zeros((m, nchunks), dtype=np.int64)
    for r in range(m):
        for c in range(nchunks):
            if chunk == 8:  # 4-bit, pairwise 4:8: two of the four two-wide sub-chunks hold the four values
                idx = sorted(rng.choice(4, 2, replace=False))
                for h in range(4):
                    dense[r, c * 8 + 2 * idx[h // 2] + h % 2] = vals[r, c * 4 + h]
            else:
                idx = sorted(rng.choice(chunk, keep, replace=False))
                for h, p in enumerate(idx):
                    dense[r, c * chunk + p] = vals[r, c * keep + h]
            # 2:4 and 4:8: two 2-bit indices, the first's in the low bits; tf32 1:2: 0b0100 / 0b1110
            nib[r, c] = (0b0100 if idx[0] == 0 else 0b1110) if chunk == 2 else idx[0] | idx[1] << 2
    lanes = nchunks // 4  # lanes of a group of four that hold metadata
    meta = rng.integers(0, 2**32, 2 * m, dtype=np.uint64)  # the other lanes' metadata must not matter
    for wp in range(m // 16):
        for g in range(8):
            r = 16 * wp + g
            for j in range(lanes):
                w = 0
                for c in range(4):
                    w |= int(nib[r, 4 * j + c]) << (4 * c) | int(nib[r + 8, 4 * j + c]) << (16 + 4 * c)
                meta[32 * wp + 4 * g + sel * lanes + j] = w
    return dense, vals, meta.astype(np.uint32)


def _kernel(shape: str, dt: str, at: str, bt: str, ct: str, na: int, nb: int, nc: int, sel: int,
            ordered: bool) -> ptxjit.Module:
    ld = "\n".join(f"  ld.global.b32 %r{i}, [%rd10+{4 * i}];" for i in range(na))
    ld += "\n" + "\n".join(f"  ld.global.b32 %r{16 + i}, [%rd11+{4 * i}];" for i in range(nb))
    ld += "\n" + "\n".join(f"  ld.global.b32 %r{32 + i}, [%rd12+{4 * i}];" for i in range(nc))
    st = "\n".join(f"  st.global.b32 [%rd14+{4 * i}], %r{48 + i};" for i in range(nc))

    def regs(base: int, n: int) -> str:
        return "{" + ", ".join(f"%r{base + i}" for i in range(n)) + "}"

    sp = "sp::ordered_metadata" if ordered else "sp"
    addr = "\n".join(f"  ld.param.u64 %rd{j}, [p{j}];\n  cvta.to.global.u64 %rd{j}, %rd{j};\n"
                     f"  mad.wide.u32 %rd{10 + j}, %r60, {4 * n}, %rd{j};"
                     for j, n in enumerate((na, nb, nc, 1, nc)))
    text = f""".version 8.5
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p0, .param .u64 p1, .param .u64 p2, .param .u64 p3, .param .u64 p4)
{{
  .reg .b32 %r<64>;
  .reg .b64 %rd<16>;
  mov.u32 %r60, %tid.x;  // one problem per warp: lane data at 32 w + lane
{addr}
{ld}
  ld.global.b32 %r62, [%rd13];
  mma.{sp}.sync.aligned.{shape}.row.col.{dt}.{at}.{bt}.{ct} {regs(48, nc)}, {regs(0, na)}, {regs(16, nb)}, \
{regs(32, nc)}, %r62, {sel};
{st}
  ret;
}}
"""
    return ptxjit.Module(text)


CASES = [  # shape, atype, dtype, selector
    ("m16n8k16", "f16", "f32", 0), ("m16n8k16", "f16", "f32", 3), ("m16n8k32", "f16", "f32", 1),
    ("m16n8k16", "bf16", "f32", 2), ("m16n8k32", "bf16", "f32", 0),
    ("m16n8k8", "tf32", "f32", 1), ("m16n8k16", "tf32", "f32", 1),
    ("m16n8k32", "s8", "s32", 1), ("m16n8k64", "s8", "s32", 0), ("m16n8k64", "u8", "s32", 0),
    ("m16n8k64", "e4m3", "f32", 0), ("m16n8k64", "e5m2", "f32", 0),
    ("m16n8k64", "s4", "s32", 1), ("m16n8k128", "u4", "s32", 0), ("m16n8k128", "s4", "s32", 0),
]


@pytest.mark.parametrize("shape,at,dt,sel", CASES)
def test_mma_sp_matches_numpy(shape: str, at: str, dt: str, sel: int) -> None:
    _check_mma_sp(shape, at, dt, sel, warps=1)


def test_mma_sp_warps_do_not_mix() -> None:
    """Four warps, each with its own sparse problem, in one block: each gets its own result."""
    _check_mma_sp("m16n8k32", "f16", "f32", 1, warps=4)
    _check_mma_sp("m16n8k64", "s8", "s32", 0, warps=3)


def _problem(rng: np.random.Generator, shape: str, at: str, dt: str, sel: int):
    """One warp's (A, B, C, metadata) fragments and NumPy's D = expand(A) @ B + C."""
    m, n, k = (int(x) for x in shape[1:].replace("n", " ").replace("k", " ").split())
    small = rng.integers(-4, 5, (m, k // 2)).astype(np.float64) if at in FP8 else None  # fp8: |x| <= 4
    a_dense, a_packed, meta = _sparsify(rng, at, m, k, sel, vals=small)
    if at in FP8:
        b = rng.integers(-4, 5, (k, n)).astype(np.float64)
        c = rng.integers(-64, 65, (m, n)).astype(np.float64)
    elif at in ("s8", "u8", "s4", "u4"):
        top = 1 << (BITS[at] - 1)
        b = rng.integers(-top, top, (k, n))
        c = rng.integers(-2**20, 2**20, (m, n))
    else:
        b = rng.integers(-8, 9, (k, n)).astype(np.float64)
        c = rng.integers(-64, 65, (m, n)).astype(np.float64)
    ebits = BITS[at]
    na, nb, nc = m * k // 2 * ebits // 32 // 32, k * n * ebits // 32 // 32, m * n // 32
    aw, bw, cw = (np.zeros((32, x), np.uint32) for x in (na, nb, nc))
    a_bits, b_bits = _encode(a_packed, at), _encode(b, _btype(at))
    per = 32 // ebits
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        aw[lane] = _pack_words([a_bits[_a_pos(at, i, g, t)] for i in range(na * per)], ebits)
        bw[lane] = _pack_words([b_bits[_b_pos(at, i, g, t)] for i in range(nb * per)], ebits)
        for i in range(nc):
            v = c[g + 8 * (i // 2), 2 * t + i % 2]
            cw[lane, i] = np.float32(v).view(np.uint32) if dt == "f32" else np.int64(v).astype(np.uint32)
    want = (a_dense.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64) if dt == "s32"
            else a_dense @ b + c)
    return aw, bw, cw, meta, want


def _btype(at: str) -> str:
    return {"u8": "s8", "u4": "s4", "e4m3": "e5m2"}.get(at, at)  # mixed signedness / fp8 formats are allowed


def _check_mma_sp(shape: str, at: str, dt: str, sel: int, warps: int) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{shape}{at}{sel}{warps}".encode()))
    probs = [_problem(rng, shape, at, dt, sel) for _ in range(warps)]
    aw, bw, cw, meta = (np.concatenate([p[j] for p in probs]) for j in range(4))
    na, nb, nc = aw.shape[1], bw.shape[1], cw.shape[1]
    d = np.full((32 * warps, nc), 0xCDCDCDCD, np.uint32)
    mod = _kernel(shape, dt, at, _btype(at), dt, na, nb, nc, sel, ordered=sel == 0 and at == "f16")
    mod.get_function("k")(1, 32 * warps, [aw, bw, cw, meta, d])
    for w, p in enumerate(probs):
        want = p[4]
        got = np.zeros(want.shape)
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            for i in range(nc):
                word = d[32 * w + lane, i]
                got[g + 8 * (i // 2), 2 * t + i % 2] = (np.uint32(word).view(np.float32) if dt == "f32"
                                                         else np.uint32(word).view(np.int32))
        np.testing.assert_array_equal(got, want, err_msg=f"warp {w}")


def test_mma_sp_bad_selector_is_refused() -> None:
    """A selector outside the ISA's range for the shape is refused at load, naming the instruction."""
    with pytest.raises(ptxjit.UnsupportedInstructionError, match="sparsity selector 2"):
        _kernel("m16n8k32", "f32", "f16", "f16", "f32", 4, 4, 4, 2, False)


WG_CASES = [  # A type, B type, swizzle, N, selector, A in registers
    ("f16", "f16", 128, 16, 1, False), ("bf16", "bf16", 0, 8, 0, False), ("f16", "f16", 64, 24, 0, True),
    ("tf32", "tf32", 32, 16, 1, False), ("s8", "s8", 128, 16, 0, False), ("e4m3", "e5m2", 0, 8, 0, False),
]


@pytest.mark.parametrize("at,bt,swz,n,sel,rs", WG_CASES)
def test_wgmma_sp_matches_numpy(at: str, bt: str, swz: int, n: int, sel: int, rs: bool) -> None:
    """wgmma.mma_async.sp: packed A (64 x K/2, swizzled as asked) through a descriptor laid out as a dense
    K/2-wide operand, or in registers; B through a descriptor; D = expand(A) @ B + 1 exactly (small integers)."""
    _check_wgmma_sp(at, bt, swz, n, sel, rs, groups=1)


@pytest.mark.parametrize("rs", [False, True])
def test_wgmma_sp_warpgroups_do_not_mix(rs: bool) -> None:
    """Two warpgroups of one block, the same packed A and B, each its own metadata: each its own product."""
    _check_wgmma_sp("f16", "f16", 128, 16, 1, rs, groups=2)


def _check_wgmma_sp(at: str, bt: str, swz: int, n: int, sel: int, rs: bool, groups: int) -> None:
    from tests import test_wgmma_layouts as wl

    rng = np.random.default_rng(zlib.crc32(f"{at}{bt}{swz}{n}{sel}{rs}{groups}".encode()))
    k = 2 * wl.KDIM[at]
    a_dense, a_packed, meta = _sparsify(rng, at, 64, k, sel, vals=wl.values(rng, at, (64, k // 2)))
    # further warpgroups: the same packed values at other places (their own metadata)
    more = [_sparsify(rng, at, 64, k, sel, vals=a_packed) for _ in range(groups - 1)]
    b = wl.values(rng, bt, (k, n))
    ra, rb = wl.encode(a_packed, at), wl.encode(b, bt)
    img = rng.integers(0, 256, 64 * 1024, dtype=np.uint8)
    da, end_a = 0, 1024
    if not rs:
        sa, la, sba, end_a = wl.layout(64, k // 2, wl.ES[at], False, swz, 1024)
        wl.place(img, ra, False, swz, sa, la, sba, pattern_start=1024)
        da = wl.descriptor(sa, la, sba, swz, (1024 >> 7) & 7 if swz else 0)
    bbase = -(-end_a // 1024) * 1024 + 1024
    # B's K extent is 64 bytes: the layouts helper's swizzled K-major tiles hold 32, so B is unswizzled
    sb, lb, sbb, end_b = wl.layout(n, k, wl.ES[bt], False, 0, bbase)
    wl.place(img, np.ascontiguousarray(rb.T), False, 0, sb, lb, sbb)
    db = wl.descriptor(sb, lb, sbb, 0)
    size = -(-end_b // 1024) * 1024 + 1024
    img = img[:size]
    float_ab = at not in ("s8", "u8")
    dt = "f32" if float_ab else "s32"
    tail = "" if not float_ab else ", 1, 1" + (", 0, 0" if at in ("f16", "bf16") and not rs else
                                               ", 0" if at in ("f16", "bf16") else "")
    nregs = 4 if rs else 0
    ptx = wl.kernel_ptx(f"m64n{n}k{k}", f"{dt}.{at}.{bt}", dt, n // 2, n, nregs + 1, tail, size)
    a_op = "{" + ",".join(f"%a{j}" for j in range(nregs + 1)) + "}"
    new_a = "{" + ",".join(f"%a{j}" for j in range(nregs)) + "}" if rs else "%rd2"
    ptx = ptx.replace(f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{dt}.{at}.{bt}",
                      f"wgmma.mma_async.sp.sync.aligned.m64n{n}k{k}.{dt}.{at}.{bt}")
    ptx = ptx.replace(f"{a_op}, %rd3, 1", f"{new_a}, %rd3, %a{nregs}, {sel}, 1")
    assert "mma_async.sp" in ptx and f"%a{nregs}, {sel}, 1" in ptx
    frag = np.zeros((128 * groups, nregs + 1), np.uint32)
    if rs:
        frag[:, :4] = np.tile(wl.a_fragments(ra), (groups, 1))
    frag[:, nregs] = np.concatenate([meta] + [mt for _, _, mt in more])
    out = np.zeros((64 * groups, n), np.float32 if float_ab else np.int32)
    fn = ptxjit.Module(ptx, "wgmma_sp.ptx").get_function("wg")
    fn((1,), (128 * groups,), [img.view(np.uint32), np.uint32(size // 4), np.uint64(da), np.uint64(db), frag,
                               out], timeout=120)
    for g, dense_a in enumerate([a_dense] + [d for d, _, _ in more]):
        want = dense_a.astype(np.int64) @ b.astype(np.int64) + 1
        np.testing.assert_array_equal(out[64 * g:64 * (g + 1)], want, err_msg=f"warpgroup {g}")
