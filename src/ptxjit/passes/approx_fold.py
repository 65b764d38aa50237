"""What ptxas makes of approximate instructions on immediates: constants, correctly rounded.

The GPU never evaluates `rcp/sqrt/rsqrt/ex2/lg2/sin/cos .approx.f32` of an immediate, nor the
reciprocal inside `div.approx/div.full` by an immediate divisor: ptxas folds them at assembly time,
and its constants are the *correctly rounded* function values, not what the multifunction unit
(lower/rules/approx.py) would return — `x / 1.85062420f` is `FMUL x, 0x3f0a54eb` on the GPU while
MUFU.RCP gives 0x3f0a54ea.  Evidence: tests/data/fold/ (ptxas 13's SASS for 18 forms x 60
immediates; tests/test_approx_fold.py).

Only the core evaluation is folded this way; around it ptxas keeps the instruction's expansion, so
special and subnormal arguments, and results outside the normal range, behave as the unit model says
(rcp.ftz of a subnormal is +inf, sin of a subnormal is 0, sqrt of -0 is -0, negative arguments of
sqrt/rsqrt/lg2 are not folded at all).  `folded` therefore answers only where the argument and the
result are normal numbers and returns None elsewhere: the caller then emits the unit model.
"""

from __future__ import annotations

import struct
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import cache

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import build_cfg, defs_uses

F32_MIN_NORMAL = Fraction(1, 2**126)
DIGITS = 80  # far beyond the 2 x 24 bits a hard case of these functions needs


def _value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def _is_normal(bits: int) -> bool:
    return 0 < (bits >> 23) & 0xFF < 255


def round_f32(q: Fraction) -> int | None:
    """The f32 bits nearest to q (ties to even); +-inf past the largest float; None when q is zero or
    would be subnormal (the unit model decides those)."""
    if q == 0 or abs(q) < F32_MIN_NORMAL:
        return None  # (also keeps a scaled subnormal divisor's reciprocal to the unit: ptxas's too)
    sign = 0x80000000 if q < 0 else 0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    scaled = a / Fraction(2) ** (e - 23)  # in [2**23, 2**24)
    m, rest = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * rest
    if twice > scaled.denominator or (twice == scaled.denominator and m & 1):
        m += 1
    if m == 1 << 24:
        m, e = 1 << 23, e + 1
    if e > 127:
        return sign | 0x7F800000
    return sign | (e + 127) << 23 | (m - (1 << 23))


@cache
def _pi() -> Decimal:
    """pi to 3 * DIGITS digits (Machin's formula): enough to reduce any f32 (< 2**128) mod 2 pi."""
    with localcontext() as ctx:
        ctx.prec = 3 * DIGITS + 10

        def arctan_inv(n: int) -> Decimal:
            x, n2, total, k, sign = Decimal(1) / n, n * n, Decimal(0), 1, 1
            term = x
            while term:
                total += sign * term / k
                x /= n2
                term, k, sign = x, k + 2, -sign
            return total

        return 4 * (4 * arctan_inv(5) - arctan_inv(239))


def _sin_cos(x: Decimal, cos: bool) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 3 * DIGITS
        two_pi = 2 * _pi()
        r = x - two_pi * (x / two_pi).to_integral_value()
        if cos:
            r = _pi() / 2 - r
        ctx.prec = DIGITS + 10
        term, total, k = r, r, 1
        while abs(term) > Decimal(10) ** -(DIGITS + 5):
            term = -term * r * r / ((k + 1) * (k + 2))
            total += term
            k += 2
        return total


def _exact(op: str, x: Fraction) -> Fraction | None:
    with localcontext() as ctx:
        ctx.prec = DIGITS
        d = Decimal(x.numerator) / Decimal(x.denominator)
        if op == "rcp":
            return 1 / x
        if op in ("sqrt", "rsqrt", "lg2") and x <= 0:
            return None  # ptxas leaves these to the unit
        if op == "sqrt":
            v = d.sqrt()
        elif op == "rsqrt":
            v = 1 / d.sqrt()
        elif op == "ex2":
            if x > 128 or x < -150:
                return None  # overflow / underflow: the unit model's saturation
            v = (d * Decimal(2).ln()).exp()
        elif op == "lg2":
            v = d.ln() / Decimal(2).ln()
        elif op in ("sin", "cos"):
            v = _sin_cos(d, op == "cos")
        else:
            return None
        return Fraction(v)


