"""`ptxjit.check`: one launch under compute-sanitizer's tools, from ptxjit's trace records.

    reports = ptxjit.check(kernel, grid, block, args, shared_mem=0, tools=("memcheck", "racecheck"))

memcheck alone on a launch whose accesses are all provably aligned (align.py: the common case) is one
plain bounds-checked launch, about a plain launch's cost.  racecheck first screens the launch with shadow
memory in the kernel's code (shadow.py: one instrumented launch); only a launch with possible races is
traced and analysed exactly.  Otherwise the launch is traced once
(ptxjit.trace: a counting run on a snapshot of the arrays, then the traced run), with the records the
tools need ("memory"; "barriers" for synccheck, and for racecheck's warp epochs).  The arrays end as one
launch leaves them.  A launch that faults (an out-of-bounds access) or deadlocks cannot be traced to its
end: its counting run stopped, the arrays were restored, and a plain launch then leaves them as one
failing launch does; the failure is the report.
"""

from __future__ import annotations

from ptxjit.checking.report import TOOLS, Report
from ptxjit.errors import KernelDeadlock, KernelFault


def tool_list(tools) -> tuple[str, ...]:
    if isinstance(tools, str):
        tools = tuple(t for t in tools.replace(" ", "").split(",") if t)
    got = tuple(dict.fromkeys(tools))
    bad = [t for t in got if t not in TOOLS]
    if bad or not got:
        raise ValueError(f"tools must be a non-empty subset of {TOOLS}, got {tools!r}")
    return got


def _plain_suffices(kernel, tools: tuple[str, ...], args) -> bool:
    """memcheck alone on a launch whose every access is provably aligned (align.py): the bounds checks
    find the rest.  synccheck alone on a kernel without barriers or warp collectives: nothing to check."""
    from ptxjit.instrument.trace import kernel_plan

    if tools == ("memcheck",):
        from ptxjit.checking.align import proven_aligned

        if _uses_heap(kernel):  # a trace runs the kernel twice: device malloc would allocate twice
            return True

        return proven_aligned(kernel, kernel_plan(kernel, None, ("memory",)), args)
    if tools == ("synccheck",):
        return not kernel_plan(kernel, None, ("barriers",)).barriers
    return False


def _uses_heap(kernel) -> bool:
    """Does the kernel's module declare device malloc or free (runtime/heap.py)?  Its launches change
    the device heap, which a trace's counting run and snapshot cannot undo: memcheck checks them with
    one bounds-checked launch (misaligned accesses of such kernels go unreported)."""
    fns = kernel.module.ir.functions
    return any(n in fns and fns[n].body is None for n in ("malloc", "free"))


# instructions whose memory accesses the probes do not see yet (instrument/probes.py memory_accesses and
# tensor_accesses probe ld/st/atom/red, cp.async, ldmatrix/stmatrix and cp.async.bulk of an immediate
# size): racecheck and initcheck would judge such a kernel on part of its accesses
_UNTRACED = ("wgmma", "tensormap")  # and wmma.load/store of forms tensor_accesses does not describe
# ... and for racecheck also mbarrier: the order its waits give (a bulk copy's data, read once its
# mbarrier completes) is not modelled -- initcheck needs no order between threads of one epoch


def _untraced(kernel, tool: str = "initcheck") -> str | None:
    """The first instruction of kernel (or its module's device functions) whose accesses are not traced for
    tool.  The module's other kernels do not count."""
    from ptxjit.instrument.probes import tensor_accesses

    fns = [kernel.fn] + [f for f in kernel.module.ir.functions.values() if not f.is_entry and f.body is not None]
    for fn in fns:
        for ins in fn.instructions:
            copy = ins.opcode == "cp" and "prefetch" not in ins.mods and (
                "reduce" in ins.mods or "tensor" in ins.mods  # a bulk copy (not a commit or wait): its size
                or "bulk" in ins.mods and len(ins.operands) > 2 and not tensor_accesses(ins))
            wmma = ins.opcode == "wmma" and ins.has("load", "store") and not tensor_accesses(ins)
            if ins.opcode in _UNTRACED or copy or wmma or ins.opcode == "mbarrier" and tool == "racecheck":
                return f"'{ins.text}' at {ins.pos}"
    return None


