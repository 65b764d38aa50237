"""Instruction and operand syntax of the PTX parser (a mixin of `frontend.parser._Parser`).

`[@[!]p] opcode.mod.mod operand, ...;` with register, immediate, address (`[base+off]`, and the
`[tex, {coords}]` lists of texture/surface instructions), vector `{a, b}`, call-list `(a, b)`,
predicate-pair `p|q`, negated (`!p`, `-%r`) and video-selector (`%r1.b0`) operands. The token
helpers (peek/next/accept/expect/error) and the scope resolution (resolve/is_reg) come from the
parser class; keeping them there lets this module hold only the operand grammar.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from ptxjit.errors import PTXSyntaxError, SourcePos
from ptxjit.frontend import ir
from ptxjit.frontend.constexpr import STARTERS, parse_const, parse_int_const
from ptxjit.frontend.literals import hexfloat_literal, wrap64

# video instruction operand selectors (.b0-.b3, .h0/.h1; SIMD .h10/.b3210 forms and .h1/.b20 masks)
_VIDEO_SEL = re.compile(r"b[0-7]{1,4}|h[0-3]{1,2}")
# The parser recurses on `{` in operands; deeper nesting than any real PTX uses is refused with a
# syntax error instead of a RecursionError.
MAX_OPERAND_NESTING = 8
_VEC_COMPONENT = {"x": "x", "y": "y", "z": "z", "w": "w", "r": "x", "g": "y", "b": "z", "a": "w"}


_U32 = 1 << 32
# Instructions that take an array element `arr[i]` as an operand (ptxas refuses it elsewhere with
# "Arguments mismatch"): as an address for the loads and stores, as the element's address for mov
# and cvta (to generic).
_ELEMENT_ADDRESS = frozenset(("ld", "ldu", "st"))
_ELEMENT_VALUE = frozenset(("mov", "cvta"))


@dataclass(frozen=True)
class Element:
    """An array element operand `arr[i]`, `arr[%r]` or `arr[%r+i]` as parsed; parse_instruction
    replaces it by an address (ld/st) or a value (mov/cvta) once the opcode is known.

    ptxas scales the subscript by the size of the array's scalar type (a .v4 .f32 array steps by 4,
    a 2-D array takes one flat subscript) and computes the byte offset in 32-bit unsigned
    arithmetic: the index register's low 32 bits plus the constant, times the size, modulo 2**32,
    zero-extended onto the array's address (`g[-1]` of a .u32 array is g + 0xFFFFFFFC, as the SASS
    it emits for sm_90 shows).  An unsized array (`.extern .shared .u32 s[]`) is indexed in bytes."""

    var: str
    space: str
    scale: int
    index: ir.Reg | ir.Sym | None  # None: a constant subscript
    const: int
    pos: SourcePos

    @property
    def const_offset(self) -> int:
        off = self.const * self.scale % _U32
        # a shared address is 32 bits wide: s[-1] is s - 4 there (the high word stays zero)
        return off - _U32 if self.space == "shared" and off >= _U32 // 2 else off


class InstructionParser:
    """Instruction/operand productions; needs the host parser's token and scope helpers."""

    # provided by frontend.parser._Parser
    depth: int
    vector_regs: bool
    cur_loc: tuple[int, int, int] | None
    fresh: int
    prelude: list[ir.Instr]  # instructions computing an operand, placed before the instruction
    module: ir.Module
    func: ir.Function | None

    # ------------------------------------------------------------ instructions
    def parse_instruction(self) -> ir.Instr:
        start = self.peek()
        guard = None
        if self.accept("@"):
            neg = self.accept("!")
            g = self.expect_kind("ident", "a predicate register after '@'")
            guard = ir.Reg(self.resolve(g[1]), neg)
        op_tok = self.expect_kind("ident", "an instruction")
        parts = op_tok[1].split(".")
        operands: list = []
        if not self.at(";"):
            operands.append(self.parse_operand())
            while self.accept(","):
                operands.append(self.parse_operand())
        if not self.at(";"):
            raise self.error("',' or ';' after an operand")
        self.next()
        pos = self.pos(op_tok if guard is None else start)
        if any(isinstance(o, Element) for o in operands):
            operands = [self.place_element(o, k, parts, guard, pos) if isinstance(o, Element) else o
                        for k, o in enumerate(operands)]
        return ir.Instr(parts[0], tuple(parts[1:]), operands, guard, pos, self.cur_loc)

    def parse_operand(self):
        self.depth += 1
        try:
            if self.depth > MAX_OPERAND_NESTING:
                raise self.error(f"an operand (vectors and lists nest at most {MAX_OPERAND_NESTING} deep)")
            return self.parse_operand1()
        finally:
            self.depth -= 1

    def parse_operand1(self):
        tok = self.peek()
        t = tok[1]
        kind = tok[0]
        if t == "[":
            return self.parse_address()
        if t == "{":
            self.next()
            items = [self.parse_operand()]
            while self.accept(","):
                items.append(self.parse_operand())
            self.expect("}")
            return ir.Vec(tuple(items))
        if t == "(" and not self.starts_call_list():
            return self.const_operand()
        if t == "(":
            self.next()
            items = []
            if not self.at(")"):
                items.append(self.parse_operand())
                while self.accept(","):
                    items.append(self.parse_operand())
            self.expect(")")
            return ir.CallList(tuple(items))
        if t == "!" and not self.names_register(1):
            return self.const_operand()
        if t == "!":
            self.next()
            r = self.expect_kind("ident", "a predicate register after '!'")
            return ir.Reg(self.resolve(r[1]), True)
        if t == "-" and self.names_register(1):  # vmad's negated register operand: -%r1
            self.next()
            r = self.parse_operand()
            if not isinstance(r, ir.Reg):
                raise self.error("a register after '-'", tok)
            return dataclasses.replace(r, minus=True)
        if kind == "hexfloat" or (t == "-" and self.peek(1)[0] == "hexfloat"):
            return self.parse_hexfloat()
        if kind in ("int", "float") or (kind == "punct" and t in STARTERS) or t == "WARP_SZ":
            return self.const_operand()
        if kind == "ident":
            self.next()
            if self.vector_regs:
                v = self.vector_operand(t)
                if v is not None:
                    return v
            base, _, sel = t.partition(".")
            if sel and _VIDEO_SEL.fullmatch(sel) and self.is_reg(self.resolve(base)):
                return ir.Reg(self.resolve(base), sel=sel)  # video operand selector: %r1.b0, %r1.h10
            name = self.resolve(t)
            if self.accept("|"):
                second = self.expect_kind("ident", "a predicate register after '|'")
                return ir.Pair(ir.Reg(name), ir.Reg(self.resolve(second[1])))
            if self.at("[") and not self.is_reg(name):  # an array element; names may start with %
                return self.element_operand(name, tok)
            if name.startswith("%") or name == "_" or self.is_reg(name):
                return ir.Reg(name)
            if self.at("+"):  # var+offset, the offset a constant expression: buf+4, buf+(2*4)
                return ir.Sym(name, wrap64(parse_int_const(self, "an integer offset")), True)
            return ir.Sym(name)
        raise self.error("an operand")

    # ------------------------------------------------------------ array elements
    def element_operand(self, name: str, tok) -> Element:
        """`arr[i]` (i a constant expression), `arr[%r]` or `arr[%r+i]` (at the '[')."""
        var = self.find_var(name)
        if var is None or not var.dims:
            raise PTXSyntaxError(self.pos(tok), f"indexing on non-array '{tok[1]}' (a subscript needs "
                                 f"an array variable declared in scope)")
        scale = ir.type_size(var.type) if var.dims[0] is not None else 1
        self.expect("[")
        index: ir.Reg | ir.Sym | None = None
        const = 0
        itok = self.peek()
        if itok[0] == "ident" and itok[1] != "WARP_SZ":
            self.next()
            iname = self.resolve(itok[1])
            if self.is_reg(iname) or (iname.startswith("%") and self.find_var(iname) is None):
                typ = self.func.regs.get(iname) if self.func is not None else None
                if typ is not None and (typ == "pred" or ir.is_float_type(typ)):
                    raise PTXSyntaxError(self.pos(itok), f"array index '{itok[1]}' is a .{typ} register; "
                                         f"an index must be an integer or bit-size register")
                index = ir.Reg(iname)
            else:
                index = ir.Sym(iname)  # a variable's address as the index, as ptxas reads it
            if self.at("+"):  # ptxas refuses `arr[%r-4]` (write %r+-4) and `arr[4+%r]`
                const = parse_int_const(self, "an integer offset")
        else:
            const = parse_int_const(self, "an array index (an integer constant expression or a register)")
        self.expect("]")
        if self.at("["):  # ptxas: syntax error
            raise PTXSyntaxError(self.pos(), f"'{tok[1]}' takes one subscript, a flat element index "
                                 f"({tok[1]}[i]), not {tok[1]}[i][j]")
        return Element(name, var.space, scale, index, const, self.pos(tok))

    def find_var(self, name: str) -> ir.VarDecl | None:
        """The declaration a (resolved) variable name refers to: function-scope, parameter, module."""
        fn = self.func
        if fn is not None:
            for v in reversed(fn.vars):
                if v.name == name:
                    return v
            for v in fn.params:
                if v.name == name:
                    return v
        for v in reversed(self.module.globals):
            if v.name == name:
                return v
        return None

    def place_element(self, el: Element, index: int, parts: list[str], guard, pos: SourcePos):
        """An array element as the operand of instruction `parts`: an address for ld/st, a value for
        mov/cvta.  A register subscript is computed into fresh registers by instructions placed just
        before this one (under its guard), as ptxas computes it."""
        op = parts[0]
        if op in _ELEMENT_ADDRESS and index != (0 if op == "st" else 1):
            raise PTXSyntaxError(el.pos, f"an array element ('{el.var}[...]') is the address operand of "
                                 f"{op}, not its {'value' if op == 'st' else 'destination'}")
        if op in _ELEMENT_ADDRESS:
            width = self.module.address_size
        elif op in _ELEMENT_VALUE and "to" not in parts:
            width = next((ir.type_size(m) * 8 for m in reversed(parts[1:]) if m in ir.TYPE_NAMES), 64)
        else:
            raise PTXSyntaxError(el.pos, f"an array element ('{el.var}[...]') is an operand of ld, st, "
                                 f"mov and cvta only, not of {'.'.join(parts)}")
        if el.index is None:
            if op in _ELEMENT_ADDRESS:
                return ir.Addr(ir.Sym(el.var), el.const_offset)
            return ir.Sym(el.var, el.const_offset)
        reg = self.element_address(el, width, guard, pos)
        return ir.Addr(reg, 0) if op in _ELEMENT_ADDRESS else reg

    def element_address(self, el: Element, width: int, guard, pos: SourcePos) -> ir.Reg:
        """Emit `arr + zext32((low32(index) + const) * scale)` into a fresh `width`-bit register."""
        assert self.func is not None
        regs = self.func.regs

        def emit(opcode: str, mods: tuple[str, ...], operands: list) -> ir.Reg:
            """One instruction into a fresh register of the width of its first type modifier."""
            bits = next(m for m in mods if m in ir.TYPE_NAMES)[1:]
            self.fresh += 1
            r = ir.Reg(f"%elem${self.fresh}")
            regs[r.name] = f"b{bits}"
            self.prelude.append(ir.Instr(opcode, mods, [r, *operands], guard, pos, self.cur_loc))
            return r

        index = el.index
        if isinstance(index, ir.Sym):
            index = emit("mov", ("u64",), [index])
        bits = ir.type_size(regs.get(index.name, "b32")) * 8
        if bits != 32:
            index = emit("cvt", ("u32", f"u{bits}"), [index])
        offset = emit("mad", ("lo", "u32"), [index, ir.Imm(el.scale), ir.Imm(el.const_offset % _U32)])
        base = emit("mov", ("u64",), [ir.Sym(el.var)])
        addr = emit("add", ("u64",), [base, emit("cvt", ("u64", "u32"), [offset])])
        return addr if width == 64 else emit("cvt", (f"u{width}", "u64"), [addr])

    def vector_operand(self, t: str) -> ir.Reg | ir.Vec | None:
        """A vector register as an operand: the whole `%v` (its elements as a vector operand) or one
        element `%v.x`/`%v.r` (.r .g .b .a name .x .y .z .w); None if `t` is no vector register."""
        base, _, sel = t.partition(".")
        if sel:
            c = _VEC_COMPONENT.get(sel)
            if c is None:
                return None
            name = self.resolve(f"{base}.{c}")
            return ir.Reg(name) if self.is_reg(name) else None
        items = []
        for c in "xyzw":
            name = self.resolve(f"{t}.{c}")
            if not self.is_reg(name):
                break
            items.append(ir.Reg(name))
        return ir.Vec(tuple(items)) if items else None

    def starts_call_list(self) -> bool:
        """`(` opens a call's argument list `(%r1, param0)` or `()`; else a constant expression."""
        nxt = self.peek(1)
        return nxt[1] == ")" or (nxt[0] == "ident" and nxt[1] != "WARP_SZ")

    def names_register(self, k: int) -> bool:
        """The token k ahead names a register or variable (not the WARP_SZ constant)."""
        tok = self.peek(k)
        return tok[0] == "ident" and tok[1] != "WARP_SZ"

    def const_operand(self) -> ir.Imm | ir.FImm:
        """An immediate operand: a literal or a constant expression, evaluated as ptxas does."""
        c = parse_const(self)
        return ir.FImm(c.value) if c.is_float else ir.Imm(c.value)

    def parse_hexfloat(self) -> ir.FImm:
        """A 0f/0d literal, optionally negated (ptxas refuses `-0f...`; we read it as the sign flip)."""
        neg = self.accept("-")
        f = hexfloat_literal(self.next()[1])
        if neg:
            return ir.FImm(-f.value, f.bits ^ (1 << (f.width - 1)), f.width)
        return f

    def parse_address(self) -> ir.Addr:
        self.expect("[")
        base = None
        offset = 0
        tok = self.peek()
        if tok[0] == "ident":
            self.next()
            name = self.resolve(tok[1])
            base = ir.Reg(name) if name.startswith("%") or self.is_reg(name) else ir.Sym(name)
        elif tok[0] == "int" or tok[1] in STARTERS:
            offset = parse_int_const(self, "an integer address")
        else:
            raise self.error("a register, variable or integer address")
        if base is not None and self.at("-"):  # ptxas: syntax error near '-'
            raise self.error("'+' or ']' (a negative offset is written [base+-4])")
        if base is not None and self.at("+"):
            # the offset is a constant expression read from its sign on (the sign as a unary
            # operator): [%rd1+4], [%rd1+-4], [%rd1+4*3], [%rd1+(1?4:8)], [buf+8-4]
            offset = parse_int_const(self, "an integer offset")
        offset = wrap64(offset)  # ptxas accepts any offset and computes addresses modulo 2**64
        if self.accept(","):
            # texture/surface operands: [tex, {coords}] - kept as a list for the rule to judge
            items = [ir.Addr(base, offset), self.parse_operand()]
            while self.accept(","):
                items.append(self.parse_operand())
            self.expect("]")
            return ir.Vec(tuple(items))
        self.expect("]")
        return ir.Addr(base, offset)
