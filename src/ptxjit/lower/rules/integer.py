"""Integer arithmetic and bit manipulation rules.

Opcodes shared with floating point (add, mul, min, ...) dispatch on the instruction type: float
types go to `floating`, half types to `half`.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr, is_float_type, type_size
from ptxjit.lower.function import FnLowering
from ptxjit.lower.rules import floating, half
from ptxjit.lower.rules.registry import rule
from ptxjit.lower.types import I1, I8, I32, I64, const_int

HALF_TYPES = ("f16", "bf16", "f16x2", "bf16x2")


def _type(ins: Instr) -> str:
    ts = ins.types()
    if not ts:
        raise ValueError(f"{ins.pos}: '{ins.text}' has no type")
    return ts[-1]


def _float_dispatch(lw: FnLowering, ins: Instr) -> bool:
    t = _type(ins)
    if t in HALF_TYPES:
        half.lower_half_arith(lw, ins)
        return True
    if is_float_type(t):
        floating.lower_float_arith(lw, ins)
        return True
    return False


def _width(t: str) -> int:
    return 8 * type_size(t)


def _signed(t: str) -> bool:
    return t.startswith("s")


def _intr(lw: FnLowering, name: str, ret: ll.Type, args: list[ll.Value]) -> ll.Value:
    return lw.b.call(lw.cg.intrinsic(name, ret, [a.type for a in args]), args)


def _check_int(ins: Instr) -> str | None:
    ts = ins.types()
    if not ts:
        return "missing type"
    t = ts[-1]
    if t in HALF_TYPES:
        return half.check_half(ins)
    if is_float_type(t):
        return floating.check_float(ins)
    return None


# ---------------------------------------------------------------- add / sub with carry


def _carry_slot(lw: FnLowering) -> ll.Value:
    slot = getattr(lw, "carry_flag", None)
    if slot is None:
        with lw.b.goto_entry_block():
            slot = lw.b.alloca(I32, name="cc_cf")
        lw.carry_flag = slot
    return slot


@rule("add", "sub", family="integer", check=_check_int)
def lower_add_sub(lw: FnLowering, ins: Instr) -> None:
    """add/sub: integer (.sat, .cc) and float (dispatch)."""
    if _float_dispatch(lw, ins):
        return
    b = lw.b
    t = _type(ins)
    d, a_op, b_op = ins.operands[:3]
    is_add = ins.opcode == "add"
    if lw.is_pointer_reg(d) and not ins.has("cc", "sat"):
        # pointer +/- offset: a getelementptr, so LLVM sees the address as base + affine offset
        base_op, off_op = (a_op, b_op) if lw.is_pointer_reg(a_op) else (b_op, a_op)
        off = lw.read(off_op, "s64")
        if not is_add:
            off = b.sub(const_int(I64, 0), off)
        lw.write(d, b.gep(lw.read_pointer(base_op), [off]), t)
        return
    a, c = lw.read(a_op, t), lw.read(b_op, t)
    if ins.has("sat"):
        name = ("llvm.sadd.sat" if is_add else "llvm.ssub.sat") if _signed(t) or t.startswith("b") else (
            "llvm.uadd.sat" if is_add else "llvm.usub.sat")
        r = _intr(lw, name, a.type, [a, c])
    else:
        r = b.add(a, c) if is_add else b.sub(a, c)
    if ins.has("cc"):
        cf = b.icmp_unsigned("<", r, a) if is_add else b.icmp_unsigned("<", a, c)
        b.store(b.zext(cf, I32), _carry_slot(lw))
    lw.write(d, r, t)


@rule("addc", "subc", family="integer")
def lower_addc(lw: FnLowering, ins: Instr) -> None:
    """addc/subc: add/subtract with carry-in from CC.CF (optionally .cc carry-out)."""
    b = lw.b
    t = _type(ins)
    d, a_op, b_op = ins.operands[:3]
    a, c = lw.read(a_op, t), lw.read(b_op, t)
    cin = b.zext(b.load(_carry_slot(lw)), a.type) if a.type.width > 32 else b.trunc(
        b.load(_carry_slot(lw)), a.type) if a.type.width < 32 else b.load(_carry_slot(lw))
    if ins.opcode == "addc":
        s1 = b.add(a, c)
        r = b.add(s1, cin)
        cf = b.or_(b.icmp_unsigned("<", s1, a), b.icmp_unsigned("<", r, s1))
    else:
        s1 = b.sub(a, c)
        r = b.sub(s1, cin)
        cf = b.or_(b.icmp_unsigned("<", a, c), b.icmp_unsigned("<", s1, cin))
    if ins.has("cc"):
        b.store(b.zext(cf, I32), _carry_slot(lw))
    lw.write(d, r, t)


# ---------------------------------------------------------------- multiply


def _wide(lw: FnLowering, v: ll.Value, t: str, bits: int) -> ll.Value:
    wt = ll.IntType(bits)
    return lw.b.sext(v, wt) if _signed(t) else lw.b.zext(v, wt)


def _mul_mode(lw: FnLowering, ins: Instr, a: ll.Value, c: ll.Value, t: str) -> tuple[ll.Value, str]:
    """The product per .lo/.hi/.wide, and the PTX type of the result."""
    b = lw.b
    w = a.type.width
    if ins.has("wide"):
        wt = ("s" if _signed(t) else "u") + str(2 * w)
        return b.mul(_wide(lw, a, t, 2 * w), _wide(lw, c, t, 2 * w)), wt
    if ins.has("hi"):
        p = b.mul(_wide(lw, a, t, 2 * w), _wide(lw, c, t, 2 * w))
        return b.trunc(b.lshr(p, ll.Constant(p.type, w)), a.type), t
    return b.mul(a, c), t


@rule("mul", family="integer", check=_check_int)
def lower_mul(lw: FnLowering, ins: Instr) -> None:
    """mul.lo/.hi/.wide (integer) and float mul (dispatch)."""
    if _float_dispatch(lw, ins):
        return
    t = _type(ins)
    d, a_op, b_op = ins.operands[:3]
    r, rt = _mul_mode(lw, ins, lw.read(a_op, t), lw.read(b_op, t), t)
    lw.write(d, r, rt)


@rule("mad", "madc", family="integer", check=_check_int)
def lower_mad(lw: FnLowering, ins: Instr) -> None:
    """mad.lo/.hi/.wide (+.cc, madc) integer; float mad/fma (dispatch)."""
    if ins.opcode == "mad" and _float_dispatch(lw, ins):
        return
    b = lw.b
    t = _type(ins)
    d, a_op, b_op, c_op = ins.operands[:4]
    a, m = lw.read(a_op, t), lw.read(b_op, t)
    p, rt = _mul_mode(lw, ins, a, m, t)
    c = lw.read(c_op, rt)
    if ins.has("sat") and ins.has("hi"):
        r = _intr(lw, "llvm.sadd.sat", p.type, [p, c])
    else:
        r = b.add(p, c)
    carry_in = ins.opcode == "madc"
    if carry_in:
        cin = b.load(_carry_slot(lw))
        cin = b.zext(cin, r.type) if r.type.width > 32 else cin
        r2 = b.add(r, cin)
        cf = b.or_(b.icmp_unsigned("<", r, p), b.icmp_unsigned("<", r2, r))
        r = r2
    else:
        cf = b.icmp_unsigned("<", r, p)
    if ins.has("cc"):
        b.store(b.zext(cf, I32), _carry_slot(lw))
    lw.write(d, r, rt)


def _low24(lw: FnLowering, v: ll.Value, signed: bool) -> ll.Value:
    b = lw.b
    if signed:
        return b.ashr(b.shl(v, const_int(I32, 8)), const_int(I32, 8))
    return b.and_(v, const_int(I32, 0xFFFFFF))


@rule("mul24", "mad24", family="integer")
def lower_mul24(lw: FnLowering, ins: Instr) -> None:
    """mul24/mad24 .lo/.hi: 24x24-bit product, low or high 32 bits of the 48-bit result."""
    b = lw.b
    t = _type(ins)
    s = _signed(t)
    a = _low24(lw, lw.read(ins.operands[1], t), s)
    c = _low24(lw, lw.read(ins.operands[2], t), s)
    p = b.mul(b.sext(a, I64) if s else b.zext(a, I64), b.sext(c, I64) if s else b.zext(c, I64))
    r = b.trunc(b.lshr(p, const_int(I64, 16)), I32) if ins.has("hi") else b.trunc(p, I32)
    if ins.opcode == "mad24":
        r = b.add(r, lw.read(ins.operands[3], t))
    lw.write(ins.operands[0], r, t)


# ---------------------------------------------------------------- div / rem


@rule("div", "rem", family="integer", check=_check_int)
def lower_div(lw: FnLowering, ins: Instr) -> None:
    """div/rem: integer (division by zero gives all-ones / the dividend instead of a CPU fault)."""
    if ins.opcode == "div" and _float_dispatch(lw, ins):
        return
    b = lw.b
    t = _type(ins)
    d, a_op, b_op = ins.operands[:3]
    a, c = lw.read(a_op, t), lw.read(b_op, t)
    zero = ll.Constant(a.type, 0)
    ones = ll.Constant(a.type, -1)
    is_zero = b.icmp_unsigned("==", c, zero)
    if _signed(t):
        # INT_MIN / -1 faults on x86: route -1 through negation instead
        is_m1 = b.icmp_signed("==", c, ones)
        safe = b.select(b.or_(is_zero, is_m1), ll.Constant(a.type, 1), c)
        if ins.opcode == "div":
            q = b.sdiv(a, safe)
            r = b.select(is_m1, b.sub(zero, a), b.select(is_zero, ones, q))
        else:
            q = b.srem(a, safe)
            r = b.select(is_m1, zero, b.select(is_zero, a, q))
    else:
        safe = b.select(is_zero, ll.Constant(a.type, 1), c)
        if ins.opcode == "div":
            r = b.select(is_zero, ones, b.udiv(a, safe))
        else:
            r = b.select(is_zero, a, b.urem(a, safe))
    lw.write(d, r, t)


# ---------------------------------------------------------------- abs / neg / min / max / sad


@rule("abs", "neg", family="integer", check=_check_int)
def lower_abs_neg(lw: FnLowering, ins: Instr) -> None:
    """abs/neg: integer two's complement; float/half dispatch (sign-bit operations)."""
    if _float_dispatch(lw, ins):
        return
    b = lw.b
    t = _type(ins)
    a = lw.read(ins.operands[1], t)
    zero = ll.Constant(a.type, 0)
    neg = b.sub(zero, a)
    r = neg if ins.opcode == "neg" else b.select(b.icmp_signed("<", a, zero), neg, a)
    lw.write(ins.operands[0], r, t)


