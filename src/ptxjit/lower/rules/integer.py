"""Integer arithmetic rules (bit manipulation and logic are in `bits`).

Opcodes shared with floating point (add, mul, min, ...) dispatch on the instruction type: float
types go to `floating`, half types to `half`.  Where the PTX ISA text and an H100 disagree the
hardware wins; each such place names the golden case (../shared/gpu-golden/isa) that shows it.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.rules import simd16
from ptxjit.lower.types import I16, I32, I64, const_int


def _type(ins: Instr) -> str:
    ts = ins.types()
    if not ts:
        raise ValueError(f"{ins.pos}: '{ins.text}' has no type")
    return ts[-1]


def _signed(t: str) -> bool:
    return t.startswith("s")


def _intr(lw: FnLowering, name: str, ret: ll.Type, args: list[ll.Value]) -> ll.Value:
    return lw.b.call(lw.cg.intrinsic(name, ret, [a.type for a in args]), args)


def _simd16(ins: Instr) -> str | None:
    """'s16x2' / 'u16x2' for the packed integer forms of min/max (not register types, so not in types())."""
    return next((m for m in ins.mods if m in ("s16x2", "u16x2")), None)


def _check_int(ins: Instr) -> str | None:
    ts = ins.types()
    if ins.opcode in ("add", "sub") and _simd16(ins) is not None and not ts:
        return None  # simd16.py
    if ins.opcode in ("min", "max") and _simd16(ins) is not None and not ts:
        return None if not ins.has("relu") or _simd16(ins) == "s16x2" else ".relu needs .s16x2"
    if not ts:
        return "missing type"
    return None  # (the float and half forms: floating.py's and half.py's form rules)


# ---------------------------------------------------------------- add / sub with carry
#
# CC.CF is one carry flag shared by additions and subtractions, as on the hardware: ptxas compiles
# sub.cc a, b to the carry-out of a + ~b + 1 (IADD3 with -b: 1 when no borrow) and subc a, b to
# a + ~b + CF, so a subtraction chain borrows through the inverted flag, and a flag an addition set
# reads, in a subc, as the complement of a borrow (add.cc 0, 0; subc 0, 0 gives 0xffffffff), as does a
# subtraction's flag in an addc (sub.cc 0, 0; addc 0, 0 gives 1).  Chains of one kind come out as
# exact multi-word arithmetic either way (golden cases isa_{add,sub}_cc_{u32,s32,u64}_chain,
# isa_mad_lo_cc_*_chain, isa_madc_lo_u32_chain); tests/test_carry_chains.py checks the mixed ones.


def _carry_slot(lw: FnLowering) -> ll.Value:
    slot = getattr(lw, "carry_flag", None)
    if slot is None:
        with lw.b.goto_entry_block():
            slot = lw.b.alloca(I32, name="cc_cf")
            # the hardware flag holds whatever ran before; a defined 0 keeps LLVM from folding through undef
            lw.b.store(const_int(I32, 0), slot)
        lw.carry_flag = slot
    return slot


def _carry_in(lw: FnLowering, t: ll.IntType) -> ll.Value:
    cf = lw.b.load(_carry_slot(lw))
    return lw.b.zext(cf, t) if t.width > 32 else lw.b.trunc(cf, t) if t.width < 32 else cf


@rule("add", "sub", family="integer", check=_check_int)
def lower_add_sub(lw: FnLowering, ins: Instr) -> None:
    """add/sub: integer (.sat, .cc), packed .s16x2/.u16x2 (simd16.py) and float (dispatch)."""
    if _simd16(ins) is not None:
        simd16.lower_add_sub(lw, ins)
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
        # the carry-out of a + b, or of a + ~b + 1 (no borrow)
        cf = b.icmp_unsigned("<", r, a) if is_add else b.icmp_unsigned(">=", a, c)
        b.store(b.zext(cf, I32), _carry_slot(lw))
    lw.write(d, r, t)


@rule("addc", "subc", family="integer")
def lower_addc(lw: FnLowering, ins: Instr) -> None:
    """addc/subc: add/subtract with carry-in from CC.CF (optionally .cc carry-out)."""
    b = lw.b
    t = _type(ins)
    d, a_op, b_op = ins.operands[:3]
    a, c = lw.read(a_op, t), lw.read(b_op, t)
    cin = _carry_in(lw, a.type)
    # subc a, b is a + ~b + CF: a - b - 1 + CF
    s1 = b.add(a, c if ins.opcode == "addc" else b.not_(c))
    r = b.add(s1, cin)
    cf = b.or_(b.icmp_unsigned("<", s1, a), b.icmp_unsigned("<", r, s1))
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
    """mul.lo/.hi/.wide (integer; the float forms are floating.py's and half.py's)."""
    t = _type(ins)
    d, a_op, b_op = ins.operands[:3]
    r, rt = _mul_mode(lw, ins, lw.read(a_op, t), lw.read(b_op, t), t)
    lw.write(d, r, rt)


@rule("mad", "madc", family="integer", check=_check_int)
def lower_mad(lw: FnLowering, ins: Instr) -> None:
    """mad.lo/.hi/.wide (+.cc, madc) integer (the float forms: floating.py's and half.py's)."""
    b = lw.b
    t = _type(ins)
    d, a_op, b_op, c_op = ins.operands[:4]
    a, m = lw.read(a_op, t), lw.read(b_op, t)
    p, rt = _mul_mode(lw, ins, a, m, t)
    if lw.is_pointer_reg(d):
        # pointer + product (passes/pointers.py is_pointer_mad): a getelementptr, as for add
        lw.write(d, b.gep(lw.read_pointer(c_op), [p]), rt)
        return
    c = lw.read(c_op, rt)
    if ins.has("sat") and ins.has("hi"):
        r = _intr(lw, "llvm.sadd.sat", p.type, [p, c])
    else:
        r = b.add(p, c)
    carry_in = ins.opcode == "madc"
    if carry_in:
        cin = _carry_in(lw, r.type)
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
        c = lw.read(ins.operands[3], t)
        # .sat (only mad24.hi.sat.s32) saturates the addition (isa_mad24_hi_sat_s32)
        r = _intr(lw, "llvm.sadd.sat", I32, [r, c]) if ins.has("sat") else b.add(r, c)
    lw.write(ins.operands[0], r, t)


# ---------------------------------------------------------------- div / rem


@rule("div", "rem", family="integer", check=_check_int)
def lower_div(lw: FnLowering, ins: Instr) -> None:
    """div/rem: integer; division by zero gives all ones for both (isa_div_*, isa_rem_*: the H100's
    rem by 0 is all ones, not the dividend), and INT_MIN / -1 wraps instead of a CPU fault."""
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
            r = b.select(is_m1, zero, b.select(is_zero, ones, q))
    else:
        safe = b.select(is_zero, ll.Constant(a.type, 1), c)
        if ins.opcode == "div":
            r = b.select(is_zero, ones, b.udiv(a, safe))
        else:
            r = b.select(is_zero, ones, b.urem(a, safe))
    lw.write(d, r, t)


# ---------------------------------------------------------------- abs / neg / min / max / sad


@rule("abs", "neg", family="integer", check=_check_int)
def lower_abs_neg(lw: FnLowering, ins: Instr) -> None:
    """abs/neg: integer two's complement (the float and half forms: floating.py's and half.py's)."""
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
    simd = _simd16(ins)
    if simd is not None:
        _min_max_16x2(lw, ins, simd)
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