def imm_bits(op) -> int | None:
    """The f32 bits of an immediate operand (`0fXXXXXXXX` or a decimal literal), else None."""
    if not isinstance(op, ir.FImm) or op.width == 64:
        return None
    return op.bits if op.bits is not None else struct.unpack("<I", struct.pack("<f", op.value))[0]


def folded(op: str, bits: int, ftz: bool) -> int | None:
    """f32 bits ptxas puts in place of `op.approx(.ftz).f32` of the immediate `bits`, or None where
    the unit model applies (a result that is not a normal number, an argument that is not finite,
    negative arguments of sqrt/rsqrt/lg2).  Subnormal arguments: without .ftz the expansion scales
    them into the unit's range by a power of two, so the fold is the correctly rounded result too;
    with .ftz (and always for sin/cos) the unit flushes them, which the model does."""
    subnormal = (bits >> 23) & 0xFF == 0 and bits & 0x7FFFFF
    if not (_is_normal(bits) or (subnormal and not ftz and op not in ("sin", "cos"))):
        return None
    q = _exact(op, Fraction(_value(bits)))
    return None if q is None else round_f32(q)


def folded_divisor(bits: int, full: bool, ftz: bool) -> tuple[int, int] | None:
    """For `div.approx/full(.ftz).f32 a, IMM`: (scale, rcp) with ptxas's result a * scale * rcp (both
    f32 bits; scale 1/4 for |d| > 2**126 with .full, 2**24 for a subnormal d without .ftz, else 1.0),
    or None where the reciprocal is the unit's (a divisor that is not normal once scaled)."""
    d = Fraction(_value(bits)) if (bits >> 23) & 0xFF != 255 else None
    if d is None:
        return None
    scale = Fraction(1)
    if full and abs(d) > Fraction(2) ** 126:
        scale = Fraction(1, 4)
    elif not ftz and d != 0 and abs(d) < F32_MIN_NORMAL:
        scale = Fraction(2) ** 24
    ds = round_f32(d * scale)
    r = folded("rcp", ds, True) if ds is not None else None
    if r is None:
        return None
    return round_f32(scale), r


APPROX_UNARY = ("rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos")


def _approx_operand(ins: ir.Instr) -> int | None:
    """Index of the operand ptxas folds when it is a constant: the argument of an approximate f32 unary,
    the divisor of div.approx/full.f32."""
    if ins.types() != ["f32"]:
        return None
    if ins.opcode in APPROX_UNARY and ins.has("approx") and len(ins.operands) == 2:
        return 1
    if ins.opcode == "div" and ins.has("approx", "full") and len(ins.operands) == 3:
        return 2
    return None


def propagate_immediates(fn: ir.Function) -> int:
    """Put an immediate in place of a register argument of an approximate instruction when the register
    is only ever set by one unguarded `mov` of that immediate ahead of the use (in the entry block, or
    earlier in the use's block): ptxas propagates such constants and then folds the instruction, so
    `mov.b32 %r5, 0f3FECE141; div.full.f32 %r4, %r2, %r5;` is a multiply by the correctly rounded
    reciprocal on the GPU.  Returns how many operands were replaced."""

    body = fn.body or []
    if not any(isinstance(s, ir.Instr) and _approx_operand(s) for s in body):
        return 0
    n_defs: dict[str, int] = {}
    movs: dict[str, tuple[int, ir.FImm]] = {}
    for i, st in enumerate(body):
        if not isinstance(st, ir.Instr):
            continue
        for r in defs_uses(st)[0]:
            n_defs[r] = n_defs.get(r, 0) + 1
        if (st.opcode == "mov" and st.guard is None and len(st.operands) == 2 and st.types() in (["f32"], ["b32"])
                and isinstance(st.operands[0], ir.Reg) and isinstance(st.operands[1], ir.FImm)
                and imm_bits(st.operands[1]) is not None):
            movs[st.operands[0].name] = (i, st.operands[1])
    blocks, _ = build_cfg(fn)
    block_of = {i: bi for bi, blk in enumerate(blocks) for i in range(blk.start, blk.end)}
    replaced = 0
    for i, st in enumerate(body):
        k = _approx_operand(st) if isinstance(st, ir.Instr) else None
        op = st.operands[k] if k else None
        if (not isinstance(op, ir.Reg) or op.neg or op.minus or op.sel or op.name not in movs
                or n_defs.get(op.name) != 1):
            continue
        at, imm = movs[op.name]
        if at < i and block_of.get(at) in (0, block_of.get(i)):
            operands = list(st.operands)
            operands[k] = imm
            body[i] = ir.Instr(st.opcode, st.mods, operands, st.guard, st.pos, st.src_loc)
            replaced += 1
    return replaced
