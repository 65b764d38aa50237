"""Matrix-fragment moves (PTX ISA §9.7.14.5.15-17): ldmatrix, stmatrix and movmatrix .m8n8 .b16.

All three are warp collectives over 8x8 matrices of b16 elements.  In the fragment layout lane l
holds, in register i, the elements (row l >> 2, columns 2(l & 3) and 2(l & 3) + 1) of matrix i,
the lower-numbered column in the low half.  For ldmatrix/stmatrix, lane 8i + r supplies the
address of row r of matrix i (16 bytes).  With .trans the fragment holds the transposed matrix:
lane l register i element k is memory row 2(l & 3) + k, column l >> 2.

Each lane publishes one 64-bit value through sync.py's warp exchange: its row's host address
(ldmatrix, stmatrix) or its register (movmatrix).  After the exchange every lane moves its own
fragment elements: ldmatrix loads them from the published rows, stmatrix stores them there, so
no lane needs another lane's registers.
"""

from __future__ import annotations

from contextlib import nullcontext

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower import abi
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.rules.sync import Exchange
from ptxjit.lower.types import I16, I32, I64, PTR, const_int

ROW_BYTES = 16  # a row of an 8x8 b16 matrix


def _check(ins: Instr) -> str | None:
    if ins.opcode == "movmatrix":
        return None
    if not ins.has("m8n8") or tuple(ins.types()[-1:]) != ("b16",):
        return "only the .m8n8 .b16 shape (sm_90 and earlier) is supported"
    return None


def _count(ins: Instr) -> int:
    return next(int(m[1:]) for m in ins.mods if m in ("x1", "x2", "x4"))


def _space(ins: Instr) -> str:
    return "shared" if ins.has("shared") or ins.has("shared::cta") else ""


def _regs(op) -> list:
    return list(op.items) if isinstance(op, ir.Vec) else [op]


def _publish_row(lw: FnLowering, ins: Instr, addr: ir.Addr, n: int, store: bool) -> ll.Value:
    """This lane's row address as an i64 host address.  Bounds-checked launches check the 16-byte
    row of every lane that supplies one (lanes below 8n); an out-of-bounds row is recorded as a fault
    and replaced by the scratch area (zeros to load, junk to store into)."""
    b = lw.b
    space = _space(ins)
    p = lw.address(addr, space)
    if lw.probing:  # ptxjit check's probe: the lane reads (stores into) the row it names, if it names one
        with b.if_then(b.icmp_unsigned("<", lw.lane(), const_int(I32, 8 * n))) if n < 4 else nullcontext():
            lw.probe_memory(p)
    chk = lw.bounds.ok(addr, space, p, ROW_BYTES)
    if chk is not None:
        ok, where, kind = chk
        unused = b.icmp_unsigned(">=", lw.lane(), const_int(I32, 8 * n))
        ok = b.or_(ok, unused)
        lw.bounds._record_fault(ok, where, kind)
        p = b.select(ok, p, lw.cg.scratch_area(store, ROW_BYTES))
    return b.ptrtoint(p, I64)


def _element_ptr(lw: FnLowering, ex: Exchange, lane: ll.Value, byte_off: ll.Value, store: bool) -> ll.Value:
    """Host pointer to byte `byte_off` of the row published by `lane`.  A row outside the CTA's shared
    memory -- a lane that did not take part (exited, or beyond a partial warp: its slot holds nothing
    valid), or an out-of-bounds row already reported by its publisher -- reads zeros / writes nowhere,
    so that a malformed warp collective cannot touch other memory."""
    b = lw.b
    row = ex.value_of(lane)
    if lw.region_mode:  # a lane beyond the block's threads has no exchange slot at all
        n = lw.cg.block[0] * lw.cg.block[1] * lw.cg.block[2]
        if n % 32:
            exists = b.icmp_unsigned("<", b.add(b.and_(lw.tlin, const_int(I32, ~31)), lane), const_int(I32, n))
            row = b.select(exists, row, const_int(I64, 0))
    base, limit = lw.once_in_entry("matrix_rows", lambda eb: _row_window(lw, eb))
    inside = b.icmp_unsigned("<", b.sub(row, base), limit)
    row = b.select(inside, row, b.ptrtoint(lw.cg.scratch_area(store, ROW_BYTES), I64))
    return b.inttoptr(b.add(row, b.zext(byte_off, I64)), PTR)


