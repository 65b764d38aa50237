"""Warpgroup matrix multiply-accumulate (sm_90a): wgmma.mma_async, wgmma.fence, commit_group, wait_group
(PTX ISA §9.7.15).

A warpgroup is 4 consecutive warps (128 threads).  wgmma.mma_async runs synchronously at its own point:
every thread publishes its accumulator elements (and, for the "rs" form, its A fragment registers) into
its warpgroup's dense matrices in the tensor scratch (mma.py) and passes a warp point until the other
warps of its warpgroup have published too; then the first thread of the warpgroup to get there loads
A (the "ss" form) and B from shared memory through their matrix descriptors, computes D and records
it; each thread then writes its own D registers.  The
results are there at the wait, so fence/commit_group/wait_group only pass a warp point.

The accumulator operand is read as well as written: passes/dataflow.py counts it as a use, so that it
stays live across the suspension points before it.

Layouts (PTX ISA §9.7.15.5; the H100 agrees on every golden case in shared/gpu-golden/tc wgmma_*):
- D/C: thread tid of the warpgroup, w = tid >> 5, g = lane >> 2, t = lane & 3: element i is row
  16w + g + 8 ((i % 4) / 2), col 8 (i / 4) + 2t + i % 2 (f16: register j holds elements 2j, 2j + 1);
- A in registers: warp w holds rows 16w .. 16w + 15 in mma.sync's m16n8kK A-fragment layout;
- descriptors: wgmma_desc.py, the ISA's full matrix-descriptor semantics: start address, leading and
  stride byte offsets, matrix base offset, swizzle none / 32B / 64B / 128B (run-time data: the address
  of every element is computed, and swizzled, in the generated code), K-major and MN-major (imm-trans-a/b
  = 1, f16/bf16 only) operands; an element past the CTA's shared memory faults (KernelFault naming the
  wgmma and the offset) instead of being read.
Supported: f16/bf16/tf32/e4m3/e5m2 into f32 (f16 also into f16), s8/u8 into s32 (.satfinite),
scale-d, imm-scale-a/b = -1, imm-trans-a/b for f16/bf16 (tests/test_wgmma_layouts.py; Triton's sm_90
tl.dot matmuls and attention match the H100 byte for byte).  Refused at load: sparse wgmma, imm-trans on
tf32/fp8 operands and imm operands on the integer form (the ISA has neither), imm-trans other than 0/1.
"""

from __future__ import annotations

import re

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower import abi
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.rules import mma as M
from ptxjit.lower.rules.mma_numerics import counted_loop
from ptxjit.lower.rules.wgmma_desc import Descriptor
from ptxjit.lower.safety.bounds import ADDR_BITS, KIND_SHARED, pack_fault
from ptxjit.lower.types import F64, I8, I16, I32, I64, const_int

_SHAPE = re.compile(r"m64n(\d+)k(\d+)$")
_ESIZE = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1, "s8": 1, "u8": 1}
_ETYPE = {1: I8, 2: I16, 4: I32}


def wgmma_op(ins: Instr) -> str:
    return next((m for m in ins.mods if m in ("fence", "commit_group", "wait_group", "mma_async")), "")


def variant(ins: Instr) -> M.Mma | str:
    """The variant of a wgmma.mma_async instruction, or why ptxjit cannot run it."""
    shape = next((m for m in ins.mods if _SHAPE.fullmatch(m)), None)
    tys = [m for m in ins.mods if m in M._BITS]
    if shape is None or len(tys) != 3:
        return "wgmma.mma_async needs an m64nNkK shape and .dtype.atype.btype"
    if ins.has("sp"):
        return "sparse wgmma is not supported"
    dt, at, bt = tys
    n, k = (int(x) for x in _SHAPE.fullmatch(shape).groups())  # type: ignore[union-attr]
    want_k = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32}.get(at)
    if want_k is None or k != want_k:
        return f"wgmma .{at} with k{k} is not supported"
    ok = ("s32",) if at in ("s8", "u8") else ("f32", "f16") if at in ("f16", "e4m3", "e5m2") else ("f32",)
    if dt not in ok or (at in ("f16", "bf16", "tf32") and bt != at):
        return f"wgmma .{dt}.{at}.{bt} is not supported"
    return M.Mma(64, n, k, dt, at, bt, dt, ins.has("satfinite"), threads=128, frag="wgmma")


def _imm(op) -> int | None:
    return op.value if isinstance(op, ir.Imm) else None


