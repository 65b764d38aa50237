"""synccheck's warp collectives whose member mask is a register (a kernel parameter, a ballot,
`__activemask()`): the mask's value at run time against the lanes that arrive at the same collective.

A trace's barrier records say which lanes execute a collective, not the mask each passed, so such a
kernel is run once more with a probe of its own (the instrumentation protocol of instrument/probes.py,
as shadow.py's screen): at each execution of a collective whose mask is not a constant, the thread
appends (CTA, tid, site, mask) to one launch-wide buffer through an atomic cursor.  A CTA runs on one
worker from start to end, so a thread's records are in its program order; the k-th execution of a site
by each lane of a warp is one collective instance, as for the constant masks (synccheck.warp_masks).
Each instance is then judged: every lane a member's mask names must arrive (unless it does not exist:
past the block's end), and every lane that arrives must be named by its own mask.

The run happens on a snapshot of the arrays, which are restored before the launch is traced: the
arrays end as one launch leaves them.  A launch that faults or deadlocks here yields no records; its
trace then reports the failure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from llvmlite import ir as ll

from ptxjit.checking.records import WARP, collective_instances
from ptxjit.checking.report import Report
from ptxjit.checking.shadow import worker_state_row
from ptxjit.instrument.probes import KIND_WARP, Plan, Site
from ptxjit.lower import abi
from ptxjit.lower.types import I32, I64, const_int

I64P = I64.as_pointer()
COLLECTIVES = ("shfl", "vote", "match", "redux", "bar", "barrier")  # with .sync: a member mask operand
# per-worker state (int64 slots; STRIDE apart so that workers never share a cache line)
S_CTA, S_BUF, S_CAP, S_CURSOR = range(4)
STRIDE = 8


def runtime_sites(kernel, plan: Plan) -> frozenset[int]:
    """The barrier sites (idents) of warp collectives with a member mask that is not a constant."""
    from ptxjit.checking.synccheck import constant_value

    fns = kernel.module.ir.functions
    out = set()
    for s in plan.barriers:
        fn = fns.get(s.function)
        if fn is None or s.kind != KIND_WARP:
            continue
        ins = fn.body[s.stmt]
        if ins.opcode in COLLECTIVES and ins.has("sync") and ins.operands and \
                constant_value(fn, ins.operands[-1]) is None:
            out.add(s.ident)
    return frozenset(out)


def _any_register_mask(kernel) -> bool:
    """Does the kernel (or a device function of its module) have a collective with a register mask?"""
    from ptxjit.checking.synccheck import constant_value

    fns = [kernel.fn] + [f for f in kernel.module.ir.functions.values() if not f.is_entry and f.body is not None]
    return any(ins.opcode in COLLECTIVES and ins.has("sync") and ins.operands and (
        ins.opcode not in ("bar", "barrier") or ins.has("warp")) and constant_value(fn, ins.operands[-1]) is None
        for fn in fns for ins in fn.instructions)


class MaskSpec:
    """The probe set of the mask run (the protocol of instrument/emit.py ProbeSpec)."""

    VERSION = 1

    def __init__(self, plan: Plan, sites: frozenset[int]) -> None:
        self.plan = plan
        self.sites = sites
        self.generic = False
        self.key = f"warp-masks:v{self.VERSION}:" + ",".join(map(str, sorted(sites)))

    def emitter(self, lw) -> MaskEmitter:
        return MaskEmitter(self, lw)

    def worker_prologue(self, b: ll.IRBuilder, L: ll.Value, W: ll.Value) -> None:
        worker_state_row(b, L, W, 0, STRIDE)

    def before_cta(self, b: ll.IRBuilder, L: ll.Value, W: ll.Value, c: ll.Value, nthreads: ll.Value) -> None:
        ws = b.inttoptr(b.load(b.gep(W, [const_int(I32, abi.W_PROBE)])), I64P)
        b.store(c, b.gep(ws, [const_int(I32, S_CTA)]))

    def after_cta(self, b: ll.IRBuilder, L: ll.Value, W: ll.Value, c: ll.Value) -> None:
        pass


class MaskEmitter:
    """Per lowered function: a record at each execution of a collective with a register mask."""

    def __init__(self, spec: MaskSpec, lw) -> None:
        self.spec = spec
        self.lw = lw
        self.fname = lw.fn.name
        self.stmt = {id(st): i for i, st in enumerate(lw.fn.body or [])}

    def enter(self, ins) -> None:
        pass

    def memory(self, ins, p: ll.Value, part: int) -> None:
        pass

    def after(self, ins) -> None:
        pass

    def finish(self) -> None:
        pass

    def execute(self, ins) -> None:
        """Before the collective runs (its guard holds): the mask operand's value as this thread passes it."""
        site = self.spec.plan.barrier_at.get((self.fname, self.stmt.get(id(ins), -1)))
        if site is None or site.ident not in self.spec.sites:
            return
        lw, b = self.lw, self.lw.b
        mask = b.zext(lw.read(ins.operands[-1], "b32"), I64)
        raw = lw.entry_record_ptr(abi.W_PROBE)
        ws = lw.once_in_entry((id(self), "ws"), lambda b: b.bitcast(raw, I64P))

        def slot(k: int) -> ll.Value:
            return lw.once_in_entry((id(self), "slot", k), lambda b: lw.internal_access(
                b.load(b.gep(ws, [const_int(I32, k)]), align=8)))

        cursor = lw.once_in_entry((id(self), "cursor"), lambda b: b.inttoptr(slot(S_CURSOR), I64P))
        buf = lw.once_in_entry((id(self), "buf"), lambda b: b.inttoptr(slot(S_BUF), I64P))
        i = b.atomic_rmw("add", cursor, const_int(I64, 1), "monotonic")
        # past the capacity: the scratch row at the end (the run is repeated with the count the cursor says)
        cap = slot(S_CAP)
        i = b.select(b.icmp_unsigned("<", i, cap), i, cap)
        word = b.or_(mask, b.shl(b.zext(lw.tlin, I64), const_int(I64, 32)))
        word = b.or_(word, const_int(I64, site.ident << 48))
        row = b.mul(i, const_int(I64, 2))
        lw.internal_access(b.store(slot(S_CTA), b.gep(buf, [row])))
        lw.internal_access(b.store(word, b.gep(buf, [b.add(row, const_int(I64, 1))])))


