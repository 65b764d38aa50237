"""Bit manipulation and logic rules: popc, clz, bfind, brev, bfe, bfi, fns, szext, bmsk, prmt, shifts,
funnel shifts, and/or/xor/not/cnot and lop3.

Where the PTX ISA text and an H100 disagree the hardware wins; each such place names the golden
case (../shared/gpu-golden/isa) that shows it.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr, type_size
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.types import I1, I8, I32, I64, const_int


def _type(ins: Instr) -> str:
    ts = ins.types()
    if not ts:
        raise ValueError(f"{ins.pos}: '{ins.text}' has no type")
    return ts[-1]


def _signed(t: str) -> bool:
    return t.startswith("s")


def _intr(lw: FnLowering, name: str, ret: ll.Type, args: list[ll.Value]) -> ll.Value:
    return lw.b.call(lw.cg.intrinsic(name, ret, [a.type for a in args]), args)


def _fit(lw: FnLowering, v: ll.Value, t: ll.IntType) -> ll.Value:
    """`v` zero-extended or truncated to the integer type `t`."""
    if v.type.width == t.width:
        return v
    return lw.b.trunc(v, t) if v.type.width > t.width else lw.b.zext(v, t)


def _to32(lw: FnLowering, v: ll.Value) -> ll.Value:
    return _fit(lw, v, I32)


def _umin(b: ll.IRBuilder, v: ll.Value, limit: int) -> ll.Value:
    lim = ll.Constant(v.type, limit)
    return b.select(b.icmp_unsigned(">", v, lim), lim, v)


# ---------------------------------------------------------------- bit counting


@rule("popc", family="bits")
def lower_popc(lw: FnLowering, ins: Instr) -> None:
    """popc: population count (result .u32)."""
    t = _type(ins)
    a = lw.read(ins.operands[1], t)
    lw.write(ins.operands[0], _to32(lw, _intr(lw, "llvm.ctpop", a.type, [a])), "u32")


@rule("clz", family="bits")
def lower_clz(lw: FnLowering, ins: Instr) -> None:
    """clz: count leading zeros (result .u32; clz(0) = width)."""
    t = _type(ins)
    a = lw.read(ins.operands[1], t)
    r = _intr(lw, "llvm.ctlz", a.type, [a, const_int(I1, 0)])
    lw.write(ins.operands[0], _to32(lw, r), "u32")


@rule("bfind", family="bits")
def lower_bfind(lw: FnLowering, ins: Instr) -> None:
    """bfind: position of the most significant non-sign bit (.shiftamt: as a left-shift amount)."""
    b = lw.b
    t = _type(ins)
    a = lw.read(ins.operands[1], t)
    w = a.type.width
    zero = ll.Constant(a.type, 0)
    x = b.select(b.icmp_signed("<", a, zero), b.not_(a), a) if _signed(t) else a
    lz = _to32(lw, _intr(lw, "llvm.ctlz", a.type, [x, const_int(I1, 0)]))
    none = b.icmp_unsigned("==", x, zero)
    pos = b.sub(const_int(I32, w - 1), lz)
    r = lz if ins.has("shiftamt") else pos
    lw.write(ins.operands[0], b.select(none, const_int(I32, -1), r), "u32")


@rule("brev", family="bits")
def lower_brev(lw: FnLowering, ins: Instr) -> None:
    """brev: reverse the bits."""
    t = _type(ins)
    a = lw.read(ins.operands[1], t)
    lw.write(ins.operands[0], _intr(lw, "llvm.bitreverse", a.type, [a]), t)


# ---------------------------------------------------------------- bit fields


def _pos_len(lw: FnLowering, ins: Instr, first: int, w: int) -> tuple[ll.Value, ll.Value]:
    """bfe/bfi's `pos` and `len` operands (operands[first], operands[first + 1]) as i64.

    The 32-bit forms use only bits 0-7 of each, as the ISA says; the 64-bit forms use the whole
    32-bit value (isa_bfe_u64, isa_bfe_s64, isa_bfi_b64: pos 0x100 extracts nothing, len 0x101 is
    not len 1)."""
    b = lw.b
    pos = lw.read(ins.operands[first], "u32")
    ln = lw.read(ins.operands[first + 1], "u32")
    if w == 32:
        pos, ln = b.and_(pos, const_int(I32, 0xFF)), b.and_(ln, const_int(I32, 0xFF))
    return b.zext(pos, I64), b.zext(ln, I64)


def _low_mask(b: ll.IRBuilder, n: ll.Value, w2: ll.IntType) -> ll.Value:
    """(1 << n) - 1 in the 2w-bit type, for 0 <= n <= w."""
    return b.sub(b.shl(ll.Constant(w2, 1), n), ll.Constant(w2, 1))


@rule("bfe", family="bits")
def lower_bfe(lw: FnLowering, ins: Instr) -> None:
    """bfe: extract `len` bits at `pos`; signed types fill above the field with its top bit
    a[min(pos+len-1, msb)] (0 when len == 0)."""
    b = lw.b
    t = _type(ins)
    w = 8 * type_size(t)
    wt, w2 = ll.IntType(w), ll.IntType(2 * w)
    a = lw.read(ins.operands[1], t)
    pos, ln = _pos_len(lw, ins, 2, w)
    pos_c = _umin(b, pos, w)
    # field bits that exist: min(len, w - pos) of them; the rest take the sign bit
    n = _umin(b, ln, w)
    room = b.sub(const_int(I64, w), pos_c)
    n = b.select(b.icmp_unsigned("<", n, room), n, room)
    mask = _low_mask(b, _fit(lw, n, w2), w2)
    field = b.and_(b.lshr(b.zext(a, w2), _fit(lw, pos_c, w2)), mask)
    if _signed(t):
        top = _umin(b, b.sub(b.add(pos, ln), const_int(I64, 1)), w - 1)  # pos+len-1 has no overflow in i64
        sbit = b.trunc(b.lshr(a, _fit(lw, top, wt)), I1)
        sbit = b.and_(sbit, b.icmp_unsigned("!=", ln, const_int(I64, 0)))
        field = b.or_(field, b.select(sbit, b.not_(mask), ll.Constant(w2, 0)))
    lw.write(ins.operands[0], b.trunc(field, wt), t)


@rule("bfi", family="bits")
def lower_bfi(lw: FnLowering, ins: Instr) -> None:
    """bfi: insert the low `len` bits of a into b at `pos` (bits beyond the width are dropped)."""
    b = lw.b
    t = _type(ins)
    w = 8 * type_size(t)
    wt, w2 = ll.IntType(w), ll.IntType(2 * w)
    a = b.zext(lw.read(ins.operands[1], t), w2)
    base = b.zext(lw.read(ins.operands[2], t), w2)
    pos, ln = _pos_len(lw, ins, 3, w)
    pos2 = _fit(lw, _umin(b, pos, w), w2)
    mask = b.shl(_low_mask(b, _fit(lw, _umin(b, ln, w), w2), w2), pos2)
    r = b.or_(b.and_(base, b.not_(mask)), b.and_(b.shl(a, pos2), mask))
    lw.write(ins.operands[0], b.trunc(r, wt), t)


def _check_szext(ins: Instr) -> str | None:
    if ins.types() not in (["s32"], ["u32"]):
        return "szext takes .s32 or .u32"
    if ins.has("clamp") == ins.has("wrap"):
        return "szext needs exactly one of .clamp/.wrap"
    return None


@rule("szext", family="bits", check=_check_szext)
def lower_szext(lw: FnLowering, ins: Instr) -> None:
    """szext.clamp/.wrap.s32/.u32 d, a, n: sign- or zero-extend the low n bits of a (n = 0 gives 0)."""
    b = lw.b
    t = _type(ins)
    a = lw.read(ins.operands[1], "b32")
    n = lw.read(ins.operands[2], "u32")
    n = b.and_(n, const_int(I32, 31)) if ins.has("wrap") else _umin(b, n, 32)
    # move the field to the top of an i64 and back (shift 64 - n; n = 0 gives 0 and shifts by 63)
    none = b.icmp_unsigned("==", n, const_int(I32, 0))
    sh = b.zext(b.sub(const_int(I32, 64), b.select(none, const_int(I32, 1), n)), I64)
    hi = b.select(none, const_int(I64, 0), b.shl(b.zext(a, I64), sh))
    r = b.ashr(hi, sh) if _signed(t) else b.lshr(hi, sh)
    lw.write(ins.operands[0], b.trunc(r, I32), t)


def _nth_set_bit(lw: FnLowering, m: ll.Value, k: ll.Value) -> ll.Value:
    """Position of the k-th (1-based) set bit of the i32 `m`, counting from bit 0; k must be in
    [1, popc(m)].  A binary search over halves, quarters, ... by population count."""
    b = lw.b
    pos = const_int(I32, 0)
    for width in (16, 8, 4, 2, 1):
        low = b.and_(b.lshr(m, pos), const_int(I32, (1 << width) - 1))
        cnt = _intr(lw, "llvm.ctpop", I32, [low])
        up = b.icmp_unsigned(">", k, cnt)
        k = b.select(up, b.sub(k, cnt), k)
        pos = b.select(up, b.add(pos, const_int(I32, width)), pos)
    return pos


@rule("fns", family="bits")
def lower_fns(lw: FnLowering, ins: Instr) -> None:
    """fns.b32 d, mask, base, offset: position of the offset-th set bit of mask counted from bit base
    (upwards for offset > 0, downwards for offset < 0; offset 0: base itself if set), else -1."""
    b = lw.b
    mask = lw.read(ins.operands[1], "b32")
    base = lw.read(ins.operands[2], "u32")
    off = lw.read(ins.operands[3], "s32")
    zero = const_int(I32, 0)
    ones = const_int(I32, -1)
    base64 = b.zext(_umin(b, base, 63), I64)  # base > 31 finds nothing (masked below); keep shifts defined
    in_range = b.icmp_unsigned("<", base, const_int(I32, 32))
    # bits at or above base (offset > 0), at or below base (offset < 0), base alone (offset 0)
    above = b.trunc(b.shl(const_int(I64, 0xFFFFFFFF), base64), I32)
    below = b.trunc(b.sub(b.shl(const_int(I64, 2), base64), const_int(I64, 1)), I32)
    only = b.and_(above, below)
    pos_dir = b.icmp_signed(">", off, zero)
    neg_dir = b.icmp_signed("<", off, zero)
    window = b.select(pos_dir, above, b.select(neg_dir, below, only))
    m = b.select(in_range, b.and_(mask, window), zero)
    count = _intr(lw, "llvm.ctpop", I32, [m])
    n = b.select(neg_dir, b.sub(zero, off), b.select(pos_dir, off, const_int(I32, 1)))
    # searching downwards, the n-th set bit from the top is the (count - n + 1)-th from the bottom
    k = b.select(neg_dir, b.add(b.sub(count, n), const_int(I32, 1)), n)
    found = b.and_(b.icmp_unsigned("<=", n, count), b.icmp_signed(">", n, zero))
    r = b.select(found, _nth_set_bit(lw, m, k), ones)
    # offset = INT_MIN gives 0 on the H100 for every mask and base (isa_fns_b32)
    r = b.select(b.icmp_signed("==", off, const_int(I32, -(1 << 31))), zero, r)
    lw.write(ins.operands[0], r, "b32")


_PRMT_MODES = {
    # selector nibbles (b0..b3) for c[1:0] = 0..3
    "f4e": [(0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)],
    "b4e": [(0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)],
    "rc8": [(0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)],
    "ecl": [(0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)],
    "ecr": [(0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)],
    "rc16": [(0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)],
}


@rule("prmt", family="bits")
def lower_prmt(lw: FnLowering, ins: Instr) -> None:
    """prmt: byte permute of {b, a} (default mode with sign replication, and f4e/b4e/rc8/ecl/ecr/rc16)."""
    b = lw.b
    a = b.zext(lw.read(ins.operands[1], "b32"), I64)
    hi = b.zext(lw.read(ins.operands[2], "b32"), I64)
    src = b.or_(a, b.shl(hi, const_int(I64, 32)))
    c = lw.read(ins.operands[3], "b32")
    mode = next((m for m in ins.mods if m in _PRMT_MODES), None)
    if mode is not None:
        table = _PRMT_MODES[mode]
        sels = [sum(n << (4 * i) for i, n in enumerate(row)) for row in table]
        idx = b.and_(c, const_int(I32, 3))
        sel = const_int(I32, sels[3])
        for k in (2, 1, 0):
            sel = b.select(b.icmp_unsigned("==", idx, const_int(I32, k)), const_int(I32, sels[k]), sel)
        c = sel
    r = const_int(I32, 0)
    for i in range(4):
        nib = b.and_(b.lshr(c, const_int(I32, 4 * i)), const_int(I32, 0xF))
        which = b.zext(b.and_(nib, const_int(I32, 7)), I64)
        byte = b.trunc(b.lshr(src, b.mul(which, const_int(I64, 8))), I8)
        if mode is None:
            sign = b.icmp_unsigned("!=", b.and_(nib, const_int(I32, 8)), const_int(I32, 0))
            rep = b.select(b.icmp_signed("<", byte, const_int(I8, 0)), const_int(I8, 0xFF), const_int(I8, 0))
            byte = b.select(sign, rep, byte)
        r = b.or_(r, b.shl(b.zext(byte, I32), const_int(I32, 8 * i)))
    lw.write(ins.operands[0], r, "b32")


# ---------------------------------------------------------------- shifts


@rule("shl", "shr", family="bits")
def lower_shift(lw: FnLowering, ins: Instr) -> None:
    """shl/shr: shift amounts >= width give 0 (or sign fill for shr.s*)."""
    b = lw.b
    t = _type(ins)
    a = lw.read(ins.operands[1], t)
    w = a.type.width
    n = lw.read(ins.operands[2], "u32")
    big = b.icmp_unsigned(">=", n, const_int(I32, w))
    amt = _fit(lw, b.select(big, const_int(I32, w - 1), n), a.type)
    if ins.opcode == "shl":
        r = b.select(big, ll.Constant(a.type, 0), b.shl(a, amt))
    elif _signed(t):
        r = b.ashr(a, amt)
    else:
        r = b.select(big, ll.Constant(a.type, 0), b.lshr(a, amt))
    lw.write(ins.operands[0], r, t)


@rule("shf", family="bits")
def lower_shf(lw: FnLowering, ins: Instr) -> None:
    """shf.l/.r .wrap/.clamp: funnel shift of {b:a}."""
    b = lw.b
    a = b.zext(lw.read(ins.operands[1], "b32"), I64)
    hi = b.zext(lw.read(ins.operands[2], "b32"), I64)
    n = lw.read(ins.operands[3], "u32")
    n = b.and_(n, const_int(I32, 31)) if ins.has("wrap") else _umin(b, n, 32)
    n64 = b.zext(n, I64)
    pair = b.or_(a, b.shl(hi, const_int(I64, 32)))
    if ins.has("l"):
        r = b.trunc(b.lshr(b.shl(pair, n64), const_int(I64, 32)), I32)
    else:
        r = b.trunc(b.lshr(pair, n64), I32)
    lw.write(ins.operands[0], r, "b32")


@rule("bmsk", family="bits")
def lower_bmsk(lw: FnLowering, ins: Instr) -> None:
    """bmsk.clamp/.wrap.b32 d, a, b: b one-bits starting at bit a."""
    b = lw.b
    pos = lw.read(ins.operands[1], "u32")
    width = lw.read(ins.operands[2], "u32")
    if ins.has("wrap"):
        pos, width = b.and_(pos, const_int(I32, 31)), b.and_(width, const_int(I32, 31))
    else:
        pos, width = _umin(b, pos, 32), _umin(b, width, 32)
    m = b.sub(b.shl(const_int(I64, 1), b.zext(width, I64)), const_int(I64, 1))
    lw.write(ins.operands[0], b.trunc(b.shl(m, b.zext(pos, I64)), I32), "b32")


# ---------------------------------------------------------------- logic


@rule("and", "or", "xor", family="logic")
def lower_logic(lw: FnLowering, ins: Instr) -> None:
    """and/or/xor on .pred and .b16/.b32/.b64."""
    b = lw.b
    t = _type(ins)
    a, c = lw.read(ins.operands[1], t), lw.read(ins.operands[2], t)
    r = {"and": b.and_, "or": b.or_, "xor": b.xor}[ins.opcode](a, c)
    lw.write(ins.operands[0], r, t)


@rule("not", "cnot", family="logic")
def lower_not(lw: FnLowering, ins: Instr) -> None:
    """not (bitwise / predicate) and cnot (d = a == 0)."""
    b = lw.b
    t = _type(ins)
    a = lw.read(ins.operands[1], t)
    if ins.opcode == "not":
        r = b.not_(a)
    else:
        r = b.zext(b.icmp_unsigned("==", a, ll.Constant(a.type, 0)), a.type)
    lw.write(ins.operands[0], r, t)


@rule("lop3", family="logic")
def lower_lop3(lw: FnLowering, ins: Instr) -> None:
    """lop3.b32 d, a, b, c, immLut: any three-input bitwise function (and the .BoolOp d|p form)."""
    b = lw.b
    a, c_, e = (lw.read(op, "b32") for op in ins.operands[1:4])
    lut_op = ins.operands[4]
    lut = lut_op.value if hasattr(lut_op, "value") and isinstance(lut_op.value, int) else None
    if lut is None:
        raise lw.unsupported("the lookup table of lop3 must be an immediate")
    ones = const_int(I32, -1)
    r = const_int(I32, 0)
    for i in range(8):
        if lut >> i & 1:
            term = b.and_(b.and_(a if i & 4 else b.xor(a, ones), c_ if i & 2 else b.xor(c_, ones)),
                          e if i & 1 else b.xor(e, ones))
            r = b.or_(r, term)
    d = ins.operands[0]
    bop = next((m for m in ins.mods if m in ("and", "or")), None)
    if bop is not None and hasattr(d, "first"):
        q = lw.read_pred(ins.operands[5])
        nz = b.icmp_unsigned("!=", r, const_int(I32, 0))
        lw.write(d.first, r, "b32")
        lw.write(d.second, b.and_(nz, q) if bop == "and" else b.or_(nz, q), "pred")
        return
    lw.write(d, r, "b32")
