"""Data movement: ld, st, ldu, mov, cvta, isspacep, prefetch and fences (cp.async: async_copy.py)."""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr, type_size
from ptxjit.isa.effects import space_of, vector_length
from ptxjit.isa.special import unsupported_special
from ptxjit.lower import abi
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.rules import b128
from ptxjit.lower.types import I32, I64, PTR, const_int, lltype


def _check_ldst(ins: Instr) -> str | None:
    ts = ins.types()
    if not ts:
        return "missing type"
    if ts[-1] == "b128":
        return b128.check_ldst(ins)
    return None


def _ordering(ins: Instr) -> str | None:
    if ins.has("acquire") or ins.has("release"):
        return "acquire" if ins.opcode == "ld" else "release"
    if ins.has("relaxed"):
        return "monotonic"
    return None


@rule("ld", "ldu", family="memory", check=_check_ldst)
def lower_ld(lw: FnLowering, ins: Instr) -> None:
    """ld/ldu in every state space, scalar and .v2/.v4 (cache qualifiers are hints: ignored)."""
    b = lw.b
    t = ins.types()[-1]
    if t == "b128":
        return b128.lower_ld(lw, ins)
    n = vector_length(ins)
    elt = lltype(t)
    size = type_size(t)
    base = lw.address(ins.operands[1], space_of(ins))
    dsts = ins.operands[0].items if isinstance(ins.operands[0], ir.Vec) else (ins.operands[0],)
    order = _ordering(ins)
    if n == 1 and order is None and _is_kernel_param(lw, ins.operands[1]) and (
            not lw.bounds.enabled or lw.bounds.static_in_bounds(ins.operands[1], size)):
        # kernel parameters cannot change during a launch: load each once, in the entry block, where
        # it is unconditional and so hoistable out of the thread loop (and the loop vectorizable)
        if lw.is_pointer_reg(dsts[0]) and size == 8:  # a pointer parameter: load it as a pointer
            lw.b.store(lw.entry_param(ins.operands[1], PTR, 8), lw.regs[dsts[0].name])
            return
        lw.write(dsts[0], lw.entry_param(ins.operands[1], elt, size), t)
        return
    lw.probe_memory(base)
    if n == 1:
        if ins.has("volatile") and order is None:
            order = "monotonic"  # volatile: re-read every time (spin loops on flags)
        safe = None if order is not None else lw.bounds.redirected(ins.operands[1], space_of(ins), base, size,
                                                                   store=False)
        if safe is not None:
            lw.write(dsts[0], lw.user_access(b.load(lw.typed_ptr(safe, elt), align=size), space_of(ins)), t)
            return
        p = lw.typed_ptr(base, elt)

        def load():
            if order is not None and isinstance(elt, ll.IntType):
                return lw.user_access(b.load_atomic(p, order, size), space_of(ins))
            v = lw.user_access(b.load(p, align=size), space_of(ins))
            if _is_kernel_param(lw, ins.operands[1]):
                v.set_metadata("invariant.load", lw.cg.empty_md())
            return v
        lw.write(dsts[0], lw.bounds.guarded(ins.operands[1], space_of(ins), base, size, load), t)
        return
    vt = ll.VectorType(elt, n)
    safe = lw.bounds.redirected(ins.operands[1], space_of(ins), base, size * n, store=False)
    if safe is not None:
        v = lw.user_access(b.load(lw.typed_ptr(safe, vt), align=size), space_of(ins))
        for i, dst in enumerate(dsts):
            lw.write(dst, b.extract_element(v, const_int(I32, i)), t)
        return
    # element alignment: unaligned moves never fault
    v = lw.bounds.guarded(ins.operands[1], space_of(ins), base, size * n, lambda: lw.user_access(
        b.load(lw.typed_ptr(base, vt), align=size), space_of(ins)))
    for i, dst in enumerate(dsts):
        lw.write(dst, b.extract_element(v, const_int(I32, i)), t)


def _is_kernel_param(lw: FnLowering, addr) -> bool:
    """Kernel parameters cannot change during a launch: their loads may be hoisted anywhere."""
    return (lw.is_kernel and isinstance(addr, ir.Addr) and isinstance(addr.base, ir.Sym)
            and addr.base.name in lw.cg.kparams)


@rule("st", family="memory", check=_check_ldst)
def lower_st(lw: FnLowering, ins: Instr) -> None:
    """st in every state space, scalar and .v2/.v4."""
    b = lw.b
    t = ins.types()[-1]
    if t == "b128":
        return b128.lower_st(lw, ins)
    n = vector_length(ins)
    elt = lltype(t)
    size = type_size(t)
    base = lw.address(ins.operands[0], space_of(ins))
    lw.probe_memory(base)
    src = ins.operands[1]
    order = _ordering(ins)
    if n == 1:
        v = lw.read(src, t)
        safe = None if order is not None else lw.bounds.redirected(ins.operands[0], space_of(ins), base, size,
                                                                   store=True)
        if safe is not None:
            lw.user_access(b.store(v, lw.typed_ptr(safe, elt), align=size), space_of(ins))
            return
        p = lw.typed_ptr(base, elt)

        def store():
            if order is not None and isinstance(elt, ll.IntType):
                lw.user_access(b.store_atomic(v, p, order, size), space_of(ins))
            else:
                lw.user_access(b.store(v, p, align=size), space_of(ins))
        lw.bounds.guarded(ins.operands[0], space_of(ins), base, size, store)
        return
    vt = ll.VectorType(elt, n)
    vec = ll.Constant(vt, ll.Undefined)
    for i, item in enumerate(src.items):
        vec = b.insert_element(vec, lw.read(item, t), const_int(I32, i))
    safe = lw.bounds.redirected(ins.operands[0], space_of(ins), base, size * n, store=True)
    if safe is not None:
        lw.user_access(b.store(vec, lw.typed_ptr(safe, vt), align=size), space_of(ins))
        return
    # element alignment: unaligned moves never fault
    lw.bounds.guarded(ins.operands[0], space_of(ins), base, size * n, lambda: (lw.user_access(
        b.store(vec, lw.typed_ptr(base, vt), align=size), space_of(ins)), None)[1])


