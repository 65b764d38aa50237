"""Numeric literals of PTX: integer and 0f/0d float tokens -> values, and 64-bit wrapping."""

from __future__ import annotations

import re
import struct

from ptxjit.frontend import ir

# ptxas accepts integer literals past 64 bits (2**65 loads), refuses much larger ones ("Constant
# overflow", 10**40); 128 bits is the line we draw.  Accepted values are reduced modulo 2**64.
_MAX_LITERAL = 1 << 128
_DECIMAL = re.compile(r"0|[1-9][0-9]*")

_U64 = 1 << 64


def _int_literal(text: str) -> int:
    """Value of an int token (the lexer only produces well-formed ones)."""
    t = text.rstrip("uU")
    if t[:2] in ("0x", "0X"):
        return int(t[2:], 16)
    if t[:2] in ("0b", "0B"):
        return int(t[2:], 2)
    if len(t) > 1 and t[0] == "0":
        return int(t, 8)
    return int(t)


def wrap64(v: int) -> int:
    """Two's-complement reduction to [-2**63, 2**63): how a 64-bit address offset wraps."""
    return (v + (1 << 63)) % _U64 - (1 << 63)


def _hexfloat(text: str) -> ir.FImm:
    bits = int(text[2:], 16)
    if text[1] in "fF":
        return ir.FImm(struct.unpack("<f", struct.pack("<I", bits))[0], bits, 32)
    return ir.FImm(struct.unpack("<d", struct.pack("<Q", bits))[0], bits, 64)
