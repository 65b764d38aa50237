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
from ptxjit.isa.effects import may_suspend

if TYPE_CHECKING:
    from ptxjit.frontend.ir import Instr
    from ptxjit.isa.spec import Match

# a rule: (the function's lowering, lower/function.py's FnLowering, the instruction) -> None
LowerFn = Callable[..., None]
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
    aliases: list[str] = field(default_factory=list)
    forms: list[str] = field(default_factory=list)  # modifiers whose forms other rules lower (form_rule)
    # region mode: lowered once per release of a suspension point at this instruction, before the
    # region's loop over the threads (shfl's chains: lower/rules/sync.py chain_prologue), or None
    release: LowerFn | None = None
    spec: InstrSpec | None = field(default=None, repr=False)  # the ISA table's description

    @property
    def yields(self) -> bool:
        """Whether the instruction may suspend the thread (a barrier or a warp collective): the ISA's
        word (isa/effects.py), not the rule's."""
        return may_suspend(self.opcode)

    def spec_match(self, ins: Instr, ctx: Context | None = None) -> Match | None:
        """The spec form `ins` matches (types, modifiers by group, canonical operand types), or None."""
        if self.spec is None:
            return None
        v = check(self.spec, ins, ctx or _LENIENT)
        return v.match


RULES: dict[str, Rule] = {}
# form rules whose opcode's rule is not registered yet (form_rule): applied when it is
_PENDING_FORMS: dict[str, list[Callable[[Rule], None]]] = {}


def rule(*opcodes: str, family: str, check: CheckFn | None = None,
         handles_guard: bool = False) -> Callable[[LowerFn], LowerFn]:
    """Register `fn` as the rule for each of `opcodes` and attach it to the opcode's InstrSpec."""

    def register(fn: LowerFn) -> LowerFn:
        doc = (fn.__doc__ or "").strip().split("\n")[0]
        for op in opcodes:
            spec = lookup(op)
            r = Rule(op, family, fn, check, doc, handles_guard, spec=spec)
            RULES[op] = r
            if spec is not None:
                spec.rule = r
            for apply in _PENDING_FORMS.pop(op, ()):
                apply(r)
        return fn

    return register


# form_rule's default check: the opcode rule's own check goes on applying to the form
BASE_CHECK = object()


def form_rule(*opcodes: str, when: str | Callable[[Instr], bool], form: str = "",
              check=BASE_CHECK) -> Callable[[LowerFn], LowerFn]:
    """Register `fn` as the rule for the forms of `opcodes` that `when` selects: a modifier (st.async is
    async_store.py's, st the memory rules') or a predicate (f16/bf16 fma is half.py's, mma.sp
    mma_sparse.py's, float add integer.py's opcode), as Numba registers an implementation per function
    *and* type.  Each opcode's rule (registered before or after) hands those forms over; `check` (None:
    no check of its own) replaces its check for them, which by default goes on applying.  `form` names
    the form in Rule.forms."""
    selects = (lambda ins: ins.has(when)) if isinstance(when, str) else when

    def register(fn: LowerFn) -> LowerFn:
        def apply(r: Rule) -> None:
            base_lower, base_check = r.lower, r.check
            form_check = base_check if check is BASE_CHECK else check

            def lower(lw, ins: Instr) -> None:
                return fn(lw, ins) if selects(ins) else base_lower(lw, ins)

            def check_form(ins: Instr) -> str | None:
                own = form_check if selects(ins) else base_check
                return None if own is None else own(ins)

            r.lower, r.check = lower, check_form
            r.forms.append(form or (when if isinstance(when, str) else fn.__name__))

        for opcode in opcodes:
            if opcode in RULES:
                apply(RULES[opcode])
            else:
                _PENDING_FORMS.setdefault(opcode, []).append(apply)
        return fn

    return register


def release_prologue(opcode: str) -> Callable[[LowerFn], LowerFn]:
    """Register `fn(lowering, instruction)` as what region mode lowers at each release of a suspension
    point at an `opcode` instruction (Rule.release); the opcode's rule must be registered first."""

    def register(fn: LowerFn) -> LowerFn:
        RULES[opcode].release = fn
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
