"""Which probes go where, and the counting pass: how many records of each type a basic block emits.

A probe *site* is a place in the PTX that emits a record when it executes:

* a **block site** per basic block (passes/dataflow.py build_cfg) that holds an instruction: at its first
  instruction, before any guard (`FnLowering.lower_instr` calls `ProbeEmitter.enter`);
* a **memory site** per memory access of an instruction: ld/ldu/st (not the `.param` space: kernel
  parameters are constants, loaded once before the thread loop), atom/red, and cp.async (two: its
  global source, part 0, and its shared destination, part 1).  The memory rules call
  `FnLowering.probe_memory` with the host pointer they computed; a guarded instruction's probe runs
  only when its guard holds;
* a **branch site** per conditional `bra` (`@%p bra`): evaluated whenever its block runs, it records
  whether the thread took it (the record's site is 2 x branch + taken);
* a **barrier site** per barrier (bar/barrier: kind "cta", or "warp" for bar.warp.sync) and warp
  collective (shfl, vote, match, redux, activemask: "warp"), recording the thread's arrival and the time.

The **counting pass** (`Plan`) gives every *counter* (the things the cheap counting run counts) the number
of records of each type one execution emits: a block's counter stands for its block record and for the
memory, branch and barrier records of its unguarded instructions (a thread that enters a basic block
executes all of it: a block ends at every branch, exit, return and trap), and every guarded memory or
barrier instruction has a counter of its own.  Capacity per type = sum over counters of
records(counter, type) x executions(counter).
(A `call` whose callee runs `exit` ends the caller's block early: fewer records than counted, never more.)

Sites are numbered per record type over the kernel as lowered (after lockstep/spin-point insertion: the
plan is built from `ModuleCodegen(...).kernel`) and then every device function of the module, in name
order, and looked up by (function, statement index[, part]): both translations of a trace (counting and
traced) and the Python side agree on them.

The probe set a translation is given (`ModuleCodegen(probes=...)`) is instrument/emit.py's `ProbeSpec`;
`lowered_kernel` is the kernel as the plan sees it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxjit.frontend import ir
from ptxjit.frontend.ir import type_size
from ptxjit.util import PerObject

RECORD_TYPES = ("blocks", "memory", "branches", "barriers")
T_BLOCKS, T_MEMORY, T_BRANCHES, T_BARRIERS = 0, 1, 2, 3
NTYPES = len(RECORD_TYPES)
KINDS = ("load", "store", "atomic")
KIND_LOAD, KIND_STORE, KIND_ATOMIC = 0, 1, 2
BARRIER_KINDS = ("cta", "warp")  # a barrier site's kind: CTA barriers; warp barriers and collectives
KIND_CTA, KIND_WARP = 0, 1
WARP_COLLECTIVES = frozenset({"shfl", "vote", "match", "redux", "activemask", "elect"})
SITE_LIMIT = 1 << 16  # a record's site field is 16 bits
MARKERS = frozenset({"lockstep", "spinpoint", "warpstep"})  # scheduling pseudo-instructions (no PTX of their own)


@dataclass(frozen=True)
class Site:
    """A static probe site.  `ident` is the record's `site` field (numbered per record type)."""
    ident: int
    type: int               # T_BLOCKS, T_MEMORY, T_BRANCHES or T_BARRIERS
    function: str
    stmt: int               # index into the function's body
    part: int               # memory: which access of the instruction (cp.async: 0 source, 1 destination)
    ptx: str                # "file:line:col" of the PTX instruction
    line: int               # its PTX line
    source: str             # the CUDA line from .loc ("kernel.cu:12:5"), or ""
    text: str               # the opcode as written ("ld.global.nc.f32")
    block: int              # the block site (its ident) this site is in
    counter: int            # the counter that counts it (a block's, or a guarded instruction's own)
    space: str = ""         # memory: state space ("" generic)
    size: int = 0           # memory: bytes accessed
    kind: int = 0           # memory: KIND_*; barriers: KIND_CTA or KIND_WARP


@dataclass
class Plan:
    """The probe sites of a kernel (and its module's device functions) and the counting pass."""
    blocks: list[Site] = field(default_factory=list)
    memory: list[Site] = field(default_factory=list)
    branches: list[Site] = field(default_factory=list)  # conditional bra (a record's site: 2 * ident + taken)
    barriers: list[Site] = field(default_factory=list)  # bar/barrier, warp collectives
    counter_records: list[tuple[int, ...]] = field(default_factory=list)  # per counter: records per type
    counter_block: list[int] = field(default_factory=list)  # per counter: its block site (-1: a guarded instr)
    block_at: dict[tuple[str, int], Site] = field(default_factory=dict)
    memory_at: dict[tuple[str, int, int], Site] = field(default_factory=dict)
    branch_at: dict[tuple[str, int], Site] = field(default_factory=dict)
    barrier_at: dict[tuple[str, int], Site] = field(default_factory=dict)
    own_counter_at: dict[tuple[str, int], int] = field(default_factory=dict)  # guarded barrier -> counter
    # per block site: the (function, stmt) of its instructions, for per-line counts
    block_instrs: list[list[ir.Instr]] = field(default_factory=list)
    has_barriers: bool = False  # the kernel has CTA barriers: records carry a barrier epoch

    @property
    def ncounters(self) -> int:
        return len(self.counter_records)


