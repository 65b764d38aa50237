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

BITS = {"f16": 16, "bf16": 16, "tf32": 32, "s8": 8, "u8": 8}


def _a_pos(at: str, i: int, g: int, t: int) -> tuple[int, int]:
    """(row, packed column) of A fragment element i (ISA: the dense m16n8k(K/2) A layouts, .row)."""
    if at == "tf32":
        return g + 8 * (i % 2), t + 4 * (i // 2)
    if BITS[at] == 16:
        return g + 8 * ((i // 2) % 2), 2 * t + i % 2 + 8 * (i // 4)
    return g + 8 * ((i // 4) % 2), 4 * t + i % 4 + 16 * (i // 8)


def _b_pos(bt: str, i: int, g: int, t: int) -> tuple[int, int]:
    """(k, n) of B fragment element i (ISA: dense mma B layouts, .col)."""
    if bt == "tf32":
        return t + 4 * i, g
    if BITS[bt] == 16:
        return 2 * t + i % 2 + 8 * (i // 2), g
    return 4 * t + i % 4 + 16 * (i // 4), g


def _encode(x: np.ndarray, t: str) -> np.ndarray:
    """Element bit patterns (uint32) of values exactly representable in type t."""
    if t == "f16":
        return x.astype(np.float16).view(np.uint16).astype(np.uint32)
    if t == "bf16":
        return x.astype(np.float32).view(np.uint32) >> 16
    if t == "tf32":
        return x.astype(np.float32).view(np.uint32)
    return x.astype(np.int64).astype(np.uint32) & 0xFF


def _pack_words(elems: list[int], bits: int) -> list[int]:
    per = 32 // bits
    out = []
    for j in range(0, len(elems), per):
        w = 0
        for e, v in enumerate(elems[j:j + per]):
            w |= int(v) << (bits * e)
        out.append(w)
    return out


def _sparsify(rng: np.random.Generator, at: str, m: int, k: int, sel: int):
    """(dense A with structured zeros, packed A, per-lane metadata words) following the ISA's rules."""
    chunk, keep = (2, 1) if at == "tf32" else (4, 2)
    nchunks = k // chunk
    if at in ("s8", "u8"):
        vals = rng.integers(-128 if at == "s8" else 0, 128 if at == "s8" else 256, (m, k // 2))
    else:
        vals = rng.integers(-8, 9, (m, k // 2)).astype(np.float64)
    dense = np.zeros((m, k), dtype=vals.dtype)
    nib = np.zeros((m, nchunks), dtype=np.int64)
    for r in range(m):
        for c in range(nchunks):
            idx = sorted(rng.choice(chunk, keep, replace=False))
            for h, p in enumerate(idx):
                dense[r, c * chunk + p] = vals[r, c * keep + h]
            # 2:4: two 2-bit indices, the first element's in the low bits; tf32 1:2: 0b0100 / 0b1110
            nib[r, c] = (0b0100 if idx[0] == 0 else 0b1110) if chunk == 2 else idx[0] | idx[1] << 2
    lanes = nchunks // 4  # lanes of a group of four that hold metadata
    meta = rng.integers(0, 2**32, 32, dtype=np.uint64)  # the other lanes' metadata must not matter
    for g in range(8):
        for j in range(lanes):
            w = 0
            for c in range(4):
                w |= int(nib[g, 4 * j + c]) << (4 * c) | int(nib[g + 8, 4 * j + c]) << (16 + 4 * c)
            meta[4 * g + sel * lanes + j] = w
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
  mov.u32 %r60, %laneid;
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
]


@pytest.mark.parametrize("shape,at,dt,sel", CASES)
def test_mma_sp_matches_numpy(shape: str, at: str, dt: str, sel: int) -> None:
    m, n, k = (int(x) for x in shape[1:].replace("n", " ").replace("k", " ").split())
    rng = np.random.default_rng(zlib.crc32(f"{shape}{at}{sel}".encode()))
    a_dense, a_packed, meta = _sparsify(rng, at, m, k, sel)
    if at in ("s8", "u8"):
        b = rng.integers(-128, 128, (k, n))
        c = rng.integers(-2**20, 2**20, (m, n))
    else:
        b = rng.integers(-8, 9, (k, n)).astype(np.float64)
        c = rng.integers(-64, 65, (m, n)).astype(np.float64)
    ebits = BITS[at]
    na = m * k // 2 * ebits // 32 // 32
    nb = k * n * ebits // 32 // 32
    nc = m * n // 32
    aw = np.zeros((32, na), np.uint32)
    bw = np.zeros((32, nb), np.uint32)
    cw = np.zeros((32, nc), np.uint32)
    a_bits, b_bits = _encode(a_packed, at), _encode(b, at)
    per = 32 // ebits
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        aw[lane] = _pack_words([a_bits[_a_pos(at, i, g, t)] for i in range(na * per)], ebits)
        bw[lane] = _pack_words([b_bits[_b_pos(at, i, g, t)] for i in range(nb * per)], ebits)
        for i in range(nc):
            v = c[g + 8 * (i // 2), 2 * t + i % 2]
            cw[lane, i] = np.float32(v).view(np.uint32) if dt == "f32" else np.int64(v).astype(np.uint32)
    d = np.full((32, nc), 0xCDCDCDCD, np.uint32)
    btype = "s8" if at == "u8" else at  # u8 x s8: mixed signedness is allowed
    mod = _kernel(shape, dt, at, btype, dt, na, nb, nc, sel, ordered=sel == 0 and at == "f16")
    mod.get_function("k")(1, 32, [aw, bw, cw, meta, d])
    want = (a_dense.astype(np.int64) @ b.astype(np.int64) + c.astype(np.int64) if dt == "s32"
            else a_dense @ b + c)
    got = np.zeros((m, n))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(nc):
            w = d[lane, i]
            got[g + 8 * (i // 2), 2 * t + i % 2] = (np.uint32(w).view(np.float32) if dt == "f32"
                                                     else np.uint32(w).view(np.int32))
    np.testing.assert_array_equal(got, want)


def test_mma_sp_bad_selector_is_refused() -> None:
    """A selector outside the ISA's range for the shape is refused at load, naming the instruction."""
    with pytest.raises(ptxjit.UnsupportedInstructionError, match="sparsity selector 2"):
        _kernel("m16n8k32", "f32", "f16", "f16", "f32", 4, 4, 4, 2, False)
