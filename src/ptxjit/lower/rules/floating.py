"""f32/f64 arithmetic: IEEE ops with PTX's rounding modes, .ftz, .sat, NaN rules and approximations.

Directed rounding (.rz/.rm/.rp) is exact: the round-to-nearest result is corrected by one ulp
using the sign of the exact error, which error-free transformations (TwoSum, fma residuals) give.
f32 results that are NaN are canonicalized to 0x7FFFFFFF, as the GPU does.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.operands import canon_nan
from ptxjit.lower.registry import form_rule, rule
from ptxjit.lower.rules import approx, fpbits
from ptxjit.lower.types import F32, F64, I1, I32, I64, const_int

ROUND_MODES = ("rn", "rz", "rm", "rp")


def _ft(ins: Instr) -> str:
    return ins.types()[-1]


def _ity(v: ll.Value) -> ll.IntType:
    return I32 if v.type == F32 else I64


def intr(lw: FnLowering, name: str, args: list[ll.Value], ret: ll.Type | None = None) -> ll.Value:
    return lw.b.call(lw.cg.intrinsic(name, ret or args[0].type, [a.type for a in args]), args)


def fconst(t: ll.Type, v: float) -> ll.Constant:
    return ll.Constant(t, v)


def is_nan(lw: FnLowering, x: ll.Value) -> ll.Value:
    return lw.b.fcmp_unordered("uno", x, x)


def arith_nan(lw: FnLowering, x: ll.Value) -> ll.Value:
    """The GPU returns the canonical NaN from arithmetic; canonicalize here only when the destination
    register also receives exact bits from elsewhere (otherwise it is done where the bits are observed,
    which keeps the select off dependency chains such as fma accumulations)."""
    if x.type != F32 or not lw.canonicalize_at_def():
        return x
    return canon_nan(lw, x)


def ftz(lw: FnLowering, x: ll.Value) -> ll.Value:
    """Flush a subnormal f32 to a zero of the same sign."""
    if x.type != F32:
        return x
    b = lw.b
    ax = intr(lw, "llvm.fabs", [x])
    sub = b.fcmp_ordered("<", ax, fconst(F32, 1.1754943508222875e-38))
    zero = intr(lw, "llvm.copysign", [fconst(F32, 0.0), x])
    return b.select(sub, zero, x)


def saturate(lw: FnLowering, x: ll.Value) -> ll.Value:
    """Clamp to [0, 1]; NaN and -0 -> +0."""
    b = lw.b
    t = x.type
    # NaN -> +0, and -0 -> +0 (isa_add_sat_f32: -0 + -0 -> +0)
    lo = b.select(b.fcmp_unordered("ule", x, fconst(t, 0.0)), fconst(t, 0.0), x)
    return b.select(b.fcmp_ordered(">", lo, fconst(t, 1.0)), fconst(t, 1.0), lo)


def next_toward(lw: FnLowering, x: ll.Value, up: ll.Value) -> ll.Value:
    """nextUp(x) if `up` else nextDown(x) (x finite or infinite, not NaN)."""
    b = lw.b
    it = _ity(x)
    bits = b.bitcast(x, it)
    one = ll.Constant(it, 1)
    # magnitude grows when moving away from zero in x's direction
    neg = b.icmp_signed("<", bits, ll.Constant(it, 0))
    is_zero = b.fcmp_ordered("==", x, fconst(x.type, 0.0))
    away = b.xor(up, neg)  # moving up on a positive number, or down on a negative
    stepped = b.select(away, b.add(bits, one), b.sub(bits, one))
    tiny = b.select(up, one, b.or_(one, ll.Constant(it, 1 << (it.width - 1))))
    r = b.select(is_zero, tiny, stepped)
    return b.bitcast(r, x.type)


def directed(lw: FnLowering, r: ll.Value, err_pos: ll.Value, err_neg: ll.Value, mode: str) -> ll.Value:
    """Correct the round-to-nearest result r given the sign of (exact - r)."""
    b = lw.b
    if mode == "rn":
        return r
    if mode == "rp":
        adj = err_pos
        up = const_int(I1, 1)
    elif mode == "rm":
        adj = err_neg
        up = const_int(I1, 0)
    else:  # rz: move toward zero when r overshoots in magnitude (sign bit: -0 counts as negative)
        it = _ity(r)
        rneg = b.icmp_signed("<", b.bitcast(r, it), ll.Constant(it, 0))
        adj = b.select(rneg, err_pos, err_neg)
        up = rneg
    adj = b.and_(adj, b.not_(is_nan(lw, r)))
    return b.select(adj, next_toward(lw, r, up), r)


def _err_signs(lw: FnLowering, e: ll.Value) -> tuple[ll.Value, ll.Value]:
    b = lw.b
    z = fconst(e.type, 0.0)
    return b.fcmp_ordered(">", e, z), b.fcmp_ordered("<", e, z)


def two_sum(lw: FnLowering, x: ll.Value, y: ll.Value) -> tuple[ll.Value, ll.Value]:
    """s + e == x + y exactly (Knuth's TwoSum)."""
    b = lw.b
    s = b.fadd(x, y)
    bv = b.fsub(s, x)
    av = b.fsub(s, bv)
    return s, b.fadd(b.fsub(x, av), b.fsub(y, bv))


def _is_pos_zero(lw: FnLowering, x: ll.Value) -> ll.Value:
    it = _ity(x)
    return lw.b.icmp_unsigned("==", lw.b.bitcast(x, it), ll.Constant(it, 0))


def _zero_sign_rm(lw: FnLowering, r: ll.Value, x: ll.Value, y: ll.Value,
                  exact_zero: ll.Value | None = None) -> ll.Value:
    """IEEE: an exact zero sum x + y is -0 under round-toward-minus, unless both addends are +0."""
    b = lw.b
    it = _ity(r)
    if exact_zero is None:  # for a sum of two values of r's format, r == 0 only when exact
        exact_zero = b.fcmp_ordered("==", r, fconst(r.type, 0.0))
    both_pos_zero = b.and_(_is_pos_zero(lw, x), _is_pos_zero(lw, y))
    neg_zero = b.bitcast(ll.Constant(it, 1 << (it.width - 1)), r.type)
    return b.select(b.and_(exact_zero, b.not_(both_pos_zero)), neg_zero, r)


def _scale_up_if_tiny(lw: FnLowering, x: ll.Value) -> tuple[ll.Value, ll.Value]:
    """(x * k, k) with k = 2**600 when |x| < 2**-400, else k = 1 (exact either way)."""
    b = lw.b
    tiny = b.fcmp_ordered("<", intr(lw, "llvm.fabs", [x]), fconst(F64, 2.0**-400))
    k = b.select(tiny, fconst(F64, 2.0**600), fconst(F64, 1.0))
    return b.fmul(x, k), k


def _f64_mul_error(lw: FnLowering, a: ll.Value, c: ll.Value, r: ll.Value) -> ll.Value:
    """A value with the sign of (a*c - r).  For tiny products the fma residual is not exact, so tiny
    operands are scaled up first (exactly) and r is scaled alike."""
    b = lw.b
    direct = intr(lw, "llvm.fma", [a, c, b.fneg(r)])
    a2, ka = _scale_up_if_tiny(lw, a)
    c2, kc = _scale_up_if_tiny(lw, c)
    ph = b.fmul(a2, c2)
    pl = intr(lw, "llvm.fma", [a2, c2, b.fneg(ph)])
    scaled = b.fadd(b.fsub(ph, b.fmul(b.fmul(r, ka), kc)), pl)
    tiny = b.fcmp_ordered("<", intr(lw, "llvm.fabs", [r]), fconst(F64, 2.0**-960))
    return b.select(tiny, scaled, direct)


def _f64_div_error(lw: FnLowering, a: ll.Value, c: ll.Value, r: ll.Value) -> ll.Value:
    """A value with the sign of (a/c - r), exact also for subnormal quotients (scaled by 2**200)."""
    b = lw.b
    # the residual a - r*c is exact unless it falls into the subnormal range: scale a and r up then
    tiny = b.or_(b.fcmp_ordered("<", intr(lw, "llvm.fabs", [r]), fconst(F64, 2.0**-960)),
                 b.fcmp_ordered("<", intr(lw, "llvm.fabs", [a]), fconst(F64, 2.0**-800)))
    k = b.select(tiny, fconst(F64, 2.0**200), fconst(F64, 1.0))
    rem = intr(lw, "llvm.fma", [b.fneg(b.fmul(r, k)), c, b.fmul(a, k)])
    return b.select(b.fcmp_ordered("<", c, fconst(F64, 0.0)), b.fneg(rem), rem)


def _f32_from_exact(lw: FnLowering, s: ll.Value, e: ll.Value, mode: str) -> ll.Value:
    """Round the exact value s + e (f64, |e| tiny against s) to f32 with a directed mode."""
    b = lw.b
    r = b.fptrunc(s, F32)
    d = b.fsub(s, b.fpext(r, F64))
    z = fconst(F64, 0.0)
    d_zero = b.fcmp_ordered("==", d, z)
    pos = b.or_(b.fcmp_ordered(">", d, z), b.and_(d_zero, b.fcmp_ordered(">", e, z)))
    neg = b.or_(b.fcmp_ordered("<", d, z), b.and_(d_zero, b.fcmp_ordered("<", e, z)))
    return directed(lw, r, pos, neg, mode)


def rounded_binop(lw: FnLowering, op: str, a: ll.Value, c: ll.Value, mode: str) -> ll.Value:
    b = lw.b
    if op == "sub":
        c = b.fneg(c)
        op = "add"
    if mode == "rn":
        return {"add": b.fadd, "mul": b.fmul, "div": b.fdiv}[op](a, c)
    if a.type == F32:
        # exact (or exactly bracketed) in f64, then one directed rounding to f32
        a64, c64 = b.fpext(a, F64), b.fpext(c, F64)
        if op == "add":
            s, e = two_sum(lw, a64, c64)
        elif op == "mul":
            s, e = b.fmul(a64, c64), fconst(F64, 0.0)
        else:
            s = b.fdiv(a64, c64)
            rem = intr(lw, "llvm.fma", [b.fneg(s), c64, a64])
            e = b.select(b.fcmp_ordered("<", c64, fconst(F64, 0.0)), b.fneg(rem), rem)
        r = _f32_from_exact(lw, s, e, mode)
    else:
        if op == "add":
            r, e = two_sum(lw, a, c)
            fin = b.fcmp_ordered("<", intr(lw, "llvm.fabs", [r]), fconst(r.type, float("inf")))
            e = b.select(fin, e, fconst(r.type, 0.0))
        elif op == "mul":
            r = b.fmul(a, c)
            e = _f64_mul_error(lw, a, c, r)
        else:
            r = b.fdiv(a, c)
            e = _f64_div_error(lw, a, c, r)
        pos, neg = _err_signs(lw, e)
        r = _overflow_fix(lw, directed(lw, r, pos, neg, mode), r, a, c, op, mode)
    if op == "add" and mode == "rm":
        r = _zero_sign_rm(lw, r, a, c)
    return r


def _overflow_fix(lw, res, r, a, c, op, mode, addend=None):
    # an infinite round-to-nearest result from finite operands overflowed: directed modes clamp
    # (an infinite addend is not an overflow: isa_fma_rz_f64 (1, x, inf) -> inf)
    b = lw.b
    t = r.type
    inf = fconst(t, float("inf"))
    big = fconst(t, 3.4028234663852886e38 if t == F32 else 1.7976931348623157e308)
    finite_in = b.and_(b.fcmp_ordered("<", intr(lw, "llvm.fabs", [a]), inf),
                       b.fcmp_ordered("<", intr(lw, "llvm.fabs", [c]), inf))
    if addend is not None:
        finite_in = b.and_(finite_in, b.fcmp_ordered("<", intr(lw, "llvm.fabs", [addend]), inf))
    if op == "div":
        finite_in = b.and_(finite_in, b.fcmp_ordered("!=", c, fconst(t, 0.0)))
    overflow = b.and_(finite_in, b.fcmp_ordered("==", intr(lw, "llvm.fabs", [r]), inf))
    neg = b.fcmp_ordered("<", r, fconst(t, 0.0))
    if mode == "rz":
        clamp = const_int(I1, 1)
    elif mode == "rm":
        clamp = b.not_(neg)
    else:
        clamp = neg
    clamped = intr(lw, "llvm.copysign", [big, r])
    return b.select(b.and_(overflow, clamp), clamped, res)


def rounded_fma(lw: FnLowering, a: ll.Value, c: ll.Value, d: ll.Value, mode: str) -> ll.Value:
    r = intr(lw, "llvm.fma", [a, c, d])
    if mode == "rn":
        return r
    b = lw.b
    z = fconst(F64, 0.0)
    if r.type == F32:
        # a*c is exact in f64; TwoSum makes s + e the exact result
        a64, c64, d64 = (b.fpext(x, F64) for x in (a, c, d))
        p = b.fmul(a64, c64)
        s, e = two_sum(lw, p, d64)
        r = _f32_from_exact(lw, s, e, mode)
        exact_zero = b.and_(b.fcmp_ordered("==", s, z), b.fcmp_ordered("==", e, z))
        return _zero_sign_rm(lw, r, p, d64, exact_zero) if mode == "rm" else r
    # f64: a*c = ph + pl exactly; (ph + d) = s1 + e1 exactly; error sign from the pieces
    ph = b.fmul(a, c)
    pl = intr(lw, "llvm.fma", [a, c, b.fneg(ph)])
    s1, e1 = two_sum(lw, ph, d)
    err_normal = b.fadd(b.fadd(b.fsub(s1, r), e1), pl)
    # tiny products: pl is not exact; compare (d - r) + a*c in a domain scaled up exactly
    a2, ka = _scale_up_if_tiny(lw, a)
    c2, kc = _scale_up_if_tiny(lw, c)
    ph2 = b.fmul(a2, c2)
    pl2 = intr(lw, "llvm.fma", [a2, c2, b.fneg(ph2)])
    dr, dr_lo = two_sum(lw, d, b.fneg(r))  # d - r == dr + dr_lo exactly
    big_dr = b.fcmp_ordered(">", intr(lw, "llvm.fabs", [dr]), fconst(F64, 2.0**-300))
    scaled = b.fadd(b.fmul(b.fmul(dr, ka), kc), ph2)
    scaled = b.fadd(b.fadd(scaled, b.fmul(b.fmul(dr_lo, ka), kc)), pl2)
    err_tiny = b.select(big_dr, dr, scaled)
    tiny = b.fcmp_ordered("<", intr(lw, "llvm.fabs", [ph]), fconst(F64, 2.0**-900))
    err = b.select(tiny, err_tiny, err_normal)
    fin = b.fcmp_ordered("<", intr(lw, "llvm.fabs", [r]), fconst(F64, float("inf")))
    err = b.select(fin, err, z)
    pos, neg = _err_signs(lw, err)
    res = _overflow_fix(lw, directed(lw, r, pos, neg, mode), r, a, c, "mul", mode, addend=d)
    if mode == "rm":
        exact_zero = b.and_(b.fcmp_ordered("==", r, z), b.fcmp_ordered("==", err, z))
        res = _zero_sign_rm(lw, res, ph, d, exact_zero)
    return res


def _mode(ins: Instr) -> str:
    return next((m for m in ins.mods if m in ROUND_MODES), "rn")


def check_float(ins: Instr) -> str | None:
    t = ins.types()[-1]
    if t not in ("f32", "f64"):
        return f"type .{t} is not supported for {ins.opcode}"
    return None


def _float_typed(ins: Instr) -> bool:
    ts = ins.types()
    return bool(ts) and ts[-1] in ("f32", "f64", "tf32")


@form_rule("add", "sub", "mul", "mad", "div", "abs", "neg", "min", "max", when=_float_typed, form="f32/f64",
           check=check_float)
def lower_float_arith(lw: FnLowering, ins: Instr) -> None:
    """Float forms of add/sub/mul/mad/div/abs/neg/min/max, the integer rules' opcodes (and fma's)."""
    b = lw.b
    t = _ft(ins)
    op = ins.opcode
    if op == "div" and (ins.has("approx") or ins.has("full")) and t == "f32":
        approx.lower_div(lw, ins)
        return
    flush = ins.has("ftz") and t == "f32"
    srcs = [lw.read(o, t) for o in ins.operands[1:]]
    if flush:
        srcs = [ftz(lw, s) for s in srcs]
    mode = _mode(ins)
    if op in ("add", "sub", "mul"):
        r = arith_nan(lw, rounded_binop(lw, op, srcs[0], srcs[1], mode))
    elif op in ("fma", "mad"):
        r = arith_nan(lw, rounded_fma(lw, srcs[0], srcs[1], srcs[2], mode))
    elif op == "div":
        r = arith_nan(lw, rounded_binop(lw, "div", srcs[0], srcs[1], mode))
    elif op in ("abs", "neg"):
        r = (fpbits.f32_abs_neg if t == "f32" else fpbits.f64_abs_neg)(b, srcs[0], op)
    elif op in ("min", "max"):
        if ins.has("xorsign"):
            mags = [intr(lw, "llvm.fabs", [s]) for s in srcs]
            r = fpbits.xorsign_abs_minmax(b, _minmax(lw, op, mags[0], mags[1], ins.has("NaN")), srcs[0], srcs[1])
        else:
            r = _minmax(lw, op, srcs[0], srcs[1], ins.has("NaN"))
    else:
        raise lw.unsupported("float form")
    if t == "f64" and op in ("add", "sub", "mul", "fma", "mad", "min", "max"):
        # NaN operands: the GPU returns b's NaN before c's before a's (quieted)
        r = fpbits.f64_nan_result(b, r, [srcs[1], srcs[2], srcs[0]] if len(srcs) == 3 else [srcs[1], srcs[0]])
    if flush and op in ("mul", "fma", "mad", "div"):
        r = _flush_tiny_exact(lw, op, srcs, r)
    if flush:
        r = ftz(lw, r)
    if ins.has("sat"):
        r = saturate(lw, r)
    lw.write(ins.operands[0], r, t)


def _flush_tiny_exact(lw: FnLowering, op: str, srcs: list[ll.Value], r: ll.Value) -> ll.Value:
    """.ftz f32 mul/fma/div: flush when the exact result (computed in f64) is below 2^-126."""
    b = lw.b
    x = [b.fpext(s, F64) for s in srcs]
    z = fconst(F64, 0.0)
    if op == "mul":  # the product of two f32 is exact in f64
        return fpbits.flush_tiny_before_rounding(b, r, b.fmul(x[0], x[1]))
    if op == "div":
        q = b.fdiv(x[0], x[1])
        rem = intr(lw, "llvm.fma", [b.fneg(q), x[1], x[0]])  # a - q*c, exact
        # |a/c| < |q| when (a/c - q) = rem/c has the sign opposite to q
        err_neg = b.xor(b.fcmp_ordered("<", rem, z), b.fcmp_ordered("<", x[1], z))
        below = b.and_(b.fcmp_ordered("!=", rem, z), b.xor(err_neg, b.fcmp_ordered("<", q, z)))
        return fpbits.flush_tiny_before_rounding(b, r, q, below)
    s, e = two_sum(lw, b.fmul(x[0], x[1]), x[2])  # a*c exact, s + e == a*c + d exactly
    below = b.and_(b.fcmp_ordered("!=", e, z), b.xor(b.fcmp_ordered("<", e, z), b.fcmp_ordered("<", s, z)))
    return fpbits.flush_tiny_before_rounding(b, r, s, below)


def _minmax(lw: FnLowering, op: str, a: ll.Value, c: ll.Value, propagate_nan: bool) -> ll.Value:
    t = a.type
    if propagate_nan:
        name = "llvm.minimum" if op == "min" else "llvm.maximum"
    else:
        name = "llvm.minimumnum" if op == "min" else "llvm.maximumnum"
    r = intr(lw, name, [a, c])
    return canon_nan(lw, r) if t == F32 else r


def _check_fma(ins: Instr) -> str | None:
    t = ins.types()[-1]
    if t in ("f16", "bf16", "f16x2", "bf16x2"):
        return None
    return check_float(ins)


@rule("fma", family="float", check=_check_fma)
def lower_fma(lw: FnLowering, ins: Instr) -> None:
    """fma.rn/.rz/.rm/.rp f32/f64 (the half types: half.py's form rule)."""
    lower_float_arith(lw, ins)


@rule("rcp", "sqrt", "rsqrt", family="float", check=check_float)
def lower_rcp_sqrt(lw: FnLowering, ins: Instr) -> None:
    """rcp/sqrt (.rn exact with directed modes; .approx) and rsqrt.approx."""
    b = lw.b
    t = _ft(ins)
    if ins.has("approx") and t == "f32":
        approx.lower_f32(lw, ins)
        return
    if ins.has("approx") and t == "f64" and ins.opcode in ("rcp", "rsqrt"):
        approx.lower_f64(lw, ins)
        return
    x = lw.read(ins.operands[1], t)
    flush = ins.has("ftz") and t == "f32"
    if flush:
        x = ftz(lw, x)
    mode = _mode(ins)
    one = fconst(x.type, 1.0)
    if ins.opcode == "rcp" and not ins.has("approx"):
        r = rounded_binop(lw, "div", one, x, mode)
        if flush:  # like div.ftz: a quotient below 2^-126 before rounding is flushed
            r = _flush_tiny_exact(lw, "div", [one, x], r)
    elif ins.opcode == "rcp":
        r = b.fdiv(one, x)
    elif ins.opcode == "sqrt":
        r = intr(lw, "llvm.sqrt", [x])
        if mode != "rn" and not ins.has("approx"):
            if x.type == F32:
                x64 = b.fpext(x, F64)
                s64 = intr(lw, "llvm.sqrt", [x64])
                r = _f32_from_exact(lw, s64, intr(lw, "llvm.fma", [b.fneg(s64), s64, x64]), mode)
            else:
                # the residual x - r*r is exact only if it stays normal: for tiny x compute it on
                # x * 2^600, whose root is r * 2^300 exactly (isa_sqrt_rz_f64 at 0x000fffffffffffff)
                tiny = b.fcmp_ordered("<", x, fconst(F64, 2.0**-900))
                xs = b.select(tiny, b.fmul(x, fconst(F64, 2.0**600)), x)
                rs = b.select(tiny, b.fmul(r, fconst(F64, 2.0**300)), r)
                e = intr(lw, "llvm.fma", [b.fneg(rs), rs, xs])
                pos, neg = _err_signs(lw, e)
                r = directed(lw, r, pos, neg, mode)
    else:
        r = b.fdiv(one, intr(lw, "llvm.sqrt", [x]))
    r = arith_nan(lw, r)
    if flush:
        r = ftz(lw, r)
    lw.write(ins.operands[0], r, t)


_UNARY = {"sin": "llvm.sin", "cos": "llvm.cos", "lg2": "llvm.log2", "ex2": "llvm.exp2"}


@rule("sin", "cos", "lg2", "ex2", "tanh", family="float")
def lower_transcendental(lw: FnLowering, ins: Instr) -> None:
    """sin/cos/lg2/ex2/tanh .approx: computed with the host libm (at least as accurate as the GPU)."""
    t = _ft(ins)  # (the half types: half.py's form rule)
    if ins.opcode in ("ex2", "sin", "cos", "tanh", "lg2") and t == "f32":
        approx.lower_f32(lw, ins)
        return
    x = lw.read(ins.operands[1], t)
    flush = ins.has("ftz") and t == "f32"
    if flush:
        x = ftz(lw, x)
    if ins.opcode == "tanh":
        fn = lw.cg.extern_function("tanhf" if t == "f32" else "tanh", x.type, [x.type])
        r = lw.b.call(fn, [x])
    else:
        r = intr(lw, _UNARY[ins.opcode], [x])
    r = arith_nan(lw, r)
    if flush:
        r = ftz(lw, r)
    lw.write(ins.operands[0], r, t)


@rule("copysign", family="float")
def lower_copysign(lw: FnLowering, ins: Instr) -> None:
    """copysign d, a, b: b's magnitude with a's sign."""
    t = _ft(ins)
    a = lw.read(ins.operands[1], t)
    c = lw.read(ins.operands[2], t)
    lw.write(ins.operands[0], intr(lw, "llvm.copysign", [c, a]), t)


@rule("testp", family="float")
def lower_testp(lw: FnLowering, ins: Instr) -> None:
    """testp.finite/infinite/number/notanumber/normal/subnormal."""
    b = lw.b
    t = _ft(ins)
    x = lw.read(ins.operands[1], t)
    ax = intr(lw, "llvm.fabs", [x])
    inf = fconst(x.type, float("inf"))
    tiny = fconst(x.type, 1.1754943508222875e-38 if t == "f32" else 2.2250738585072014e-308)
    test = next(m for m in ins.mods if m in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"))
    if test == "finite":
        r = b.fcmp_ordered("<", ax, inf)
    elif test == "infinite":
        r = b.fcmp_ordered("==", ax, inf)
    elif test == "number":
        r = b.fcmp_ordered("ord", x, x)
    elif test == "notanumber":
        r = is_nan(lw, x)
    elif test == "normal":
        # PTX counts +-0 as normal
        r = b.and_(b.or_(b.fcmp_ordered(">=", ax, tiny), b.fcmp_ordered("==", ax, fconst(x.type, 0.0))),
                   b.fcmp_ordered("<", ax, inf))
    else:
        r = b.and_(b.fcmp_ordered("<", ax, tiny), b.fcmp_ordered(">", ax, fconst(x.type, 0.0)))
    lw.write(ins.operands[0], r, "pred")