def _check(ins: Instr) -> str | None:
    if wgmma_op(ins) != "mma_async":
        return None
    mm = variant(ins)
    if isinstance(mm, str):
        return mm
    extra = ins.operands[4:]
    if mm.at in ("s8", "u8"):
        # the integer form is `d, a, b-desc, scale-d`: no imm-scale, no imm-trans (ptxas refuses them)
        if extra:
            return f"wgmma .{mm.at} takes no imm-scale-a/b or imm-trans-a/b operands (d, a, b-desc, scale-d)"
        return None
    for o in extra[:2]:
        if _imm(o) not in (1, -1):
            return "wgmma imm-scale-a/b must be 1 or -1"
    trans = extra[2:]
    if len(trans) > (1 if _a_from_regs(ins) else 2):
        return "wgmma has too many operands: imm-trans-a (with A in shared memory) and imm-trans-b at most"
    if trans and mm.at not in ("f16", "bf16"):
        # the ISA's tf32 and fp8 forms end at imm-scale-b: only 16-bit operands may be transposed
        return (f"wgmma .{mm.at} takes no imm-trans-a/b operands: only .f16/.bf16 operands may be MN-major "
                "(transposed); tf32 and fp8 operands are K-major")
    if any(_imm(o) not in (0, 1) for o in trans):
        return "wgmma imm-trans-a/b must be the immediate 0 (K-major) or 1 (MN-major, transposed)"
    return None


def _transposed(ins: Instr) -> tuple[bool, bool]:
    """(A is MN-major, B is MN-major): imm-trans-a and imm-trans-b, or imm-trans-b alone with A in registers."""
    trans = [_imm(o) == 1 for o in ins.operands[6:]]
    if _a_from_regs(ins):
        return False, bool(trans and trans[0])
    return bool(trans and trans[0]), len(trans) > 1 and trans[1]


def _a_from_regs(ins: Instr) -> bool:
    return isinstance(ins.operands[1], ir.Vec) and len(ins.operands[1].items) > 1


def _descriptor_fill(lw: FnLowering, mm: M.Mma, base: ll.Value, desc: ll.Value, which: str,
                     negate: bool, mn_major: bool, bad: ll.Value) -> None:
    """Copy matrix A (64 x K) or B (K x N) from shared memory, as described by `desc` (wgmma_desc.py), into
    the dense matrix of the warpgroup's scratch (decoded like the register fragments).  An element outside
    the shared window is read as the window's first bytes and its offset noted in `bad` (the caller faults)."""
    b = lw.b
    oa, ob, _oc, _ = mm.offsets()
    t = mm.at if which == "a" else mm.bt
    es = _ESIZE[t]
    d = Descriptor(b, desc)
    size = b.load(b.gep(lw.worker, [const_int(I32, abi.W_SHARED_SIZE)]))
    rows = mm.M if which == "a" else mm.N  # the strided dimension: m of A, n of B
    store_t = F64 if mm.kind == "float" else I64
    with counted_loop(b, rows * mm.K, "wg_" + which) as idx:
        r = b.zext(b.udiv(idx, const_int(I32, mm.K)), I64)
        k = b.zext(b.urem(idx, const_int(I32, mm.K)), I64)
        off = d.offset(r, k, es, mn_major)
        ok = b.icmp_unsigned("<=", b.add(off, const_int(I64, es)), size)
        with b.if_then(b.not_(ok)):
            b.store(off, bad)
        p = lw.typed_ptr(b.gep(lw.shared_ptr(), [b.select(ok, off, const_int(I64, 0))]), _ETYPE[es])
        raw = b.load(p, align=1)
        word = b.zext(raw, I32) if es < 4 else raw
        v = M._element(lw, word, t, 0)
        if negate:
            v = b.fneg(v)
        if which == "a":
            dst = b.add(b.mul(b.trunc(r, I32), const_int(I32, mm.ka)), b.trunc(k, I32))
            b.store(v, M._slot(lw, base, oa, dst, store_t))
        else:
            dst = b.add(b.mul(b.trunc(k, I32), const_int(I32, mm.N)), b.trunc(r, I32))
            b.store(v, M._slot(lw, base, ob, dst, store_t))


def wait_for_warpgroup(lw: FnLowering, mm, tag: str) -> ll.Value:
    """Suspend until every warp of the warpgroup has published its operands (_all_published); then a
    fresh slot for the first bad shared-memory offset a descriptor gives (-1: none)."""
    b = lw.b
    head = lw.llfn.append_basic_block(f"{tag}_wait")
    b.branch(head)
    b.position_at_end(head)
    lw.yield_point(warp_level=True)
    ready = lw.llfn.append_basic_block(f"{tag}_ready")
    b.cbranch(_all_published(lw, mm), ready, head)
    b.position_at_end(ready)
    with b.goto_entry_block():
        bad = b.alloca(I64, name=f"{tag}_bad_offset")
    b.store(const_int(I64, -1), bad)
    return bad