@rule("min", "max", family="integer", check=_check_int)
def lower_min_max(lw: FnLowering, ins: Instr) -> None:
    """min/max: signed or unsigned integers (.relu clamps at 0); float/half dispatch."""
    if _float_dispatch(lw, ins):
        return
    b = lw.b
    t = _type(ins)
    a, c = lw.read(ins.operands[1], t), lw.read(ins.operands[2], t)
    op = "<" if ins.opcode == "min" else ">"
    cmp = b.icmp_signed(op, a, c) if _signed(t) else b.icmp_unsigned(op, a, c)
    r = b.select(cmp, a, c)
    if ins.has("relu"):
        zero = ll.Constant(r.type, 0)
        r = b.select(b.icmp_signed("<", r, zero), zero, r)
    lw.write(ins.operands[0], r, t)


@rule("sad", family="integer")
def lower_sad(lw: FnLowering, ins: Instr) -> None:
    """sad: d = c + |a - b|."""
    b = lw.b
    t = _type(ins)
    a, c, acc = (lw.read(op, t) for op in ins.operands[1:4])
    lt = b.icmp_signed("<", a, c) if _signed(t) else b.icmp_unsigned("<", a, c)
    diff = b.select(lt, b.sub(c, a), b.sub(a, c))
    lw.write(ins.operands[0], b.add(acc, diff), t)


