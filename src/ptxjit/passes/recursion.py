"""Which device functions may recurse: those on a cycle of the module's call graph.

Device functions are native calls on the worker's stack, so a recursion without a base case (or one
deeper than any stack) would overflow it and kill the process.  The functions found here get a guard
on entry (lower/function.py `stack_guard`): past RECURSION_STACK_BYTES of native stack the thread
traps with a clear error instead, as a GPU stops a kernel that exceeds its stack (cudaLimitStackSize).
An indirect call may reach any function whose address the module takes, so with one, those count as
recursive too."""

from __future__ import annotations

from ptxjit.errors import KernelTrap
from ptxjit.frontend import ir
from ptxjit.isa.calls import split_call

# native stack a launch's calls may use below the worker's entry: well within any thread's stack (8 MiB
# for Linux threads, 512 KiB for macOS secondary threads), and thousands of device-function frames deep
RECURSION_STACK_BYTES = 256 * 1024


def _callees(fn: ir.Function) -> tuple[set[str], bool]:
    """Direct call targets of `fn`, and whether it makes an indirect call."""
    out: set[str] = set()
    indirect = False
    for ins in fn.instructions:
        if ins.opcode != "call":
            continue
        try:
            _rets, target, _args = split_call(ins)
        except ValueError:
            continue
        if isinstance(target, ir.Sym):
            out.add(target.name)
        else:
            indirect = True
    return out, indirect


def recursive_functions(module: ir.Module) -> set[str]:
    """Names of the defined device functions that can be re-entered while active."""
    funcs = {n: f for n, f in module.functions.items() if f.body is not None}
    graph: dict[str, set[str]] = {}
    indirect: set[str] = set()  # functions making an indirect call
    for name, f in funcs.items():
        callees, calls_indirectly = _callees(f)
        graph[name] = {c for c in callees if c in funcs}
        if calls_indirectly:
            indirect.add(name)
    if indirect:  # a function whose address is taken may be the target of any indirect call
        taken = {op.name for f in funcs.values() for ins in f.instructions if ins.opcode != "call"
                 for op in ins.operands if isinstance(op, ir.Sym) and op.name in funcs}
        for name in indirect:
            graph[name] |= taken
    out: set[str] = set()
    for start in graph:  # start reaches itself again: on a cycle (modules have few functions)
        seen: set[str] = set()
        stack = list(graph[start])
        while stack:
            n = stack.pop()
            if n == start:
                out.add(start)
                break
            if n not in seen:
                seen.add(n)
                stack.extend(graph.get(n, ()))
    return {n for n in out if not funcs[n].is_entry}


def explain_stack_trap(err: BaseException) -> BaseException:
    """The KernelTrap of the recursion guard, with the reason in words."""

    if not isinstance(err, KernelTrap):
        return err
    return KernelTrap(err.kernel, err.cta, err.thread, err.where, (
        f"recursed too deep: more than {RECURSION_STACK_BYTES // 1024} KiB of stack in device-function calls "
        f"(a recursion without a base case? a GPU stops at its stack limit, cudaLimitStackSize); stopped "
        f"entering the function"))
