"""Sparse warp-level mma: mma.sp{::ordered_metadata}.sync.aligned (PTX ISA §9.7.14.6).

A is an M x K matrix with 50% structured zeros, held packed (M x K/2) in the A fragment; the metadata
operand `e` says where each packed element sits in its row and the sparsity selector `f` which lanes
of each group of four hold that metadata.  ptxjit computes it as the dense mma.sync of the same shape
with A expanded (zeros where the metadata puts none): the dense numerics (mma_numerics.py, H100
verified) skip zero products, so a sparse product is the dense product of the expanded tile.

The exchange is mma.py's: every lane publishes its packed A elements (into a packed-A area), its
metadata word, B and C; after the warp point the lane that computes first expands A into the dense
A matrix (`expand_sparse`), then runs the dense variant; every lane reads back its D.

Layouts (ISA §9.7.14.6.1-2; lane l, g = l >> 2, t = l & 3):
- packed A: the A fragment of the dense shape m16n8(K/2) of the same type (for f16 m16n8k16 the
  m16n8k8 layout, ...).  Packed column j is the j-th nonzero of its row.
- granularity: f16/bf16/s8/u8/e4m3/e5m2 2:4 (chunks of 4 columns, 2 nonzeros; a 4-bit metadata nibble holds the
  two 2-bit indices, the lower one for the first packed element); tf32 1:2 (chunks of 2 columns, one
  nonzero; the nibble is 0b0100 for column 0, 0b1110 for column 1); s4/u4 pairwise 4:8 (chunks of 8
  columns, two nonzero two-wide sub-chunks, the nibble's 2-bit indices name them).
- metadata: per row K/4 (tf32: K/2, s4/u4: K/8) nibbles, in 16-bit halves: lane 4g + f*T + j (T = nibbles / 4
  lanes contribute: one for m16n8k16 f16 and m16n8k8 tf32, where f is 0..3; a pair for m16n8k32
  f16/bf16, m16n8k16 tf32, m16n8k32 s8 and m16n8k64 s4, where f is 0 or 1; all four for m16n8k64 8-bit
  and m16n8k128 4-bit, f = 0) holds
  in bits 4c..4c+3 the nibble of chunk 4j + c of row g and in bits 16 + 4c.. that of row g + 8.

Not verified on an H100 (no sparse golden data yet): the metadata placement follows the ISA's
figures; tests/test_sparse_mma.py checks it against a NumPy model written from the same text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import form_rule
from ptxjit.lower.rules import mma as dense
from ptxjit.lower.rules.mma_numerics import counted_loop
from ptxjit.lower.types import F64, I32, I64, const_int

_SHAPE = re.compile(r"m(\d+)n(\d+)k(\d+)")
# (shape, A type) -> accepted (D, C) types: the sm_80/sm_90 sparse forms ptxjit runs
SPARSE = {
    ("m16n8k16", "f16"): ("f32", "f16"), ("m16n8k32", "f16"): ("f32", "f16"),
    ("m16n8k16", "bf16"): ("f32",), ("m16n8k32", "bf16"): ("f32",),
    ("m16n8k8", "tf32"): ("f32",), ("m16n8k16", "tf32"): ("f32",),
    **{(s, t): ("s32",) for s in ("m16n8k32", "m16n8k64") for t in ("s8", "u8")},
    **{("m16n8k64", t): ("f32", "f16") for t in ("e4m3", "e5m2")},  # sm_89+: 2:4 like the 8-bit integers
    **{(s, t): ("s32",) for s in ("m16n8k64", "m16n8k128") for t in ("s4", "u4")},  # pairwise 4:8
}


@dataclass(frozen=True)
class SpMma:
    """A sparse variant: the dense variant it computes as, the packed variant whose A layout the
    fragment has, and the selector."""

    full: dense.Mma
    packed: dense.Mma
    sel: int

    @property
    def chunk(self) -> int:
        """Columns per metadata nibble (2:4 -> 4, tf32's 1:2 -> 2, 4-bit types' pairwise 4:8 -> 8)."""
        return {"tf32": 2, "s4": 8, "u4": 8}.get(self.full.at, 4)

    @property
    def per_chunk(self) -> int:
        """Packed elements per chunk."""
        return self.chunk // 2

    @property
    def nibbles(self) -> int:
        return self.full.K // self.chunk

    @property
    def lanes(self) -> int:
        """Lanes of a group of four that contribute metadata."""
        return self.nibbles // 4

    def extra(self) -> tuple[int, int]:
        """Byte offsets (from the group base) of the packed A and the metadata words (one per thread
        of the group): past the first scratch area, in the second (sparse mma is never batched, so
        that area is free; a sparse wgmma group has two areas: Mma.sparse)."""
        start = self.full.threads * self.full.per_thread()
        return start, start + 8 * self.full.M * self.full.K // 2


def parse_sparse(ins: Instr) -> SpMma | str:
    """The variant of an mma.sp instruction, or why ptxjit cannot run it."""
    shape = next((m for m in ins.mods if _SHAPE.fullmatch(m)), None)
    tys = [m for m in ins.mods if m in dense._BITS]
    if shape is None or len(tys) != 4:
        return "mma.sp needs a shape and four types (.dtype.atype.btype.ctype)"
    if any(m.startswith("kind::") for m in ins.mods):
        return "block-scaled (.kind::) sparse mma is not supported"
    dt, at, bt, ct = tys
    ok = SPARSE.get((shape, at))
    pairs = at == bt or {at, bt} in ({"s8", "u8"}, {"e4m3", "e5m2"}, {"s4", "u4"})
    if ok is None or dt not in ok or ct not in ok or not pairs:
        return (f"mma.sp.{shape} with .{dt}.{at}.{bt}.{ct} is not supported (the sm_80/sm_90 f16/bf16/tf32/"
                f"s8/u8/s4/u4/e4m3/e5m2 shapes)")
    if [m for m in ins.mods if m in ("row", "col")] != ["row", "col"]:
        return "mma.sp supports the .row.col layout (the only one for these shapes)"
    sel_op = ins.operands[5] if len(ins.operands) > 5 else None
    if not isinstance(sel_op, ir.Imm):
        return "the sparsity selector must be an immediate"
    M, N, K = (int(x) for x in _SHAPE.fullmatch(shape).groups())  # type: ignore[union-attr]
    sat = ins.has("satfinite")
    sp = SpMma(dense.Mma(M, N, K, dt, at, bt, ct, sat, sparse=True),
               dense.Mma(M, N, K // 2, dt, at, bt, ct, sat), sel_op.value)
    if not 0 <= sp.sel < 4 // sp.lanes:
        return (f"sparsity selector {sp.sel} of mma.sp.{shape}.{at} is undefined (the ISA allows "
                f"0..{4 // sp.lanes - 1})")
    return sp


def check_sparse(ins: Instr) -> str | None:
    r = parse_sparse(ins)
    return r if isinstance(r, str) else None


def _slot(lw: FnLowering, base: ll.Value, off: int, idx: ll.Value, t: ll.Type) -> ll.Value:
    b = lw.b
    p = b.gep(base, [b.add(const_int(I64, off), b.mul(b.zext(idx, I64), const_int(I64, 8)))])
    return lw.typed_ptr(p, t)


def publish_packed(lw: FnLowering, sp: SpMma, a_ops: list, e_op) -> None:
    """This lane's packed A elements (row-major M x K/2) and its metadata word."""
    b = lw.b
    pk = sp.packed
    base = dense.group_base(lw, sp.full)
    oa, om = sp.extra()
    store_t = F64 if pk.kind == "float" else I64
    words: dict[int, ll.Value] = {}
    for j, e, rr, cc in pk.a_sites() if a_ops else []:  # none: wgmma's A through a descriptor
        if j not in words:
            words[j] = lw.read(a_ops[j], dense._reg_type(pk.at))
        row, col = dense.a_rc(lw, pk, rr, cc)
        idx = b.add(b.mul(row, const_int(I32, pk.ka)), col)
        b.store(dense._element(lw, words[j], pk.at, e), _slot(lw, base, oa, idx, store_t))
    meta = b.zext(lw.read(e_op, "b32"), I64)
    member = b.urem(lw.tlin, const_int(I32, sp.full.threads))
    b.store(meta, _slot(lw, base, om, member, I64))