def _min_max_16x2(lw: FnLowering, ins: Instr, t: str) -> None:
    """min/max.s16x2/.u16x2 (.relu: each signed half clamped at 0): per 16-bit half."""
    b = lw.b
    a, c = lw.read(ins.operands[1], "b32"), lw.read(ins.operands[2], "b32")
    signed = t == "s16x2"
    op = "<" if ins.opcode == "min" else ">"
    r = const_int(I32, 0)
    for k in range(2):
        x = b.trunc(b.lshr(a, const_int(I32, 16 * k)), I16)
        y = b.trunc(b.lshr(c, const_int(I32, 16 * k)), I16)
        m = b.select(b.icmp_signed(op, x, y) if signed else b.icmp_unsigned(op, x, y), x, y)
        if ins.has("relu"):
            m = b.select(b.icmp_signed("<", m, const_int(I16, 0)), const_int(I16, 0), m)
        r = b.or_(r, b.shl(b.zext(m, I32), const_int(I32, 16 * k)))
    lw.write(ins.operands[0], r, "b32")


@rule("sad", family="integer")
def lower_sad(lw: FnLowering, ins: Instr) -> None:
    """sad: d = c + |a - b|."""
    b = lw.b
    t = _type(ins)
    a, c, acc = (lw.read(op, t) for op in ins.operands[1:4])
    lt = b.icmp_signed("<", a, c) if _signed(t) else b.icmp_unsigned("<", a, c)
    diff = b.select(lt, b.sub(c, a), b.sub(a, c))
    lw.write(ins.operands[0], b.add(acc, diff), t)


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