@dataclass
class MaskRecords:
    """The mask run's records, in the order they were appended: CTA, tid, site, mask."""
    plan: Plan
    cta: np.ndarray
    tid: np.ndarray
    site: np.ndarray
    mask: np.ndarray


def record_masks(kernel, grid, block, args, shared_mem: int, timeout: float | None) -> MaskRecords | None:
    """Run the launch with the mask probes (on a snapshot of its arrays, restored afterwards); None when
    the kernel has no collective with a register mask, or the run failed (its trace reports why)."""
    from ptxjit.errors import KernelDeadlock, KernelFault
    from ptxjit.instrument.buffers import Snapshot, array_arguments
    from ptxjit.instrument.probes import ProbeLaunch
    from ptxjit.instrument.trace import kernel_plan
    from ptxjit.runtime.launch import worker_count

    if not _any_register_mask(kernel):  # the common case, without lowering the kernel for a plan
        return None
    plan = kernel_plan(kernel, block, ("barriers",))
    sites = runtime_sites(kernel, plan)
    if not sites:
        return None
    snap = Snapshot(array_arguments(args, kernel.module.globals, [p.may_write for p in kernel._access.params],
                                    bool(kernel.module._glay.offsets)))
    nworkers = worker_count()
    ctas = grid[0] * grid[1] * grid[2]
    cap = max(ctas * block[0] * block[1] * block[2] * 4, 1024)
    try:
        for _ in range(2):  # the second time with the capacity the first run needed
            cursor = np.zeros(1, np.int64)
            buf = np.zeros((cap + 1, 2), np.uint64)  # + the scratch row
            ws = np.zeros((nworkers, STRIDE), np.int64)
            ws[:, S_BUF], ws[:, S_CAP], ws[:, S_CURSOR] = buf.ctypes.data, cap, cursor.ctypes.data
            table = np.array([ws.ctypes.data, 0, 0, 0], np.int64)
            kernel(grid, block, args, shared_mem, timeout=timeout, checked=True,
                   probes=ProbeLaunch(MaskSpec(plan, sites), table))
            n = int(cursor[0])
            if n <= cap:
                break
            snap.restore()
            cap = n
        else:
            return None
    except (KernelFault, KernelDeadlock):
        return None
    finally:
        snap.restore()
    r = buf[:n]
    w = r[:, 1]
    return MaskRecords(plan, r[:, 0].astype(np.int64), ((w >> np.uint64(32)) & np.uint64(0xFFFF)).astype(np.int64),
                       (w >> np.uint64(48)).astype(np.int64), (w & np.uint64(0xFFFFFFFF)).astype(np.int64))


