"""Shuffle chains: a warp reduction's or scan's dependent shuffles computed at one suspension point.

Warp reductions and scans (Triton's `tl.sum/tl.max`, CUB's and hand-written `__shfl_*_sync` loops) are
chains of whole-warp shuffles, each sending what the step before computed from the last one:

    shfl.sync.bfly.b32 %r11, %r1, 16, 31, -1;   max.f32 %r12, %r1, %r11;          (Triton)
    shfl.sync.bfly.b32 %r13, %r12, 8, 31, -1;   max.f32 %r14, %r12, %r13;   ...

    shfl.sync.up.b32 %r17|%p1, %r12, %r15, %r14, %r16;                             (nvcc, a scan)
    selp.b32 %r18, 0, %r17, %p2;   add.s32 %r19, %r18, %r12;
    shfl.sync.up.b32 %r21|%p3, %r19, %r20, %r14, %r16;   ...

In region mode every shuffle is a suspension point (every thread saves its registers, the region's loop
over the threads ends, the scheduler picks the next point), and a chain's shuffles are dependent, so
the shuffle scheduler (passes/shflsched.py) cannot batch them: softmax's 4 chains were 14 of its 18
suspension points.  Every value of a chain is a function of what the warp's lanes publish at its first
shuffle and of values that are pure functions of the thread index, so lowering (lower/rules/sync.py
chain_prologue, lower/regions.py) keeps only the first shuffle as a suspension point and, once per
release, before the region's loop over the threads, runs the chain step by step over every thread:
step s gives thread t its shuffle's result from the previous step's row of values, then runs the
step's PTX instructions with their own rules, so each lane gets exactly the value the chain gives it on
a GPU.

A chain qualifies when, in one basic block, in program order:
- each shuffle is an unguarded, whole-warp `shfl[.sync].up/down/bfly.b32` (bfly: clamp 31 and a
  power-of-two distance; down: clamp 31; up: clamp 0; no segment mask) whose distance, clamp and
  membermask (all lanes) are constants (literals or registers set once by a `mov` of one);
- a step's instructions are those reading what its shuffle wrote or what they wrote: unguarded pure
  register operations (dataflow.PURE, no carry); they read only those, the value the shuffle sent (or
  the register it is a `mov` of: nvcc shuffles a float's bits, `mov.b32 %r10, %f3`, and adds %f3), and
  registers that are pure functions of the thread index, the block and the parameters
  (passes/remat.py: recomputed for each thread of the chain);
- the next step's shuffle sends one of a step's registers; that register (and what it copies) is read
  by nothing but the step, that shuffle and the next step; every other register a step defines is read
  within the step only, but for the last step's result (what the chain leaves, 32 bits);
- nothing between the first shuffle and the first step's last instruction writes the value sent first,
  and nothing between the first shuffle and the chain's end reads or writes its result (written where
  the first shuffle resumes).
Two steps at least (a single shuffle gains nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import CARRY_READERS, PURE, defs_uses
from ptxjit.passes.shflsched import referenced_names

_WORD = frozenset({"b32", "s32", "u32", "f32"})


@dataclass(frozen=True)
class Step:
    shfl: ir.Instr
    mode: str  # up, down or bfly
    k: int  # the shuffle distance
    sent: str  # the register the shuffle publishes (this step's own value)
    copies: tuple[str, ...]  # registers holding the same bits (`mov.b32 sent, %f3`: nvcc's float chains)
    received: str  # the shuffle's destination
    pred: str | None  # its predicate destination (`d|p`), if any
    ops: tuple[ir.Instr, ...]  # the step's instructions, in program order
    value: str  # the register the step leaves (the next step's `sent`, or the chain's result)
    outside: frozenset[str]  # registers the instructions read that no chain instruction defines


@dataclass(frozen=True)
class Chain:
    steps: tuple[Step, ...]

    @property
    def head(self) -> ir.Instr:
        return self.steps[0].shfl

    @property
    def result(self) -> str:
        return self.steps[-1].value

    def members(self) -> list[ir.Instr]:
        """The instructions that emit nothing where they stand (all but the head)."""
        return [i for s in self.steps for i in (s.shfl, *s.ops) if i is not self.head]


def _split(d) -> tuple[ir.Reg | None, ir.Reg | None]:
    if isinstance(d, ir.Pair):
        return d.first, d.second
    return (d, None) if isinstance(d, ir.Reg) else (None, None)


class _Finder:
    def __init__(self, fn: ir.Function, outside_ok) -> None:
        self.body = body = fn.body or []
        self.regs = fn.regs
        self.outside_ok = outside_ok
        self.ndefs: dict[str, int] = {}
        self.uses: dict[str, list[int]] = {}
        self.def_at: dict[str, int] = {}
        self.where: dict[int, int] = {}
        self.block_of: list[int] = []
        targets = referenced_names(fn)  # labels nothing jumps to (Triton's debug-line labels) end no block
        blk = 0
        for j, st in enumerate(body):
            if isinstance(st, ir.Label) and st.name in targets:
                blk += 1
            self.block_of.append(blk)
            if isinstance(st, ir.Instr):
                self.where[id(st)] = j
                d, u = defs_uses(st)
                for r in d:
                    self.ndefs[r] = self.ndefs.get(r, 0) + 1
                    self.def_at[r] = j
                for r in u:
                    self.uses.setdefault(r, []).append(j)
                if st.opcode in ("bra", "brx", "ret", "exit", "trap", "call"):
                    blk += 1

    def const(self, op) -> int | None:
        if isinstance(op, ir.Imm):
            return op.value
        if isinstance(op, ir.Reg) and not op.neg and self.ndefs.get(op.name) == 1:
            d = self.body[self.def_at[op.name]]
            if d.opcode == "mov" and d.guard is None and len(d.operands) == 2 and isinstance(d.operands[1], ir.Imm):
                return d.operands[1].value
        return None

    def form(self, ins) -> tuple[str, int] | None:
        """(mode, distance) of a shuffle that may be a chain's step, else None."""
        if not isinstance(ins, ir.Instr) or ins.opcode != "shfl" or ins.guard is not None \
                or len(ins.operands) not in (4, 5) or not ins.has("b32"):
            return None
        mode = next((m for m in ("up", "down", "bfly") if ins.has(m)), None)
        d, p = _split(ins.operands[0])
        a = ins.operands[1]
        if mode is None or d is None or not isinstance(a, ir.Reg) or a.neg or self.regs.get(a.name) not in _WORD:
            return None
        k, c = self.const(ins.operands[2]), self.const(ins.operands[3])
        mask = self.const(ins.operands[4]) if len(ins.operands) == 5 else -1
        if k is None or c is None or mask is None or mask & 0xFFFFFFFF != 0xFFFFFFFF:
            return None
        k &= 31
        if k == 0 or c & 0x1F1F != (0 if mode == "up" else 31):
            return None
        if mode == "bfly" and k & (k - 1):
            return None
        return mode, k

    def copies(self, reg: str) -> set[str]:
        """The register `reg` is a plain copy of (`mov.b32 %r10, %f3`, its one definition), if any: nvcc's
        float reductions shuffle the bits and add the float."""
        if self.ndefs.get(reg) != 1:
            return set()
        d = self.body[self.def_at[reg]]
        x = d.operands[1] if d.opcode == "mov" and len(d.operands) == 2 else None
        if d.guard is not None or not isinstance(x, ir.Reg) or x.neg or x.sel or x.minus \
                or self.regs.get(x.name) not in _WORD or self.ndefs.get(x.name) != 1:
            return set()
        return {x.name}

    def single(self, regs) -> bool:
        return all(self.ndefs.get(r) == 1 for r in regs)

    def step(self, shfl: ir.Instr, chain_defs: set[str]):
        """The step starting at `shfl`: (its instructions, the registers they define, the next shuffle or
        None, the registers read from outside the chain), or None when its shuffle's destinations are
        defined more than once."""
        body = self.body
        js = self.where[id(shfl)]
        d, p = _split(shfl.operands[0])
        sent = shfl.operands[1].name
        own = {sent} | self.copies(sent)
        defs = {d.name} | ({p.name} if p is not None else set())
        if not self.single(defs):
            return None
        ops: list[ir.Instr] = []
        outside: set[str] = set()
        j = js + 1
        while j < len(body) and self.block_of[j] == self.block_of[js]:
            x = body[j]
            j += 1
            if not isinstance(x, ir.Instr):
                continue
            xd, xu = defs_uses(x)
            if not any(r in defs for r in xu):
                continue
            if self.form(x) is not None and x.operands[1].name in defs:
                return ops, defs, x, outside
            if x.opcode not in PURE or x.opcode in CARRY_READERS or x.has("cc") or x.guard is not None \
                    or not xd or any(r not in defs and r not in own and (
                        r in chain_defs or not self.outside_ok(r)) for r in xu):
                break  # the step ends: what x reads is what the step leaves (chain() checks that)
            outside.update(r for r in xu if r not in defs and r not in own)
            ops.append(x)
            defs |= set(xd)
        return ops, defs, None, outside

    def chain(self, head: ir.Instr) -> Chain | None:
        where = self.where
        steps: list[Step] = []
        chain_defs: set[str] = set()
        shfl = head
        while True:
            f = self.form(shfl)
            got = self.step(shfl, chain_defs) if f is not None else None
            if got is None:
                break
            ops, defs, nxt, outside = got
            if not ops:
                break
            within = {where[id(i)] for i in (shfl, *ops)}
            if nxt is not None:
                value = nxt.operands[1].name
                nd, _ = _split(nxt.operands[0])
                nxt_step = self.step(nxt, chain_defs | defs)
                later = {where[id(nxt)]} | ({where[id(i)] for i in nxt_step[0]} if nxt_step else set())
                same = {value} | (self.copies(value) & defs)  # (the next step reads either)
                if self._escaping(defs - same, within) or self.regs.get(value) not in _WORD \
                        or any(u not in within | later for r in same for u in self.uses.get(r, [])):
                    nxt = None  # the chain ends here: the value may be its result
            if nxt is None:
                left = self._escaping(defs, within)
                if len(left) != 1 or self.regs.get(left[0]) not in _WORD:
                    break
                value = left[0]
            d, p = _split(shfl.operands[0])
            sent = shfl.operands[1].name
            steps.append(Step(shfl, f[0], f[1], sent, tuple(sorted(self.copies(sent))), d.name,
                              p.name if p else None, tuple(ops), value, frozenset(outside)))
            chain_defs |= defs
            if nxt is None:
                break
            shfl = nxt
        # a step whose value is the next shuffle's but whose own result check failed ends the chain
        # before it; trim steps from the end until the last one's value is a result
        while steps and not self._ends(steps):
            steps.pop()
        if len(steps) < 2:
            return None
        return Chain(tuple(steps))

    def _escaping(self, regs, within: set[int]) -> list[str]:
        """The registers of `regs` read somewhere outside the statements `within`."""
        return [r for r in regs if any(u not in within for u in self.uses.get(r, []))]

    def _ends(self, steps: list[Step]) -> bool:
        """Can the chain's last step leave its value as the result?"""
        body, where = self.body, self.where
        head, last = steps[0], steps[-1]
        within = {where[id(i)] for s in steps for i in (s.shfl, *s.ops)}
        res = last.value
        end = max(within)
        # every register the chain defines but the result is read within the chain only
        for s in steps:
            defs = {s.received} | ({s.pred} if s.pred else set()) | {r for i in s.ops for r in defs_uses(i)[0]}
            if self._escaping(defs - {res}, within):
                return False
        first, first_end = where[id(head.shfl)], max(where[id(i)] for i in (head.shfl, *head.ops))
        for i in range(first + 1, end + 1):
            x = body[i]
            if not isinstance(x, ir.Instr) or i in within:
                continue
            d, u = defs_uses(x)
            if (i <= first_end and ({head.sent, *head.copies} & set(d))) or res in u or res in d:
                return False
        return res != head.sent and res not in head.copies


def shuffle_chains(fn: ir.Function, outside_ok=lambda r: False) -> list[Chain]:
    """The chains of `fn` (see the module's text); `outside_ok(register)`: may a step read that
    register, defined outside the chain (a pure function of the thread index: passes/remat.py)?"""
    f = _Finder(fn, outside_ok)
    chains: list[Chain] = []
    taken: set[int] = set()
    for st in f.body:
        if id(st) in taken or f.form(st) is None:
            continue
        c = f.chain(st)
        if c is not None:
            chains.append(c)
            taken.update(id(i) for i in c.members())
    return chains