def _all_published(lw: FnLowering, mm: M.Mma) -> ll.Value:
    """Have all threads of this thread's warpgroup reached the sequence number this thread has?  (A warp
    released earlier may already be at the next wgmma, one number ahead: at least, not equal.)"""
    b = lw.b
    base = M.group_base(lw, mm)
    mine = b.load(M._slot(lw, base, 8, b.urem(lw.tlin, const_int(I32, mm.threads)), I64))
    lag = const_int(ll.IntType(1), 0)
    if lw.cg.baseline:  # a loop over the 128 numbers: unrolled, 770 lines of IR per wgmma at tier 0
        with b.goto_entry_block():
            acc = b.alloca(ll.IntType(1), name="wg_lag")
        b.store(lag, acc)
        with counted_loop(b, mm.threads, "wg_seq") as m:
            behind = b.icmp_signed("<", b.load(M._slot(lw, base, 8, m, I64)), mine)
            b.store(b.or_(b.load(acc), behind), acc)
        return b.not_(b.load(acc))
    for m in range(mm.threads):
        lag = b.or_(lag, b.icmp_signed("<", b.load(M._slot(lw, base, 8, const_int(I32, m), I64)), mine))
    return b.not_(lag)


def _lower_mma_async(lw: FnLowering, ins: Instr) -> None:
    b = lw.b
    mm = variant(ins)
    assert isinstance(mm, M.Mma)
    lw.cg.location_id(ins)  # sizes the scratch area (mma.scratch_per_thread)
    ops = ins.operands
    d_ops = M._regs(ops[0])
    rs = _a_from_regs(ins)
    float_ab = mm.kind == "float"
    neg_a = float_ab and _imm(ops[4]) == -1 if len(ops) > 4 else False
    neg_b = float_ab and _imm(ops[5]) == -1 if len(ops) > 5 else False
    trans_a, trans_b = _transposed(ins)
    # publish: C (zero when scale-d is false) and, for "rs", this thread's A registers
    c_vals = M._acc_elements(lw, d_ops, mm.ct)
    scale_d = ops[3]
    if isinstance(scale_d, ir.Imm):
        keep = const_int(ll.IntType(1), scale_d.value != 0)
    else:
        keep = lw.read_pred(scale_d)
    zero = ll.Constant(F64, 0.0) if float_ab else const_int(I64, 0)
    c_vals = [b.select(keep, v, zero) for v in c_vals]
    a_ops = M._regs(ops[1]) if rs else []
    M.publish(lw, mm, a_ops, [], c_vals, negate_a=neg_a)
    # a warp point, passed again until all 4 warps of the warpgroup have published (their sequence
    # numbers caught up with this thread's); a warp that runs ahead only rewrites its own elements
    bad = wait_for_warpgroup(lw, mm, "wgmma")

    def fill(base: ll.Value) -> None:
        if not rs:
            _descriptor_fill(lw, mm, base, lw.read(ops[1], "b64"), "a", neg_a, trans_a, bad)
        _descriptor_fill(lw, mm, base, lw.read(ops[2], "b64"), "b", neg_b, trans_b, bad)

    base = M.compute_once(lw, mm, fill)
    fault_if_outside(lw, ins, bad, "wgmma_after_fault")
    M._write_acc(lw, mm, base, d_ops)


def fault_if_outside(lw: FnLowering, ins: Instr, bad: ll.Value, after: str) -> None:
    """A descriptor that reached past the shared window (`bad` holds its first bad offset, -1 if none):
    the fault names the wgmma and the offset."""
    b = lw.b
    off = b.load(bad)
    with b.if_then(b.icmp_unsigned("!=", off, const_int(I64, -1)), likely=False):
        word = pack_fault(lw.cg.location_id(ins), KIND_SHARED)
        lw.trap(abi.ERR_FAULT, b.or_(const_int(I64, word), b.and_(off, const_int(I64, (1 << ADDR_BITS) - 1))))
        b.position_at_end(lw.llfn.append_basic_block(after))


@rule("wgmma", family="warp", check=_check)
def lower_wgmma(lw: FnLowering, ins: Instr) -> None:
    """wgmma.mma_async (see the module docstring); wgmma.fence / commit_group / wait_group: the
    multiply-accumulate completed at its own point, so these only pass a warp point."""
    if wgmma_op(ins) == "mma_async":  # (wgmma.mma_async.sp: wgmma_sparse.py's form rule)
        _lower_mma_async(lw, ins)
    else:
        lw.yield_point(warp_level=True)