@rule("mov", family="memory", check=unsupported_special)
def lower_mov(lw: FnLowering, ins: Instr) -> None:
    """mov: registers, immediates, addresses of variables, and vector pack/unpack."""
    b = lw.b
    t = ins.types()[-1]
    d, a = ins.operands[0], ins.operands[1]
    if isinstance(a, ir.Vec):  # pack {lo, ..., hi} into one wide register
        parts = a.items
        pw = 8 * type_size(t) // len(parts)
        wt = ll.IntType(8 * type_size(t))
        acc = ll.Constant(wt, 0)
        for i, p in enumerate(parts):
            v = lw.read(p, f"b{pw}")
            acc = b.or_(acc, b.shl(b.zext(v, wt) if pw < wt.width else v, ll.Constant(wt, pw * i)))
        lw.write(d, acc, t if not t.startswith("f") else f"b{wt.width}")
        return
    if isinstance(d, ir.Vec):  # unpack
        parts = d.items
        wt = ll.IntType(8 * type_size(t))
        pw = wt.width // len(parts)
        v = lw.read(a, f"b{wt.width}")
        for i, p in enumerate(parts):
            lw.write(p, b.trunc(b.lshr(v, ll.Constant(wt, pw * i)), ll.IntType(pw)), f"b{pw}")
        return
    if lw.is_pointer_reg(d) and lw.is_pointer_reg(a):
        lw.b.store(lw.read_pointer(a), lw.regs[d.name])
        return
    lw.write(d, lw.read(a, t), t)


@rule("cvta", family="memory")
def lower_cvta(lw: FnLowering, ins: Instr) -> None:
    """cvta[.to].space: shared addresses are offsets in the CTA's shared window; others are host addresses."""
    b = lw.b
    t = ins.types()[-1]
    d, a = ins.operands[0], ins.operands[1]
    if space_of(ins) != "shared" and lw.is_pointer_reg(d) and lw.is_pointer_reg(a):
        b.store(lw.read_pointer(a), lw.regs[d.name])  # global/local/const: the identity on addresses
        return
    v = b.zext(lw.read(ins.operands[1], t), I64) if t.endswith("32") else lw.read(ins.operands[1], "u64")
    if space_of(ins) == "shared":
        base = lw.shared_base()
        v = b.sub(v, base) if ins.has("to") else b.add(v, base)
    lw.write(ins.operands[0], v, "u64" if not t.endswith("32") else "u64")


@rule("isspacep", family="memory")
def lower_isspacep(lw: FnLowering, ins: Instr) -> None:
    """isspacep.space p, a: does generic address a point into that state space?"""
    b = lw.b
    a = lw.read(ins.operands[1], "u64")
    sp = space_of(ins)
    shared_off = b.sub(a, lw.shared_base())
    in_shared = b.icmp_unsigned("<", shared_off, lw.worker_slot(abi.W_SHARED_SIZE))
    tl = getattr(lw, "thread_local", None)
    if tl is not None:
        loff = b.sub(a, b.ptrtoint(tl, I64))
        in_local = b.icmp_unsigned("<", loff, const_int(I64, lw.cg.local_stride(lw.fn)))
    else:
        in_local = const_int(ll.IntType(1), 0)
        if not lw.is_kernel:  # its own locals, the calling thread's, its callers' (lower/safety/bounds.py)
            for lo, n in lw.bounds._local_ranges():
                in_local = b.or_(in_local, b.icmp_unsigned("<", b.sub(a, lo), n))
    if sp == "shared":
        r = in_shared
    elif sp == "local":
        r = in_local
    elif sp in ("global", "const"):
        r = b.not_(b.or_(in_shared, in_local))
    else:
        r = const_int(ll.IntType(1), 0)
    lw.write(ins.operands[0], r, "pred")


@rule("prefetch", "prefetchu", "applypriority", "discard", "pmevent", "brkpt", "nanosleep",
      "griddepcontrol", "setmaxnreg", family="hint")
def lower_hint(lw: FnLowering, ins: Instr) -> None:
    """Hints with no effect on results on a CPU: emit nothing."""


@rule("createpolicy", family="hint")
def lower_createpolicy(lw: FnLowering, ins: Instr) -> None:
    """createpolicy: an L2 cache-eviction policy is an opaque value that only .L2::cache_hint accesses
    read, and they ignore it on a CPU: 0 (createpolicy.cvt keeps the value it converts)."""
    v = lw.read(ins.operands[1], "b64") if ins.has("cvt") else const_int(I64, 0)
    lw.write(ins.operands[0], v, "b64")


@rule("membar", "fence", family="memory")
def lower_fence(lw: FnLowering, ins: Instr) -> None:
    """membar/fence: a sequentially consistent fence (orders this worker's memory operations)."""
    lw.b.fence("seq_cst")
