"""An IRBuilder that folds integer arithmetic on constants while the lowering emits it.

The lowering computes many values from launch constants it already knows (block sizes, save-area offsets,
shift amounts of immediate operands): `mul i64 128, 161`, or a shift's guard `icmp uge i32 1, 32` and the
select on it.  LLVM folds them too, but only after llvmlite has built them as Python objects, printed them
as text and LLVM has parsed that text; folded here they cost nothing.  Only what LLVM itself defines for
constant operands is folded (two's-complement wrap-around, shifts by less than the width), so the code is
the same as LLVM's folding would make it; anything else goes to the ordinary builder.  So are the identities
with one constant operand (`x + 0`, `x | 0`, `x & -1`, `x * 1`, a shift by 0, `x & 0`): the bounds checks
and address arithmetic are written for the general case and meet their neutral elements often.
"""

from __future__ import annotations

import llvmlite.ir as ll


def _int(v) -> int | None:
    """The value of an integer constant as an unsigned number of its width, else None."""
    if isinstance(v, ll.Constant) and isinstance(v.type, ll.IntType) and type(v.constant) is int:
        return v.constant & ((1 << v.type.width) - 1)
    return None


def _signed(x: int, width: int) -> int:
    return x - (1 << width) if x >> (width - 1) else x


_UNSIGNED = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
             "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
_BOOL = ll.IntType(1)


# Identities per operation: (the constant that leaves the other operand as it is, whether that may be the
# left operand too, the constant that absorbs it: "all" = every bit set); None where there is none
_IDENTITY = {"add": (0, True, None), "sub": (0, False, None), "mul": (1, True, None), "or": (0, True, "all"),
             "xor": (0, True, None), "and": ("all", True, 0), "shl": (0, False, None), "lshr": (0, False, None),
             "ashr": (0, False, None)}


def _is(c: int | None, want, width: int) -> bool:
    return c is not None and want is not None and c == ((1 << width) - 1 if want == "all" else want)


class FoldingBuilder(ll.IRBuilder):
    def _fold(self, op, lhs, rhs, name: str, flags, fold):
        a, b = _int(lhs), _int(rhs)
        if lhs.type == rhs.type and isinstance(lhs.type, ll.IntType):
            w = lhs.type.width
            if a is not None and b is not None:
                value = fold(a, b, w)
                if value is not None:
                    return ll.Constant(lhs.type, value & ((1 << w) - 1))
            neutral, commutes, absorbing = _IDENTITY[op.__name__.rstrip("_")]
            if _is(b, neutral, w):
                return lhs
            if commutes and _is(a, neutral, w):
                return rhs
            if _is(b, absorbing, w):
                return rhs
            if _is(a, absorbing, w):
                return lhs
        return op(lhs, rhs, name, flags=flags) if flags else op(lhs, rhs, name)

    def add(self, lhs, rhs, name="", flags=()):
        return self._fold(super().add, lhs, rhs, name, flags, lambda a, b, w: a + b)

    def sub(self, lhs, rhs, name="", flags=()):
        return self._fold(super().sub, lhs, rhs, name, flags, lambda a, b, w: a - b)

    def mul(self, lhs, rhs, name="", flags=()):
        return self._fold(super().mul, lhs, rhs, name, flags, lambda a, b, w: a * b)

    def and_(self, lhs, rhs, name="", flags=()):
        return self._fold(super().and_, lhs, rhs, name, flags, lambda a, b, w: a & b)

    def or_(self, lhs, rhs, name="", flags=()):
        return self._fold(super().or_, lhs, rhs, name, flags, lambda a, b, w: a | b)

    def xor(self, lhs, rhs, name="", flags=()):
        return self._fold(super().xor, lhs, rhs, name, flags, lambda a, b, w: a ^ b)

    # a shift by the width or more is poison in LLVM: left to the builder (the lowering guards those itself)
    def shl(self, lhs, rhs, name="", flags=()):
        return self._fold(super().shl, lhs, rhs, name, flags, lambda a, b, w: a << b if b < w else None)

    def lshr(self, lhs, rhs, name="", flags=()):
        return self._fold(super().lshr, lhs, rhs, name, flags, lambda a, b, w: a >> b if b < w else None)

    def ashr(self, lhs, rhs, name="", flags=()):
        return self._fold(super().ashr, lhs, rhs, name, flags,
                          lambda a, b, w: _signed(a, w) >> b if b < w else None)

    def icmp_unsigned(self, cmpop, lhs, rhs, name=""):
        a, b = _int(lhs), _int(rhs)
        if a is not None and b is not None and lhs.type == rhs.type and cmpop in _UNSIGNED:
            return ll.Constant(_BOOL, int(_UNSIGNED[cmpop](a, b)))
        return super().icmp_unsigned(cmpop, lhs, rhs, name)

    def icmp_signed(self, cmpop, lhs, rhs, name=""):
        a, b = _int(lhs), _int(rhs)
        if a is not None and b is not None and lhs.type == rhs.type and cmpop in _UNSIGNED:
            w = lhs.type.width
            return ll.Constant(_BOOL, int(_UNSIGNED[cmpop](_signed(a, w), _signed(b, w))))
        return super().icmp_signed(cmpop, lhs, rhs, name)

    def select(self, cond, lhs, rhs, name="", flags=()):
        c = _int(cond)
        if c is not None and cond.type == _BOOL and lhs.type == rhs.type:
            return lhs if c else rhs
        if lhs is rhs:
            return lhs
        return super().select(cond, lhs, rhs, name, flags=flags) if flags else super().select(cond, lhs, rhs, name)

    def zext(self, value, typ, name=""):
        a = _int(value)
        if a is not None and isinstance(typ, ll.IntType) and typ.width >= value.type.width:
            return ll.Constant(typ, a)
        return super().zext(value, typ, name)

    def sext(self, value, typ, name=""):
        a = _int(value)
        if a is not None and isinstance(typ, ll.IntType) and typ.width >= value.type.width:
            return ll.Constant(typ, _signed(a, value.type.width) & ((1 << typ.width) - 1))
        return super().sext(value, typ, name)

    def trunc(self, value, typ, name=""):
        a = _int(value)
        if a is not None and isinstance(typ, ll.IntType) and typ.width <= value.type.width:
            return ll.Constant(typ, a & ((1 << typ.width) - 1))
        return super().trunc(value, typ, name)
