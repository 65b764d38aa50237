"""Packed 16-bit integer SIMD (PTX ISA 8.0, sm_90): add/sub .s16x2/.u16x2.

Each 32-bit register holds two 16-bit lanes (lane 0 in bits 0-15); add/sub work per lane and wrap
modulo 2**16 (the ISA defines no .sat for these types), so signed and unsigned give the same bits.
min/max .s16x2/.u16x2 (.relu) are in integer.py.  The lanes are an LLVM <2 x i16> vector, which
the host's SIMD instructions do directly.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.types import I16, I32

SIMD16_TYPES = ("s16x2", "u16x2")
_V2I16 = ll.VectorType(I16, 2)


def simd16_type(ins: Instr) -> str | None:
    """'s16x2' / 'u16x2' where the instruction is a packed 16-bit form (a modifier, not a register type)."""
    return next((m for m in ins.mods if m in SIMD16_TYPES), None)


def lower_add_sub(lw: FnLowering, ins: Instr) -> None:
    """add/sub.{s16x2,u16x2} d, a, b: per 16-bit lane, wrapping."""
    b = lw.b
    a = b.bitcast(lw.read(ins.operands[1], "b32"), _V2I16)
    c = b.bitcast(lw.read(ins.operands[2], "b32"), _V2I16)
    r = b.add(a, c) if ins.opcode == "add" else b.sub(a, c)
    lw.write(ins.operands[0], b.bitcast(r, I32), "b32")
