"""Summary data for a kernel, gathered in one linear pass (plus the CFG/liveness dataflow).

- register usage per type, and how many registers are live across suspension points;
- per pointer parameter: is it read, written, used atomically, and the statically provable stride of
  its accesses per step of %tid.x (e.g. 4 bytes for `a[blockIdx.x * blockDim.x + threadIdx.x]` on floats);
- the implicit control-flow graph (blocks, edges, back edges = loops);
- barrier and warp-collective points;
- use-def counts.

Parameter provenance and strides come from an abstract value per register: which parameters the value
is derived from, and its coefficient on %tid.x when it is affine in it (None when unknown).  Registers
assigned more than once with different abstract values become unknown, which keeps the pass linear
and sound for what it reports.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ptxjit.frontend import ir
from ptxjit.isa.effects import is_block_barrier, may_suspend
from ptxjit.passes.dataflow import build_cfg, defs_uses, liveness

UNKNOWN = None


@dataclass(frozen=True)
class AbsVal:
    params: frozenset[str] = frozenset()
    tid_coef: int | None = 0  # coefficient of %tid.x; None = not affine / unknown


@dataclass
class ParamAccess:
    name: str
    type: str
    read: bool = False
    written: bool = False
    atomic: bool = False
    strides: set = field(default_factory=set)  # bytes per %tid.x step; None in the set = unknown

    def describe(self) -> str:
        kinds = [k for k, v in (("read", self.read), ("written", self.written), ("atomic", self.atomic)) if v]
        if not kinds:
            return "value (not dereferenced)"
        st = sorted(s for s in self.strides if s is not None)
        stride = ", ".join(f"{s} B/thread" for s in st)
        if None in self.strides:
            stride = (stride + ", " if stride else "") + "unknown"
        return "/".join(kinds) + (f" (stride {stride})" if stride else "")


@dataclass
class KernelSummary:
    name: str
    registers: dict[str, int]
    params: list[ParamAccess]
    blocks: int
    edges: int
    loops: int
    barriers: list[str]
    warp_collectives: list[str]
    max_live_at_suspension: int
    defs: int
    uses: int
    instructions: int


_MEM_READ = {"ld", "ldu"}
_MEM_WRITE = {"st"}
_MEM_ATOMIC = {"atom", "red"}


def _const(op) -> int | None:
    return op.value if isinstance(op, ir.Imm) else None


def summarize(fn: ir.Function) -> KernelSummary:
    vals: dict[str, AbsVal] = {}
    conflicted: set[str] = set()
    accesses = {p.name: ParamAccess(p.name, p.type) for p in fn.params}

    def get(op) -> AbsVal:
        if isinstance(op, ir.Reg):
            if op.name == "%tid.x":
                return AbsVal(frozenset(), 1)
            if op.name in conflicted:
                return AbsVal(frozenset(), UNKNOWN)
            return vals.get(op.name, AbsVal(frozenset(), 0 if op.name.startswith("%") and "." in op.name else
                                            UNKNOWN))
        if isinstance(op, ir.Imm | ir.FImm):
            return AbsVal()
        return AbsVal(frozenset(), UNKNOWN)

    def put(op, v: AbsVal) -> None:
        if not isinstance(op, ir.Reg) or op.name in conflicted:
            return
        old = vals.get(op.name)
        if old is not None and old != v:
            conflicted.add(op.name)
            vals[op.name] = AbsVal(old.params | v.params, UNKNOWN)
            return
        vals[op.name] = v

    def lin(a: AbsVal, b: AbsVal, k: int = 1) -> AbsVal:
        coef = None if a.tid_coef is None or b.tid_coef is None else a.tid_coef + k * b.tid_coef
        return AbsVal(a.params | b.params, coef)

    def scale(a: AbsVal, k: int | None) -> AbsVal:
        if k is None or a.tid_coef is None:
            return AbsVal(a.params, UNKNOWN if a.tid_coef != 0 else 0)
        return AbsVal(a.params, a.tid_coef * k)

    for ins in fn.instructions:
        op = ins.opcode
        ops = ins.operands
        if op in _MEM_READ | _MEM_WRITE | _MEM_ATOMIC:
            addr_i = 1 if op in _MEM_READ or op == "atom" else 0
            addr = ops[addr_i] if len(ops) > addr_i else None
            if isinstance(addr, ir.Addr) and isinstance(addr.base, ir.Sym) and addr.base.name in accesses:
                if op in _MEM_READ:  # ld.param of the pointer itself: the value derives from the param
                    put(ops[0], AbsVal(frozenset({addr.base.name}), 0))
                continue
            base = get(addr.base) if isinstance(addr, ir.Addr) and isinstance(addr.base, ir.Reg) else AbsVal()
            for p in base.params:
                acc = accesses[p]
                if op in _MEM_ATOMIC:
                    acc.atomic = True
                elif op in _MEM_WRITE:
                    acc.written = True
                else:
                    acc.read = True
                acc.strides.add(base.tid_coef)
            if op in _MEM_READ or op == "atom":
                for r in (ops[0].items if isinstance(ops[0], ir.Vec) else (ops[0],)):
                    put(r, AbsVal(frozenset(), UNKNOWN))
            continue
        if not ops or not isinstance(ops[0], ir.Reg):
            continue
        d = ops[0]
        src = ops[1:]
        if op in ("mov", "cvta", "cvt") and src:
            put(d, get(src[0]))
        elif op in ("add", "sub") and len(src) >= 2:
            put(d, lin(get(src[0]), get(src[1]), -1 if op == "sub" else 1))
        elif op in ("mul", "mul24") and len(src) >= 2 and not ins.has("hi"):
            a, b = get(src[0]), get(src[1])
            ka, kb = _const(src[0]), _const(src[1])
            if kb is not None:
                put(d, scale(a, kb))
            elif ka is not None:
                put(d, scale(b, ka))
            elif a.tid_coef == 0 and b.tid_coef == 0:
                put(d, AbsVal(a.params | b.params, 0))
            else:
                put(d, AbsVal(a.params | b.params, UNKNOWN))
        elif op in ("mad", "mad24") and len(src) >= 3 and not ins.has("hi"):
            a, b, c = get(src[0]), get(src[1]), get(src[2])
            if a.tid_coef == 0 and b.tid_coef == 0:
                put(d, lin(AbsVal(a.params | b.params, 0), c))
            else:
                put(d, AbsVal(a.params | b.params | c.params, UNKNOWN))
        elif op == "shl" and len(src) >= 2 and _const(src[1]) is not None:
            put(d, scale(get(src[0]), 1 << _const(src[1])))
        else:
            merged = frozenset().union(*(get(s).params for s in src)) if src else frozenset()
            put(d, AbsVal(merged, UNKNOWN))
    blocks, _ = build_cfg(fn)
    edges = sum(len(b.succs) for b in blocks)
    loops = sum(1 for i, b in enumerate(blocks) for s in b.succs if s <= i)
    barriers, collectives = [], []
    for ins in fn.instructions:
        if may_suspend(ins.opcode):
            where = f"{ins.pos} {ins.text}"
            (barriers if is_block_barrier(ins) else collectives).append(where)
    max_live = 0
    if barriers or collectives:
        _, after = liveness(fn)
        for ins in fn.instructions:
            if may_suspend(ins.opcode):
                max_live = max(max_live, len(after[id(ins)]))
    ndefs = nuses = 0
    for ins in fn.instructions:
        d, u = defs_uses(ins)
        ndefs += len(d)
        nuses += len(u)
    return KernelSummary(fn.name, dict(Counter(fn.regs.values())), list(accesses.values()), len(blocks), edges,
                         loops, barriers, collectives, max_live, ndefs, nuses, len(fn.instructions))
