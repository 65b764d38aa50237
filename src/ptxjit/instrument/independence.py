"""Can a kernel's record counts depend on memory?  If not, the counting run needs no memory at all.

`ptxjit.trace` sizes its buffers from a counting run.  The counting run must take exactly the paths the
traced run takes on the same input, without disturbing the user's data.  In general that means running
the kernel for real (every store, so that a later load sees what the kernel wrote: a histogram's
atomics, a flag one thread sets and another reads, a loop bound it stores) on a snapshot of every array
it may write, restored afterwards -- the snapshot and restore cost up to twice the plain launch
(instrument/trace.py).

Most kernels never let memory decide their control flow, though: vector adds, grid-stride loops, tiled
matrix products, stencils decide what to run from their parameters and thread indices only, and use what
they load as data.  For those, the number of times each basic block runs -- and so every record count --
is the same whatever memory holds, and the counting run can *drop every memory access* (a counting
variant, `ProbeSpec(drop_memory=True)`: loads, stores and atomics lowered to nothing but their counter):
nothing to snapshot or restore, nothing written, and a loop that is only counters.

`independent(fn)` proves it with a taint analysis over registers and predicates (flow-insensitive, to a
fixed point; a register is tainted when any of its definitions is):

* sources: the result of every load that is not of `.param` or `.const` space (both read-only during a
  launch), of atomics, and of every special register that is no pure function of the launch (%clock,
  %globaltimer, %smid, %warpid, performance monitors, %envreg);
* propagation: an instruction of the whitelist (`PURE`: arithmetic, logic, comparisons, conversions,
  moves, address conversions) taints its results when any operand, its guard, or (guarded: the value
  kept when the guard fails) its destination is tainted; so do warp collectives (shfl, vote, match,
  redux) with their data operands: a shfl of a loaded value is a loaded value;
* the proof fails when a tainted value decides something the counts see: a branch's guard or a brx
  index, the guard of exit/ret/trap, the guard of a memory access (a guarded access has a counter of its
  own), any operand of a barrier (guard, id, thread count), a warp collective's guard or member mask.

Anything outside the whitelist (calls, texture and surface accesses, matrix instructions, cp.async,
mbarrier, clusters, ...) makes the answer "dependent": the general path (snapshot, full counting run,
restore) then runs as before.  Implicit flows need no tracking: a value written under a tainted branch
would only matter through control, and any tainted control already fails the proof.

Faults: the counting variant touches no memory, so it cannot fault; the traced run then raises the
KernelFault a plain launch would (its arrays as that launch leaves them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import CARRY_READERS, PURE
from ptxjit.util import PerObject

HARMLESS = frozenset({"prefetch", "prefetchu", "nanosleep", "pmevent", "membar", "fence",
                      "lockstep", "spinpoint", "warpstep"})  # no result, no effect on user data or counts
CONTROL = frozenset({"bra", "brx", "exit", "ret", "trap"})
COLLECTIVES = frozenset({"shfl", "vote", "match", "redux", "activemask", "elect"})
BARRIERS = frozenset({"bar", "barrier"})
# special registers that are pure functions of the launch (the same in both runs)
PURE_SPECIAL = frozenset({
    "%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%nwarpid", "%nsmid", "%gridid", "%warpsize",
    "%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge",
    "%dynamic_smem_size", "%total_smem_size", "%aggr_smem_size",
    "%cluster_ctarank", "%cluster_nctarank", "%cluster_ctaid", "%cluster_nctaid", "%clusterid",
    "%nclusterid", "%is_explicit_cluster",
})
_CC = "%%cc"  # the carry flag add.cc/sub.cc/mad.cc write and addc/subc/madc read
DROP_SPACES = ("global", "shared", "local", "")  # what the counting variant drops ("" generic)


@dataclass(frozen=True)
class Independence:
    """The answer for one function: `independent` (record counts cannot depend on memory), else the
    instruction that decided it and why."""
    independent: bool
    reason: str = ""


def _space(ins: ir.Instr) -> str:
    from ptxjit.isa.effects import space_of

    return space_of(ins)


def droppable(ins: ir.Instr, kparams: set[str] | frozenset = frozenset()) -> bool:
    """A memory access the counting variant drops: ld/ldu/st of global, shared, local or generic memory
    (not a kernel parameter's, not asynchronous), atom and red (not asynchronous)."""
    op = ins.opcode
    if op not in ("ld", "ldu", "st", "atom", "red") or ins.has("async"):
        return False
    if _space(ins) not in DROP_SPACES:
        return False
    if op in ("ld", "ldu", "st"):
        ops = ins.operands
        addr = ops[0 if op == "st" else 1] if len(ops) > 1 else None
        if isinstance(addr, ir.Addr) and isinstance(addr.base, ir.Sym) and addr.base.name in kparams:
            return False  # a kernel parameter (the lowering loads it once, like ld.param)
    return True


def _reg_names(op) -> list[str]:
    from ptxjit.passes.dataflow import operand_reg_names

    return operand_reg_names(op)


def _impure_special(name: str) -> bool:
    from ptxjit.isa.special import is_special

    return is_special(name) and name.split(".")[0] not in PURE_SPECIAL


def independent(fn: ir.Function, kparams: set[str] | None = None) -> Independence:
    """Does no record count of kernel `fn` (as lowered) depend on memory?  (See the module doc.)"""
    from ptxjit.passes.dataflow import defs_uses

    kp = {p.name for p in fn.params} if kparams is None else kparams
    instrs = fn.instructions
    for ins in instrs:  # the whitelist first: anything else takes the general path
        op = ins.opcode
        if op in ("ld", "ldu") and _space(ins) in ("param", "const") and not ins.has("async"):
            continue
        if op == "st" and _space(ins) == "param":
            return Independence(False, f"{ins.text}: a store to .param space")
        if not (op in PURE or op in HARMLESS or op in CONTROL or op in COLLECTIVES or op in BARRIERS
                or droppable(ins, kp)):
            return Independence(False, f"{ins.text}: not analysed (only arithmetic, moves, ld/st/atom/red, "
                                       "branches, barriers and warp collectives are)")
    tainted: set[str] = set()
    du = [defs_uses(ins) for ins in instrs]
    changed = True
    while changed:  # to a fixed point (taint only grows)
        changed = False
        for ins, (defs, uses) in zip(instrs, du, strict=True):
            op = ins.opcode
            if op in ("ld", "ldu", "atom") and droppable(ins, kp):
                new = set(defs)  # a value from memory
            elif op in PURE or op in COLLECTIVES or op in ("ld", "ldu") or (op in BARRIERS and defs):
                reads = list(uses) + ([_CC] if op in CARRY_READERS else [])
                hit = any(r in tainted or _impure_special(r) for r in reads)
                new = set(defs) | ({_CC} if ins.has("cc") else set()) if hit else set()
            else:
                new = set()
            if not new <= tainted:
                tainted |= new
                changed = True

    def bad(op) -> bool:
        return any(r in tainted or _impure_special(r) for r in _reg_names(op))

    for ins in instrs:
        op = ins.opcode
        where = f"{ins.text} at line {ins.pos.line}"
        if ins.guard is not None and op not in PURE and bad(ins.guard):  # (a pure result takes the taint)
            return Independence(False, f"{where}: guarded by a value from memory")
        if op == "brx" and ins.operands and bad(ins.operands[0]):
            return Independence(False, f"{where}: its target index comes from memory")
        if op in BARRIERS:
            _defs, uses = defs_uses(ins)
            skip = _pred_in(ins) if op == "bar" and ins.has("red") else None
            if any(r in tainted or _impure_special(r) for r in uses if r != skip):
                return Independence(False, f"{where}: its barrier or thread count comes from memory")
        if op in COLLECTIVES and ins.has("sync") and len(ins.operands) >= 2 and bad(ins.operands[-1]):
            return Independence(False, f"{where}: its member mask comes from memory")
    return Independence(True)


def _pred_in(ins: ir.Instr) -> str | None:
    """bar.red's predicate input (its data: the reduction's result is a value like any other)."""
    for op in reversed(ins.operands):
        if isinstance(op, ir.Reg):
            return op.name
    return None


_INDEPENDENCE = PerObject()  # kernel -> {block: Independence}


def kernel_independence(kernel, block) -> Independence:
    """`independent` for a ptxjit Kernel as it is lowered for `block` (None: the generic translation),
    cached on the kernel."""
    from ptxjit.instrument.probes import lowered_kernel

    cache = _INDEPENDENCE.of(kernel)
    got = cache.get(block)
    if got is None:
        fn = lowered_kernel(kernel, block)
        try:
            got = independent(fn, {p.name for p in fn.params})
        except Exception as e:  # noqa: BLE001  (an analysis that fails only costs the general path)
            got = Independence(False, f"analysis failed: {type(e).__name__}: {e}")
        cache[block] = got
    return got