def memory_accesses(ins: ir.Instr, kparams: set[str]) -> list[tuple[str, int, int]]:
    """(space, bytes, kind) of each access the memory rules probe for this instruction."""
    from ptxjit.isa.effects import space_of, vector_length

    op = ins.opcode
    if op in ("ld", "ldu", "st"):
        space = space_of(ins)
        ts = ins.types()
        addr = ins.operands[0 if op == "st" else 1] if len(ins.operands) > 1 else None
        if space == "param" or not ts or (isinstance(addr, ir.Addr) and isinstance(addr.base, ir.Sym)
                                          and addr.base.name in kparams):
            return []
        return [(space, type_size(ts[-1]) * vector_length(ins), KIND_STORE if op == "st" else KIND_LOAD)]
    if op in ("atom", "red"):
        ts = ins.types()
        n = next((int(m[1:]) for m in ins.mods if m in ("v2", "v4", "v8")), 1)
        return [(space_of(ins), type_size(ts[-1]) * n if ts else 0, KIND_ATOMIC)]
    if op == "cp" and ins.mods[:1] == ("async",) and ins.operands and not any(
            m in ins.mods for m in ("commit_group", "wait_group", "wait_all", "bulk")):
        size = ins.operands[2].value if len(ins.operands) > 2 and isinstance(ins.operands[2], ir.Imm) else 0
        return [("global", size, KIND_LOAD), ("shared", size, KIND_STORE)]
    return tensor_accesses(ins)


def tensor_accesses(ins: ir.Instr) -> list[tuple[str, int, int]]:
    """(space, bytes, kind) of the probed accesses of matrix moves and bulk copies (ptxjit check's
    racecheck/initcheck): ldmatrix/stmatrix, each lane's own 16-byte row (lanes below 8 x matrices probe
    it); cp.async.bulk (not .tensor) with an immediate size, its source (part 0) and destination (part 1)
    from the issuing thread; wmma.load/store, every fragment element of the lane.  A bulk copy of a
    register size has no site (the record's size is static)."""
    op = ins.opcode
    if op in ("ldmatrix", "stmatrix"):
        space = "shared" if ins.has("shared") or ins.has("shared::cta") else ""
        return [(space, 16, KIND_LOAD if op == "ldmatrix" else KIND_STORE)]
    if op == "cp" and ins.mods[:2] == ("async", "bulk") and len(ins.mods) > 3 and len(ins.operands) > 2 \
            and isinstance(ins.operands[2], ir.Imm) and not ins.has("tensor", "prefetch"):
        def sp(m: str) -> str:
            return "global" if m == "global" else "shared"
        size = int(ins.operands[2].value)
        return [(sp(ins.mods[3]), size, KIND_LOAD), (sp(ins.mods[2]), size, KIND_STORE)]
    if op == "wmma" and ins.has("load", "store"):  # each lane's fragment elements, one site each
        from ptxjit.lower.rules.wmma import wmma_elements

        got = wmma_elements(ins)
        if got is not None:
            space, esize, n = got
            return [(space, esize, KIND_LOAD if ins.has("load") else KIND_STORE)] * n
    return []


def is_branch(ins: ir.Instr) -> bool:
    """A conditional branch: its outcome is recorded ("branches")."""
    return ins.opcode == "bra" and ins.guard is not None


def barrier_kind(ins: ir.Instr) -> int | None:
    """KIND_CTA / KIND_WARP for a barrier or warp collective ("barriers" records), else None."""
    if ins.opcode in ("bar", "barrier"):
        return KIND_WARP if ins.has("warp") else KIND_CTA
    return KIND_WARP if ins.opcode in WARP_COLLECTIVES else None


def is_cta_barrier(ins: ir.Instr) -> bool:
    """A barrier that suspends the thread for the whole CTA (bar.sync/barrier.sync/bar.red): the
    barrier epoch counts these."""
    return ins.opcode in ("bar", "barrier") and not ins.has("warp") and not ins.has("arrive")


def _source(ins: ir.Instr) -> str:
    return getattr(ins.pos, "source", "") or ""