# ---------------------------------------------------------------- bit counting


@rule("popc", family="bits")
def lower_popc(lw: FnLowering, ins: Instr) -> None:
    """popc: population count (result .u32)."""
    t = _type(ins)
    a = lw.read(ins.operands[1], t)
    r = _intr(lw, "llvm.ctpop", a.type, [a])
    lw.write(ins.operands[0], _to32(lw, r), "u32")


@rule("clz", family="bits")
def lower_clz(lw: FnLowering, ins: Instr) -> None:
    """clz: count leading zeros (result .u32; clz(0) = width)."""
    t = _type(ins)
    a = lw.read(ins.operands[1], t)
    r = _intr(lw, "llvm.ctlz", a.type, [a, const_int(I1, 0)])
    lw.write(ins.operands[0], _to32(lw, r), "u32")


def _to32(lw: FnLowering, v: ll.Value) -> ll.Value:
    if v.type.width == 32:
        return v
    return lw.b.trunc(v, I32) if v.type.width > 32 else lw.b.zext(v, I32)


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


def _field_types(ins: Instr) -> tuple[str, int, ll.IntType, ll.IntType]:
    """bfe/bfi's type, its width w, the w-bit integer type and the 2w-bit one the field is computed in."""
    t = _type(ins)
    w = _width(t)
    return t, w, ll.IntType(w), ll.IntType(2 * w)


