"""istypep.{texref,samplerref,surfref} p, a (PTX ISA §9.7.10.7): is `a` a handle of that opaque type?

ptxjit's handles are rows of ptxjit.texture's table (kind << 48 | generation << 16 | row): `a` is a
texture (.texref) or surface (.surfref) exactly when it is the live handle of such a row, the test
tex/suld/... make before trapping (lower/rules/texture.py); here it only gives the predicate, so any
64-bit value may be asked about without a fault.  ptxjit has no separate sampler objects (a texture
object carries its sampling state), so .samplerref is false for every value.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.lower import texture_table as T
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.types import I1, I32, I64, const_int

_KINDS = {"texref": T.KIND_TEXTURE, "surfref": T.KIND_SURFACE}


def _check(ins: ir.Instr) -> str | None:
    if not isinstance(ins.operands[0], ir.Reg) or not isinstance(ins.operands[1], ir.Reg | ir.Imm):
        return "istypep takes a predicate register and a 64-bit register or immediate (a texture/surface object)"
    return None


@rule("istypep", family="texture", check=_check)
def lower_istypep(lw: FnLowering, ins: ir.Instr) -> None:
    """istypep.type p, a: true where `a` is a live ptxjit texture (.texref) or surface (.surfref) object."""
    b = lw.b
    kind = next((_KINDS[m] for m in ins.mods if m in _KINDS), None)
    if kind is None:  # .samplerref: no sampler objects exist
        lw.write(ins.operands[0], const_int(I1, 0), "pred")
        return
    g = b.module.globals.get(T.SYMBOL)
    if g is None:  # the table texture.py's rules read (bound to ptxjit.texture's array at link time)
        g = ll.GlobalVariable(b.module, ll.ArrayType(I64, T.ROWS * T.WORDS), name=T.SYMBOL)
    h = lw.read(ins.operands[1], "b64")
    slot = b.and_(h, const_int(I64, 0xFFFF))
    inside = b.icmp_unsigned("<", slot, const_int(I64, T.ROWS))
    row = b.mul(b.select(inside, slot, const_int(I64, 0)), const_int(I64, T.WORDS))
    word = lw.internal_access(b.load(b.gep(g, [const_int(I32, 0), b.add(row, const_int(I64, T.W_HANDLE))])))
    ok = b.and_(inside, b.icmp_unsigned("==", word, h))
    ok = b.and_(ok, b.icmp_unsigned("==", b.lshr(h, const_int(I64, 48)), const_int(I64, kind)))
    ok = b.and_(ok, b.icmp_unsigned("!=", h, const_int(I64, 0)))
    lw.write(ins.operands[0], ok, "pred")
