"""Numeric literals of PTX: integer and 0f/0d float tokens -> values, and 64-bit wrapping."""

from __future__ import annotations

import re
import struct

from ptxjit.frontend import ir

# ptxas accepts integer literals past 64 bits (2**65 loads), refuses much larger ones ("Constant
# overflow", 10**40); 128 bits is the line we draw.  Accepted values are reduced modulo 2**64.
MAX_LITERAL = 1 << 128
DECIMAL = re.compile(r"0|[1-9][0-9]*")

U64 = 1 << 64


# Significant digits past which a literal is >= MAX_LITERAL whatever they are, per base.  Longer
# literals are not converted at all: Python refuses decimal strings over 4,300 digits (ValueError),
# and converting a megabyte of digits only to refuse the value would be slow anyway.
_MAX_DIGITS = {16: 32, 2: 128, 8: 43, 10: 39}


def int_literal(text: str) -> int:
    """Value of an int token (the lexer only produces well-formed ones); a literal too long to be
    below MAX_LITERAL reads as MAX_LITERAL, which the callers refuse as an overflow."""
    t = text.rstrip("uU")
    if t[:2] in ("0x", "0X"):
        base, digits = 16, t[2:]
    elif t[:2] in ("0b", "0B"):
        base, digits = 2, t[2:]
    elif len(t) > 1 and t[0] == "0":
        base, digits = 8, t[1:]
    else:
        base, digits = 10, t
    digits = digits.lstrip("0") or "0"
    if len(digits) > _MAX_DIGITS[base]:
        return MAX_LITERAL
    return int(digits, base)


def decimal_below(digits: str, limit: int) -> bool:
    """Whether the decimal digit string `digits` (a register number) is below `limit`, without
    converting strings too long for int()."""
    digits = digits.lstrip("0") or "0"
    return len(digits) <= len(str(limit)) and int(digits) < limit


def wrap64(v: int) -> int:
    """Two's-complement reduction to [-2**63, 2**63): how a 64-bit address offset wraps."""
    return (v + (1 << 63)) % U64 - (1 << 63)


def hexfloat_literal(text: str) -> ir.FImm:
    bits = int(text[2:], 16)
    if text[1] in "fF":
        return ir.FImm(struct.unpack("<f", struct.pack("<I", bits))[0], bits, 32)
    return ir.FImm(struct.unpack("<d", struct.pack("<Q", bits))[0], bits, 64)
