"""Comparison and selection: setp, set, selp, slct."""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr, is_float_type
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.rules.floating import ftz
from ptxjit.lower.rules.half import half_lanes_as_f64, pack_halves
from ptxjit.lower.types import F32, I16, I32, const_int

INT_CMP = {"eq": ("==", None), "ne": ("!=", None), "lt": ("<", None), "le": ("<=", None), "gt": (">", None),
           "ge": (">=", None), "lo": ("<", "u"), "ls": ("<=", "u"), "hi": (">", "u"), "hs": (">=", "u")}
FLOAT_CMP = {"eq": ("==", "o"), "ne": ("!=", "o"), "lt": ("<", "o"), "le": ("<=", "o"), "gt": (">", "o"),
             "ge": (">=", "o"), "equ": ("==", "u"), "neu": ("!=", "u"), "ltu": ("<", "u"), "leu": ("<=", "u"),
             "gtu": (">", "u"), "geu": (">=", "u"), "num": ("ord", "o"), "nan": ("uno", "u")}
BOOL_OPS = ("and", "or", "xor")
HALF = ("f16", "bf16", "f16x2", "bf16x2")


def _cmp_op(ins: Instr) -> str:
    for m in ins.mods:
        if m in FLOAT_CMP or m in INT_CMP:
            return m
    raise ValueError(f"{ins.pos}: {ins.text}: no comparison operator")


def _check_cmp(ins: Instr) -> str | None:
    ts = ins.types()
    if not ts:
        return "missing type"
    op = next((m for m in ins.mods if m in FLOAT_CMP or m in INT_CMP), None)
    if op is None:
        return "missing comparison operator"
    st = ts[-1]
    if is_float_type(st) and op not in FLOAT_CMP:
        return f"comparison .{op} is not defined for floating point"
    if not is_float_type(st) and op not in INT_CMP:
        return f"comparison .{op} is not defined for integers"
    return None


def compare(lw: FnLowering, op: str, t: str, a: ll.Value, c: ll.Value) -> ll.Value:
    b = lw.b
    if is_float_type(t):
        sym, kind = FLOAT_CMP[op]
        return b.fcmp_ordered(sym, a, c) if kind == "o" else b.fcmp_unordered(sym, a, c)
    sym, kind = INT_CMP[op]
    if kind == "u" or t.startswith(("u", "b")) or sym in ("==", "!="):
        return b.icmp_unsigned(sym, a, c)
    return b.icmp_signed(sym, a, c)


def _compare_lanes(lw: FnLowering, ins: Instr, t: str) -> list[ll.Value]:
    op = _cmp_op(ins)
    a_op, c_op = ins.operands[1], ins.operands[2]
    if t in HALF:
        # .ftz flushes subnormal half inputs (golden isa_setp_eq_ftz_f16(0x0000, 0x0001) = 1)
        flush = ins.has("ftz")
        la, lc = half_lanes_as_f64(lw, a_op, t, flush), half_lanes_as_f64(lw, c_op, t, flush)
        return [compare(lw, op, "f64", x, y) for x, y in zip(la, lc, strict=True)]
    a, c = lw.read(a_op, t), lw.read(c_op, t)
    if ins.has("ftz") and a.type == F32:
        a, c = ftz(lw, a), ftz(lw, c)
    return [compare(lw, op, t, a, c)]


def _combine(lw: FnLowering, ins: Instr, r: ll.Value, want_q: bool = False) -> tuple[ll.Value, ll.Value | None]:
    """Apply the optional .and/.or/.xor with predicate c: returns (p, q); q (from !r) only if `want_q`."""
    b = lw.b
    bop = next((m for m in ins.mods if m in BOOL_OPS), None)
    nr = b.not_(r) if want_q else None
    if bop is None:
        return r, nr
    c = lw.read_pred(ins.operands[3])
    f = {"and": b.and_, "or": b.or_, "xor": b.xor}[bop]
    return f(r, c), (f(nr, c) if want_q else None)


@rule("setp", family="compare", check=_check_cmp)
def lower_setp(lw: FnLowering, ins: Instr) -> None:
    """setp.cmp[.bool].type p[|q], a, b[, {!}c] (half x2: p = low lane, q = high lane)."""
    t = ins.types()[-1]
    lanes = _compare_lanes(lw, ins, t)
    d = ins.operands[0]
    if t.endswith("x2"):
        p0, _ = _combine(lw, ins, lanes[0])
        p1, _ = _combine(lw, ins, lanes[1])
        first, second = (d.first, d.second) if hasattr(d, "first") else (d, None)
        lw.write(first, p0, "pred")
        if second is not None:
            lw.write(second, p1, "pred")
        return
    p, q = _combine(lw, ins, lanes[0], want_q=hasattr(d, "first"))
    if hasattr(d, "first"):
        lw.write(d.first, p, "pred")
        lw.write(d.second, q, "pred")
    else:
        lw.write(d, p, "pred")


@rule("set", family="compare", check=_check_cmp)
def lower_set(lw: FnLowering, ins: Instr) -> None:
    """set.cmp[.bool].dtype.stype: all-ones/0 for integer dtype, 1.0/0.0 for f32."""
    b = lw.b
    ts = ins.types()
    dt, st = ts[0], ts[-1]
    lanes = _compare_lanes(lw, ins, st)
    outs = []
    for r in lanes:
        p, _ = _combine(lw, ins, r)
        outs.append(p)
    if dt == "f32":
        v = b.select(outs[0], ll.Constant(F32, 1.0), ll.Constant(F32, 0.0))
    elif dt in HALF or len(outs) == 2:
        # per 16-bit lane: 1.0 in the half format, or all ones for an integer destination
        one = 0xFFFF if dt not in HALF else 0x3F80 if dt.startswith("bf16") else 0x3C00
        halves = [b.select(p, const_int(I16, one), const_int(I16, 0)) for p in outs]
        v = pack_halves(lw, halves)
        dt = "b32" if len(outs) == 2 else "b16"
    else:
        v = b.sext(outs[0], I32)
    lw.write(ins.operands[0], v, dt)


@rule("selp", family="compare")
def lower_selp(lw: FnLowering, ins: Instr) -> None:
    """selp.type d, a, b, c: d = c ? a : b."""
    t = ins.types()[-1]
    a, c = lw.read(ins.operands[1], t), lw.read(ins.operands[2], t)
    p = lw.read_pred(ins.operands[3])
    lw.write(ins.operands[0], lw.b.select(p, a, c), t)


@rule("slct", family="compare")
def lower_slct(lw: FnLowering, ins: Instr) -> None:
    """slct.dtype.s32/f32 d, a, b, c: d = (c >= 0) ? a : b."""
    b = lw.b
    ts = ins.types()
    dt, ct = ts[0], ts[-1]
    a, c = lw.read(ins.operands[1], dt), lw.read(ins.operands[2], dt)
    sel = lw.read(ins.operands[3], ct)
    if ct == "f32":
        if ins.has("ftz"):
            sel = ftz(lw, sel)
        p = b.fcmp_ordered(">=", sel, ll.Constant(F32, 0.0))
    else:
        p = b.icmp_signed(">=", sel, ll.Constant(sel.type, 0))
    lw.write(ins.operands[0], b.select(p, a, c), dt)