def mask_reports(L, m: MaskRecords) -> list[Report]:
    """One report per collective site whose instances (some) do not match their member masks; its count:
    the bad instances."""
    from ptxjit.checking.synccheck import lane_list

    if not len(m.cta):
        return []
    cta, tid, site, mask = m.cta, m.tid, m.site, m.mask
    # records are in each thread's order already
    warp, lane, g, ng, lanes = collective_instances(cta, tid, site, lambda th: np.argsort(th, kind="stable"))
    exist = (np.left_shift(1, np.minimum(L.nthreads - warp * WARP, WARP)) - 1) & 0xFFFFFFFF
    named = mask & exist
    missing = named & ~lanes[g]  # per record: lanes its mask names that do not arrive
    unnamed = (mask >> lane & 1) == 0  # the lane arrives without naming itself
    gmissing = np.zeros(ng, np.int64)
    np.bitwise_or.at(gmissing, g, missing)
    gextra = np.zeros(ng, np.int64)
    np.bitwise_or.at(gextra, g, np.where(unnamed, np.left_shift(1, lane), 0))
    # the thread a report names: the group's first record that is wrong itself (an unnamed lane, or a
    # lane whose mask names absent lanes)
    wrong = np.flatnonzero(unnamed | (missing != 0))
    first = np.full(ng, -1, np.int64)
    first[g[wrong][::-1]] = wrong[::-1]
    out: dict[int, Report] = {}
    for gi in np.flatnonzero((gmissing | gextra) != 0).tolist():
        i = int(first[gi])
        s = int(site[i])
        if s in out:
            out[s] = replace(out[s], count=out[s].count + 1)
            continue
        sel = np.flatnonzero(g == gi)
        masks = sorted({int(x) for x in mask[sel].tolist()})
        shown = ", ".join(f"{x:#010x}" for x in masks[:3]) + (", ..." if len(masks) > 3 else "")
        miss, extra = int(gmissing[gi]), int(gextra[gi])
        why = f"member mask {shown} (at run time): " + "; ".join(
            x for x in (f"lanes {lane_list(miss)} it names do not execute it" if miss else "",
                        f"lanes {lane_list(extra)} execute it without being named" if extra else "") if x)
        out[s] = _report(L, m.plan.barriers[s], int(cta[i]), int(tid[i]), why)
    return [out[s] for s in sorted(out, key=lambda s: m.plan.barriers[s].line)]


def _report(L, s: Site, cta: int, tid: int, why: str) -> Report:
    w = L.who(cta, tid)
    return Report("warp collective mask", "synccheck", L.name, w["cta"], w["thread"], w["warp"], w["lane"], s.line,
                  L.source(s), None, 0, "", "", None, 1, s.text, L.ptx_file, why)