def _pos_len(lw: FnLowering, ins: Instr, first: int) -> tuple[ll.Value, ll.Value]:
    """bfe/bfi's `pos` and `len` operands (operands[first], operands[first + 1]): only bits 0-7 count."""
    pos = lw.b.and_(lw.read(ins.operands[first], "u32"), const_int(I32, 0xFF))
    ln = lw.b.and_(lw.read(ins.operands[first + 1], "u32"), const_int(I32, 0xFF))
    return pos, ln


def _clamp(b: ll.IRBuilder, v: ll.Value, limit: int, w: int, w2: ll.IntType) -> ll.Value:
    """The i32 `v` widened to `w2`, saturated to `w` when v > limit (bfe/bfi clamp pos and len to the width)."""
    return b.select(b.icmp_unsigned(">", v, const_int(I32, limit)), ll.Constant(w2, w), b.zext(v, w2))


@rule("bfe", family="bits")
def lower_bfe(lw: FnLowering, ins: Instr) -> None:
    """bfe: extract `len` bits at `pos` (signed types replicate the field's top bit)."""
    b = lw.b
    t, w, wt, w2 = _field_types(ins)
    a = lw.read(ins.operands[1], t)
    pos, ln = _pos_len(lw, ins, 2)
    msb = const_int(I32, w - 1)
    # sign bit: a[min(pos+len-1, msb)], 0 when len == 0
    top = b.sub(b.add(pos, ln), const_int(I32, 1))
    top = b.select(b.icmp_unsigned("<", top, msb), top, msb)
    sbit = b.trunc(b.lshr(a, b.zext(top, wt) if w > 32 else _fit(lw, top, wt)), I1)
    if not _signed(t):
        sbit = const_int(I1, 0)
    sbit = b.and_(sbit, b.icmp_unsigned("!=", ln, const_int(I32, 0)))
    a2 = b.zext(a, w2)
    pos2 = _clamp(b, pos, w - 1, w, w2)
    shifted = b.lshr(a2, pos2)
    ln2 = _clamp(b, ln, w, w, w2)
    mask = b.sub(b.shl(ll.Constant(w2, 1), ln2), ll.Constant(w2, 1))  # (1<<len)-1 in 2w bits
    # bits at or above msb+1-pos are not available: they take the sign bit
    avail = b.sub(ll.Constant(w2, w), pos2)
    amask = b.sub(b.shl(ll.Constant(w2, 1), avail), ll.Constant(w2, 1))
    fmask = b.and_(mask, amask)
    field = b.and_(shifted, fmask)
    fill = b.select(sbit, b.not_(fmask), ll.Constant(w2, 0))
    r = b.trunc(b.or_(field, fill), wt)
    lw.write(ins.operands[0], r, t)


def _fit(lw: FnLowering, v: ll.Value, t: ll.IntType) -> ll.Value:
    if v.type.width == t.width:
        return v
    return lw.b.trunc(v, t) if v.type.width > t.width else lw.b.zext(v, t)


