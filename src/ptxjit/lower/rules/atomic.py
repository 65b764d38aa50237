"""atom and red: atomic read-modify-write on global and shared memory (real atomics across workers).

Floating-point adds follow the H100 bit for bit (golden cases in ../shared/gpu-golden/isa):

- f32 add in global memory flushes subnormal operands and results to zero
  (isa_atom_global_add_f32, isa_red_global_add_f32, isa_red_global_add_v4_f32); in shared memory it
  keeps them (isa_atom_shared_add_f32, isa_red_shared_add_f32).  A NaN result is 0x7FFFFFFF in both.
  Generic addresses are taken as global (the common case).
- f64 add in global memory returns a NaN operand unchanged, signalling or not, the added value's
  before memory's (isa_atom_global_add_f64, isa_red_global_add_f64); in shared memory it quiets the
  NaN and memory's comes first (isa_atom_shared_add_f64, isa_red_shared_add_f64).
- f16/bf16 (x2) add/min/max (.noftz) keep subnormals; min/max return the other operand when one is
  NaN and the canonical NaN 0x7FFF when both are (isa_atom_global_min_noftz_v2_f16x2,
  isa_atom_global_max_noftz_v2_bf16x2).
- Vector forms (.v2/.v4/.v8) are one atomic operation per element.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr, type_size
from ptxjit.isa.effects import space_of, vector_length
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.rules import b128
from ptxjit.lower.rules.half import decode, encode, fmt_of
from ptxjit.lower.types import F32, F64, I8, I16, I32, I64, const_int, lltype

ATOM_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")
HALF_TYPES = ("f16", "bf16", "f16x2", "bf16x2")
F32_CANON_NAN = 0x7FFFFFFF
HALF_CANON_NAN = 0x7FFF


def _op(ins: Instr) -> str:
    for m in ins.mods:
        if m in ATOM_OPS:
            return m
    raise ValueError(f"{ins.pos}: {ins.text}: no atomic operation")


def _check_atom(ins: Instr) -> str | None:
    if not any(m in ATOM_OPS for m in ins.mods):
        return "missing operation (.add, .cas, ...)"
    ts = ins.types()
    if not ts:
        return "missing type"
    t = ts[-1]
    op = next(m for m in ins.mods if m in ATOM_OPS)
    if t == "b128":
        return b128.check_atom(ins)
    n = vector_length(ins)
    if n > 1:
        if t == "f32" and op != "add":
            return f"vector atom.{op} is not defined for .f32"
        if t not in ("f32", *HALF_TYPES):
            return f"vector atomics are not defined for .{t}"
        vals = [o for o in ins.operands if isinstance(o, ir.Vec)]
        if not vals or any(len(v.items) != n for v in vals):
            return f"a .v{n} atomic needs {n}-element vector operands"
    if t in HALF_TYPES:
        return None if op in ("add", "min", "max") else f"atom.{op} is not supported for .{t}"
    if t in ("f32", "f64") and op not in ("add", "exch", "min", "max"):
        return f"atom.{op} is not defined for .{t}"
    return None


def _rmw_name(op: str, t: str) -> str:
    if op == "add":
        return "fadd" if t.startswith("f") else "add"
    if op in ("min", "max"):
        if t.startswith("f"):
            return "fmin" if op == "min" else "fmax"
        return op if t.startswith("s") else "u" + op
    return {"inc": "uinc_wrap", "dec": "udec_wrap", "and": "and", "or": "or", "xor": "xor", "exch": "xchg"}[op]


def _minmax(b, old, v, t, op):
    if t.startswith("f"):
        return b.call(b.module.declare_intrinsic(f"llvm.{op}num", [old.type]), [old, v])
    lt = b.icmp_signed("<", v, old) if t.startswith("s") else b.icmp_unsigned("<", v, old)
    return b.select(lt, v, old) if op == "min" else b.select(lt, old, v)


_PLAIN = {
    "add": lambda b, old, v, t: b.fadd(old, v) if t.startswith("f") else b.add(old, v),
    "and": lambda b, old, v, t: b.and_(old, v),
    "or": lambda b, old, v, t: b.or_(old, v),
    "xor": lambda b, old, v, t: b.xor(old, v),
    "exch": lambda b, old, v, t: v,
    "min": lambda b, old, v, t: _minmax(b, old, v, t, "min"),
    "max": lambda b, old, v, t: _minmax(b, old, v, t, "max"),
}


# ---------------------------------------------------------------- H100 floating-point adds (on bits)


def _ftz32(b: ll.IRBuilder, x: ll.Value) -> ll.Value:
    """f32 bits with a subnormal flushed to the zero of its sign."""
    sub = b.icmp_unsigned("==", b.and_(x, const_int(I32, 0x7F800000)), const_int(I32, 0))
    return b.select(sub, b.and_(x, const_int(I32, 0x80000000)), x)


def _is_nan_bits(b: ll.IRBuilder, x: ll.Value) -> ll.Value:
    w = x.type.width
    inf = 0x7F800000 if w == 32 else 0x7FF0000000000000
    return b.icmp_unsigned(">", b.and_(x, ll.Constant(x.type, (1 << (w - 1)) - 1)), ll.Constant(x.type, inf))


def f32_add(global_mem: bool) -> Callable[[ll.IRBuilder, ll.Value, ll.Value], ll.Value]:
    def add(b: ll.IRBuilder, old: ll.Value, v: ll.Value) -> ll.Value:
        if global_mem:
            old, v = _ftz32(b, old), _ftz32(b, v)
        r = b.bitcast(b.fadd(b.bitcast(old, F32), b.bitcast(v, F32)), I32)
        if global_mem:
            r = _ftz32(b, r)
        return b.select(_is_nan_bits(b, r), const_int(I32, F32_CANON_NAN), r)

    return add


def f64_add_global(b: ll.IRBuilder, old: ll.Value, v: ll.Value) -> ll.Value:
    """NaN operands come back unchanged (v's first); otherwise the IEEE sum."""
    r = b.bitcast(b.fadd(b.bitcast(old, F64), b.bitcast(v, F64)), I64)
    return b.select(_is_nan_bits(b, v), v, b.select(_is_nan_bits(b, old), old, r))


def _f64_add_shared(b: ll.IRBuilder, old: ll.Value, v: ll.Value) -> ll.Value:
    """NaN operands come back quieted, memory's first; otherwise the IEEE sum.  On bits: LLVM takes
    fadd as commutative and NaN payloads as unspecified, so the order of fadd's operands cannot keep
    the host's own rule (the first operand's NaN): LLVM swapped them in red's code."""
    r = b.bitcast(b.fadd(b.bitcast(old, F64), b.bitcast(v, F64)), I64)
    quiet = const_int(I64, 1 << 51)
    return b.select(_is_nan_bits(b, old), b.or_(old, quiet), b.select(_is_nan_bits(b, v), b.or_(v, quiet), r))


def half_op(lw: FnLowering, t: str, op: str) -> Callable[[ll.IRBuilder, ll.Value, ll.Value], ll.Value]:
    """add (correctly rounded, subnormals kept) or min/max of f16/bf16 lanes held as bits."""

    fmt = fmt_of(t)
    lanes = 2 if t.endswith("x2") else 1

    def one(b: ll.IRBuilder, x: ll.Value, y: ll.Value) -> ll.Value:
        fx, fy = decode(lw, x, fmt), decode(lw, y, fmt)
        if op == "add":
            return encode(lw, b.fadd(fx, fy), fmt)
        nx, ny = b.fcmp_unordered("uno", fx, fx), b.fcmp_unordered("uno", fy, fy)
        first = b.fcmp_ordered("<" if op == "min" else ">", fx, fy)
        # equal values: -0 is the smaller of the zeros
        x_neg = b.icmp_unsigned(">=", x, const_int(I16, 0x8000))
        tie = b.and_(b.fcmp_ordered("==", fx, fy), x_neg if op == "min" else b.not_(x_neg))
        r = b.select(b.or_(first, tie), x, y)
        r = b.select(nx, y, b.select(ny, x, r))
        return b.select(b.and_(nx, ny), const_int(I16, HALF_CANON_NAN), r)

    def fn(b: ll.IRBuilder, old: ll.Value, v: ll.Value) -> ll.Value:
        if lanes == 1:
            return one(b, old, v)
        out = None
        for k in range(2):
            x = b.trunc(b.lshr(old, const_int(I32, 16 * k)), I16)
            y = b.trunc(b.lshr(v, const_int(I32, 16 * k)), I16)
            r = b.shl(b.zext(one(b, x, y), I32), const_int(I32, 16 * k))
            out = r if out is None else b.or_(out, r)
        return out

    return fn


def _rmw_loop(lw: FnLowering, ptr: ll.Value, v: ll.Value, fn: Callable, space: str) -> ll.Value:
    """Atomically replace *ptr (an integer pointer) by fn(old, v); returns old.  Shared memory is
    never accessed concurrently (a CTA runs on one worker, one thread at a time): a plain load and
    store; elsewhere a compare-and-swap loop."""
    b = lw.b
    if space == "shared":
        old = lw.user_access(b.load(ptr), space)
        lw.user_access(b.store(fn(b, old, v), ptr), space)
        return old
    first = b.load_atomic(ptr, "monotonic", v.type.width // 8)
    pre = b.block
    loop = lw.llfn.append_basic_block("atom_rmw_loop")
    done = lw.llfn.append_basic_block("atom_rmw_done")
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(v.type)
    old.add_incoming(first, pre)
    res = b.cmpxchg(ptr, old, fn(b, old, v), "seq_cst", "seq_cst")
    old.add_incoming(b.extract_value(res, 0), b.block)
    b.cbranch(b.extract_value(res, 1), done, loop)
    b.position_at_end(done)
    return old


# ---------------------------------------------------------------- lowering


def _bits_type(t: str) -> str:
    return {1: "b8", 2: "b16", 4: "b32", 8: "b64"}[type_size(t)]


def _element(lw: FnLowering, ins: Instr, t: str, op: str, ptr8: ll.Value, vals: list) -> ll.Value:
    """One scalar atomic at the i8 pointer `ptr8`; returns the old value (as type t's LLVM type, or
    as its bits for the forms computed on bits)."""
    b = lw.b
    space = space_of(ins)
    if op == "cas":
        if t.startswith("f"):
            raise lw.unsupported("atom.cas on floats")
        ptr = lw.typed_ptr(ptr8, lltype(t))
        res = b.cmpxchg(ptr, lw.read(vals[0], t), lw.read(vals[1], t), "seq_cst", "seq_cst")
        return b.extract_value(res, 0)
    if t in HALF_TYPES or (op == "add" and t in ("f32", "f64")):
        bt = _bits_type(t)
        ptr = lw.typed_ptr(ptr8, lltype(bt))
        v = lw.read(vals[0], t)  # as t: a float immediate becomes its bits only through a bitcast
        if v.type != lltype(bt):
            v = b.bitcast(v, lltype(bt))
        if t in HALF_TYPES:
            fn = half_op(lw, t, op)
        elif t == "f32":
            fn = f32_add(space != "shared")
        elif space != "shared":
            fn = f64_add_global
        else:
            fn = _f64_add_shared
        return _rmw_loop(lw, ptr, v, fn, space)
    ptr = lw.typed_ptr(ptr8, lltype(t))
    v = lw.read(vals[0], t)
    if space == "shared" and op in _PLAIN:
        # a CTA runs on one worker thread, one GPU thread at a time: shared memory is never accessed
        # concurrently, so the read-modify-write needs no atomic instruction
        old = lw.user_access(b.load(ptr), space)
        lw.user_access(b.store(_PLAIN[op](b, old, v, t), ptr), space)
        return old
    return b.atomic_rmw(_rmw_name(op, t), ptr, v, "seq_cst")


def atomic(lw: FnLowering, ins: Instr, addr_op, operands: list) -> list[ll.Value]:
    """The old values of the atomic at `addr_op` with value operands `operands` (one per element)."""
    t = ins.types()[-1]
    op = _op(ins)
    base = lw.address(addr_op, space_of(ins))
    lw.probe_memory(base)
    n = vector_length(ins)
    size = type_size(t)

    def run(base: ll.Value = base) -> list[ll.Value]:
        if n == 1:
            return [_element(lw, ins, t, op, base, operands)]
        items = operands[0].items
        olds = []
        for i in range(n):
            p = lw.b.gep(base, [const_int(I64, i * size)]) if i else base
            olds.append(_element(lw, ins, t, op, lw.typed_ptr(p, I8), [items[i]]))
        return olds
    # in an inner loop, out of bounds: applied to a junk area (no branch); elsewhere: not run, old 0
    safe = lw.bounds.redirected(addr_op, space_of(ins), base, n * size, store=True)
    if safe is not None:
        return run(safe)
    return lw.bounds.guarded(addr_op, space_of(ins), base, n * size, run)


def _write_old(lw: FnLowering, ins: Instr, d, old: ll.Value) -> None:
    t = ins.types()[-1]
    lw.write(d, old, t if old.type == lltype(t) else _bits_type(t))


@rule("atom", family="atomic", check=_check_atom)
def lower_atom(lw: FnLowering, ins: Instr) -> None:
    """atom.space.op.type d, [a], b[, c]: returns the old value (.v2/.v4/.v8: per element)."""
    if ins.types()[-1] == "b128":
        return b128.lower_atom(lw, ins)
    olds = atomic(lw, ins, ins.operands[1], ins.operands[2:])
    d = ins.operands[0]
    dests = d.items if isinstance(d, ir.Vec) else [d]
    for dst, old in zip(dests, olds, strict=True):
        _write_old(lw, ins, dst, old)


@rule("red", family="atomic", check=_check_atom)
def lower_red(lw: FnLowering, ins: Instr) -> None:
    """red.space.op.type [a], b: atomic reduction without result."""
    atomic(lw, ins, ins.operands[0], ins.operands[1:])
