"""PTX constant expressions: `(1<<4)+3`, `0<192`, `buf+2*4`, `(.u64)-1 >> 60`, `1.5*2.0`.

PTX evaluates them at load time as C does, simplified to 64 bits with every case defined (PTX ISA
"Constant Expressions"); the rules below are ptxas's, checked against what it emits for sm_90
(`tests/test_constant_expressions.py` holds the cases and the values ptxas produced):
- an integer literal is signed unless it has a U suffix or needs 64 unsigned bits;
- arithmetic wraps modulo 2**64; mixing signed and unsigned converts both to unsigned (the usual
  arithmetic conversions), for + - * / & | ^ and the ordered comparisons;
- `/` truncates toward zero; `%` reads both operands as unsigned and its result is unsigned;
- `<<`/`>>` keep the first operand's type (`>>` is arithmetic for signed), the count is taken
  modulo 64; `~` and `(.u64)` make unsigned, `!`, `&&`, `||` and comparisons give signed 0 or 1;
- `c ? a : b` has the type of the branch it picks (ptxas does not convert the two);
- floating-point operands (decimal literals, as .f64) take + - * / and comparisons, never mixed with
  integers; a 0f/0d hex literal is no part of an expression (ptxas: syntax error);
- division or remainder by zero is an error, as in ptxas.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass

from ptxjit.errors import PTXSyntaxError
from ptxjit.frontend.literals import U64

_S64_MIN = 1 << 63
_NONZERO = re.compile(r"[1-9]")  # a literal with a nonzero digit that reads as 0.0 underflowed
MAX_EXPR_NESTING = 64  # parentheses and unary operators; deeper is refused, not a RecursionError


@dataclass(frozen=True)
class Const:
    """The value of a constant expression: a Python int in the range of its type, or a float."""

    value: int | float
    unsigned: bool = False

    @property
    def is_float(self) -> bool:
        return isinstance(self.value, float)


def _int(v: int, unsigned: bool) -> Const:
    v %= U64
    return Const(v if unsigned or v < _S64_MIN else v - U64, unsigned)


def _u(c: Const) -> int:
    return c.value % U64


# binary operators by precedence level, lowest first (C's table; ?: is below all of them)
_LEVELS: tuple[tuple[str, ...], ...] = (
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="), ("<<", ">>"),
    ("+", "-"), ("*", "/", "%"),
)
_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt,
            "<=": operator.le, ">=": operator.ge}
_FLOAT_OK = set(_COMPARE) | {"+", "-", "*", "/"}
_CONTINUES = frozenset(op for ops in _LEVELS for op in ops) | {"?"}  # what may follow an operand in an expression
_UNARY = ("+", "-", "!", "~")
# the tokens that can start an expression (besides int/float tokens)
STARTERS = frozenset(("(", "+", "-", "!", "~", "WARP_SZ"))


class ConstExprParser:
    """Precedence climbing over the host parser's tokens (peek/next/at/accept/expect/error/pos)."""

    def __init__(self, p) -> None:
        self.p = p
        self.depth = 0

    def parse(self) -> Const:
        p = self.p
        if p.peek()[0] == "int":  # a lone integer literal, as most immediates are: no precedence climbing
            nxt = p.peek(1)
            if nxt[0] != "punct" or nxt[1] not in _CONTINUES:
                return self.primary()
        cond_tok = p.peek()
        c = self.binary(0)
        if not self.p.accept("?"):
            return c
        self.need_int(c, "?:", cond_tok)
        a = self.parse()
        self.p.expect(":")
        b_tok = self.p.peek()
        b = self.parse()
        if a.is_float or b.is_float:  # ptxas: "Integer constant expression expected"
            self.need_int(a if a.is_float else b, "?:", b_tok)
        return a if c.value else b

    def binary(self, level: int) -> Const:
        if level == len(_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        ops = _LEVELS[level]
        while self.p.peek()[0] == "punct" and self.p.peek()[1] in ops:
            tok = self.p.next()
            right = self.binary(level + 1)
            left = self.apply(tok, left, right)
        return left

    def unary(self) -> Const:
        tok = self.p.peek()
        self.depth += 1
        try:
            if self.depth > MAX_EXPR_NESTING:
                raise self.p.error(f"a shallower constant expression (at most {MAX_EXPR_NESTING} "
                                   f"nested parentheses and unary operators)")
            if tok[1] in _UNARY and tok[0] == "punct":
                self.p.next()
                c = self.unary()
                if tok[1] == "+":
                    return c
                if tok[1] == "-":
                    return Const(-c.value) if c.is_float else _int(-c.value, c.unsigned)
                self.need_int(c, tok[1], tok)
                if tok[1] == "!":
                    return Const(int(not c.value))
                return _int(~_u(c), True)
            return self.primary()
        finally:
            self.depth -= 1

    def primary(self) -> Const:
        p = self.p
        tok = p.next()
        kind, text = tok[0], tok[1]
        if kind == "int":
            v = p.int_value(tok)
            unsigned = text[-1] in "uU" or v >= _S64_MIN
            return _int(v, unsigned)
        if kind == "float":
            v = float(text)
            if math.isinf(v) or (v == 0.0 and _NONZERO.search(text.split("e")[0].split("E")[0])):
                raise PTXSyntaxError(p.pos(tok), "float constant overflow: beyond the range of .f64", text)
            return Const(v)
        if text == "WARP_SZ":  # the warp size, a constant of the PTX language
            return Const(32)
        if text == "(":
            if p.peek()[1] in (".s64", ".u64") and p.peek(1)[1] == ")":  # a cast
                cast = p.next()[1]
                p.next()
                c = self.unary()
                self.need_int(c, f"({cast})", tok)
                return _int(c.value, cast == ".u64")
            if p.peek()[0] == "directive" and p.peek(1)[1] == ")":
                raise PTXSyntaxError(p.pos(), f"unsupported cast ({p.peek()[1]}): constant expressions "
                                     f"cast only to (.s64) or (.u64)")
            c = self.parse()
            p.expect(")")
            return c
        if kind == "hexfloat":
            raise PTXSyntaxError(p.pos(tok), "a 0f/0d float literal cannot be part of a constant "
                                 "expression (write a decimal float such as 1.5)", text)
        raise p.error("a constant (an integer, a float or a parenthesized constant expression)", tok)

    def apply(self, tok, a: Const, b: Const) -> Const:
        op = tok[1]
        if a.is_float or b.is_float:
            if op not in _FLOAT_OK:
                self.need_int(a if a.is_float else b, op, tok)
            if not (a.is_float and b.is_float):
                raise PTXSyntaxError(self.p.pos(tok), f"constant expression type mismatch: '{op}' with "
                                     f"a float and an integer operand (write 2.0, not 2)")
            if op in _COMPARE:
                return Const(int(_COMPARE[op](a.value, b.value)))
            if op == "/" and b.value == 0.0:
                raise PTXSyntaxError(self.p.pos(tok), "constant expression has division by zero")
            return Const({"+": operator.add, "-": operator.sub, "*": operator.mul,
                          "/": operator.truediv}[op](a.value, b.value))
        unsigned = a.unsigned or b.unsigned  # the usual arithmetic conversions
        x, y = (_u(a), _u(b)) if unsigned else (a.value, b.value)
        if op in _COMPARE:
            return Const(int(_COMPARE[op](x, y)))
        if op in ("&&", "||"):
            return Const(int(bool(a.value) and bool(b.value) if op == "&&" else bool(a.value) or bool(b.value)))
        if op in ("<<", ">>"):
            count = _u(b) % 64
            return _int(a.value << count if op == "<<" else a.value >> count, a.unsigned)
        if op in ("/", "%"):
            if b.value == 0:
                raise PTXSyntaxError(self.p.pos(tok), "constant expression has division by zero")
            if op == "%":
                return _int(_u(a) % _u(b), True)
            q = abs(x) // abs(y)
            return _int(q if (x < 0) == (y < 0) else -q, unsigned)
        fn = {"+": operator.add, "-": operator.sub, "*": operator.mul, "&": operator.and_,
              "|": operator.or_, "^": operator.xor}[op]
        return _int(fn(x, y), unsigned)

    def need_int(self, c: Const, op: str, tok) -> None:
        if c.is_float:
            raise PTXSyntaxError(self.p.pos(tok), f"integer constant expression expected: '{op}' takes "
                                 f"integers, not a float")


def parse_const(p) -> Const:
    """Parse one constant expression at the host parser's position."""
    return ConstExprParser(p).parse()


def parse_int_const(p, what: str = "an integer constant expression") -> int:
    """An integer constant expression's value (signed or unsigned 64-bit range)."""
    tok = p.peek()
    c = parse_const(p)
    if c.is_float:
        raise PTXSyntaxError(p.pos(tok), f"expected {what}, found a float")
    return c.value
