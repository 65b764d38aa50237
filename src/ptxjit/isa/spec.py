"""The vocabulary of the ISA table and the matcher that reads it.

One `InstrSpec` per PTX opcode holds a list of `Form`s, in the spirit of an LLVM TableGen record:
a form says which type suffixes the instruction takes (how many, which), which modifier groups may
or must appear (rounding modes, .ftz, state spaces, scopes, ...), and what each operand is: its
kinds (register, immediate, address, vector, label, ...) and the register class it must have, given
as a reference to the instruction's own type suffixes ("T0" = the first one) or as a fixed type.

The rules follow ptxas (CUDA 13.0, sm_90), probed with small kernels (tools/isa_table_check.py):

- modifiers may appear in any order (ptxas accepts `add.s32.sat`, `ld.nc.global`), type suffixes
  keep their relative order (`cvt.f32.s32` is not `cvt.s32.f32`);
- a register fits an instruction type of the same size when both are integer/bit types
  (`add.u32` takes .s32 registers), when the instruction type is a .bN type (any N-bit register,
  floats too), or when the register is .bN or the same float type (`add.f32` takes .f32/.b32, not
  .u32); .bf16/.bf16x2/.tf32 exist only as instruction types and need .b16/.b32 registers;
- ld/st/cvt (and a few more, `relaxed` operands) accept a register wider than the type;
- special registers (%tid.x, %clock64) are allowed only where an operand says so (mov, cvt);
- immediates: integers for integer/bit types, floats (0f..., 0d..., 1.0) for f32/f64 and bit types,
  none for f16/bf16 and packed types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ptxjit.frontend import ir

# ---------------------------------------------------------------- types

# Every token that is a type suffix.  Besides the register types this has the types that exist
# only as instruction types: packed and narrow floats for cvt/mma, sub-byte integers for mma.
TYPE_BITS: dict[str, int] = {
    **{t: 8 * s for t, s in ir.TYPE_SIZES.items() if t != "pred"},
    "pred": 1,
    "s16x2": 32, "u16x2": 32,
    "e4m3": 8, "e5m2": 8, "e2m3": 8, "e3m2": 8, "e2m1": 4, "ue8m0": 8,
    "e4m3x2": 16, "e5m2x2": 16, "e2m3x2": 16, "e3m2x2": 16, "e2m1x2": 8, "ue8m0x2": 16,
    "e4m3x4": 32, "e5m2x4": 32, "e2m3x4": 32, "e3m2x4": 32, "e2m1x4": 16,
    "s4": 4, "u4": 4, "b1": 1, "s2": 2, "u2": 2,
}
TYPE_TOKENS = frozenset(TYPE_BITS)

# ptxas (CUDA 13.0) silently ignores some keywords when they appear as a modifier of an instruction
# that does not use them (`add.s32.rank`, `add.s32.finite`, `fma.rz.samplerref.f64` assemble):
# tensormap.replace field names, testp's classes, texture reference kinds, mma accumulator and
# ldmatrix sub-byte formats.  Probed by adding each modifier of the table to add.s32 and ld.global.
# The matcher skips them where the opcode does not use them, so that it never refuses what ptxas
# accepts.
PTXAS_IGNORED = frozenset({
    "rank", "box_dim", "element_stride", "global_address", "global_dim", "global_stride", "elemtype",
    "interleave_layout", "swizzle_mode", "fill_mode", "swizzle_atomicity",
    "finite", "infinite", "number", "notanumber", "normal", "subnormal",
    "texref", "samplerref", "surfref", "acc::f16", "acc::f32", "b4x16_p64", "b6x16_p32", "b8x16"})

_FLOATS = frozenset({"f16", "f32", "f64", "bf16", "f16x2", "bf16x2", "tf32"})
# Types whose registers are .bN registers (no register type of that name exists).
_BITS_ONLY = frozenset({"bf16", "bf16x2", "tf32", "s16x2", "u16x2"}) | frozenset(
    t for t in TYPE_BITS if t[0] == "e" and t[1].isdigit() or t.startswith("ue8"))


# an operand that is a 32-bit integer or a predicate, by the register given (cp.async's fourth operand:
# src-size, or the ignore-src predicate, which may be negated)
U32_OR_PRED = "u32|pred"


def kind_of(t: str) -> str:
    """'b', 'u', 's', 'f' or 'pred' for a type name."""
    if t == "pred":
        return "pred"
    if t in _FLOATS or t in _BITS_ONLY and t[0] == "e":
        return "f"
    return t[0]


def bits(t: str) -> int:
    return TYPE_BITS.get(t, 64 if t == "int32|64" else 0)


def reg_fits(reg: str, want: str, relaxed: bool = False, typed: bool = True) -> bool:
    """Whether a register declared `.reg .<reg>` fits an operand of instruction type `want`.

    `relaxed`: the operand may be wider than the type (ld/st/cvt; ptxas: "operand size exceeding
    instruction-type size").  `typed`: the operand's class is the instruction's own type suffix (not
    a fixed class such as the .u32 shift amount or a .pred selector); ptxas's .f16x2 quirk applies
    only there.
    """
    if want == "any":
        return reg not in ("pred", "f16x2") or reg == "f16x2" and typed
    if want == "int32|64":  # an address-sized integer (isspacep)
        return reg in ("b32", "u32", "s32", "b64", "u64", "s64")
    if want == U32_OR_PRED:
        return reg == "pred" or reg_fits(reg, "u32", relaxed, typed=False)
    if want == "pred":
        # ptxas quirk: an .f16x2 register passes as a predicate of a .pred-typed instruction
        return reg == "pred" or reg == "f16x2" and typed
    if reg == "pred":
        return False
    wb, wk = bits(want), kind_of(want)
    if reg == "f16x2":
        # ptxas quirk: an .f16x2 register passes wherever a 32-bit integer register of the
        # instruction's type does (add.u32, and.b32, ld.u8), but not as a fixed-class operand
        if not typed:
            return want in ("f16x2", "b32")
        if want == "f16x2":
            return True
        return wk in "bus" and (wb == 32 or relaxed and wb < 32)
    if want in _BITS_ONLY:
        return reg == f"b{wb}"
    rb, rk = bits(reg), kind_of(reg)
    if not (rb >= wb if relaxed else rb == wb):
        return False
    if wk == "b" or reg == "b128":
        return True
    if wk in "us":
        return rk in "bus"
    return reg == want or rk == "b"


def describe_class(want: str, relaxed: bool = False) -> str:
    """Human words for what `reg_fits` accepts, for error messages."""
    if want == "any":
        return "a register"
    if want == "int32|64":
        return "a 32- or 64-bit integer register"
    if want == U32_OR_PRED:
        return "a 32-bit integer register (.u32/.s32/.b32) or a predicate register (.pred)"
    if want == "pred":
        return "a predicate register (.pred)"
    n = bits(want)
    wider = " (or wider)" if relaxed else ""
    if want in _BITS_ONLY:
        return f"a {n}-bit bit-type register (.b{n}) holding {want}"
    k = kind_of(want)
    if k == "b":
        return f"a {n}-bit register{wider} (.b{n}/.u{n}/.s{n}" + (f"/.f{n}" if n >= 16 else "") + ")"
    if k in "us":
        return f"a {n}-bit integer register{wider} (.u{n}/.s{n}/.b{n})"
    return f"a {n}-bit float-compatible register (.{want}/.b{n}{', or a wider .b register' if relaxed else ''})"


# ---------------------------------------------------------------- the table's records

REG = "reg"          # a declared register
IMM = "imm"          # an integer or float literal
ADDR = "addr"        # [reg+off], [var+off], [imm]
VEC = "vec"          # {a, b, ...}
LABEL = "label"      # a label in the function
SYM = "sym"          # a variable or function name (mov, cvta, call)
SINK = "sink"        # `_`: the result is discarded
PAIR = "pair"        # d|p
SREG = "sreg"        # a special register (%tid.x, ...)
LIST = "list"        # ( ... ) of a call


@dataclass(frozen=True)
class ModifierGroup:
    """Mutually exclusive modifiers, e.g. rounding = {.rn, .rz, .rm, .rp}; at most one may appear."""

    name: str
    values: tuple[str, ...]
    required: bool = False
    repeat: int = 1  # how often the group may appear (mma's .row.col: twice)

    def __str__(self) -> str:
        v = "|".join("." + x for x in self.values)
        return v if self.required else "{" + v + "}"


@dataclass(frozen=True)
class OperandSpec:
    """One operand position.

    cls: the register class: "T0".."T3" (the instruction's n-th type suffix; "T" = "T0"), "W0" (T0
    at twice the width, mul.wide), a type name ("u32", "pred", "b64"), "any" or None (not checked).
    vec: None (scalar), an int (a vector of that many elements) or "V" (scalar, or a vector as long
    as the .v2/.v4/.v8 modifier says).
    """

    name: str
    kinds: frozenset[str]
    cls: str | None = None
    dst: bool = False
    optional: bool = False
    relaxed: bool = False
    vec: int | str | None = None
    vec_cls: str | None = None  # element class when it differs from cls (mov pack/unpack)


@dataclass(frozen=True)
class Form:
    """One shape of an instruction: type slots, modifier groups, operands and a combination check."""

    types: tuple[frozenset[str], ...]
    groups: tuple[ModifierGroup, ...]
    operands: tuple[OperandSpec, ...]
    check: Callable[[Match], str | None] | None = None
    note: str = ""
    # a check that needs the operands too (fragment sizes of mma): (match, operands, context) -> reason
    operand_check: Callable[[Match, list, object], str | None] | None = None

    def group_of(self, mod: str) -> ModifierGroup | None:
        for g in self.groups:
            if mod in g.values:
                return g
        return None

    def signature(self, opcode: str) -> str:
        parts = [opcode, *(str(g) for g in self.groups)]
        parts += ["." + "|.".join(sorted(s)) if len(s) > 1 else "." + next(iter(s)) for s in self.types]
        ops = ", ".join(("{" + o.name + "}") if o.optional else o.name for o in self.operands)
        return "".join(p if p.startswith(("{", ".")) else p for p in parts[:1]) + "".join(parts[1:]) + " " + ops


@dataclass
class InstrSpec:
    opcode: str
    family: str
    forms: tuple[Form, ...]
    summary: str = ""
    variadic: Callable | None = None  # custom operand checker (call)
    loose_types: frozenset[str] | None = None  # set for loosely described opcodes: any of these types
    rule: object | None = field(default=None, repr=False)  # the lowering Rule, attached by the registry

    @property
    def modifiers(self) -> frozenset[str]:
        return frozenset(v for f in self.forms for g in f.groups for v in g.values)

    @property
    def type_names(self) -> frozenset[str]:
        return frozenset(t for f in self.forms for s in f.types for t in s)

    def describe(self) -> str:
        """One line: the modifier groups and types this opcode takes, and its operand counts."""
        groups: dict[str, set[str]] = {}
        for f in self.forms:
            for g in f.groups:
                groups.setdefault(g.name, set()).update(g.values)
        counts = sorted({len(f.operands) for f in self.forms} |
                        {sum(not o.optional for o in f.operands) for f in self.forms})
        tys = sorted(self.type_names)
        txt = f"{len(self.forms)} forms; types {' '.join('.' + t for t in tys) or '-'}"
        if groups:
            txt += "; " + "; ".join(f"{k} {'|'.join(sorted(v))}" for k, v in groups.items())
        return txt + f"; operands {'/'.join(map(str, counts))}"


@dataclass(frozen=True)
class Match:
    """The result of matching an instruction's modifiers against a form."""

    form: Form
    types: tuple[str, ...]
    mods: dict[str, str]  # group name -> modifier

    def has(self, *mods: str) -> bool:
        return any(m in self.mods.values() for m in mods)

    def get(self, group: str) -> str | None:
        return self.mods.get(group)

    @property
    def vector(self) -> int:
        v = self.mods.get("vec")
        return int(v[1:]) if v else 1

    def operand_type(self, i: int) -> str | None:
        """The canonical type of operand i (e.g. mul.wide.s32 operand 0 -> 's64')."""
        if i >= len(self.form.operands):
            return None
        return resolve_class(self.form.operands[i].cls, self.types)


