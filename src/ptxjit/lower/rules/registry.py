"""The instruction-rule table: opcode -> rule.

A rule lowers one PTX instruction to zero or more LLVM instructions.  Rules are small functions
registered per instruction family; `check` validates modifiers at load time so that unsupported
forms are refused before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptxjit.frontend.ir import Instr
    from ptxjit.lower.function import FnLowering

LowerFn = Callable[["FnLowering", "Instr"], None]
CheckFn = Callable[["Instr"], str | None]


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


RULES: dict[str, Rule] = {}


def rule(*opcodes: str, family: str, check: CheckFn | None = None, handles_guard: bool = False,
         yields: bool = False) -> Callable[[LowerFn], LowerFn]:
    """Register `fn` as the rule for each of `opcodes`."""

    def register(fn: LowerFn) -> LowerFn:
        doc = (fn.__doc__ or "").strip().split("\n")[0]
        for op in opcodes:
            RULES[op] = Rule(op, family, fn, check, doc, handles_guard, yields)
        return fn

    return register


def check_instruction(ins: Instr) -> str | None:
    """None if the instruction has a rule that accepts it, else the reason it is refused."""
    r = RULES.get(ins.opcode)
    if r is None:
        return "no rule for this opcode"
    if r.check is not None:
        return r.check(ins)
    return None
