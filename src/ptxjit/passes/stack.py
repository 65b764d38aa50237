"""alloca, stacksave and stackrestore (PTX ISA 7.3+) onto a per-thread dynamic stack in local memory: the
rewrite at load; the internal alloca form is lowered by lower/rules/stack.py.

clang emits these for variable-length arrays and `__builtin_alloca`.  Each function that uses them
gets, at load (`rewrite_stack`, in the load pipeline: jit/load.py):

- a `.local .align 16 .b8 __ptxjit_stack[N]` area: in a kernel a part of every thread's local
  memory (so the worker's local-memory sizing, `isspacep.local` and the bounds checks cover it), in
  a device function a part of its frame, released when it returns, as the ISA says;
- a hidden 64-bit register `%__ptxjit_sp`, the stack pointer, set to the area's end on entry.  As an
  ordinary register it is saved and restored across barriers like any other.

and the instructions become:

    alloca.u64 d, size{, align}  ->  alloca.u64 {%sp}, %sp, size, align, __ptxjit_stack   (below)
                                     mov.u64 d, %sp
    stacksave.u64 d              ->  mov.u64 d, %sp
    stackrestore.u64 a           ->  mov.u64 %sp, a

The internal alloca form moves the stack pointer down by `size` and aligns it to max(align, 8) (8 is
the ISA's default and minimum); where that leaves the area it stops the thread with a KernelFault
naming the alloca's line, instead of corrupting other memory (the GPU's stack overflow is undefined
behaviour).

N is the per-thread stack size, like CUDA's cudaLimitStackSize: `ptxjit.set_stack_size(nbytes)`,
default 1 KiB, for modules loaded afterwards (it is part of their translation-cache key).

Local addresses are 64-bit host addresses in ptxjit, so the .u32 forms (32-bit local addresses)
are refused at load.
"""

from __future__ import annotations

import dataclasses

from ptxjit.frontend import ir

DEFAULT_STACK_SIZE = 1024
MAX_STACK_SIZE = 256 * 1024  # within CUDA's 512 KiB of local memory per thread, beside .local variables
MIN_ALIGN = 8
SP = "%__ptxjit_sp"
AREA = "__ptxjit_stack"
STACK_OPS = ("alloca", "stacksave", "stackrestore")

_stack_size = DEFAULT_STACK_SIZE


def set_stack_size(nbytes: int) -> None:
    """Bytes of dynamic stack (alloca) per thread for PTX modules loaded from now on (CUDA's
    cudaLimitStackSize); a multiple of 16 from 16 to 256 KiB.  Default 1 KiB."""
    global _stack_size
    n = int(nbytes)
    if n != nbytes or not 16 <= n <= MAX_STACK_SIZE or n % 16:
        raise ValueError(f"stack size must be a multiple of 16 bytes from 16 to {MAX_STACK_SIZE}, not {nbytes!r}")
    _stack_size = n


def stack_size() -> int:
    """The per-thread stack size that modules loaded now get."""
    return _stack_size


def rewrite_stack(module: ir.Module) -> str:
    """Rewrite every function's alloca/stacksave/stackrestore onto its own stack area (module doc).
    Returns what to add to the module's translation-cache key ('' where nothing uses a stack)."""
    used = False
    for fn in module.functions.values():
        if fn.body is None or not any(isinstance(s, ir.Instr) and s.opcode in STACK_OPS for s in fn.body):
            continue
        used = True
        sp = ir.Reg(SP)
        fn.regs[SP] = "b64"
        fn.vars.append(ir.VarDecl("local", AREA, "b8", fn.pos, align=16, dims=[_stack_size]))
        first = next(s for s in fn.body if isinstance(s, ir.Instr))
        body: list[ir.Instr | ir.Label] = [
            ir.Instr("alloca", ("u64", "init"), [ir.Vec((sp,)), ir.Sym(AREA)], None, first.pos, first.src_loc)]
        for st in fn.body:
            if not isinstance(st, ir.Instr) or st.opcode not in STACK_OPS:
                body.append(st)
                continue
            mov = dataclasses.replace(st, opcode="mov", mods=("u64",))
            if st.opcode == "alloca":
                d, size = st.operands[0], st.operands[1]
                align = st.operands[2] if len(st.operands) > 2 else ir.Imm(MIN_ALIGN)
                body.append(dataclasses.replace(st, operands=[ir.Vec((sp,)), sp, size, align, ir.Sym(AREA)]))
                body.append(dataclasses.replace(mov, operands=[d, sp], guard=st.guard))
            elif st.opcode == "stacksave":
                body.append(dataclasses.replace(mov, operands=[st.operands[0], sp]))
            else:
                body.append(dataclasses.replace(mov, operands=[sp, st.operands[0]]))
        fn.body = body
    return f"|stack={_stack_size}" if used else ""
