"""Butterfly chains: a warp reduction's dependent shuffles computed at one suspension point.

Triton's and CUB's warp reductions are chains of whole-warp butterflies, each feeding the next:

    shfl.sync.bfly.b32 %r11, %r1, 16, 31, -1;   max.f32 %r12, %r1, %r11;
    shfl.sync.bfly.b32 %r13, %r12, 8, 31, -1;   max.f32 %r14, %r12, %r13;   ... (distances 4, 2, 1)

In region mode every shuffle is a suspension point (all threads save their registers, the region's
loop over the threads ends, the scheduler picks the next point), and the shuffles of a chain are
dependent, so the shuffle scheduler (passes/shflsched.py) cannot batch them: softmax's 4 chains are 14
of its 18 suspension points.  Every value of a chain is a function of the values the warp's lanes
publish at its first shuffle, so lowering (lower/rules/sync.py, lower/regions.py) keeps only that first
shuffle as a suspension point and, once per release, before the region's loop over the threads,
runs the chain step by step over all threads: step s computes, for every thread t,
`op(v[t], v[partner of t])` from the previous step's row of values, with the PTX instruction's own
lowering and operand order, so each lane gets exactly the value the chain gives it on a GPU.

A chain qualifies when (in one basic block, in program order):
- each shuffle is an unguarded `shfl[.sync].bfly.b32` over the whole warp (constant clamp 31, no
  segment mask, membermask -1 or none) at a constant power-of-two distance, writing a register only;
- each shuffle's result is read once, by the step's operation: an unguarded add/mul/min/max/and/or/xor
  of 32-bit type whose two operands are that result and the value the shuffle sent (either order);
- each operation's result (but the last) is read exactly twice, by the next shuffle and the next
  operation, and every intermediate register has that one definition;
- nothing between the first shuffle and the first operation writes the value sent, and nothing between
  the first shuffle and the last operation reads the chain's result register (written, fused, at the
  first shuffle) or writes it.
Two steps at least (a single shuffle gains nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import defs_uses
from ptxjit.passes.shflsched import referenced_names

_OPS = frozenset({"add", "mul", "min", "max", "and", "or", "xor"})
_TYPES = frozenset({"f32", "s32", "u32", "b32", "f16x2", "bf16x2"})


@dataclass(frozen=True)
class Step:
    shfl: ir.Instr  # shfl.bfly dst, sent, k
    op: ir.Instr  # op result, sent, dst (either order)
    k: int  # the butterfly distance (a power of two below 32)
    sent: str  # the register the shuffle publishes (the step's own value)
    received: str  # the shuffle's destination


@dataclass(frozen=True)
class Chain:
    steps: tuple[Step, ...]

    @property
    def head(self) -> ir.Instr:
        return self.steps[0].shfl

    @property
    def result(self) -> str:
        return self.steps[-1].op.operands[0].name

    def members(self) -> list[ir.Instr]:
        """The instructions that emit nothing where they stand (all but the head)."""
        return [i for s in self.steps for i in (s.shfl, s.op) if i is not self.head]


def _bfly_distance(ins: ir.Instr) -> int | None:
    """k of a whole-warp butterfly shuffle that may start or continue a chain, else None."""
    if ins.opcode != "shfl" or not ins.has("bfly") or ins.guard is not None or len(ins.operands) not in (4, 5):
        return None
    d, a, k, c = ins.operands[:4]
    if not (isinstance(d, ir.Reg) and isinstance(a, ir.Reg) and isinstance(k, ir.Imm) and isinstance(c, ir.Imm)):
        return None
    if d.neg or a.neg or c.value & 0x1F1F != 31:
        return None
    if len(ins.operands) == 5:
        m = ins.operands[4]
        if not (isinstance(m, ir.Imm) and m.value & 0xFFFFFFFF == 0xFFFFFFFF):
            return None
    kk = k.value & 31
    return kk if kk and kk & (kk - 1) == 0 else None


def _step_op(ins: ir.Instr, sent: str, received: str) -> bool:
    if ins.opcode not in _OPS or ins.guard is not None or len(ins.operands) != 3:
        return False
    if len(ins.types()) != 1 or ins.types()[0] not in _TYPES or ins.has("cc"):
        return False
    d, x, y = ins.operands
    if not all(isinstance(o, ir.Reg) and not o.neg and not getattr(o, "sel", "")
               and not getattr(o, "minus", False) for o in (d, x, y)):
        return False
    return {x.name, y.name} == {sent, received} and sent != received


def butterfly_chains(fn: ir.Function) -> list[Chain]:
    body = fn.body or []
    ndefs: dict[str, int] = {}
    uses: dict[str, list[int]] = {}
    where: dict[int, int] = {}  # id(instruction) -> index in body
    block_of: list[int] = []  # body index -> basic block number (labels and terminators end blocks)
    targets = referenced_names(fn)  # labels nothing jumps to (Triton's debug-line labels) end no block
    blk = 0
    for j, st in enumerate(body):
        if isinstance(st, ir.Label) and st.name in targets:
            blk += 1
        block_of.append(blk)
        if isinstance(st, ir.Instr):
            where[id(st)] = j
            d, u = defs_uses(st)
            for r in d:
                ndefs[r] = ndefs.get(r, 0) + 1
            for r in u:
                uses.setdefault(r, []).append(j)
            if st.opcode in ("bra", "brx", "ret", "exit", "trap", "call"):
                blk += 1

    def only_use(reg: str) -> list[int]:
        return uses.get(reg, [])

    chains: list[Chain] = []
    taken: set[int] = set()
    for j, st in enumerate(body):
        if not isinstance(st, ir.Instr) or j in taken:
            continue
        k = _bfly_distance(st)
        if k is None:
            continue
        steps: list[Step] = []
        shfl, sent = st, st.operands[1].name
        while True:
            received = shfl.operands[0].name
            js = where[id(shfl)]
            u = only_use(received)
            if ndefs.get(received) != 1 or len(u) != 1 or u[0] <= js or block_of[u[0]] != block_of[js]:
                break
            op = body[u[0]]
            if not _step_op(op, sent, received) or ndefs.get(op.operands[0].name) != 1:
                break
            steps.append(Step(shfl, op, _bfly_distance(shfl) or 0, sent, received))
            # the next step: the operation's result read exactly by the next shuffle and operation
            res = op.operands[0].name
            ru = only_use(res)
            if len(ru) != 2:
                break
            nxt = body[ru[0]]
            if _bfly_distance(nxt) is None or nxt.operands[1].name != res or block_of[ru[0]] != block_of[js] \
                    or ru[0] <= u[0] or not _step_op(body[ru[1]], res, nxt.operands[0].name):
                break
            shfl, sent = nxt, res
        if len(steps) < 2:
            continue
        first, last = where[id(steps[0].shfl)], where[id(steps[-1].op)]
        # the value sent first: not rewritten before its operation reads it; the result: not read
        # (nor written) between the head, where the fused chain writes it, and its operation
        first_op = where[id(steps[0].op)]
        a, res = steps[0].sent, steps[-1].op.operands[0].name
        clash = False
        for i in range(first + 1, last):
            x = body[i]
            if not isinstance(x, ir.Instr):
                continue
            d, u = defs_uses(x)
            if (i < first_op and a in d) or res in u or res in d:
                clash = True
                break
        if clash or a == res:
            continue
        # intermediates other than the result must not be read after the chain (checked by their use
        # counts above) nor be the value sent first
        if any(s.received == a for s in steps) or any(s.op.operands[0].name == a for s in steps):
            continue
        chains.append(Chain(tuple(steps)))
        taken.update(where[id(i)] for i in chains[-1].members())
    return chains