@rule("bfi", family="bits")
def lower_bfi(lw: FnLowering, ins: Instr) -> None:
    """bfi: insert the low `len` bits of a into b at `pos`."""
    b = lw.b
    t, w, wt, w2 = _field_types(ins)
    a = b.zext(lw.read(ins.operands[1], t), w2)
    base = b.zext(lw.read(ins.operands[2], t), w2)
    pos, ln = _pos_len(lw, ins, 3)
    pos2 = _clamp(b, pos, w - 1, w, w2)
    ln2 = _clamp(b, ln, w, w, w2)
    mask = b.shl(b.sub(b.shl(ll.Constant(w2, 1), ln2), ll.Constant(w2, 1)), pos2)
    mask = b.and_(mask, ll.Constant(w2, (1 << w) - 1))
    r = b.or_(b.and_(base, b.not_(mask)), b.and_(b.shl(a, pos2), mask))
    lw.write(ins.operands[0], b.trunc(r, wt), t)


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
    if ins.has("wrap"):
        n = b.and_(n, const_int(I32, 31))
    else:
        n = b.select(b.icmp_unsigned(">", n, const_int(I32, 32)), const_int(I32, 32), n)
    n64 = b.zext(n, I64)
    pair = b.or_(a, b.shl(hi, const_int(I64, 32)))
    if ins.has("l"):
        r = b.trunc(b.lshr(b.shl(pair, n64), const_int(I64, 32)), I32)
    else:
        r = b.trunc(b.lshr(pair, n64), I32)
    lw.write(ins.operands[0], r, "b32")


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


# ---------------------------------------------------------------- dot products


def _bytes_of(lw: FnLowering, v: ll.Value, signed: bool, count: int, size: int, first: int = 0) -> list:
    b = lw.b
    out = []
    st = ll.IntType(8 * size)
    for i in range(first, first + count):
        x = b.trunc(b.lshr(v, const_int(I32, 8 * size * i)), st)
        out.append(b.sext(x, I32) if signed else b.zext(x, I32))
    return out


@rule("dp4a", "dp2a", family="integer")
def lower_dp(lw: FnLowering, ins: Instr) -> None:
    """dp4a / dp2a.lo/.hi: integer dot products of packed bytes / halves, accumulated into c."""
    b = lw.b
    ts = ins.types()
    at, bt = ts[0], ts[1]
    a = lw.read(ins.operands[1], "b32")
    c = lw.read(ins.operands[2], "b32")
    acc = lw.read(ins.operands[3], "b32")
    if ins.opcode == "dp4a":
        pa = _bytes_of(lw, a, _signed(at), 4, 1)
        pb = _bytes_of(lw, c, _signed(bt), 4, 1)
    else:
        pa = _bytes_of(lw, a, _signed(at), 2, 2)
        pb = _bytes_of(lw, c, _signed(bt), 2, 1, 2 if ins.has("hi") else 0)
    r = acc
    for x, y in zip(pa, pb, strict=True):
        r = b.add(r, b.mul(x, y))
    lw.write(ins.operands[0], r, "s32" if _signed(at) or _signed(bt) else "u32")


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


@rule("bmsk", family="bits")
def lower_bmsk(lw: FnLowering, ins: Instr) -> None:
    """bmsk.clamp/.wrap.b32 d, a, b: b one-bits starting at bit a."""
    b = lw.b
    pos = lw.read(ins.operands[1], "u32")
    width = lw.read(ins.operands[2], "u32")
    if ins.has("wrap"):
        pos, width = b.and_(pos, const_int(I32, 31)), b.and_(width, const_int(I32, 31))
    else:
        lim = const_int(I32, 32)
        pos = b.select(b.icmp_unsigned(">", pos, lim), lim, pos)
        width = b.select(b.icmp_unsigned(">", width, lim), lim, width)
    m = b.sub(b.shl(const_int(I64, 1), b.zext(width, I64)), const_int(I64, 1))
    lw.write(ins.operands[0], b.trunc(b.shl(m, b.zext(pos, I64)), I32), "b32")
