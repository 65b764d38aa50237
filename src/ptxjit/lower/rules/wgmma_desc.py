"""wgmma's shared-memory matrix descriptors (PTX ISA §9.7.15.5.1.2, "Matrix Descriptor Format" and "Shared
Memory Matrix Layout"): where element (mn, k) of A (mn = m) or B (mn = n) lies in shared memory.

The descriptor is a 64-bit run-time value:

    bits 0-13   start address >> 4         bits 16-29  leading-dimension byte offset (LBO) >> 4
    bits 32-45  stride-dimension byte offset (SBO) >> 4
    bits 49-51  matrix base offset         bits 62-63  swizzle: 0 none, 1 128B, 2 64B, 3 32B

Addresses are offsets in the CTA's shared window (cvta.to.shared), as everywhere in ptxjit.  With es-byte
elements, T = 16 / es of them fill a 16-byte chunk; a swizzle of 16 W bytes (W = 2, 4, 8; W = 1 without)
makes rows of 16 W bytes.  The operand's logical byte offset from the start address is

  K-major (imm-trans 0):  (mn % 8) 16W + (mn / 8) SBO + (k % T) es + (k/T % W) 16 + (k/T / W) LBO
  MN-major (imm-trans 1): (mn % T) es + (mn/T % W) 16 + (mn/T / W) X + (k % 8) 16W + (k / 8) Y,
                          X, Y = SBO, LBO without swizzle; LBO, SBO with one

(the ISA's canonical layouts: no swizzle, the 8 x 16-byte core matrices step by LBO along K and SBO along
MN; swizzled K-major, a K extent of 32 bytes always fits one row, so LBO is unused; swizzled MN-major, SBO
steps over 8-row groups along K and LBO over swizzle atoms along MN).  The swizzle then permutes the 16-byte
chunks of each row by the *address*: chunk bits 4.. are XORed with the row bits 7.. (1, 2 or 3 bits for
32B, 64B, 128B), the same pattern TMA writes (tma.py; `swizzle` below is its formula), so a tile loaded by
cp.async.bulk.tensor with a swizzled tensor map is read back by a descriptor of the same mode.  The row
bits count from the start of the repeating pattern (1024, 512, 256 bytes): where that is not aligned, the
base offset (pattern start >> 7) & 7 says so, and is subtracted from the row bits (the ISA's
formula; no H100 record here uses a non-zero base offset, CUTLASS and Triton align their tiles).

Only f16/bf16 operands may be MN-major (the ISA has no imm-trans operands for tf32, fp8 and the integer
types): the check at load refuses the others.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.lower.types import I64, const_int

# the descriptor's 2-bit swizzle mode -> log2 of W (the swizzle width in 16-byte chunks)
MODE_LOG2W = {0: 0, 1: 3, 2: 2, 3: 1}


def swizzle(b: ll.IRBuilder, addr: ll.Value, log2w: ll.Value, phase: ll.Value | None = None) -> ll.Value:
    """The swizzled shared offset of `addr` (i64): 16-byte chunk bits 4 .. 4 + log2w XORed with row bits
    7 .. 7 + log2w, the row counted from `phase` (the base offset, in 128-byte rows).  tma.py writes the
    same pattern (its `soff ^ ((soff >> 3) & mask)` with phase 0)."""
    one = const_int(I64, 1)
    mask = b.sub(b.shl(one, log2w), one)
    row = b.lshr(addr, const_int(I64, 7))
    if phase is not None:
        row = b.sub(row, phase)
    return b.xor(addr, b.shl(b.and_(row, mask), const_int(I64, 4)))


class Descriptor:
    """The fields of one descriptor (decoded once, before the per-element loop)."""

    def __init__(self, b: ll.IRBuilder, desc: ll.Value) -> None:
        def field(lo: int, bits: int) -> ll.Value:
            return b.and_(b.lshr(desc, const_int(I64, lo)), const_int(I64, (1 << bits) - 1))

        self.b = b
        self.start = b.shl(field(0, 14), const_int(I64, 4))
        self.lbo = b.shl(field(16, 14), const_int(I64, 4))
        self.sbo = b.shl(field(32, 14), const_int(I64, 4))
        self.base_offset = field(49, 3)
        mode = field(62, 2)
        # mode -> log2 W: 0 -> 0, 1 -> 3, 2 -> 2, 3 -> 1, i.e. (4 - mode) & 3
        self.log2w = b.and_(b.sub(const_int(I64, 4), mode), const_int(I64, 3))
        self.swizzled = b.icmp_unsigned("!=", mode, const_int(I64, 0))

    def offset(self, mn: ll.Value, k: ll.Value, es: int, mn_major: bool) -> ll.Value:
        """The swizzled shared offset of element (mn, k) (i64 indices; module docstring)."""
        b = self.b
        t = 16 // es
        one = const_int(I64, 1)
        wmask = b.sub(b.shl(one, self.log2w), one)
        pitch = b.shl(const_int(I64, 16), self.log2w)  # bytes per row: 16 W

        def c(v: int) -> ll.Value:
            return const_int(I64, v)

        if mn_major:
            inner, chunk, row, group = b.urem(mn, c(t)), b.udiv(mn, c(t)), b.urem(k, c(8)), b.udiv(k, c(8))
            x = b.select(self.swizzled, self.lbo, self.sbo)
            y = b.select(self.swizzled, self.sbo, self.lbo)
            off = b.add(b.mul(inner, c(es)), b.shl(b.and_(chunk, wmask), c(4)))
            off = b.add(off, b.mul(b.lshr(chunk, self.log2w), x))
            off = b.add(off, b.add(b.mul(row, pitch), b.mul(group, y)))
        else:
            row, group, inner, chunk = b.urem(mn, c(8)), b.udiv(mn, c(8)), b.urem(k, c(t)), b.udiv(k, c(t))
            off = b.add(b.mul(row, pitch), b.mul(group, self.sbo))
            off = b.add(off, b.add(b.mul(inner, c(es)), b.shl(b.and_(chunk, wmask), c(4))))
            off = b.add(off, b.mul(b.lshr(chunk, self.log2w), self.lbo))
        return swizzle(b, b.add(self.start, off), self.log2w, self.base_offset)