def resolve_class(cls: str | None, types: tuple[str, ...]) -> str | None:
    if cls is None or cls == "any":
        return cls
    if cls == "T":
        cls = "T0"
    if cls[0] == "T" and cls[1:].isdigit():
        i = int(cls[1:])
        return types[i] if i < len(types) else None
    if cls == "W0":
        t = types[0]
        return f"{t[0]}{2 * bits(t)}"
    return cls


# ---------------------------------------------------------------- building helpers

def types(*slots: Iterable[str] | str) -> tuple[frozenset[str], ...]:
    """types("u32 s32", "f32") -> two type slots."""
    return tuple(frozenset(s.split() if isinstance(s, str) else s) for s in slots)


def mods(name: str, values: str, required: bool = False) -> ModifierGroup:
    return ModifierGroup(name, tuple(values.split()), required)


def req(name: str, values: str, repeat: int = 1) -> ModifierGroup:
    return ModifierGroup(name, tuple(values.split()), True, repeat)


def op(name: str, kinds: str = "reg", cls: str | None = "T", **kw) -> OperandSpec:
    return OperandSpec(name, frozenset(kinds.split()), cls, **kw)


def d(cls: str | None = "T", kinds: str = "reg", **kw) -> OperandSpec:
    """A destination register."""
    return OperandSpec("d", frozenset(kinds.split()), cls, dst=True, **kw)