def _fragment_sites(lw: FnLowering, i: int, trans: bool) -> list[tuple[ll.Value, ll.Value, int]]:
    """(row-supplying lane, byte offset in its row, width in bits) of this lane's register i, low
    half first: one 32-bit pair, or two 16-bit elements of a column (.trans)."""
    b = lw.b
    lane = lw.lane()
    row, quad = b.lshr(lane, const_int(I32, 2)), b.and_(lane, const_int(I32, 3))
    if not trans:
        return [(b.add(const_int(I32, 8 * i), row), b.shl(quad, const_int(I32, 2)), 32)]
    base = b.add(const_int(I32, 8 * i), b.shl(quad, const_int(I32, 1)))
    off = b.shl(row, const_int(I32, 1))
    return [(base, off, 16), (b.add(base, const_int(I32, 1)), off, 16)]


def _row_window(lw: FnLowering, b: ll.IRBuilder) -> tuple[ll.Value, ll.Value]:
    """(shared memory's host address, how many row addresses from it hold a whole row): loaded once."""
    size = b.load(b.gep(lw.worker, [const_int(I32, abi.W_SHARED_SIZE)]))
    fits = b.icmp_unsigned(">=", size, const_int(I64, ROW_BYTES))
    return (b.ptrtoint(lw.shared_ptr(), I64),
            b.select(fits, b.sub(size, const_int(I64, ROW_BYTES - 1)), const_int(I64, 0)))


@rule("ldmatrix", family="warp", check=_check)
def lower_ldmatrix(lw: FnLowering, ins: Instr) -> None:
    """ldmatrix.sync.aligned.m8n8.x1/.x2/.x4{.trans}{.shared}.b16: each lane loads its fragment
    elements from the rows the other lanes address."""
    b = lw.b
    n = _count(ins)
    trans = ins.has("trans")
    ex = Exchange(lw, _publish_row(lw, ins, ins.operands[1], n, store=False))
    space = _space(ins)
    for i, dst in enumerate(_regs(ins.operands[0])[:n]):
        parts = []
        for lane, off, width in _fragment_sites(lw, i, trans):
            t = I32 if width == 32 else I16
            p = lw.typed_ptr(_element_ptr(lw, ex, lane, off, store=False), t)
            parts.append(lw.user_access(b.load(p, align=width // 8), space))
        v = parts[0] if len(parts) == 1 else b.or_(
            b.zext(parts[0], I32), b.shl(b.zext(parts[1], I32), const_int(I32, 16)))
        lw.write(dst, v, "b32")


@rule("stmatrix", family="warp", check=_check)
def lower_stmatrix(lw: FnLowering, ins: Instr) -> None:
    """stmatrix.sync.aligned.m8n8.x1/.x2/.x4{.trans}{.shared}.b16: each lane stores its fragment
    elements into the rows the other lanes address."""
    b = lw.b
    n = _count(ins)
    trans = ins.has("trans")
    ex = Exchange(lw, _publish_row(lw, ins, ins.operands[0], n, store=True))
    space = _space(ins)
    for i, src in enumerate(_regs(ins.operands[1])[:n]):
        v = lw.read(src, "b32")  # read after the suspension point: registers are restored there
        for k, (lane, off, width) in enumerate(_fragment_sites(lw, i, trans)):
            part = v if width == 32 else b.trunc(b.lshr(v, const_int(I32, 16 * k)), I16)
            p = lw.typed_ptr(_element_ptr(lw, ex, lane, off, store=True), part.type)
            lw.user_access(b.store(part, p, align=width // 8), space)


@rule("movmatrix", family="warp")
def lower_movmatrix(lw: FnLowering, ins: Instr) -> None:
    """movmatrix.sync.aligned.m8n8.trans.b16 d, a: transpose the 8x8 matrix held in the warp's
    fragments.  Lane l's element k is the source matrix's (row 2(l & 3) + k, column l >> 2), held
    by lane 4 * (2(l & 3) + k) + (l >> 3) in its half (l >> 2) & 1."""
    b = lw.b
    ex = Exchange(lw, lw.read(ins.operands[1], "b32"))
    lane = lw.lane()
    quad = b.and_(lane, const_int(I32, 3))
    col = b.lshr(lane, const_int(I32, 2))
    shift = b.zext(b.shl(b.and_(col, const_int(I32, 1)), const_int(I32, 4)), I64)
    halves = []
    for k in range(2):
        src = b.add(b.shl(b.add(b.shl(quad, const_int(I32, 1)), const_int(I32, k)), const_int(I32, 2)),
                    b.lshr(lane, const_int(I32, 3)))
        halves.append(b.and_(b.lshr(ex.value_of(src), shift), const_int(I64, 0xFFFF)))
    v = b.or_(halves[0], b.shl(halves[1], const_int(I64, 16)))
    lw.write(ins.operands[0], b.trunc(v, I32), "b32")
