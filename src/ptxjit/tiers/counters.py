"""Tier 0's execution counters: per basic block of the kernel as lowered, how many thread
executions a launch made, and from them per conditional branch its taken / not-taken counts and per
loop its mean trip count.

The counts come from the instrumentation layer's counting mode (ptxjit/instrument: the code ptxjit.trace
runs first, with one counter increment per block execution): a *counted launch* is an ordinary launch
of that code (same results; block-specialized O3 code with counters, translated in the background
after tier 1's first build, so the launch that counts pays no translation).  Sampled: the policy
counts a launch only while the profile has fewer than `Policy.counted_launches` counted launches, so
the steady state pays nothing.

Edge counts follow from the block counts by flow conservation (`edges`): a block's count is the sum
of its incoming edges and the sum of its outgoing ones; an unconditional edge carries its block's
count, a branch whose taken or fall-through successor has it as only predecessor is known at once,
and the rest is solved by propagation (a branch left undetermined has no edge counts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RECORDS = ("blocks", "branches", "memory")  # the counting plan: block counters; branch and memory sites


@dataclass(frozen=True)
class Branch:
    """A conditional branch's counts: `function`, `stmt` (its index in the lowered function's body:
    what the lowering's hook matches), `line` (PTX), `taken`/`fallthrough` thread executions,
    `back` (a loop's back edge: its target starts at or before the branch)."""

    function: str
    stmt: int
    line: int
    taken: int
    fallthrough: int
    back: bool

    @property
    def total(self) -> int:
        return self.taken + self.fallthrough


@dataclass(frozen=True)
class Loop:
    """A loop found by its back edge: header PTX line, entries (executions arriving from outside the
    loop) and iterations (executions of the header); `trips` the mean iterations per entry."""

    function: str
    line: int
    entries: int
    iterations: int
    label: str = ""  # the header's label

    @property
    def trips(self) -> float:
        return self.iterations / self.entries if self.entries else 0.0


def plan_of(kernel, block):
    """The counting plan of the kernel lowered for `block` (cached on the kernel, as ptxjit.trace does)."""
    from ptxjit.instrument.trace import kernel_plan

    return kernel_plan(kernel, block, RECORDS)


class Counting:
    """The counting code of a kernel and block shape: block counters (`spec`) and the same with the
    pattern accumulators (`patterns`, instrument/patterns.py), which a counted launch runs on its first
    SAMPLED_CTAS CTAs only (they cost 2-150x a plain CTA: per-thread updates on every access)."""

    def __init__(self, plan) -> None:
        from ptxjit.instrument.emit import ProbeSpec

        self.plan = plan
        self.spec = ProbeSpec(plan, "count", RECORDS)
        self.patterns = ProbeSpec(plan, "count", RECORDS, patterns=True)
        self.specs = (self.spec, self.patterns)


def run_counted(kernel, counting: Counting, g, b, args, shared_mem: int, timeout, checked: bool, fast: tuple):
    """Run the launch on the counting code (an ordinary launch: the same results), its first CTAs
    (patterns.sampled_ctas: 8, fewer for kernels with very many accesses) on the code with patterns, in
    batches (tiers/runner.py); return the thread executions per block site of the plan and the pattern
    counts of the sampled CTAs (None: none sampled).  `fast`: the launch's (values, patches, ranges) as
    Kernel.__call__ packed them."""
    from ptxjit.instrument.buffers import CountBuffers
    from ptxjit.instrument.patterns import sampled_ctas, summarize
    from ptxjit.runtime.launch import worker_count
    from ptxjit.tiers.runner import BatchLog, launch_context, run_batched

    values, patches, ranges = fast
    m, plan = kernel.module, counting.plan
    t_count = m.translation(kernel.fn, b, checked, counting.spec)
    nworkers = worker_count()
    sampled = sampled_ctas(plan, nworkers, b[0] * b[1] * b[2])  # (0: too many sites for the budget)
    t_pat = m.translation(kernel.fn, b, checked, counting.patterns) if sampled else None
    cb = CountBuffers(plan, nworkers, g[0] * g[1] * g[2], b[0] * b[1] * b[2], patterns=bool(sampled))
    gb = m.globals
    with launch_context(kernel, args, gb):
        run_batched(t_count, lambda _done: (1, t_count), kernel.name, g, b, kernel._plans[checked], values, patches,
                    gb.__array_interface__["data"][0], gb.nbytes, shared_mem, timeout, (args, gb), BatchLog(), 0,
                    ranges, kernel._range_names, args, probe_table=cb.table,
                    first=(sampled, 1, t_pat) if sampled else None)
    counts = cb.counts()
    pc = summarize(cb.patterns, b) if cb.patterns is not None else None
    return np.array([counts[s.counter] for s in plan.blocks], np.int64), pc


@dataclass(frozen=True)
class Uniformity:
    """A conditional branch in the sampled CTAs of counted launches: warps (and CTAs) that executed it,
    and of those the ones where every thread went the same way (instrument/patterns.py)."""

    warps: int
    warps_uniform: int
    ctas: int
    ctas_uniform: int


@dataclass(frozen=True)
class MemoryPattern:
    """A memory access in the sampled CTAs of counted launches (instrument/patterns.py): its alignment
    (largest power of two dividing every address), warps per x-stride class and the most common
    x-stride (bytes between neighbouring threads), and 32-byte sectors per warp request."""

    function: str
    stmt: int
    line: int
    source: str  # the CUDA line from .loc ("kernel.cu:12:5"), or ""
    instruction: str
    space: str
    accesses: int
    alignment: int
    requests: int
    classes: tuple[tuple[str, int], ...]
    stride: int | None
    sectors_per_request: float | None


def branch_uniformity(plan, pc) -> dict[tuple[str, int], Uniformity]:
    """(function, statement) -> Uniformity of each branch site that ran in a sampled CTA."""
    if pc is None:
        return {}
    return {(s.function, s.stmt): Uniformity(int(pc.warps[i]), int(pc.warps_uniform[i]), int(pc.ctas[i]),
                                             int(pc.ctas_uniform[i]))
            for i, s in enumerate(plan.branches) if pc.warps[i]}


def memory_patterns(plan, pc) -> list[MemoryPattern]:
    """The MemoryPattern of each memory site that ran in a sampled CTA."""
    from ptxjit.instrument.patterns import STRIDE_CLASSES

    if pc is None:
        return []
    out = []
    for i, s in enumerate(plan.memory):
        if not pc.accesses[i]:
            continue
        strides = pc.strides[i]
        out.append(MemoryPattern(
            s.function, s.stmt, s.line, s.source, s.text, s.space or "generic", int(pc.accesses[i]), pc.alignment(i),
            int(pc.requests[i]), tuple((c, int(n)) for c, n in zip(STRIDE_CLASSES, pc.classes[i], strict=True) if n),
            max(strides, key=strides.get) if strides else None,
            round(int(pc.sectors[i]) / int(pc.sector_requests[i]), 3) if pc.sector_requests[i] else None))
    return out


def _functions(kernel, block) -> dict:
    """The functions the plan's sites index: the kernel as lowered for `block` (the plan was built from
    it) and the module's device functions."""
    from ptxjit.instrument.probes import lowered_kernel

    fns = {f.name: f for f in kernel.module.ir.functions.values() if f.body is not None}
    fns[kernel.name] = lowered_kernel(kernel, block)
    return fns


def edges(kernel, block, plan, block_counts: np.ndarray, threads: int) -> tuple[list[Branch], list[Loop]]:
    """Per conditional branch its edge counts and per loop (back edge) its trip counts, from the block
    counts of counted launches of the kernel lowered for `block` (`threads`: threads those launches
    started, the kernel's entry count)."""
    from ptxjit.frontend import ir
    from ptxjit.passes.dataflow import build_cfg

    fns = _functions(kernel, block)
    by_fn: dict[str, dict[int, int]] = {}
    for site, n in zip(plan.blocks, block_counts, strict=True):
        by_fn.setdefault(site.function, {})[site.stmt] = int(n)
    branches: list[Branch] = []
    loops: list[Loop] = []
    for name, counts in by_fn.items():
        fn = fns.get(name)
        if fn is None:
            continue
        body = fn.body or []
        cfg, _ = build_cfg(fn)
        cnt: list[int | None] = []
        for blk in cfg:
            first = next((i for i in range(blk.start, blk.end) if isinstance(body[i], ir.Instr)), None)
            cnt.append(counts.get(first) if first is not None else None)
        sol = _solve(cfg, cnt, threads if name == kernel.name else None)
        for bi, blk in enumerate(cfg):
            last = body[blk.end - 1] if blk.end > blk.start else None
            if not (isinstance(last, ir.Instr) and last.opcode == "bra" and last.guard is not None
                    and len(blk.succs) == 2):
                continue
            t, f = sol.get((bi, 0)), sol.get((bi, 1))
            if t is None or f is None or t < 0 or f < 0:
                continue
            back = cfg[blk.succs[0]].start <= blk.start
            branches.append(Branch(name, blk.end - 1, last.pos.line, t, f, back))
            head = cnt[blk.succs[0]]
            if back and head is not None:
                hb = cfg[blk.succs[0]]
                label = body[hb.start].name if isinstance(body[hb.start], ir.Label) else ""
                loops.append(Loop(name, _line_at(body, hb), head - t, head, label))
    return branches, loops


def _line_at(body, blk) -> int:
    from ptxjit.frontend import ir

    return next((s.pos.line for s in body[blk.start:blk.end] if isinstance(s, ir.Instr)), 0)


def _solve(cfg, cnt: list[int | None], entry: int | None) -> dict[tuple[int, int], int]:
    """Edge counts (block, successor position) -> executions, by flow conservation (module doc)."""
    preds: dict[int, list[tuple[int, int]]] = {}
    for bi, blk in enumerate(cfg):
        for k, s in enumerate(blk.succs):
            preds.setdefault(s, []).append((bi, k))
    known: dict[tuple[int, int], int] = {}
    for bi, blk in enumerate(cfg):
        if len(blk.succs) == 1 and cnt[bi] is not None:
            known[(bi, 0)] = cnt[bi]
    changed = True
    while changed:
        changed = False
        for bi, blk in enumerate(cfg):  # outgoing: a block's count is the sum of its out-edges
            if cnt[bi] is None or len(blk.succs) != 2:
                continue
            if blk.succs[0] == blk.succs[1]:
                continue
            have = [known.get((bi, k)) for k in (0, 1)]
            if have.count(None) == 1:
                k = have.index(None)
                known[(bi, k)] = cnt[bi] - have[1 - k]
                changed = True
        for s, ins in preds.items():  # incoming: ... and of its in-edges (the entry: plus the thread starts)
            if cnt[s] is None:
                continue
            extra = entry if s == 0 else 0
            if extra is None:
                continue
            unknown = [e for e in ins if e not in known]
            if len(unknown) == 1:
                known[unknown[0]] = cnt[s] - extra - sum(known[e] for e in ins if e in known)
                changed = True
    return known


WEIGHT_SCALE = 1000  # branch weights as parts per thousand: a stable cache key for a stable bias


def weights(branches: list[Branch]) -> tuple[tuple[str, int, int, int], ...]:
    """Branch weights (function, stmt, taken, fall-through) for the branches that ran, quantized to
    parts per thousand (at least 1 each: a branch never seen taken may still be)."""
    out = []
    for br in branches:
        if br.total <= 0:
            continue
        t = max(1, round(WEIGHT_SCALE * br.taken / br.total))
        f = max(1, round(WEIGHT_SCALE * br.fallthrough / br.total))
        out.append((br.function, br.stmt, t, f))
    return tuple(sorted(out))


def unroll_factors(kernel, block, loops: list[Loop], min_trips: float, factor: int) -> tuple[tuple[str, int], ...]:
    """Lockstep loops of the kernel (passes/lockstep.py: one iteration per scheduler round) that
    ran at least `min_trips` iterations per entry on average, to unroll `factor` times
    (passes/unroll.py): (header label, factor), sorted."""
    from ptxjit.passes.unroll import lockstep_heads

    if factor < 2 or block is None:
        return ()
    heads = lockstep_heads(_functions(kernel, block)[kernel.name])
    return tuple(sorted((lp.label, factor) for lp in loops
                        if lp.function == kernel.name and lp.label in heads and lp.trips >= min_trips))


def moved(basis: tuple[tuple, tuple], now: tuple[tuple, tuple], branches: list[Branch], loops: list[Loop],
          threshold: float) -> str | None:
    """Why a recount's profile differs from the one tier 1 was built from (`basis` and `now`: their
    (weights, unroll) as `weights` and `unroll_factors` give them), or None while it holds: a branch
    that ran in both and whose taken fraction moved by more than `threshold`, or a change in the
    loops to unroll (a loop's mean trips crossed the policy's line)."""
    old = {(f, i): t / (t + n) for f, i, t, n in basis[0]}
    lines = {(br.function, br.stmt): br.line for br in branches}
    for f, i, t, n in now[0]:
        p_old = old.get((f, i))
        if p_old is None:
            continue
        p_new = t / (t + n)
        if abs(p_new - p_old) > threshold:
            return (f"the branch on line {lines.get((f, i), '?')} moved from {p_old:.0%} to {p_new:.0%} taken "
                    "(recount of the block counters)")
    if set(basis[1]) != set(now[1]):
        trips = {lp.label: lp.trips for lp in loops}
        changed = sorted(set(basis[1]) ^ set(now[1]))
        return ("loops to unroll changed: " + ", ".join(f"{label} ({trips.get(label, 0):.1f} trips)"
                                                      for label, _ in changed) + " (recount of the block counters)")
    return None
