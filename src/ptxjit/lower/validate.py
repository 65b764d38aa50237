"""Load-time validation, as strict as ptxas, read from the ISA table (ptxjit.isa).

Every instruction is checked against its InstrSpec before anything is compiled: opcode, modifiers
and their combinations, type suffixes, operand count, operand kinds, register classes given the
instruction type, state spaces of addressed variables, predicate guards; then that a rule exists and
accepts it.  Two kinds of refusal, both with file:line:col and the instruction text:

- InvalidInstructionError (a PTXValidationError): not valid PTX, ptxas would reject it;
- UnsupportedInstructionError: valid PTX that ptxjit has no rule for (or whose rule refuses the form).

Labels, branch tables and call targets are checked here too.  Nothing the table rejects reaches the
lowering, so malformed instructions never surface as IndexError/KeyError/llvmlite errors.
"""

from __future__ import annotations

import re

from ptxjit import config
from ptxjit.errors import InvalidInstructionError, PTXError, PTXValidationError, UnsupportedInstructionError
from ptxjit.frontend import ir
from ptxjit.isa import Context, fmt_instr
from ptxjit.isa.calls import EXTERN_FUNCS, split_call
from ptxjit.lower.rules import diagnose

MAX_LISTED = 20


def _diagnose(ins: ir.Instr, ctx: Context):
    try:
        return diagnose(ins, ctx)
    except Exception as e:  # a defect in the table must not stop valid PTX from loading: fail open
        if config.ISA_STRICT.raw():
            raise
        del e
        return None


def unsupported_instructions(module: ir.Module) -> list[PTXError]:
    """Every instruction that is invalid PTX or that ptxjit cannot run, in source order."""
    out: list[PTXError] = []
    for fn in module.functions.values():
        if fn.body is None:
            continue
        ctx = Context.for_function(module, fn)
        for ins in fn.instructions:
            dg = _diagnose(ins, ctx)
            if dg is None:
                continue
            if dg.invalid:
                out.append(InvalidInstructionError(ins.pos, fmt_instr(ins), dg.reason))
            else:
                out.append(UnsupportedInstructionError(ins.pos, ins.text, dg.reason))
    return out


def _raise_first(problems: list[PTXError]) -> None:
    # invalid PTX first: it is the author's bug, and later "unsupported" messages may be its echo
    problems = sorted(problems, key=lambda p: not isinstance(p, InvalidInstructionError))
    first = problems[0]
    if len(problems) == 1:
        raise first
    more = "\n".join(f"  {p}" for p in problems[1:MAX_LISTED])
    tail = f"\n  ... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
    suffix = f"\n{len(problems) - 1} more:\n{more}{tail}"
    if isinstance(first, InvalidInstructionError):
        raise InvalidInstructionError(first.pos, first.instruction, first.reason + suffix)
    assert isinstance(first, UnsupportedInstructionError)
    reason = str(first).split(": ", 2)[-1]
    raise UnsupportedInstructionError(first.pos, first.instruction, reason + suffix)


def _declared(name: str) -> str:
    """A variable's name as written (the parser renames those of nested scopes apart: name$N)."""
    return re.sub(r"\$\d+$", "", name)


def _incomplete(v: ir.VarDecl) -> bool:
    """An array variable without a size ([] or [0]) that neither an initializer nor .extern sizes: ptxas
    "Non-external variable has incomplete type" (a call's 0-byte return buffer overflowed the stack)."""
    return any(not d for d in v.dims) and v.init is None and v.linkage != "extern"


def _check_call_buffers(fn: ir.Function, ins: ir.Instr, callee: ir.Function, rets, args) -> None:
    """Each .param buffer passed to `callee` holds at least what the callee reads or writes there."""
    mine = {v.name: v for v in fn.vars if v.space == "param"}
    for what, ops, formals in (("return value", rets, callee.rets), ("argument", args, callee.params)):
        for op, formal in zip(ops, formals, strict=False):
            v = mine.get(op.name) if isinstance(op, ir.Sym) else None
            if v is not None and v.size < formal.size:
                raise PTXValidationError(
                    ins.pos, f"call to '{callee.name}': {what} '{_declared(v.name)}' is {v.size} bytes, but the "
                             f"callee's '{formal.name}' is {formal.size} bytes")


def validate(module: ir.Module) -> None:
    problems = unsupported_instructions(module)
    if problems:
        _raise_first(problems)
    for v in [*module.globals, *(v for fn in module.functions.values() for v in fn.vars)]:
        if _incomplete(v):
            raise PTXValidationError(v.pos, f"variable '{_declared(v.name)}' has incomplete type: an array of "
                                            f"unknown size needs an initializer or .extern")
    for fn in module.functions.values():
        labels: dict[str, ir.Label] = {}
        for st in fn.body or ():
            if isinstance(st, ir.Label):
                first = labels.setdefault(st.name, st)
                if first is not st:  # ptxas: "Duplicate definition of label"; which one would a branch reach?
                    raise PTXValidationError(st.pos, f"label '{st.name}' is defined twice in '{fn.name}' "
                                                     f"(first at {first.pos})")
        for ins in fn.instructions:
            if ins.opcode == "brx":
                table = ins.operands[1] if len(ins.operands) > 1 else None
                names = fn.branch_tables.get(getattr(table, "name", ""))
                if names is None or any(n not in labels for n in names):
                    raise PTXValidationError(ins.pos, f"brx.idx needs a .branchtargets table of labels: {table}")
            if ins.opcode == "bra":
                t = ins.operands[0] if ins.operands else None
                if not isinstance(t, ir.Sym) or t.name not in labels:
                    raise PTXValidationError(ins.pos, f"branch to unknown label in '{fn.name}': {t}")
            if ins.opcode == "call":
                rets, target, args = split_call(ins)
                if isinstance(target, ir.Sym) and target.name not in EXTERN_FUNCS:
                    callee = module.functions.get(target.name)
                    if callee is None:
                        raise PTXValidationError(ins.pos, f"call to undeclared function '{target.name}'")
                    # ptxas: "Call has wrong number of parameters" / return values
                    if len(args) != len(callee.params) or len(rets) != len(callee.rets):
                        raise PTXValidationError(
                            ins.pos, f"call to '{target.name}' passes {len(args)} argument(s) and {len(rets)} "
                                     f"return value(s); it takes {len(callee.params)} and returns {len(callee.rets)}")
                    _check_call_buffers(fn, ins, callee, rets, args)
                    if callee.body is None:
                        raise UnsupportedInstructionError(
                            ins.pos, ins.text, f"call to external function '{target.name}' (no definition)")
