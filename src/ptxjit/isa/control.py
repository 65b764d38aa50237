"""Control flow (PTX ISA §9.7.13): bra, brx.idx, call, ret, exit, trap, brkpt, nanosleep, pmevent,
setmaxnreg, griddepcontrol."""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.isa.match import regs_declared
from ptxjit.isa.spec import Match, form, mods, op, req, s, spec, types

UNI = mods("uni", "uni")


def _call_operands(m: Match, ins: ir.Instr, ctx) -> str | None:
    """call{.uni} {(ret),} target{, (args)}{, proto|table};  target: a function or a .u64 register."""

    ops = list(ins.operands)
    where = "call"
    if ops and isinstance(ops[0], ir.CallList):
        rets = ops.pop(0)
        why = regs_declared(rets, ctx, where)
        if why:
            return why
    if not ops:
        return "call needs a target function: call (ret), func, (args);"
    target = ops.pop(0)
    if isinstance(target, ir.Sym):
        if ctx.symbols.get(target.name) not in ("func", None):
            return f"call target {target.name} is a variable, not a function"
    elif isinstance(target, ir.Reg):
        rt = ctx.regs.get(target.name)
        if rt is None:
            return f"register {target.name} is not declared (call target)"
        if rt not in ("u64", "b64", "s64", "u32", "b32", "s32"):
            return f"an indirect call target must be an integer register holding an address, got {target.name} (.{rt})"
        if not ops or not isinstance(ops[-1], ir.Sym):
            return "an indirect call needs a prototype or a function table as its last operand"
    else:
        return "call target must be a function name or a register"
    if ops and isinstance(ops[0], ir.CallList):
        why = regs_declared(ops.pop(0), ctx, where)
        if why:
            return why
    if ops and isinstance(ops[0], ir.Sym):
        ops.pop(0)
    if ops:
        return f"unexpected operand after the call arguments: {ops[0]}"
    return None


SPECS = [
    spec("bra", "control", form((), [UNI], (op("target", "label", None),))),
    spec("brx", "control", form((), [req("idx", "idx"), UNI], (s("index", "u32", "reg"), op("tlist", "label", None)))),
    spec("call", "control", form((), [UNI], ()), variadic=_call_operands,
         summary="call{.uni} {(ret),} func{, (args)}{, proto}"),
    spec("ret", "control", form((), [UNI], ())),
    spec("exit", "control", form((), [], ())),
    spec("trap", "control", form((), [], ())),
    spec("brkpt", "control", form((), [], ())),
    spec("nanosleep", "control", form(types("u32"), [], (s("t", "u32"),))),
    spec("pmevent", "control", form((), [mods("mask", "mask")], (s("a", "u32", "imm"),))),
    spec("setmaxnreg", "control",
         form(types("u32"), [req("action", "inc dec"), req("sync", "sync"), req("aligned", "aligned")],
              (s("imm-reg-count", "u32", "imm"),))),
    spec("griddepcontrol", "control", form((), [req("action", "launch_dependents wait")], ())),
]
