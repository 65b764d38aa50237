"""The instruction-rule table: opcode -> rule.

A rule lowers one PTX instruction to zero or more LLVM instructions.  Rules are small functions
registered per instruction family; `check` validates modifiers at load time so that unsupported
forms are refused before anything runs.

Every rule is attached to the opcode's InstrSpec in the ISA table (ptxjit.isa): `Rule.spec` is the
declarative description of what valid PTX looks like, `InstrSpec.rule` the rule that lowers it.
`diagnose` consults the spec first (is this valid PTX?) and only then the rule's own `check` (can
ptxjit run it?), so a rule only ever sees instructions whose modifiers, types, operand counts, kinds
and register classes are valid; it can ask the spec for canonical operand types with
`rule.spec_match(ins).operand_type(i)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ptxjit.isa import Context, InstrSpec, check, lookup

if TYPE_CHECKING:
    from ptxjit.frontend.ir import Instr
    from ptxjit.isa.spec import Match
    from ptxjit.lower.function import FnLowering

LowerFn = Callable[["FnLowering", "Instr"], None]
CheckFn = Callable[["Instr"], str | None]

# A rule whose opcode has no InstrSpec is ptxjit-internal (lockstep, spinpoint, warpstep: inserted by the
# lowering, after validation); such an opcode in the user's PTX is invalid.


@dataclass
class Rule:
    opcode: str
    family: str
    lower: LowerFn
    check: CheckFn | None = None
    doc: str = ""
    handles_guard: bool = False  # the rule lowers the @p guard itself (bra)
    yields: bool = False  # may suspend the thread (barrier or warp collective)
    aliases: list[str] = field(default_factory=list)
    spec: InstrSpec | None = field(default=None, repr=False)  # the ISA table's description

    def spec_match(self, ins: Instr, ctx: Context | None = None) -> Match | None:
        """The spec form `ins` matches (types, modifiers by group, canonical operand types), or None."""
        if self.spec is None:
            return None
        v = check(self.spec, ins, ctx or _LENIENT)
        return v.match


RULES: dict[str, Rule] = {}


def rule(*opcodes: str, family: str, check: CheckFn | None = None, handles_guard: bool = False,
         yields: bool = False) -> Callable[[LowerFn], LowerFn]:
    """Register `fn` as the rule for each of `opcodes` and attach it to the opcode's InstrSpec."""

    def register(fn: LowerFn) -> LowerFn:
        doc = (fn.__doc__ or "").strip().split("\n")[0]
        for op in opcodes:
            spec = lookup(op)
            r = Rule(op, family, fn, check, doc, handles_guard, yields, spec=spec)
            RULES[op] = r
            if spec is not None:
                spec.rule = r
        return fn

    return register


@dataclass(frozen=True)
class Diagnosis:
    """Why an instruction is refused: `invalid` is True when it is not valid PTX (ptxas rejects it),
    False when it is valid PTX that ptxjit has no rule for (or whose rule refuses this form)."""

    invalid: bool
    reason: str


# For checks without a function at hand: registers and symbols are taken as declared and fitting,
# so only modifiers, types and operand counts and kinds are checked.
_LENIENT = Context(lenient=True)


def diagnose(ins: Instr, ctx: Context | None = None) -> Diagnosis | None:
    """None if the instruction is valid PTX and a rule accepts it, else why not.

    With `ctx` (the function's registers, variables and labels) operands are checked for their
    register classes and state spaces too; without it only what the instruction itself shows."""
    spec = lookup(ins.opcode)
    if spec is None:
        return Diagnosis(True, f"unknown instruction '{ins.opcode}' (not a PTX ISA 8.x opcode)")
    v = check(spec, ins, ctx or _LENIENT)
    if not v.ok:
        return Diagnosis(True, v.reason)
    r = RULES.get(ins.opcode)
    if r is None:
        return Diagnosis(False, "valid PTX, but ptxjit has no rule for this instruction")
    if r.check is not None:
        why = r.check(ins)
        if why is not None:
            return Diagnosis(False, f"valid PTX, but not supported by ptxjit: {why}")
    return None


def check_instruction(ins: Instr, ctx: Context | None = None) -> str | None:
    """None if the instruction has a rule that accepts it, else the reason it is refused (prefixed
    'invalid PTX:' when ptxas would reject it)."""
    dg = diagnose(ins, ctx)
    if dg is None:
        return None
    return f"invalid PTX: {dg.reason}" if dg.invalid else dg.reason
