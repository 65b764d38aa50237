"""Register-passed function parameters, rewritten into the .param form the rest of ptxjit knows.

PTX lets a `.func` take and return values in registers, several at once:

    .func (.reg .b32 lo, .reg .b32 hi) split(.reg .b64 x) { ... mov.b64 {lo, hi}, x; ret; }
    call (%r1, %r2), split, (%rd1);

The parser turns each `.reg` parameter into a `.param` variable (named `x$reg`) plus a register of the
parameter's own name, loaded from it at the function's start (`ld.param`) or stored to it before every
`ret` (`st.param`); and a call whose argument or return lists name registers gets a `.param` variable
per register, written before the call and read back after it, as nvcc's own call sequences do.  Calls
and the inliner then see only `.param` lists.
"""

from __future__ import annotations

from ptxjit.errors import PTXSyntaxError
from ptxjit.frontend import ir

# the ld/st type that moves a register of this type through a .param variable
_MOVE = {"f16": "b16", "bf16": "b16", "f16x2": "b32", "bf16x2": "b32", "tf32": "b32"}


def _move_type(t: str) -> str:
    return _MOVE.get(t, t)


def reg_params(fn: ir.Function) -> list[tuple[str, str, str, bool]]:
    """Turn fn's `.reg` parameters and return values into `.param` ones named `<name>$reg` and declare
    a register `<name>` for each (before the body is parsed, so the body's `x` is that register).
    Returns (register, .param name, type, is_return) per parameter."""
    out = []
    for is_ret, decls in ((False, fn.params), (True, fn.rets)):
        for p in decls:
            if p.space != "reg":
                continue
            if p.type == "pred" or p.dims or p.vector != 1:
                raise PTXSyntaxError(p.pos, f"function '{fn.name}': register parameter '{p.name}' of type "
                                     f".{p.type}{'[]' if p.dims else ''}: only scalar non-predicate .reg "
                                     f"parameters are supported")
            reg = p.name
            p.space = "param"
            p.name = f"{reg}$reg"
            fn.regs[reg] = p.type
            out.append((reg, p.name, p.type, is_ret))
    return out


def bind_reg_params(fn: ir.Function, regvals: list[tuple[str, str, str, bool]]) -> None:
    """Load the register parameters at the start of the body; store the returned ones before each ret."""
    assert fn.body is not None
    head = [ir.Instr("ld", ("param", _move_type(t)), [ir.Reg(reg), ir.Addr(ir.Sym(pname), 0)], None, fn.pos)
            for reg, pname, t, is_ret in regvals if not is_ret]
    rets = [(reg, pname, t) for reg, pname, t, is_ret in regvals if is_ret]
    body: list[ir.Instr | ir.Label] = list(head)
    for st in fn.body:
        if rets and isinstance(st, ir.Instr) and st.opcode == "ret":
            body += [ir.Instr("st", ("param", _move_type(t)), [ir.Addr(ir.Sym(pname), 0), ir.Reg(reg)], st.guard,
                              st.pos, st.src_loc) for reg, pname, t in rets]
        body.append(st)
    fn.body = body


def calls_through_params(fn: ir.Function, body: list, functions: dict[str, ir.Function]) -> list:
    """Calls with registers in their argument or return lists: each such register goes through a fresh
    `.param` variable (st.param before the call, ld.param after it, under the call's guard); a `_` sink
    among the return values gets a variable of the callee's return type."""
    out: list = []
    k = 0
    for st in body:
        if not (isinstance(st, ir.Instr) and st.opcode == "call"):
            out.append(st)
            continue
        before, after, ops = [], [], []
        target = next((o for o in st.operands if not isinstance(o, ir.CallList)), None)
        callee = functions.get(target.name) if isinstance(target, ir.Sym) else None
        for op in st.operands:
            if not isinstance(op, ir.CallList):
                ops.append(op)
                continue
            is_ret = not ops  # the list before the target holds the return values
            items = []
            for j, it in enumerate(op.items):
                if is_ret and isinstance(it, ir.Reg) and it.name == "_":
                    k += 1
                    decl = callee.rets[j] if callee is not None and j < len(callee.rets) else None
                    var = ir.VarDecl("param", f"$ptxjit_call{k}", decl.type if decl else "b64", st.pos,
                                     decl.align if decl else 0, list(decl.dims) if decl else [],
                                     decl.vector if decl else 1)
                    fn.vars.append(var)
                    items.append(ir.Sym(var.name))
                    continue
                t = fn.regs.get(it.name) if isinstance(it, ir.Reg) and not it.neg else None
                if t is None or t == "pred":
                    items.append(it)
                    continue
                k += 1
                var = ir.VarDecl("param", f"$ptxjit_call{k}", _move_type(t), st.pos)
                fn.vars.append(var)
                items.append(ir.Sym(var.name))
                mt = ("param", _move_type(t))
                if is_ret:
                    after.append(ir.Instr("ld", mt, [it, ir.Addr(ir.Sym(var.name), 0)], st.guard, st.pos,
                                          st.src_loc))
                else:
                    before.append(ir.Instr("st", mt, [ir.Addr(ir.Sym(var.name), 0), it], st.guard, st.pos,
                                           st.src_loc))
            ops.append(ir.CallList(tuple(items)))
        if before or after:
            st = ir.Instr(st.opcode, st.mods, ops, st.guard, st.pos, st.src_loc)
        out += [*before, st, *after]
    return out
