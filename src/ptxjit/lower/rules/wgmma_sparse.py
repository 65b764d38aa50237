"""Sparse warpgroup mma: wgmma.mma_async.sp (PTX ISA §9.7.15.6), sm_90a.

    wgmma.mma_async.sp.sync.aligned.m64nNkK.dtype.atype.btype d, a-desc|a, b-desc, sp-meta, sp-sel,
        scale-d[, imm-scale-a, imm-scale-b[, imm-trans-a,] imm-trans-b]

A (64 x K, 50% structured zeros) is held packed, 64 x K/2: in shared memory through a descriptor laid out
as the dense K/2-wide operand, or in registers in the dense m64nN(K/2) A-fragment layout.  The metadata
(`sp-meta`, one 32-bit word per thread) and the selector follow mma.sp's rules per warp (warp w holds
rows 16w .. 16w + 15; mma_sparse.py): K = 32 (f16/bf16) and 16 (tf32): a lane pair, sp-sel 0 or 1;
K = 64 (8-bit types): all four lanes, sp-sel 0.

Computed as the dense wgmma of the expanded A (wgmma.py's exchange, then mma_sparse's expansion before
the dense numerics).  Not verified on an H100 (no sparse golden data): tests/test_sparse_mma.py checks
it against a NumPy model of the ISA text.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import form_rule
from ptxjit.lower.rules import mma as M
from ptxjit.lower.rules import wgmma as W
from ptxjit.lower.rules.mma_numerics import counted_loop
from ptxjit.lower.rules.mma_sparse import SpMma, expand_sparse, publish_packed
from ptxjit.lower.types import F64, I64, const_int

_K = {"f16": 32, "bf16": 32, "tf32": 16, "e4m3": 64, "e5m2": 64, "s8": 64, "u8": 64}


def variant(ins: Instr) -> SpMma | str:
    """The sparse variant of a wgmma.mma_async.sp, or why ptxjit cannot run it."""
    shape = next((m for m in ins.mods if W._SHAPE.fullmatch(m)), None)
    tys = [m for m in ins.mods if m in M._BITS]
    if shape is None or len(tys) != 3:
        return "wgmma.mma_async.sp needs an m64nNkK shape and .dtype.atype.btype"
    dt, at, bt = tys
    n, k = (int(x) for x in W._SHAPE.fullmatch(shape).groups())  # type: ignore[union-attr]
    if _K.get(at) != k:
        return f"wgmma.sp .{at} with k{k} is not supported"
    ok = ("s32",) if at in ("s8", "u8") else ("f32", "f16") if at in ("f16", "e4m3", "e5m2") else ("f32",)
    if dt not in ok or (at in ("f16", "bf16", "tf32") and bt != at):
        return f"wgmma.sp .{dt}.{at}.{bt} is not supported"
    sel = ins.operands[4] if len(ins.operands) > 4 else None
    if not isinstance(sel, ir.Imm):
        return "the sparsity selector (sp-sel) must be an immediate"
    sat = ins.has("satfinite")
    sp = SpMma(M.Mma(64, n, k, dt, at, bt, dt, sat, threads=128, frag="wgmma", sparse=True),
               M.Mma(64, n, k // 2, dt, at, bt, dt, sat, threads=128, frag="wgmma"), sel.value)
    if not 0 <= sp.sel < 4 // sp.lanes:
        return f"sparsity selector {sp.sel} of wgmma.sp .{at} is undefined (the ISA allows 0..{4 // sp.lanes - 1})"
    return sp


def check(ins: Instr) -> str | None:
    sp = variant(ins)
    if isinstance(sp, str):
        return sp
    extra = ins.operands[6:]
    if sp.full.at in ("s8", "u8"):
        return "wgmma.sp integer forms take no imm-scale/imm-trans operands" if extra else None
    if any(W._imm(o) not in (1, -1) for o in extra[:2]):
        return "wgmma imm-scale-a/b must be 1 or -1"
    trans = extra[2:]
    if trans and (sp.full.at not in ("f16", "bf16") or any(W._imm(o) not in (0, 1) for o in trans)):
        return "wgmma.sp imm-trans-a/b: 0 or 1, and only for .f16/.bf16 operands"
    if len(trans) > (1 if W._a_from_regs(ins) else 2):
        return "wgmma.sp has too many operands"
    return None


def _sparse(ins: Instr) -> bool:
    return W.wgmma_op(ins) == "mma_async" and ins.has("sp")


@form_rule("wgmma", when=_sparse, form="sp", check=check)
def lower(lw: FnLowering, ins: Instr) -> None:
    """Publish C (scale-d), packed A registers (the register form) and metadata; wait until the whole
    warpgroup has; the first thread loads packed A / B through the descriptors, expands A, computes."""
    b = lw.b
    sp = variant(ins)
    assert isinstance(sp, SpMma)
    mm, pk = sp.full, sp.packed
    lw.cg.location_id(ins)
    ops = ins.operands
    d_ops = M._regs(ops[0])
    rs = W._a_from_regs(ins)
    float_ab = mm.kind == "float"
    neg_a = float_ab and len(ops) > 6 and W._imm(ops[6]) == -1
    neg_b = float_ab and len(ops) > 7 and W._imm(ops[7]) == -1
    trans = [W._imm(o) == 1 for o in ops[8:]]
    trans_a, trans_b = (False, bool(trans and trans[0])) if rs else (bool(trans and trans[0]), len(trans) > 1
                                                                    and trans[1])
    scale_d = ops[5]
    keep = const_int(ll.IntType(1), scale_d.value != 0) if isinstance(scale_d, ir.Imm) else lw.read_pred(scale_d)
    zero = ll.Constant(F64, 0.0) if float_ab else const_int(I64, 0)
    c_vals = [b.select(keep, v, zero) for v in M._acc_elements(lw, d_ops, mm.ct)]
    if rs:
        publish_packed(lw, sp, M._regs(ops[1]), ops[3])
    else:
        publish_packed(lw, sp, [], ops[3])
    M.publish(lw, mm, [], [], c_vals)
    bad = W.wait_for_warpgroup(lw, mm, "wgmma_sp")

    def fill(base: ll.Value) -> None:
        oa = sp.extra()[0]
        if not rs:  # packed A through its descriptor, into the packed area (the dense K/2 layout)
            pbase = b.gep(base, [const_int(I64, oa - pk.offsets()[0])])
            W._descriptor_fill(lw, pk, pbase, lw.read(ops[1], "b64"), "a", False, trans_a, bad)
        W._descriptor_fill(lw, mm, base, lw.read(ops[2], "b64"), "b", neg_b, trans_b, bad)
        expand_sparse(lw, sp, base)
        if neg_a:
            _negate_a(lw, mm, base)

    base = M.compute_once(lw, mm, fill)
    W.fault_if_outside(lw, ins, bad, "wgmma_sp_after_fault")
    M._write_acc(lw, mm, base, d_ops)


def _negate_a(lw: FnLowering, mm: M.Mma, base: ll.Value) -> None:
    """imm-scale-a = -1: the expanded A negated (zeros stay zeros of either sign: they add nothing)."""

    b = lw.b
    oa = mm.offsets()[0]
    with counted_loop(b, mm.M * mm.ka, "wgmma_sp_neg") as i:
        p = M._slot(lw, base, oa, i, F64)
        b.store(b.fneg(b.load(p)), p)


__all__ = ["check", "lower", "variant"]
