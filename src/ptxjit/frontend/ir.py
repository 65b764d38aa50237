"""The typed intermediate representation the parser produces.

A `Module` holds module-scope variables and functions; a `Function` body is a flat list of
`Instr` and `Label` (nested `{ }` scopes are flattened by renaming their declarations).
Operands keep PTX's own vocabulary: registers, immediates, symbols, address expressions,
vectors and call lists.  Types stay PTX type names ("u32", "f16x2", "pred") so that rules can
read them directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxjit.errors import SourcePos

# Size in bytes of every PTX fundamental type.
TYPE_SIZES: dict[str, int] = {
    "pred": 1,
    "b8": 1, "u8": 1, "s8": 1,
    "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
    "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "tf32": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8,
    "b128": 16,
}
TYPE_NAMES = frozenset(TYPE_SIZES)


def type_size(t: str) -> int:
    return TYPE_SIZES[t]


def is_float_type(t: str) -> bool:
    return t in ("f16", "bf16", "f32", "f64", "f16x2", "bf16x2", "tf32")


def is_signed_type(t: str) -> bool:
    return t.startswith("s")


# ---------------------------------------------------------------- operands


@dataclass(frozen=True)
class Reg:
    """A register (or special register like %tid.x).  `neg` marks a `!%p` predicate operand.

    Video instructions add two forms: `sel` is a byte/half-word selector written after the register
    (`%r1.b0`, `%r1.h10`, `%r1.b7531`; only the video rules read it) and `minus` a negated operand
    (`vmad d, -%r1, ...`).
    """

    name: str
    neg: bool = False
    sel: str = ""
    minus: bool = False


@dataclass(frozen=True)
class Imm:
    """An integer literal."""

    value: int


@dataclass(frozen=True)
class FImm:
    """A floating literal: `0fXXXXXXXX` (bits, width 32), `0dXXXXXXXXXXXXXXXX` (width 64) or decimal."""

    value: float
    bits: int | None = None
    width: int | None = None


@dataclass(frozen=True)
class Sym:
    """A named thing: variable, label or function, optionally with a byte offset (`var+4`)."""

    name: str
    offset: int = 0
    # written with an offset (`var+0` too): ptxas takes `var+K`, unlike a bare `var`, as an integer
    # operand of arithmetic; no part of the symbol's identity
    with_offset: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class Addr:
    """An address expression `[base+offset]`; base is a register, a symbol or None (absolute)."""

    base: Reg | Sym | None
    offset: int = 0


@dataclass(frozen=True)
class Vec:
    """A vector operand `{a, b, c, d}`; `_` elements are sinks (Reg('_'))."""

    items: tuple


@dataclass(frozen=True)
class Pair:
    """A dual destination `%r|%p` (setp, shfl.sync, match.sync)."""

    first: Reg
    second: Reg


@dataclass(frozen=True)
class CallList:
    """A parenthesised list in a call instruction: `(retval0)` or `(param0, param1)`."""

    items: tuple


Operand = Reg | Imm | FImm | Sym | Addr | Vec | Pair | CallList


# ---------------------------------------------------------------- statements


@dataclass
class Instr:
    opcode: str
    mods: tuple[str, ...]
    operands: list
    guard: Reg | None
    pos: SourcePos
    src_loc: tuple[int, int, int] | None = None  # (.file index, line, col) of the CUDA source

    @property
    def text(self) -> str:
        """The opcode as written, e.g. 'ld.global.v4.f32'."""
        return ".".join((self.opcode, *self.mods))

    def has(self, *mods: str) -> bool:
        return any(m in self.mods for m in mods)

    def types(self) -> list[str]:
        """The PTX type modifiers in order of appearance (e.g. cvt.rn.f32.s32 -> ['f32', 's32'])."""
        return [m for m in self.mods if m in TYPE_NAMES]


@dataclass
class Label:
    name: str
    pos: SourcePos


@dataclass
class VarDecl:
    """A variable in a state space: module-scope .global/.const/.shared or function .local/.shared/.param."""

    space: str
    name: str
    type: str
    pos: SourcePos
    align: int = 0
    dims: list[int | None] = field(default_factory=list)  # None = unsized (extern / [])
    vector: int = 1
    init: list | None = None  # flat list of ints/floats/Sym
    linkage: str = ""
    is_ptr: bool = False  # .param .ptr attribute

    @property
    def elem_size(self) -> int:
        return type_size(self.type) * self.vector

    @property
    def count(self) -> int:
        n = 1
        for d in self.dims:
            n *= d or 0
        return n

    @property
    def size(self) -> int:
        return self.elem_size * self.count

    @property
    def alignment(self) -> int:
        return self.align or self.elem_size


@dataclass
class Function:
    name: str
    is_entry: bool
    pos: SourcePos
    linkage: str = ""
    params: list[VarDecl] = field(default_factory=list)
    rets: list[VarDecl] = field(default_factory=list)
    body: list[Instr | Label] | None = None  # None: declaration only (.extern)
    regs: dict[str, str] = field(default_factory=dict)  # register name -> PTX type
    vars: list[VarDecl] = field(default_factory=list)  # .local/.shared/.param declared in the body
    perf: dict[str, tuple[int, ...]] = field(default_factory=dict)  # .maxntid/.reqntid/...
    branch_tables: dict[str, list[str]] = field(default_factory=dict)  # name: .branchtargets labels

    @property
    def instructions(self) -> list[Instr]:
        return [s for s in self.body or () if isinstance(s, Instr)]


@dataclass
class Module:
    source_name: str
    version: str = ""
    target: list[str] = field(default_factory=list)
    address_size: int = 64
    functions: dict[str, Function] = field(default_factory=dict)
    globals: list[VarDecl] = field(default_factory=list)
    files: dict[int, str] = field(default_factory=dict)

    @property
    def entries(self) -> list[Function]:
        return [f for f in self.functions.values() if f.is_entry and f.body is not None]
