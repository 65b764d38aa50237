"""Lockstep loops: run grid- and block-stride loops one iteration at a time across the CTA.

A CTA's threads run as a loop over the thread index, each thread up to its next suspension
point.  A grid-stride loop (`for (i = gid; i < n; i += gridDim.x * blockDim.x)`) has none, so
every thread would run its whole loop before the next thread starts: memory is then walked at
the stride (a whole grid of elements apart) and no two threads' iterations share a cache line.
Putting a scheduling-only suspension point (`lockstep`, which exchanges nothing) at the head of
such a loop makes each scheduler round run one iteration of every thread waiting there, so
neighbouring threads touch neighbouring addresses in the same round, the way the GPU runs them.

It changes when threads run, never what they compute: a thread may be suspended anywhere that
no warp collective or barrier result depends on, and this point releases like a warp point
(before any CTA barrier completes).
"""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.passes.affine import tid_affine
from ptxjit.passes.dataflow import defs_uses, with_marker_after

LOCKSTEP = "lockstep"
# special registers whose multiples are grid or block strides
_STRIDE_SOURCES = ("%nctaid", "%ntid")
_MEMORY = frozenset({"ld", "st", "atom", "red", "ldu"})


def _stride_registers(fn: ir.Function, uniform: set[str]) -> set[str]:
    """Thread-uniform registers computed (transitively) from %nctaid or %ntid."""
    derived: set[str] = set()
    for _ in range(2):  # definitions inside loops may come after their uses in program order
        for ins in fn.instructions:
            d, u = defs_uses(ins)
            special = any(isinstance(op, ir.Reg) and op.name.split(".")[0] in _STRIDE_SOURCES
                          for op in ins.operands[1:])
            if special or any(r in derived for r in u):
                derived.update(r for r in d if r in uniform)
    return derived


def _is_stride_step(ins: ir.Instr, strides: set[str], uniform: set[str]) -> bool:
    """`add x, i, s`: a per-thread index i stepped by a grid or block stride s (unrolled loops
    step through a chain of such adds)."""
    if ins.opcode != "add" or len(ins.operands) != 3:
        return False
    _d, a, c = ins.operands
    if not all(isinstance(op, ir.Reg) for op in (a, c)):
        return False
    return (a.name not in uniform and c.name in strides) or (c.name not in uniform and a.name in strides)


def _is_constant_step(ins: ir.Instr, uniform: set[str]) -> bool:
    """`add c, c, imm`: a thread-uniform counter stepped by a literal (Triton's block loops:
    `for off in range(0, n, BLOCK)` steps by BLOCK, a constant, not by %ntid)."""
    if ins.opcode != "add" or len(ins.operands) != 3 or ins.guard is not None:
        return False
    d, a, c = ins.operands
    if isinstance(a, ir.Imm):
        a, c = c, a
    return (isinstance(d, ir.Reg) and isinstance(a, ir.Reg) and isinstance(c, ir.Imm)
            and d.name == a.name and d.name in uniform)


def lockstep_loops(fn: ir.Function, yields, block: tuple[int, int, int] | None = None) -> ir.Function:
    """A copy of kernel `fn` with a `lockstep` point at the head of each grid- or block-stride loop
    that touches memory and contains no suspension point of its own (`fn` itself if none).

    With the block shape known (`block`) and a kernel that suspends anyway (barriers, warp
    collectives: region mode), also at the head of a loop stepping a thread-uniform counter by a
    literal while some index in it moves with the thread index (passes/affine.py: Triton's
    `offs = off + tl.arange(0, BLOCK)`, with the thread index masked by the block size): run one
    thread at a time, each thread's loop would be a scalar inner loop of the region's loop over the
    threads; in lockstep rounds every round is a loop over the threads that LLVM vectorizes."""
    body = fn.body or []
    labels = {st.name: i for i, st in enumerate(body) if isinstance(st, ir.Label)}
    aff = tid_affine(fn, {p.name for p in fn.params}, block)
    uniform = {r for r, k in aff.items() if k == (0, 0, 0)}
    strides = _stride_registers(fn, uniform)
    moving = {r for r, k in aff.items() if k != (0, 0, 0)}
    suspends = block is not None and any(yields(s) for s in fn.instructions)
    heads: set[int] = set()
    for k, st in enumerate(body):
        if not (isinstance(st, ir.Instr) and st.opcode == "bra" and st.operands):
            continue
        target = st.operands[0]
        name = target.name if isinstance(target, ir.Sym) else None
        h = labels.get(name) if name else None
        if h is None or h > k:
            continue  # not a back edge
        loop = [s for s in body[h:k + 1] if isinstance(s, ir.Instr)]
        if any(yields(s) for s in loop):
            continue
        if not any(s.opcode in _MEMORY for s in loop):
            continue
        if any(_is_stride_step(s, strides, uniform) for s in loop):
            heads.add(h)
        elif suspends and any(_is_constant_step(s, uniform) for s in loop) \
                and any(r in moving for s in loop for r in defs_uses(s)[0]):
            heads.add(h)
    return with_marker_after(fn, heads, LOCKSTEP)
