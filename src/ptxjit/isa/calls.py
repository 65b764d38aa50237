"""Calls: the operands of `call` and the external functions a PTX module may call without defining them.

PTX's `call (rets), target, (args)` lists its return and argument operands in parentheses; `split_call`
takes them apart for every pass and rule that follows calls.  `EXTERN_FUNCS` are the `.extern .func`
declarations ptxjit provides the bodies of: CUDA's device-side printf and assert, the device heap, and the
cooperative-groups entry points that nvcc calls for `grid.sync()` (the lowering replaces those calls,
lower/rules/grid_sync.py).  A call to any other function without a body is refused at load.
"""

from __future__ import annotations

from ptxjit.frontend import ir

# cooperative groups' grid handle and grid-wide barrier, as nvcc's PTX calls them
CG_HANDLE = "cudaCGGetIntrinsicHandle"
CG_SYNC = "cudaCGSynchronize"

EXTERN_FUNCS = frozenset({"vprintf", "__assertfail", "malloc", "free", "__nv_assertfail", CG_HANDLE, CG_SYNC})


def split_call(ins: ir.Instr) -> tuple[tuple, ir.Sym | ir.Reg, tuple]:
    """(return operands, target, argument operands) of a `call`; ValueError when it names no target."""
    ops = list(ins.operands)
    rets: tuple = ()
    args: tuple = ()
    if ops and isinstance(ops[0], ir.CallList):
        rets = ops.pop(0).items
    if not ops:
        raise ValueError("call without a target")
    target = ops.pop(0)
    if ops and isinstance(ops[0], ir.CallList):
        args = ops.pop(0).items
    return rets, target, args