def build_plan(kernel: ir.Function, module: ir.Module, records: tuple[str, ...]) -> Plan:
    """The counting pass over the kernel as lowered and the module's device functions (see module doc)."""
    from ptxjit.passes.dataflow import build_cfg

    want = [r in records for r in RECORD_TYPES]
    plan = Plan()
    kparams = {p.name for p in kernel.params}
    funcs = [kernel] + sorted((f for f in module.functions.values() if f.body is not None and not f.is_entry),
                              key=lambda f: f.name)
    for fn in funcs:
        body = fn.body or []
        kp = kparams if fn is kernel else set()
        cfg, _ = build_cfg(fn)
        for blk in cfg:
            stmts = [(i, body[i]) for i in range(blk.start, blk.end) if isinstance(body[i], ir.Instr)]
            if not stmts:
                continue
            first_i, first = stmts[0]
            shown = next((s for _, s in stmts if s.opcode not in MARKERS), first)
            bid, counter = len(plan.blocks), plan.ncounters
            bsite = Site(bid, T_BLOCKS, fn.name, first_i, 0, str_pos(shown), shown.pos.line, _source(shown),
                         shown.text, bid, counter)
            plan.blocks.append(bsite)
            plan.block_at[(fn.name, first_i)] = bsite
            plan.block_instrs.append([s for _, s in stmts if s.opcode not in MARKERS])
            plan.counter_records.append((0,) * NTYPES)
            plan.counter_block.append(bid)
            in_block = [1 if want[T_BLOCKS] else 0, 0, 0, 0]
            for i, ins in stmts:
                if fn is kernel and is_cta_barrier(ins):
                    plan.has_barriers = True
                if want[T_BRANCHES] and is_branch(ins):  # evaluated whenever the block runs
                    site = _site(plan.branches, T_BRANCHES, fn, i, ins, bid, counter)
                    plan.branch_at[(fn.name, i)] = site
                    in_block[T_BRANCHES] += 1
                accesses = memory_accesses(ins, kp) if want[T_MEMORY] else []
                bkind = barrier_kind(ins) if want[T_BARRIERS] else None
                if not accesses and bkind is None:
                    continue
                own = counter
                if ins.guard is not None:  # runs when its guard holds: a counter of its own
                    own = plan.ncounters
                    plan.counter_records.append((0, len(accesses), 0, int(bkind is not None)))
                    plan.counter_block.append(-1)
                    if bkind is not None:
                        plan.own_counter_at[(fn.name, i)] = own
                else:
                    in_block[T_MEMORY] += len(accesses)
                    in_block[T_BARRIERS] += int(bkind is not None)
                for part, (space, size, kind) in enumerate(accesses):
                    site = _site(plan.memory, T_MEMORY, fn, i, ins, bid, own, part, space, size, kind)
                    plan.memory_at[(fn.name, i, part)] = site
                if bkind is not None:
                    plan.barrier_at[(fn.name, i)] = _site(plan.barriers, T_BARRIERS, fn, i, ins, bid, own,
                                                          kind=bkind)
            plan.counter_records[counter] = tuple(in_block)
    # a record's site field is 16 bits; a branch record's holds 2 x branch + taken
    for what, n, limit in (("basic blocks", len(plan.blocks), SITE_LIMIT),
                           ("memory accesses", len(plan.memory), SITE_LIMIT),
                           ("conditional branches", len(plan.branches), SITE_LIMIT // 2),
                           ("barriers", len(plan.barriers), SITE_LIMIT)):
        if n > limit:
            raise ValueError(f"kernel '{kernel.name}' has {n} {what}: tracing supports at most {limit}")
    return plan


_LOWERED = PerObject()  # kernel -> {block: its function as lowered for that block}


def lowered_kernel(kernel, block: tuple[int, int, int] | None) -> ir.Function:
    """`kernel`'s function (a ptxjit Kernel's) as it is lowered for `block` (None: the generic translation),
    which probe plans describe (cached on the kernel)."""
    from ptxjit.lower.module import ModuleCodegen

    cache = _LOWERED.of(kernel)
    fn = cache.get(block)
    if fn is None:
        mod = kernel.module
        fn = cache[block] = ModuleCodegen(mod.ir, kernel.fn, mod._glay, block, instrumented=True).kernel
    return fn


def _site(sites: list[Site], type_: int, fn: ir.Function, stmt: int, ins: ir.Instr, block: int, counter: int,
          part: int = 0, space: str = "", size: int = 0, kind: int = 0) -> Site:
    site = Site(len(sites), type_, fn.name, stmt, part, str_pos(ins), ins.pos.line, _source(ins), ins.text, block,
                counter, space, size, kind)
    sites.append(site)
    return site


def str_pos(ins: ir.Instr) -> str:
    p = ins.pos
    return f"{p.file}:{p.line}:{p.col}"


@dataclass
class ProbeLaunch:
    """What Kernel.__call__(probes=...) takes: the translation's probe set and this launch's table."""
    spec: object  # instrument/emit.py ProbeSpec, or another object with its protocol (ptxjit/checking's screens)
    table: object  # numpy int64 array (instrument/buffers.py)
