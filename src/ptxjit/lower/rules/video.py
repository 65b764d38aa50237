"""Video instructions: scalar vadd/vsub/vabsdiff/vmin/vmax/vshl/vshr/vmad/vset and the SIMD
vadd2/vsub2/vavrg2/vabsdiff2/vmin2/vmax2/vset2 (and ...4) forms.

Operands may carry selectors (`%r1.b0`, `%r1.h1`; SIMD `%r1.h10`, `%r1.b7531`), kept by the parser
in `Reg.sel`; vmad operands may be negated (`-%r1`, `Reg.minus`).

The semantics follow the PTX ISA where an H100 agrees with it and the H100 where not (sm_90 has no
video unit: ptxas emulates these, with its own corner cases).  Each deviation names the golden case
in ../shared/gpu-golden/isa that shows it:

- the scalar result is a 34-bit two's-complement intermediate before saturation: vshl.sat of a
  value that overflows 34 bits saturates by its bits 33..0 (isa_vshl_s32_s32_u32_sat_clamp);
- .sat with an unsigned destination clamps below at 0 but wraps above U32_MAX
  (isa_vadd_u32_s32_u32_sat, isa_vabsdiff_u32_s32_u32_sat);
- the secondary .min/.max compare the vadd/vsub result wrapped to 32 bits
  (isa_vadd_s32_s32_s32_min, isa_vsub_s32_s32_s32_min), the vabsdiff result unwrapped
  (isa_vabsdiff_s32_s32_s32_min) and the vshl result as a 64-bit value (isa_vshl_s32_u32_u32_clamp_max);
- .sat with a destination selector writes 0 into the selected field
  (isa_vadd_s32_s32_s32_sat_h0h1_dh1 and its vsub/vabsdiff/vmin/vmax twins);
- vmad sign-extends both a and b when the result is signed (either type signed or a negation), and
  always sign-extends c (isa_vmad_s32_u32_s32_sat, isa_vmad_u32_u32_u32_shr7_b1b2);
- SIMD forms keep c's lanes where the mask does not select (isa_vadd2_u32_u32_u32_sel).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.types import I32, I64, I128, const_int

SCALAR_OPS = ("vadd", "vsub", "vabsdiff", "vmin", "vmax")
SHIFT_OPS = ("vshl", "vshr")
SIMD_BASE = ("vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax", "vset")
SIMD_OPS = tuple(f"{op}{n}" for n in (2, 4) for op in SIMD_BASE)
OP2 = ("add", "min", "max")
CMPS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
# scalar selectors: (bit offset, width)
SCALAR_SEL = {"b0": (0, 8), "b1": (8, 8), "b2": (16, 8), "b3": (24, 8), "h0": (0, 16), "h1": (16, 16)}
VTYPES = ("u32", "s32")
M32 = (1 << 32) - 1


def _vtypes(ins: Instr) -> list[str]:
    return [m for m in ins.mods if m in VTYPES]


def _sel(op) -> str:
    return op.sel if isinstance(op, ir.Reg) else ""


def _op2(ins: Instr) -> str | None:
    return next((m for m in ins.mods if m in OP2), None)


# ---------------------------------------------------------------- load-time checks


def _check_operands(ins: Instr, n_min: int, n_max: int) -> str | None:
    ops = ins.operands
    if not n_min <= len(ops) <= n_max:
        return f"{ins.opcode} takes {n_min} to {n_max} operands"
    if not isinstance(ops[0], ir.Reg):
        return "the destination must be a register"
    for op in ops:
        if not isinstance(op, ir.Reg | ir.Imm):
            return f"operand {op!r} is not a register or an integer"
        if isinstance(op, ir.Reg) and op.minus and ins.opcode != "vmad":
            return "only vmad takes negated operands"
    return None


def _check_scalar(ins: Instr) -> str | None:
    op = ins.opcode
    ntypes = 2 if op == "vset" else 3
    ts = _vtypes(ins)
    if len(ts) != ntypes:
        return f"{op} needs {ntypes} types from .u32/.s32"
    if op in SHIFT_OPS and ts[2] != "u32":
        return f"{op}: the shift amount type must be .u32"
    allowed = set(VTYPES) | {"sat"} | set(OP2)
    if op in SHIFT_OPS:
        allowed |= {"clamp", "wrap"}
        if ins.has("clamp") == ins.has("wrap"):
            return f"{op} needs exactly one of .clamp/.wrap"
    if op == "vmad":
        allowed = set(VTYPES) | {"sat", "shr7", "shr15", "po"}
        if ins.has("shr7") and ins.has("shr15"):
            return "vmad takes one of .shr7/.shr15"
    if op == "vset":
        allowed = set(VTYPES) | set(OP2) | set(CMPS)
        if sum(m in CMPS for m in ins.mods) != 1:
            return "vset needs one comparison (.eq, .ne, .lt, .le, .gt, .ge)"
    bad = [m for m in ins.mods if m not in allowed]
    if bad:
        return f"modifier .{bad[0]} is not supported on {op}"
    if sum(m in OP2 for m in ins.mods) > 1:
        return "at most one secondary operation (.add/.min/.max)"
    if op == "vmad":
        err = _check_operands(ins, 4, 4)
        if err:
            return err
        d, a, b_, c = ins.operands
        if _sel(d) or _sel(c):
            return "vmad takes no destination or c selector"
        if ins.has("po") and any(isinstance(o, ir.Reg) and o.minus for o in ins.operands):
            return "vmad.po takes no negated operands"
    else:
        err = _check_operands(ins, 3, 4)
        if err:
            return err
        d = ins.operands[0]
        if len(ins.operands) == 3 and (_op2(ins) or _sel(d)):
            return "a secondary operation or a destination selector needs the c operand"
        if len(ins.operands) == 4 and not _op2(ins) and not _sel(d):
            return "the c operand needs a secondary operation or a destination selector"
        if _op2(ins) and _sel(d):
            return "a secondary operation and a destination selector cannot be combined"
        if len(ins.operands) == 4 and _sel(ins.operands[3]):
            return "the c operand takes no selector"
    for o in ins.operands:
        s = _sel(o)
        if s and s not in SCALAR_SEL:
            return f"selector .{s} is not a scalar video selector (.b0-.b3, .h0, .h1)"
    return None


def _check_simd(ins: Instr) -> str | None:
    base, n = ins.opcode[:-1], int(ins.opcode[-1])
    ts = _vtypes(ins)
    ntypes = 2 if base == "vset" else 3
    if len(ts) != ntypes:
        return f"{ins.opcode} needs {ntypes} types from .u32/.s32"
    allowed = set(VTYPES) | {"add"} | (set(CMPS) if base == "vset" else {"sat"})
    bad = [m for m in ins.mods if m not in allowed]
    if bad:
        return f"modifier .{bad[0]} is not supported on {ins.opcode}"
    if base == "vset" and sum(m in CMPS for m in ins.mods) != 1:
        return "vset needs one comparison (.eq, .ne, .lt, .le, .gt, .ge)"
    if ins.has("sat") and ins.has("add"):
        return ".sat and .add cannot be combined"
    err = _check_operands(ins, 4, 4)
    if err:
        return err
    d, a, b_, c = ins.operands
    letter, top = ("h", 3) if n == 2 else ("b", 7)
    for o, what in ((a, "a"), (b_, "b")):
        s = _sel(o)
        if s and not (len(s) == n + 1 and s[0] == letter and all(int(ch) <= top for ch in s[1:])):
            return f"selector .{s} on {what} is not a .{letter}{'xy' if n == 2 else 'xyzw'} selector"
    s = _sel(d)
    if s and not (s[0] == letter and 2 <= len(s) <= n + 1 and all(int(ch) < n for ch in s[1:])
                  and len(set(s[1:])) == len(s) - 1):
        return f"mask .{s} is not a {ins.opcode} destination mask"
    if _sel(c):
        return "the c operand takes no selector"
    return None


# ---------------------------------------------------------------- scalar


def _field(lw: FnLowering, op, signed: bool, width: int = 64) -> ll.Value:
    """A scalar source operand after its selector, sign- or zero-extended to `width` bits."""
    b = lw.b
    v = lw.read(op, "b32")
    off, w = SCALAR_SEL.get(_sel(op), (0, 32))
    if off:
        v = b.lshr(v, const_int(I32, off))
    if w < 32:
        v = b.trunc(v, ll.IntType(w))
    t = ll.IntType(width)
    return b.sext(v, t) if signed else b.zext(v, t)


def _merge(lw: FnLowering, dsel: str, v: ll.Value, c: ll.Value) -> ll.Value:
    """c with the field `dsel` replaced by the low bits of the i32 `v`."""
    b = lw.b
    off, w = SCALAR_SEL[dsel]
    mask = ((1 << w) - 1) << off
    field = b.and_(b.shl(v, const_int(I32, off)), const_int(I32, mask))
    return b.or_(field, b.and_(c, const_int(I32, ~mask & M32)))


def _scalar_post(lw: FnLowering, ins: Instr, t: ll.Value) -> ll.Value:
    """Saturation and the secondary operation or destination merge of a scalar video result.
    `t` is the i64 intermediate (exact for all but vshl, whose i64 keeps the low 64 bits)."""
    b = lw.b
    op = ins.opcode
    signed = _vtypes(ins)[0] == "s32"
    sat = ins.has("sat")
    op2 = _op2(ins)
    d = ins.operands[0]
    c = lw.read(ins.operands[3], "b32") if len(ins.operands) > 3 else None
    if op2 in ("min", "max") and not sat and op == "vshl":
        v = t  # compared as a 64-bit value (isa_vshl_s32_u32_u32_clamp_max)
    else:
        v = b.ashr(b.shl(t, const_int(I64, 30)), const_int(I64, 30))  # 34-bit intermediate
    if sat:
        if signed:
            v = b.select(b.icmp_signed(">", v, const_int(I64, (1 << 31) - 1)), const_int(I64, (1 << 31) - 1), v)
            v = b.select(b.icmp_signed("<", v, const_int(I64, -(1 << 31))), const_int(I64, -(1 << 31)), v)
        else:
            v = b.select(b.icmp_signed("<", v, const_int(I64, 0)), const_int(I64, 0), b.and_(v, const_int(I64, M32)))
    if op2 == "add":
        return b.add(b.trunc(v, I32), c)
    if op2 is not None:
        if not sat and op in ("vadd", "vsub"):
            low = b.trunc(v, I32)
            v = b.sext(low, I64) if signed else b.zext(low, I64)
        cc = b.sext(c, I64) if signed else b.zext(c, I64)
        pick = b.icmp_signed("<" if op2 == "min" else ">", v, cc)
        return b.trunc(b.select(pick, v, cc), I32)
    if _sel(d):
        return _merge(lw, _sel(d), const_int(I32, 0) if sat else b.trunc(v, I32), c)
    return b.trunc(v, I32)


@rule(*SCALAR_OPS, family="video", check=_check_scalar)
def lower_vop(lw: FnLowering, ins: Instr) -> None:
    """vadd/vsub/vabsdiff/vmin/vmax.dtype.atype.btype{.sat}{.add/.min/.max} with byte/half selectors."""
    b = lw.b
    _, at, bt = _vtypes(ins)
    ta = _field(lw, ins.operands[1], at == "s32")
    tb = _field(lw, ins.operands[2], bt == "s32")
    op = ins.opcode
    if op == "vadd":
        t = b.add(ta, tb)
    elif op == "vsub":
        t = b.sub(ta, tb)
    elif op == "vabsdiff":
        diff = b.sub(ta, tb)
        t = b.select(b.icmp_signed("<", diff, const_int(I64, 0)), b.sub(const_int(I64, 0), diff), diff)
    else:
        t = b.select(b.icmp_signed("<" if op == "vmin" else ">", ta, tb), ta, tb)
    lw.write(ins.operands[0], _scalar_post(lw, ins, t), "b32")


@rule(*SHIFT_OPS, family="video", check=_check_scalar)
def lower_vshift(lw: FnLowering, ins: Instr) -> None:
    """vshl/vshr.dtype.atype.u32.clamp/.wrap: shift by b (clamped to 32 or taken mod 32)."""
    b = lw.b
    _, at, _ = _vtypes(ins)
    ta = _field(lw, ins.operands[1], at == "s32")
    n = _field(lw, ins.operands[2], False)
    if ins.has("wrap"):
        n = b.and_(n, const_int(I64, 31))
    else:
        n = b.select(b.icmp_unsigned(">", n, const_int(I64, 32)), const_int(I64, 32), n)
    t = b.shl(ta, n) if ins.opcode == "vshl" else b.ashr(ta, n)  # ta is extended: ashr is exact for both
    lw.write(ins.operands[0], _scalar_post(lw, ins, t), "b32")


@rule("vmad", family="video", check=_check_scalar)
def lower_vmad(lw: FnLowering, ins: Instr) -> None:
    """vmad.dtype.atype.btype{.po}{.sat}{.shr7/.shr15} d, {-}a, {-}b, {-}c: (a*b + c) >> scale."""
    b = lw.b
    _, at, bt = _vtypes(ins)
    d, a_op, b_op, c_op = ins.operands
    na, nb, nc = (isinstance(o, ir.Reg) and o.minus for o in (a_op, b_op, c_op))
    # signedness of the whole computation; the H100 then extends both a and b with it
    # (isa_vmad_s32_u32_s32_sat)
    sf = at == "s32" or bt == "s32" or (na != nb) or nc
    ta = _field(lw, a_op, sf, 128)
    tb = _field(lw, b_op, sf, 128)
    c = lw.read(c_op, "b32")
    tmp = b.mul(ta, tb)
    lsb = 0
    if ins.has("po"):
        lsb = 1
    elif na != nb:
        tmp, lsb = b.not_(tmp), 1
    elif nc:
        c, lsb = b.not_(c), 1
    # c is sign-extended even for unsigned forms (isa_vmad_u32_u32_u32_shr7_b1b2)
    tmp = b.add(b.add(tmp, b.sext(c, I128)), ll.Constant(I128, lsb))
    scale = 7 if ins.has("shr7") else 15 if ins.has("shr15") else 0
    r = b.ashr(tmp, ll.Constant(I128, scale)) if scale else tmp
    if ins.has("sat"):
        lo, hi = (-(1 << 31), (1 << 31) - 1) if sf else (0, M32)
        r = b.select(b.icmp_signed(">", r, ll.Constant(I128, hi)), ll.Constant(I128, hi), r)
        r = b.select(b.icmp_signed("<", r, ll.Constant(I128, lo)), ll.Constant(I128, lo), r)
    lw.write(d, b.trunc(r, I32), "b32")


@rule("vset", family="video", check=_check_scalar)
def lower_vset(lw: FnLowering, ins: Instr) -> None:
    """vset.atype.btype.cmp: 1 if the comparison holds else 0, then .add/.min/.max c or a merge into c."""
    b = lw.b
    at, bt = _vtypes(ins)
    ta = _field(lw, ins.operands[1], at == "s32")
    tb = _field(lw, ins.operands[2], bt == "s32")
    cmp = next(m for m in ins.mods if m in CMPS)
    t = b.zext(b.icmp_signed(CMPS[cmp], ta, tb), I32)
    op2 = _op2(ins)
    d = ins.operands[0]
    if op2 is not None or _sel(d):
        c = lw.read(ins.operands[3], "b32")
        if op2 == "add":
            t = b.add(t, c)
        elif op2 is not None:
            t = b.select(b.icmp_signed("<" if op2 == "min" else ">", t, c), t, c)
        else:
            t = _merge(lw, _sel(d), t, c)
    lw.write(d, t, "b32")


# ---------------------------------------------------------------- SIMD


def _lanes(lw: FnLowering, a: ll.Value, b_: ll.Value, sel: str, n: int, signed: bool) -> list[ll.Value]:
    """The n lanes (lane 0 first) picked by `sel` from the 2n lanes of {b, a}, extended to i32."""
    b = lw.b
    w = 32 // n
    lt = ll.IntType(w)
    out = []
    for i in range(n):
        k = int(sel[n - i])  # .hxy / .bxyzw name lanes from the top down
        src = a if k < n else b_
        x = b.trunc(b.lshr(src, const_int(I32, w * (k % n))), lt)
        out.append(b.sext(x, I32) if signed else b.zext(x, I32))
    return out


@rule(*SIMD_OPS, family="video", check=_check_simd)
def lower_vsimd(lw: FnLowering, ins: Instr) -> None:
    """vadd2/vsub2/vavrg2/vabsdiff2/vmin2/vmax2/vset2 (and ...4): per 16-bit (8-bit) lane, with
    lane selectors, .sat, and either .add (c plus the selected lanes) or a merge into c."""
    b = lw.b
    base, n = ins.opcode[:-1], int(ins.opcode[-1])
    w = 32 // n
    ts = _vtypes(ins)
    dt, at, bt = (None, *ts) if base == "vset" else ts
    d, a_op, b_op, c_op = ins.operands
    a, b_, c = lw.read(a_op, "b32"), lw.read(b_op, "b32"), lw.read(c_op, "b32")
    letter = "h" if n == 2 else "b"
    asel = _sel(a_op) or letter + "".join(str(k) for k in range(n - 1, -1, -1))
    bsel = _sel(b_op) or letter + "".join(str(k) for k in range(2 * n - 1, n - 1, -1))
    mask = {int(ch) for ch in _sel(d)[1:]} if _sel(d) else set(range(n))
    va = _lanes(lw, a, b_, asel, n, at == "s32")
    vb = _lanes(lw, a, b_, bsel, n, bt == "s32")
    cmp = next((m for m in ins.mods if m in CMPS), None)
    zero = const_int(I32, 0)
    lanes = []
    for x, y in zip(va, vb, strict=True):
        if base == "vset":
            r = b.zext(b.icmp_signed(CMPS[cmp], x, y), I32)
        elif base == "vadd":
            r = b.add(x, y)
        elif base == "vsub":
            r = b.sub(x, y)
        elif base == "vavrg":
            s = b.add(x, y)  # (s + 1) >> 1 rounding half up for s >= 0, s >> 1 below
            r = b.ashr(b.add(s, b.zext(b.icmp_signed(">=", s, zero), I32)), const_int(I32, 1))
        elif base == "vabsdiff":
            diff = b.sub(x, y)
            r = b.select(b.icmp_signed("<", diff, zero), b.sub(zero, diff), diff)
        else:
            r = b.select(b.icmp_signed("<" if base == "vmin" else ">", x, y), x, y)
        if ins.has("sat"):
            lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if dt == "s32" else (0, (1 << w) - 1)
            r = b.select(b.icmp_signed(">", r, const_int(I32, hi)), const_int(I32, hi), r)
            r = b.select(b.icmp_signed("<", r, const_int(I32, lo)), const_int(I32, lo), r)
        lanes.append(r)
    if ins.has("add"):
        out = c
        for i, r in enumerate(lanes):
            if i in mask:
                out = b.add(out, r)
    else:
        fm = (1 << w) - 1
        out = b.and_(c, const_int(I32, ~sum(fm << (w * i) for i in mask) & M32))
        for i, r in enumerate(lanes):
            if i in mask:
                out = b.or_(out, b.shl(b.and_(r, const_int(I32, fm)), const_int(I32, w * i)))
    lw.write(d, out, "b32")