def _drop_untraced_tools(kernel, tools: tuple[str, ...]) -> tuple[str, ...]:
    import warnings

    from ptxjit.errors import PtxjitWarning

    blind = {t: w for t in tools if t in ("racecheck", "initcheck") and (w := _untraced(kernel, t)) is not None}
    if not blind:
        return tools
    why = {}  # reason -> the tools it stops
    for t, where in blind.items():
        what = "the order the waits of" if where.startswith("'mbarrier") else "the memory accesses of"
        why.setdefault(f"{what} {where}", []).append(t)
    warnings.warn(f"ptxjit check: kernel '{kernel.name}': " + "; ".join(
        f"{' and '.join(ts)} skipped -- {w} are not traced yet" for w, ts in why.items())
        + ", and judging the kernel on the rest would give wrong reports", PtxjitWarning, stacklevel=3)
    return tuple(t for t in tools if t not in blind)


def _initcheck_vacuous(kernel, block, args) -> bool:
    """initcheck has nothing to judge: no shared, local or generic access (those may read bytes nobody
    wrote) and no argument that is a tracked uninitialized buffer (its global reads; ptxjit.empty).  Then
    its trace is skipped: the launch costs what the other tools need."""
    from ptxjit.instrument.trace import kernel_plan

    if _uses_heap(kernel):  # device malloc'd memory starts uninitialized
        return False
    if _tracked_args(args):
        return False
    plan = kernel_plan(kernel, block, ("memory",))
    return not any(s.space in ("shared", "local", "") for s in plan.memory)


def _tracked_args(args) -> bool:
    """Is an argument a tracked uninitialized buffer (ptxjit.empty, track_uninitialized)?"""
    from ptxjit.checking.initcheck import tracked_mask

    return any(tracked_mask(a) is not None or getattr(a, "uninitialized", False) for a in args)


def _screen_suffices(kernel, tools: tuple[str, ...], args) -> bool:
    """racecheck's shadow-memory screen (shadow.py) decides alone when it finds no hazard and the other
    tools need no records: memcheck on provably aligned accesses (the screen's run is bounds-checked)."""
    rest = tuple(t for t in tools if t != "racecheck")
    return not rest or rest == ("memcheck",) and _plain_suffices(kernel, rest, args)


def _records(kernel, block, tools: tuple[str, ...]) -> tuple[str, ...]:
    """The record types the tools need: "memory" for memcheck, racecheck, initcheck; "barriers" for
    synccheck, and for racecheck when the kernel has warp barriers (its warp epochs).  Fewer types, a
    cheaper trace."""
    from ptxjit.instrument.probes import KIND_WARP
    from ptxjit.instrument.trace import kernel_plan

    need = set()
    if {"memcheck", "racecheck", "initcheck", "synccheck"} & set(tools):
        need.add("memory")  # synccheck: whether threads that skipped a barrier went on past it
    if "synccheck" in tools:
        need.add("barriers")
    elif "racecheck" in tools:
        plan = kernel_plan(kernel, None, ("barriers",))
        fns = kernel.module.ir.functions
        if any(s.kind == KIND_WARP and fns[s.function].body[s.stmt].opcode in ("bar", "barrier")
               for s in plan.barriers):
            need.add("barriers")
    return tuple(r for r in ("memory", "barriers") if r in need)


def check(kernel, grid, block, args=(), shared_mem: int = 0, tools=("memcheck",), *,
          timeout: float | None = None, leak_check: bool = False) -> list[Report]:
    """`_check`'s reports; with leak_check and memcheck, then one "leak" report per live block of the
    device heap (device malloc'd memory not freed: compute-sanitizer's --leak-check full)."""
    out = _check(kernel, grid, block, args, shared_mem, tools, timeout=timeout)
    if leak_check and "memcheck" in tool_list(tools):
        from ptxjit.checking.memcheck import leak_reports

        out += leak_reports()
    return out


