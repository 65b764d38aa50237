"""Preprocessing, one linear pass per function before translation:

- drop instructions that translate to nothing on a CPU (hints such as prefetch, pmevent, nanosleep);
- drop code that cannot be reached from the entry (labels only reachable from dead code go too);
- turn branches that only loop to themselves (`L: bra L;`, `L: @p bra L;`) into a trap with a clear
  message, instead of hanging the process.

Branch targets are labels, so removing instructions needs no target fix-up beyond dropping dead labels.
What was removed is recorded in a `PreprocessReport`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxjit.frontend import ir
from ptxjit.isa.effects import REMOVABLE_HINTS
from ptxjit.passes.dataflow import build_cfg


@dataclass
class PreprocessReport:
    function: str
    removed_noops: list[str] = field(default_factory=list)  # "file:line:col opcode"
    removed_unreachable: list[str] = field(default_factory=list)
    self_loops: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.removed_noops or self.removed_unreachable or self.self_loops)


def preprocess(fn: ir.Function) -> PreprocessReport:
    rep = PreprocessReport(fn.name)
    if fn.body is None:
        return rep
    body: list = []
    for st in fn.body:
        if isinstance(st, ir.Instr):
            if st.opcode in REMOVABLE_HINTS:
                rep.removed_noops.append(f"{st.pos} {st.text}")
                continue
        body.append(st)
    # self-loops: a block holding nothing but a branch to its own label
    for i, st in enumerate(body):
        if (isinstance(st, ir.Instr) and st.opcode == "bra" and i > 0 and isinstance(body[i - 1], ir.Label)
                and isinstance(st.operands[0], ir.Sym) and st.operands[0].name == body[i - 1].name):
            rep.self_loops.append(f"{st.pos} {st.text} {st.operands[0].name}")
            body[i] = ir.Instr("trap", ("selfloop",), [], st.guard, st.pos, st.src_loc)
    fn.body = body
    # unreachable blocks
    blocks, _ = build_cfg(fn)
    reach = [False] * len(blocks)
    stack = [0] if blocks else []
    while stack:
        b = stack.pop()
        if reach[b]:
            continue
        reach[b] = True
        stack.extend(blocks[b].succs)
    keep: list = []
    for bi, blk in enumerate(blocks):
        for st in body[blk.start:blk.end]:
            if reach[bi]:
                keep.append(st)
            elif isinstance(st, ir.Instr):
                rep.removed_unreachable.append(f"{st.pos} {st.text}")
    # labels of removed blocks may still be named by dead code only: keep the ones still referenced
    fn.body = keep
    return rep
