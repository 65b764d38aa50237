"""Asynchronous copies: cp.async (sm_80), cp.async.bulk and cp.reduce.async.bulk (sm_90) and their groups
(PTX ISA §9.7.9.25); the mbarriers they complete on are mbarrier.py's.

Copies run synchronously, at issue: a copy is complete before the next instruction, which every
wait (commit/wait_group, an mbarrier's transaction count) allows, so the group instructions are
no-ops.  What must still be right is what lands in memory: src-size < cp-size zero-fills the rest,
and a true ignore-src predicate writes cp-size zeros.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.rules.atomic import f32_add, f64_add_global, half_op
from ptxjit.lower.rules.cluster import lower_bulk_multicast
from ptxjit.lower.rules.mbarrier import mbar_modify, memcpy_intrinsics
from ptxjit.lower.rules.tma import lower_tensor
from ptxjit.lower.types import I1, I8, I64, const_int

# ---------------------------------------------------------------- checks


def _check_cp(ins: Instr) -> str | None:
    if ins.has("tensor") and any(m.startswith(("im2col", "tile::")) for m in ins.mods) and not (
            ins.has("im2col") and ins.mods[ins.mods.index("tensor") + 2] == "shared::cluster"):  # im2col loads run
        return ("only the tile mode of cp.async.bulk.tensor (load, store, reduce, prefetch) and im2col loads are "
                "supported")
    if ins.has("multicast::cluster") and ins.has("tensor"):
        return "multicast of cp.async.bulk.tensor to a cluster's CTAs is not supported"
    if ins.has("cp_mask"):
        return "cp.async.bulk .cp_mask is not supported"
    if ins.has("reduce") and not ins.has("tensor"):
        return _check_reduce(ins)
    return None


_REDUCE_TYPES = {"add": "u32 s32 u64 f32 f64 f16 bf16", "min": "u32 s32 u64 s64 f16 bf16",
                 "max": "u32 s32 u64 s64 f16 bf16", "inc": "u32", "dec": "u32", "and": "b32 b64", "or": "b32 b64",
                 "xor": "b32 b64"}


def _check_reduce(ins: Instr) -> str | None:
    op = next((m for m in ins.mods if m in _REDUCE_TYPES), None)
    t = ins.types()[-1] if ins.types() else ""
    if op is None or t not in _REDUCE_TYPES[op].split():
        return (f"cp.reduce.async.bulk .{op}.{t} is not supported (the PTX ISA defines .{op} for "
                f"{', '.join('.' + x for x in _REDUCE_TYPES.get(op, '').split())})")
    return None


# ---------------------------------------------------------------- cp.async, cp.async.bulk


@rule("cp", family="memory", check=_check_cp)
def lower_cp(lw: FnLowering, ins: Instr) -> None:
    """cp.async (global -> shared, with zero-fill), cp.async.bulk (global/shared -> shared completing on
    an mbarrier, shared -> global) and cp.reduce.async.bulk, executed at issue; groups, waits and
    bulk prefetches are then no-ops."""
    if ins.has("prefetch"):  # a hint: bulk and tensor prefetches to L2
        return
    if ins.has("tensor"):
        lower_tensor(lw, ins, lambda mbar, n: mbar_modify(lw, ins, mbar, tx=lw.b.sub(const_int(I64, 0), n),
                                                           space="shared"),
                     lambda op, t: _combiner(lw, op, t, "global"))
        return
    if ins.has("reduce"):
        _lower_reduce(lw, ins)
        return
    if ins.has("commit_group", "wait_group", "wait_all") or not ins.operands:
        return
    if ins.has("mbarrier") and ins.has("arrive"):
        # cp.async.mbarrier.arrive: an arrive-on once this thread's earlier cp.asyncs completed (they
        # have).  Without .noinc the pending count is raised by one first: no net change.
        if ins.has("noinc"):
            mbar_modify(lw, ins, ins.operands[0], arrivals=const_int(I64, 1))
        return
    if ins.has("bulk") and ins.has("multicast::cluster"):  # to several blocks: cluster.py

        lower_bulk_multicast(lw, ins)
        return
    if ins.has("bulk"):
        _lower_bulk(lw, ins)
        return
    _lower_cp_async(lw, ins)


def _lower_cp_async(lw: FnLowering, ins: Instr) -> None:
    """cp.async.ca/.cg.shared.global [dst], [src], cp-size{, src-size | ignore-src}{, cache-policy}."""
    b = lw.b
    dst = lw.address(ins.operands[0], "shared")
    src = lw.address(ins.operands[1], "global")
    lw.probe_memory(src, 0)
    lw.probe_memory(dst, 1)
    size_op = ins.operands[2]
    if not isinstance(size_op, ir.Imm):
        raise lw.unsupported("cp.async size must be an immediate")
    size = size_op.value
    extra = list(ins.operands[3:])
    if ins.has("L2::cache_hint") and extra:
        extra = extra[:-1]  # the last operand is the cache policy
    memcpy, memset = memcpy_intrinsics(lw)
    false = const_int(I1, 0)
    if not extra:
        lw.bounds.guarded(ins.operands[0], "shared", dst, size, lambda: lw.bounds.guarded(
            ins.operands[1], "global", src, size, lambda: (b.call(
                memcpy, [dst, src, const_int(I64, size), false]), None)[1]))
        return
    opnd = extra[0]
    if lw.reg_type(opnd) == "pred":  # ignore-src: true writes cp-size zeros
        n = b.select(lw.read_pred(opnd), const_int(I64, 0), const_int(I64, size))
        src_read = size
    else:  # src-size: bytes src-size.. are zero-filled
        n = b.zext(lw.read(opnd, "u32"), I64)
        n = b.select(b.icmp_unsigned(">", n, const_int(I64, size)), const_int(I64, size), n)
        src_read = min(opnd.value, size) if isinstance(opnd, ir.Imm) else 1

    def copy():
        b.call(memcpy, [dst, src, n, false])
        b.call(memset, [b.gep(dst, [n]), const_int(I8, 0), b.sub(const_int(I64, size), n), false])
    if src_read == 0:
        lw.bounds.guarded(ins.operands[0], "shared", dst, size, copy)  # zero-fill only: src unread
        return
    if not isinstance(opnd, ir.Imm) and lw.reg_type(opnd) != "pred":
        # a register src-size of 0 reads nothing (Triton's masked loads point anywhere): check the source
        # only when bytes are read, through a base-less address so no hoisted per-thread check stands in
        def read_or_fill():
            with b.if_else(b.icmp_unsigned("!=", n, const_int(I64, 0))) as (reads, fill_only):
                with reads:
                    lw.bounds.guarded(ir.Addr(None, 0), "global", src, 1, copy)
                with fill_only:
                    copy()
        lw.bounds.guarded(ins.operands[0], "shared", dst, size, read_or_fill)
        return
    # bounds: the whole destination; the source as far as it is surely read (src-size may be less, even 0)
    lw.bounds.guarded(ins.operands[0], "shared", dst, size, lambda: lw.bounds.guarded(
        ins.operands[1], "global", src, src_read, copy))


def _dynamic_guard(lw: FnLowering, addr: ir.Addr, space: str, p: ll.Value, size: ll.Value, emit) -> None:
    """Run emit() if the `size`-byte access at `p` is in bounds.  Bounds checks take constant sizes: a
    register size is checked at its first and its last byte."""
    b = lw.b
    if isinstance(size, ll.Constant):
        lw.bounds.guarded(addr, space, p, int(size.constant), emit)
        return
    if not lw.bounds.enabled:
        emit()
        return
    last = b.gep(p, [b.sub(size, const_int(I64, 1))])
    nonempty = b.icmp_unsigned("!=", size, const_int(I64, 0))
    with b.if_then(nonempty):
        # the last byte through an address without a base register: no hoisted check of the operand's
        # register (bounds.py) stands in for it
        lw.bounds.guarded(addr, space, p, 1, lambda: lw.bounds.guarded(ir.Addr(None, 0), space, last, 1, emit))


def _lower_bulk(lw: FnLowering, ins: Instr) -> None:
    """cp.async.bulk.dst.src{.completion} [dst], [src], size{, [mbar]}{, policy}: size bytes, a multiple
    of 16; an mbarrier completion counts them as completed transactions."""
    b = lw.b
    dst_space = "global" if ins.mods[2] == "global" else "shared"
    src_space = "global" if ins.mods[3] == "global" else "shared"
    dst = lw.address(ins.operands[0], dst_space)
    src = lw.address(ins.operands[1], src_space)
    size = b.zext(lw.read(ins.operands[2], "u32"), I64)
    if isinstance(ins.operands[2], ir.Imm):
        size = const_int(I64, ins.operands[2].value)
    lw.probe_memory(src, 0)  # checking's probes (instrument/probes.py tensor_accesses): immediate sizes
    lw.probe_memory(dst, 1)
    memcpy, _ = memcpy_intrinsics(lw)
    _dynamic_guard(lw, ins.operands[0], dst_space, dst, size, lambda: _dynamic_guard(
        lw, ins.operands[1], src_space, src, size, lambda: (b.call(
            memcpy, [dst, src, size, const_int(I1, 0)]), None)[1]))
    if ins.has("mbarrier::complete_tx::bytes"):
        mbar_modify(lw, ins, ins.operands[3], tx=b.sub(const_int(I64, 0), size), space="shared")


# ---------------------------------------------------------------- cp.reduce.async.bulk


def _lower_reduce(lw: FnLowering, ins: Instr) -> None:
    """cp.reduce.async.bulk.dst.shared::cta.completion.op.type [dst], [src], size{, [mbar]}: dst[i] =
    op(dst[i], src[i]) for each element of size bytes."""
    b = lw.b
    t = ins.types()[-1]
    op = next(m for m in ins.mods if m in _REDUCE_TYPES)
    dst_space = "global" if "global" in ins.mods else "shared"
    dst = lw.address(ins.operands[0], dst_space)
    src = lw.address(ins.operands[1], "shared")
    size = b.zext(lw.read(ins.operands[2], "u32"), I64)
    width = 64 if t.endswith("64") else 16 if t in ("f16", "bf16") else 32
    elt = ll.IntType(width)  # floats as their bits: the combining functions are atomic.py's
    combine = _combiner(lw, op, t, dst_space)
    count = b.udiv(size, const_int(I64, width // 8))

    def loop():
        pre = b.block
        head = lw.llfn.append_basic_block("reduce_head")
        body = lw.llfn.append_basic_block("reduce_body")
        done = lw.llfn.append_basic_block("reduce_done")
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(const_int(I64, 0), pre)
        b.cbranch(b.icmp_unsigned("<", i, count), body, done)
        b.position_at_end(body)
        pd = b.gep(lw.typed_ptr(dst, elt), [i])
        ps = b.gep(lw.typed_ptr(src, elt), [i])
        a = lw.user_access(b.load(pd, align=width // 8), dst_space)
        v = lw.user_access(b.load(ps, align=width // 8), "shared")
        lw.user_access(b.store(combine(b, a, v), pd, align=width // 8), dst_space)
        i.add_incoming(b.add(i, const_int(I64, 1)), b.block)
        b.branch(head)
        b.position_at_end(done)
    _dynamic_guard(lw, ins.operands[0], dst_space, dst, size, lambda: _dynamic_guard(
        lw, ins.operands[1], "shared", src, size, loop))
    if ins.has("mbarrier::complete_tx::bytes"):
        mbar_modify(lw, ins, ins.operands[3], tx=b.sub(const_int(I64, 0), size), space="shared")


def _combiner(lw: FnLowering, op: str, t: str, dst_space: str):
    """(builder, a, v) -> op(a, v) on integer bits, as red.op.t computes it into memory of `dst_space`:
    floating-point adds and f16/bf16 min/max are atomic.py's, which follow the H100's red/atom bit for bit
    (a bulk reduction is taken to round and flush like red: not measured on the hardware); inc/dec wrap
    at v like atom.inc/dec."""

    if t in ("f16", "bf16"):
        return half_op(lw, t, op)
    if t == "f32":
        return f32_add(dst_space == "global")
    if t == "f64":
        if dst_space == "global":
            return f64_add_global
        return lambda b, a, v: b.bitcast(b.fadd(b.bitcast(a, ll.DoubleType()), b.bitcast(v, ll.DoubleType())), I64)
    signed = t.startswith("s")

    def combine(b: ll.IRBuilder, a: ll.Value, v: ll.Value) -> ll.Value:
        if op == "add":
            return b.add(a, v)
        if op in ("min", "max"):
            lt = b.icmp_signed("<", a, v) if signed else b.icmp_unsigned("<", a, v)
            return b.select(lt, a, v) if op == "min" else b.select(lt, v, a)
        if op == "inc":  # (a >= v) ? 0 : a + 1
            return b.select(b.icmp_unsigned(">=", a, v), ll.Constant(a.type, 0), b.add(a, ll.Constant(a.type, 1)))
        if op == "dec":  # (a == 0 || a > v) ? v : a - 1
            wrap = b.or_(b.icmp_unsigned("==", a, ll.Constant(a.type, 0)), b.icmp_unsigned(">", a, v))
            return b.select(wrap, v, b.sub(a, ll.Constant(a.type, 1)))
        return {"and": b.and_, "or": b.or_, "xor": b.xor}[op](a, v)
    return combine


# ---------------------------------------------------------------- mbarrier