def s(name: str, cls: str | None = "T", kinds: str = "reg imm", **kw) -> OperandSpec:
    """A source: register or immediate."""
    return OperandSpec(name, frozenset(kinds.split()), cls, **kw)


def srcs(names: str, cls: str | None = "T", kinds: str = "reg imm") -> tuple[OperandSpec, ...]:
    return tuple(s(n, cls, kinds) for n in names.split())


def form(tys: tuple[frozenset[str], ...], groups: Iterable[ModifierGroup] = (),
         operands: Iterable[OperandSpec] = (), check: Callable[[Match], str | None] | None = None,
         note: str = "", operand_check: Callable[[Match, list, object], str | None] | None = None) -> Form:
    return Form(tys, tuple(groups), tuple(operands), check, note, operand_check)


def spec(opcode: str, family: str, *forms: Form, summary: str = "", variadic: Callable | None = None) -> InstrSpec:
    return InstrSpec(opcode, family, tuple(forms), summary, variadic)


def only_with(mod: str, tys: str, what: str = "") -> Callable[[Match], str | None]:
    """A combination check: `mod` is legal only with the types in `tys`."""
    allowed = frozenset(tys.split())

    def check(m: Match) -> str | None:
        if m.has(mod) and m.types and m.types[0] not in allowed:
            return f".{mod} is not allowed with .{m.types[0]}" + (f" ({what})" if what else "") + \
                f"; only with {' '.join('.' + t for t in sorted(allowed))}"
        return None

    return check


