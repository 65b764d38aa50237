"""Load-time validation: every instruction has a rule that accepts it, every register, label and
call target exists.  Problems are reported with file:line:col before anything is compiled."""

from __future__ import annotations

from ptxjit.errors import PTXValidationError, UnsupportedInstructionError
from ptxjit.frontend import ir
from ptxjit.lower.function import is_special
from ptxjit.lower.module import EXTERN_FUNCS
from ptxjit.lower.rules import check_instruction
from ptxjit.lower.rules.control import _split_call


def _regs_in(op) -> list[ir.Reg]:
    if isinstance(op, ir.Reg):
        return [op]
    if isinstance(op, ir.Addr) and isinstance(op.base, ir.Reg):
        return [op.base]
    if isinstance(op, ir.Vec | ir.CallList):
        return [r for x in op.items for r in _regs_in(x)]
    if isinstance(op, ir.Pair):
        return [op.first, op.second]
    return []


def unsupported_instructions(module: ir.Module) -> list[UnsupportedInstructionError]:
    out = []
    for fn in module.functions.values():
        for ins in fn.instructions:
            why = check_instruction(ins)
            if why is not None:
                out.append(UnsupportedInstructionError(ins.pos, ins.text, why))
    return out


def validate(module: ir.Module) -> None:
    problems = unsupported_instructions(module)
    if problems:
        if len(problems) == 1:
            raise problems[0]
        first = problems[0]
        more = "\n".join(f"  {p}" for p in problems[1:20])
        raise UnsupportedInstructionError(first.pos, first.instruction,
                                          f"{str(first).split(': ', 2)[-1]}\n{len(problems) - 1} more:\n{more}")
    for fn in module.functions.values():
        labels = {s.name for s in fn.body or () if isinstance(s, ir.Label)}
        for ins in fn.instructions:
            for op in [*ins.operands, ins.guard]:
                for r in _regs_in(op) if op is not None else ():
                    if r.name != "_" and r.name not in fn.regs and not is_special(r.name):
                        raise PTXValidationError(ins.pos, f"register {r.name} is not declared in '{fn.name}'")
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
                _rets, target, _args = _split_call(ins)
                if isinstance(target, ir.Sym) and target.name not in EXTERN_FUNCS:
                    callee = module.functions.get(target.name)
                    if callee is None:
                        raise PTXValidationError(ins.pos, f"call to undeclared function '{target.name}'")
                    if callee.body is None:
                        raise UnsupportedInstructionError(
                            ins.pos, ins.text, f"call to external function '{target.name}' (no definition)")
