"""PTX types as LLVM types.

Registers keep their declared width; f32/f64 registers are LLVM float/double, everything else
(including f16/bf16 and packed x2 types) is an integer bit pattern.  Rules convert as needed.
"""

from __future__ import annotations

import struct

from llvmlite import ir as ll

from ptxjit.frontend.ir import type_size

I1 = ll.IntType(1)
I8 = ll.IntType(8)
I16 = ll.IntType(16)
I32 = ll.IntType(32)
I64 = ll.IntType(64)
I128 = ll.IntType(128)
F32 = ll.FloatType()
F64 = ll.DoubleType()
PTR = I8.as_pointer()
VOID = ll.VoidType()

_BY_SIZE = {1: I8, 2: I16, 4: I32, 8: I64, 16: I128}


def lltype(t: str) -> ll.Type:
    if t == "pred":
        return I1
    if t == "f32":
        return F32
    if t == "f64":
        return F64

    return _BY_SIZE[type_size(t)]


def int_type(bits: int) -> ll.IntType:
    return ll.IntType(bits)


def is_float_ll(t: ll.Type) -> bool:
    return isinstance(t, ll.FloatType | ll.DoubleType | ll.HalfType)


def const_int(t: ll.Type, v: int) -> ll.Constant:
    """An integer constant, wrapped to the type's width (PTX immediates may be given unsigned or signed)."""
    w = t.width
    v &= (1 << w) - 1
    if w > 1 and v >> (w - 1):
        v -= 1 << w
    return ll.Constant(t, v)


def float_to_bits16(v: float, t: str) -> int:
    """Host-side conversion of a literal to f16/bf16 bits (round to nearest even)."""
    if t.startswith("bf16"):
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        if v != v:
            return 0x7FFF
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
    import numpy as np

    return int(np.array(v, dtype=np.float16).view(np.uint16))