def _check(kernel, grid, block, args=(), shared_mem: int = 0, tools=("memcheck",), *,
           timeout: float | None = None) -> list[Report]:
    """Run `kernel(grid, block, args, shared_mem)` once under the given tools ("memcheck", "racecheck",
    "synccheck", "initcheck") and return their reports (ptxjit.checking.Report), memcheck's first, each
    tool's in PTX order.  An empty list: nothing found."""
    from ptxjit.checking.memcheck import fault_report, misaligned
    from ptxjit.checking.records import Launch
    from ptxjit.checking.synccheck import deadlock_report
    from ptxjit.instrument.trace import trace
    from ptxjit.runtime.args import dims

    tools = tool_list(tools)
    g, b = dims(grid, "grid"), dims(block, "block")
    watched = "initcheck" in tools
    tools = _drop_untraced_tools(kernel, tools) or ("memcheck",)  # memcheck: the launch's fault, if any
    if watched and "initcheck" not in tools:  # its writes go unseen: no later read is to be reported for them
        from ptxjit.checking.initcheck import assume_written

        assume_written()
    def failed(err: BaseException) -> list[Report]:
        r = fault_report(kernel, err, b) if isinstance(err, KernelFault) else deadlock_report(kernel, err, b)
        r.extra["error"] = err  # PTXJIT_CHECK re-raises it: the program sees the launch fail as it would
        return [r]

    if "initcheck" in tools and _initcheck_vacuous(kernel, b, tuple(args)):
        tools = tuple(t for t in tools if t != "initcheck")
    if not tools or _plain_suffices(kernel, tools, args):  # nothing records could add: one bounds-checked launch
        try:
            kernel(g, b, args, shared_mem, timeout=timeout, checked=True)
        except (KernelFault, KernelDeadlock) as err:
            return failed(err)
        return []
    rest = tuple(t for t in tools if t != "initcheck")
    if "initcheck" in tools and (not rest or rest == ("memcheck",) and _plain_suffices(kernel, rest, args)) \
            and not _tracked_args(args):
        from ptxjit.checking.initscreen import init_screen  # shared memory's byte map (initscreen.py)
        from ptxjit.instrument.buffers import Snapshot, array_arguments

        snap = Snapshot(array_arguments(args, kernel.module.globals, [p.may_write for p in kernel._access.params],
                                        bool(kernel.module._glay.offsets)))
        try:
            hazards = init_screen(kernel, g, b, tuple(args), shared_mem, timeout)
        except (KernelFault, KernelDeadlock) as err:
            return failed(err)
        if hazards == 0:
            return []
        if hazards is not None:
            snap.restore()  # a possible uninitialized read: the exact analysis traces the launch again
    if "racecheck" in tools and _screen_suffices(kernel, tools, args):
        from ptxjit.checking.shadow import screen
        from ptxjit.instrument.buffers import Snapshot, array_arguments

        snap = Snapshot(array_arguments(args, kernel.module.globals, [p.may_write for p in kernel._access.params],
                                        bool(kernel.module._glay.offsets)))
        try:
            hazards = screen(kernel, g, b, tuple(args), shared_mem, timeout)
        except (KernelFault, KernelDeadlock) as err:
            return failed(err)
        if hazards == 0:  # no race (and the bounds-checked run found no fault): nothing to report
            return []
        snap.restore()  # a possible race: the exact analysis traces the launch from its inputs again
    records = _records(kernel, b, tools)
    masks = None
    if "synccheck" in tools:  # collectives with register masks: their values, from a run of their own
        from ptxjit.checking.warpmask import record_masks

        masks = record_masks(kernel, g, b, tuple(args), shared_mem, timeout)
    try:
        t = trace(kernel, g, b, args, shared_mem, records=records, timeout=timeout, checked=True, strict=False)
    except (KernelFault, KernelDeadlock) as first:
        err: BaseException = first
        try:  # the counting run stopped and the arrays were restored: one plain launch, as a launch fails
            kernel(g, b, args, shared_mem, timeout=timeout, checked=True)
        except (KernelFault, KernelDeadlock) as again:
            err = again
        return failed(err)
    L = Launch(kernel, g, b, tuple(args), t)
    out: list[Report] = []
    if "memcheck" in tools:
        out += misaligned(L)
    if "racecheck" in tools:
        from ptxjit.checking.racecheck import racecheck

        out += racecheck(L)
    if "synccheck" in tools:
        from ptxjit.checking.synccheck import synccheck

        out += synccheck(L, masks)
    if "initcheck" in tools:
        from ptxjit.checking.initcheck import initcheck

        out += initcheck(L)
    return out
