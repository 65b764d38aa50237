"""atom and red: atomic read-modify-write on global and shared memory (real atomics across workers)."""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.rules.memory import space_of
from ptxjit.lower.rules.registry import rule
from ptxjit.lower.types import lltype

ATOM_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas")


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
    if t in ("f16", "bf16", "f16x2", "bf16x2"):
        return None if op == "add" else f"atom.{op} is not supported for .{t}"
    if t == "b128" or any(m in ("v2", "v4", "v8") for m in ins.mods):
        return f"atomic on .{t} (or vector atomics) is not supported"
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


def atomic(lw: FnLowering, ins: Instr, addr_op, operands: list) -> ll.Value:
    b = lw.b
    t = ins.types()[-1]
    op = _op(ins)
    ptr = lw.typed_ptr(lw.address(addr_op, space_of(ins)), lltype(t))
    if t in ("f16", "bf16", "f16x2", "bf16x2"):
        return _half_add_cas_loop(lw, ptr, lw.read(operands[0], "b32" if t.endswith("x2") else "b16"), t)
    if op == "cas":
        cmp, new = lw.read(operands[0], t), lw.read(operands[1], t)
        if t.startswith("f"):
            raise lw.unsupported("atom.cas on floats")
        res = b.cmpxchg(ptr, cmp, new, "seq_cst", "seq_cst")
        return b.extract_value(res, 0)
    v = lw.read(operands[0], t)
    if space_of(ins) == "shared" and op in _PLAIN:
        # a CTA runs on one worker thread, one GPU thread at a time: shared memory is never accessed
        # concurrently, so the read-modify-write needs no atomic instruction
        old = lw.user_access(b.load(ptr), space_of(ins))
        lw.user_access(b.store(_PLAIN[op](b, old, v, t), ptr), space_of(ins))
        return old
    return b.atomic_rmw(_rmw_name(op, t), ptr, v, "seq_cst")


def _half_add_cas_loop(lw: FnLowering, ptr: ll.Value, v: ll.Value, t: str) -> ll.Value:
    """atom.add on f16/bf16 (x2): a compare-and-swap loop around a correctly rounded half add."""
    from ptxjit.lower.rules.half import decode, encode, fmt_of

    b = lw.b
    fmt = fmt_of(t)
    lanes = 2 if t.endswith("x2") else 1

    def add(old: ll.Value) -> ll.Value:
        out = None
        for k in range(lanes):
            x = b.trunc(b.lshr(old, ll.Constant(old.type, 16 * k)), ll.IntType(16)) if lanes == 2 else old
            y = b.trunc(b.lshr(v, ll.Constant(v.type, 16 * k)), ll.IntType(16)) if lanes == 2 else v
            r = encode(lw, b.fadd(decode(lw, x, fmt), decode(lw, y, fmt)), fmt)
            if lanes == 1:
                return r
            r32 = b.shl(b.zext(r, old.type), ll.Constant(old.type, 16 * k))
            out = r32 if out is None else b.or_(out, r32)
        return out

    first = b.load_atomic(ptr, "monotonic", 2 * lanes)
    pre = b.block
    loop = lw.llfn.append_basic_block("atom_half_loop")
    done = lw.llfn.append_basic_block("atom_half_done")
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(first.type)
    old.add_incoming(first, pre)
    res = b.cmpxchg(ptr, old, add(old), "seq_cst", "seq_cst")
    cur = b.extract_value(res, 0)
    old.add_incoming(cur, b.block)
    b.cbranch(b.extract_value(res, 1), done, loop)
    b.position_at_end(done)
    return old


@rule("atom", family="atomic", check=_check_atom)
def lower_atom(lw: FnLowering, ins: Instr) -> None:
    """atom.space.op.type d, [a], b[, c]: returns the old value."""
    old = atomic(lw, ins, ins.operands[1], ins.operands[2:])
    lw.write(ins.operands[0], old, ins.types()[-1])


@rule("red", family="atomic", check=_check_atom)
def lower_red(lw: FnLowering, ins: Instr) -> None:
    """red.space.op.type [a], b: atomic reduction without result."""
    atomic(lw, ins, ins.operands[0], ins.operands[1:])
