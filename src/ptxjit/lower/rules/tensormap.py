"""tensormap.replace and tensormap.cp_fenceproxy (PTX ISA §9.7.9.x, sm_90a): editing a 128-byte tensor map in
global or shared memory, and copying one from shared to global memory.

The map is ptxjit's encoding (tma.py: what `encode_tensor_map` writes and cp.async.bulk.tensor reads), so a
kernel that copies a grid-constant map into shared memory, replaces fields and publishes it with
cp_fenceproxy (CUTLASS's grouped GEMM, Triton's device-side descriptors) loads through the edited map.

    tensormap.replace.tile.field{.ss}.b1024.type [addr], new_val          global_address, rank, elemtype,
    tensormap.replace.tile.field{.ss}.b1024.type [addr], ord, new_val     interleave_layout, swizzle_mode,
                                                                           fill_mode; box_dim, global_dim,
                                                                           global_stride, element_stride
Field values as the ISA gives them: .rank is the rank - 1; .box_dim, .global_dim and .element_stride the
values of dimension `ord` (innermost first); .global_stride the byte stride of dimension ord + 1 (CUDA's
globalStrides[ord]); .swizzle_mode 0 none, 1 32B, 2 64B, 3 128B; .elemtype the ISA's codes (0 .u8, 1 .u16,
2 .u32, 3 .s32, 4 .u64, 5 .s64, 6 .f16, 7 .f32, 8 .f32.ftz, 9 .f64, 10 .bf16, 11 .tf32, 12 .tf32.ftz).
ptxjit's maps have no interleave and fill with zeros: interleave_layout and fill_mode take only 0, and an
element type past 12 (sm_100's sub-byte types) traps, like a swizzle mode past 3.

cp_fenceproxy copies `size` (128) bytes from shared to global memory; the proxy fence orders nothing more
here (the copy is complete when the instruction is).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower import abi
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.rules import tma
from ptxjit.lower.types import I8, I32, I64, const_int

_FIELD1 = ("global_address", "rank", "elemtype", "interleave_layout", "swizzle_mode", "fill_mode")
_FIELD2 = ("box_dim", "global_dim", "global_stride", "element_stride")
# ISA elemtype code -> ptxjit tma.DTYPES name (ftz and tf32 variants read and reduce as f32)
_ELEMTYPES = ("u8", "u16", "u32", "s32", "u64", "s64", "f16", "f32", "f32", "f64", "bf16", "f32", "f32")


def _field(ins: Instr) -> str | None:
    return next((m for m in ins.mods if m in _FIELD1 + _FIELD2), None)


def _space(ins: Instr) -> str:
    return "shared" if ins.has("shared::cta") else "global"


def _check(ins: Instr) -> str | None:
    if ins.has("cp_fenceproxy"):
        if not (ins.has("global") and ins.has("shared::cta")):
            return "tensormap.cp_fenceproxy copies from .shared::cta to .global"
        size = ins.operands[2] if len(ins.operands) > 2 else None
        if not isinstance(size, ir.Imm) or size.value != 128:
            return "tensormap.cp_fenceproxy copies 128 bytes (an immediate 128)"
        return None
    if not ins.has("replace"):
        return "tensormap: only replace and cp_fenceproxy exist"
    f = _field(ins)
    if f is None:
        return "tensormap.replace: this field is not supported (swizzle_atomicity is sm_100)"
    if not ins.has("tile"):
        return "tensormap.replace supports the .tile mode"
    want = 3 if f in _FIELD2 else 2
    if len(ins.operands) != want:
        return f"tensormap.replace.{f} takes {want} operands"
    if f in _FIELD2 and (not isinstance(ins.operands[1], ir.Imm) or not 0 <= ins.operands[1].value < 5):
        return f"tensormap.replace.{f}: ord must be an immediate 0..4"
    return None


def _store(lw: FnLowering, base: ll.Value, off: int, v: ll.Value, t: ll.IntType, space: str) -> None:
    b = lw.b
    p = lw.typed_ptr(b.gep(base, [const_int(I64, off)]), t)
    lw.user_access(b.store(v, p, align=1), space)


def _replace(lw: FnLowering, ins: Instr) -> None:
    b = lw.b
    f = _field(ins)
    space = _space(ins)
    addr = ins.operands[0]
    p = lw.address(addr, space)
    t64 = ins.has("b64")
    val = lw.read(ins.operands[-1], "b64" if t64 else "b32")
    v64 = val if t64 else b.zext(val, I64)
    v32 = b.trunc(v64, I32)
    ordv = ins.operands[1].value if f in _FIELD2 else 0

    def emit() -> None:
        if f == "global_address":
            _store(lw, p, tma.OFF_ADDR, v64, I64, space)
        elif f == "rank":
            _store(lw, p, tma.OFF_RANK, b.trunc(b.add(v64, const_int(I64, 1)), I8), I8, space)
        elif f == "box_dim":
            _store(lw, p, tma.OFF_BOX + 4 * ordv, v32, I32, space)
        elif f == "element_stride":
            _store(lw, p, tma.OFF_ESTRIDE + 4 * ordv, v32, I32, space)
        elif f == "global_dim":
            _store(lw, p, tma.OFF_DIM + 8 * ordv, v64, I64, space)
        elif f == "global_stride":
            _store(lw, p, tma.OFF_STRIDE + 8 * ordv, v64, I64, space)
        elif f == "swizzle_mode":
            _trap_unless(lw, b.icmp_unsigned("<", v64, const_int(I64, 4)))
            _store(lw, p, tma.OFF_SWIZZLE, b.trunc(v64, I8), I8, space)
        elif f in ("interleave_layout", "fill_mode"):  # ptxjit's maps: no interleave, zero fill
            _trap_unless(lw, b.icmp_unsigned("==", v64, const_int(I64, 0)))
        else:  # elemtype: the element type code and size ptxjit's map keeps
            _trap_unless(lw, b.icmp_unsigned("<", v64, const_int(I64, len(_ELEMTYPES))))
            code, size = const_int(I8, 0), const_int(I8, 0)
            for i, name in enumerate(_ELEMTYPES):
                hit = b.icmp_unsigned("==", v64, const_int(I64, i))
                c, s = tma.DTYPES[name]
                code = b.select(hit, const_int(I8, c), code)
                size = b.select(hit, const_int(I8, s), size)
            _store(lw, p, tma.OFF_DTYPE, code, I8, space)
            _store(lw, p, tma.OFF_ESIZE, size, I8, space)
    lw.bounds.guarded(addr, space, p, 128, emit)


def _trap_unless(lw: FnLowering, ok: ll.Value) -> None:
    with lw.b.if_then(lw.b.not_(ok), likely=False):
        lw.trap(abi.ERR_TRAP)


@rule("tensormap", family="memory", check=_check)
def lower_tensormap(lw: FnLowering, ins: Instr) -> None:
    """tensormap.replace (one field of the map at [addr]) and tensormap.cp_fenceproxy (a 128-byte copy
    from shared to global memory): module docstring."""
    if ins.has("replace"):
        _replace(lw, ins)
        return
    b = lw.b
    dst = lw.address(ins.operands[0], "global")
    src = lw.address(ins.operands[1], "shared")
    memcpy = lw.cg.intrinsic("llvm.memcpy.p0.p0.i64", ll.VoidType(), [dst.type, src.type, I64, ll.IntType(1)],
                             exact=True)
    lw.bounds.guarded(ins.operands[0], "global", dst, 128, lambda: lw.bounds.guarded(
        ins.operands[1], "shared", src, 128, lambda: (b.call(
            memcpy, [dst, src, const_int(I64, 128), const_int(ll.IntType(1), 0)]), None)[1]))


__all__ = ["lower_tensormap"]