def expand_sparse(lw: FnLowering, sp: SpMma, base: ll.Value) -> None:
    """Dense A from the packed A and the metadata (run by one lane after the release): per row and
    chunk, zeros, then each packed element at the column its metadata index names."""
    b = lw.b
    full = sp.full
    oa_dense = full.offsets()[0]
    oa, om = sp.extra()
    t = F64 if full.kind == "float" else I64
    zero = ll.Constant(F64, 0.0) if t is F64 else const_int(I64, 0)
    c4 = const_int(I32, 4)
    with counted_loop(b, full.M * sp.nibbles, "sp_expand") as i:
        row = b.udiv(i, const_int(I32, sp.nibbles))
        c = b.urem(i, const_int(I32, sp.nibbles))
        # lane 4 (row % 8) + sel * lanes + c / 4 of warp row / 16 (wgmma: each warp has 16 rows) holds
        # the nibble, at bit 4 (c % 4), +16 for rows 8..15 of the warp's 16
        lane = b.add(b.mul(b.urem(row, const_int(I32, 8)), c4),
                     b.add(const_int(I32, sp.sel * sp.lanes), b.udiv(c, c4)))
        lane = b.add(lane, b.mul(b.udiv(row, const_int(I32, 16)), const_int(I32, 32)))
        half = b.udiv(b.urem(row, const_int(I32, 16)), const_int(I32, 8))
        shift = b.add(b.mul(b.urem(c, c4), c4), b.mul(half, const_int(I32, 16)))
        word = b.trunc(b.load(_slot(lw, base, om, lane, I64)), I32)
        nib = b.and_(b.lshr(word, shift), const_int(I32, 15))
        col0 = b.add(b.mul(row, const_int(I32, full.K)), b.mul(c, const_int(I32, sp.chunk)))
        for k in range(sp.chunk):
            b.store(zero, _slot(lw, base, oa_dense, b.add(col0, const_int(I32, k)), t))
        for h in range(sp.per_chunk):
            if sp.chunk == 2:  # tf32: 0b0100 -> column 0, 0b1110 -> column 1
                pos = b.and_(b.lshr(nib, const_int(I32, 1)), const_int(I32, 1))
            elif sp.chunk == 8:  # 4-bit: the two indices name two-wide sub-chunks (pairs of columns)
                pair = b.and_(b.lshr(nib, const_int(I32, 2 * (h // 2))), const_int(I32, 3))
                pos = b.add(b.shl(pair, const_int(I32, 1)), const_int(I32, h % 2))
            else:
                pos = b.and_(b.lshr(nib, const_int(I32, 2 * h)), const_int(I32, 3))
            src = b.add(b.mul(row, const_int(I32, full.K // 2)),
                        b.add(b.mul(c, const_int(I32, sp.per_chunk)), const_int(I32, h)))
            v = b.load(_slot(lw, base, oa, src, t))
            b.store(v, _slot(lw, base, oa_dense, b.add(col0, pos), t))


def _sparse(ins: Instr) -> bool:
    return ins.has("sp") or ins.has("sp::ordered_metadata")


@form_rule("mma", when=_sparse, form="sp", check=check_sparse)
def lower_sparse(lw: FnLowering, ins: Instr) -> None:
    """mma.sp: publish packed A, metadata, B and C; suspend at a warp point; expand and compute once
    per warp; write this lane's D."""
    sp = parse_sparse(ins)
    assert isinstance(sp, SpMma)
    lw.cg.location_id(ins)  # sizes the scratch area (dense.scratch_per_thread reads the text)
    d_ops, a_ops, b_ops, c_ops = (dense._regs(o) for o in ins.operands[:4])
    publish_packed(lw, sp, a_ops, ins.operands[4])
    dense.publish(lw, sp.full, [], b_ops, dense._acc_elements(lw, c_ops, sp.full.ct))
    lw.yield_point(warp_level=True)
    base = dense.compute_once(lw, sp.full, fill=lambda bs: expand_sparse(lw, sp, bs))
    dense._write_acc(lw, sp.full, base, d_ops)


__all__ = ["SPARSE", "SpMma", "check_sparse", "lower_sparse", "parse_sparse"]