def all_of(*checks: Callable[[Match], str | None] | None) -> Callable[[Match], str | None]:
    def check(m: Match) -> str | None:
        for c in checks:
            if c is not None:
                why = c(m)
                if why:
                    return why
        return None

    return check


# Common groups.
RND = mods("rounding", "rn rz rm rp")
RND_REQ = req("rounding", "rn rz rm rp")
FTZ = mods("ftz", "ftz")
SAT = mods("sat", "sat")
CC = mods("cc", "cc")
SCOPE = mods("scope", "cta cluster gpu sys")
VEC_MOD = mods("vec", "v2 v4 v8")
SYNC = mods("sync", "sync")
ALIGNED = mods("aligned", "aligned")

INT16_64 = "u16 u32 u64 s16 s32 s64"
SINT = "s16 s32 s64"
BITS = "b16 b32 b64"


def loose(opcode: str, family: str, vocabulary: str, min_ops: int, max_ops: int) -> InstrSpec:
    """An opcode described only by its modifier vocabulary (types included) and operand count range;
    operands are checked only for being declared registers (texture/surface operand lists)."""
    vocab = tuple(v for v in vocabulary.split() if v not in TYPE_TOKENS)
    tys = frozenset(v for v in vocabulary.split() if v in TYPE_TOKENS)
    any_op = OperandSpec("x", frozenset({"any"}), None)
    opt_op = OperandSpec("x", frozenset({"any"}), None, optional=True)
    f = Form((), (ModifierGroup("modifiers", vocab, False, repeat=len(vocab)),),
             (any_op,) * min_ops + (opt_op,) * (max_ops - min_ops), note="loose")
    return InstrSpec(opcode, family, (f,), summary=f"described loosely: {len(vocab)} modifiers", loose_types=tys)
