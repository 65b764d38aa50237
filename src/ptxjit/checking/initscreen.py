"""initcheck's screen: a byte map of shared memory inside the kernel's code, so that a launch whose
shared reads all find their bytes written costs one instrumented run instead of a trace and its analysis
(racecheck's screen, shadow.py, is the model).

Per worker, one byte per byte of the CTA's shared memory, cleared before each CTA: a store (or an atomic,
a cp.async / bulk copy / stmatrix destination) marks its bytes, a load (or an atomic, an ldmatrix row)
counts a hazard when one of its bytes is not marked yet.  A byte some thread of the CTA wrote earlier in
the run's order is never reported by initcheck's exact analysis (initcheck.py: written in an earlier
barrier epoch, by another thread of the same epoch, or earlier by the reading thread -- a write that runs
first cannot be in a later epoch than the read: that thread passed a barrier the reader had not reached),
so no hazard means nothing to report.  A hazard (possibly a write by another thread of the same epoch
that ran later) sends the launch to the exact analysis.

The screen declines (None) what it cannot judge this way: local or generic-space accesses (a generic
address may reach local memory), tracked uninitialized global buffers, barriers with a thread count or
bar.arrive (their epochs are not the plain barrier order), device malloc.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir as ll

from ptxjit.checking.shadow import worker_state_row
from ptxjit.instrument.probes import KIND_ATOMIC, KIND_LOAD, KIND_STORE, Plan
from ptxjit.lower import abi
from ptxjit.lower.types import I8, I32, I64, PTR, const_int

I64P = I64.as_pointer()
S_MAP, S_BYTES, S_HAZ = range(3)
STRIDE = 8  # int64 slots per worker: workers never share a cache line


def screenable(kernel, plan: Plan) -> bool:
    """Whether the screen can judge the kernel (module doc)."""
    if any(s.space not in ("shared", "global", "const") for s in plan.memory):
        return False
    fns = kernel.module.ir.functions
    if any(n in fns and fns[n].body is None for n in ("malloc", "free")):
        return False
    for fn in fns.values():
        for ins in fn.instructions:
            if ins.opcode in ("bar", "barrier") and (ins.has("arrive", "red") or len(ins.operands) > 1):
                return False
    return True


class InitSpec:
    """The screen's probe set (the protocol of instrument/emit.py ProbeSpec)."""

    VERSION = 1

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.generic = False
        self.key = f"init-screen:v{self.VERSION}"

    def emitter(self, lw) -> InitEmitter:
        return InitEmitter(self, lw)

    def worker_prologue(self, b: ll.IRBuilder, L: ll.Value, W: ll.Value) -> None:
        worker_state_row(b, L, W, 0, STRIDE)

    def before_cta(self, b: ll.IRBuilder, L: ll.Value, W: ll.Value, c: ll.Value, nthreads: ll.Value) -> None:
        """A CTA starts with nothing written in its shared memory."""
        ws = b.inttoptr(b.load(b.gep(W, [const_int(I32, abi.W_PROBE)])), I64P)
        memset = b.module.globals.get("llvm.memset.p0.i64") or ll.Function(
            b.module, ll.FunctionType(ll.VoidType(), [PTR, I8, I64, ll.IntType(1)]), name="llvm.memset.p0.i64")
        p = b.inttoptr(b.load(b.gep(ws, [const_int(I32, S_MAP)])), PTR)
        n = b.load(b.gep(ws, [const_int(I32, S_BYTES)]))
        b.call(memset, [p, const_int(I8, 0), n, const_int(ll.IntType(1), 0)])

    def after_cta(self, b: ll.IRBuilder, L: ll.Value, W: ll.Value, c: ll.Value) -> None:
        pass


class InitEmitter:
    """Per lowered function: the screen's probe at each shared access."""

    def __init__(self, spec: InitSpec, lw) -> None:
        self.plan = spec.plan
        self.lw = lw
        self.fname = lw.fn.name
        self.stmt = {id(st): i for i, st in enumerate(lw.fn.body or [])}

    def enter(self, ins) -> None:
        pass

    def execute(self, ins) -> None:
        pass

    def after(self, ins) -> None:
        pass

    def finish(self) -> None:
        pass

    def memory(self, ins, p: ll.Value, part: int) -> None:
        if ins is None:
            return
        site = self.plan.memory_at.get((self.fname, self.stmt.get(id(ins), -1), part))
        if site is None or site.space != "shared" or site.size <= 0:
            return
        lw, b = self.lw, self.lw.b
        raw = lw.entry_record_ptr(abi.W_PROBE)
        ws = lw.once_in_entry((id(self), "ws"), lambda b: b.bitcast(raw, I64P))
        off = b.sub(b.ptrtoint(p, I64), b.ptrtoint(lw.shared_ptr(), I64))
        b.call(_checker(lw.cg.llmod, site.kind), [ws, off, const_int(I64, site.size)])


def _checker(mod: ll.Module, kind: int) -> ll.Function:
    """void ptxjit.init.<kind>(i64* ws, i64 offset, i64 size): loads and atomics count a hazard at a
    byte not yet marked; stores and atomics mark their bytes."""
    name = f"ptxjit.init.{kind}"
    fn = mod.globals.get(name)
    if fn is not None:
        return fn
    fn = ll.Function(mod, ll.FunctionType(ll.VoidType(), [I64P, I64, I64]), name=name)
    fn.linkage = "internal"
    ws, off, size = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    base = b.inttoptr(b.load(b.gep(ws, [const_int(I32, S_MAP)]), align=8), I8.as_pointer())
    nbytes = b.load(b.gep(ws, [const_int(I32, S_BYTES)]), align=8)
    done = fn.append_basic_block("done")
    head = fn.append_basic_block("byte")
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    j = b.phi(I64)
    j.add_incoming(const_int(I64, 0), pre)
    at = b.add(off, j)
    body = fn.append_basic_block("byte.body")
    b.cbranch(b.and_(b.icmp_unsigned("<", j, size), b.icmp_unsigned("<", at, nbytes)), body, done)
    b.position_at_end(body)
    cell = b.gep(base, [at])
    if kind in (KIND_LOAD, KIND_ATOMIC):
        unset = b.icmp_unsigned("==", b.load(cell), const_int(I8, 0))
        hp = b.gep(ws, [const_int(I32, S_HAZ)])
        b.store(b.add(b.load(hp, align=8), b.zext(unset, I64)), hp, align=8)
    if kind in (KIND_STORE, KIND_ATOMIC):
        b.store(const_int(I8, 1), cell)
    j.add_incoming(b.add(j, const_int(I64, 1)), b.block)
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()
    return fn


def init_screen(kernel, grid, block, args, shared_mem: int, timeout: float | None) -> int | None:
    """Run the launch once with the byte-map probes (bounds-checked); the hazards it counted (0: initcheck
    has nothing to report), or None when the screen cannot judge the kernel and nothing ran."""
    from ptxjit.instrument.probes import ProbeLaunch
    from ptxjit.instrument.trace import kernel_plan
    from ptxjit.lower.layout import shared_layout
    from ptxjit.runtime.launch import worker_count

    plan = kernel_plan(kernel, block, ("memory",))
    if not screenable(kernel, plan):
        return None
    layout = shared_layout(kernel.module.ir, kernel.fn)
    shared_bytes = layout.dynamic_offset + shared_mem if shared_mem else layout.static_size
    nworkers = worker_count()
    maps = np.zeros((nworkers, max(shared_bytes, 1)), np.uint8)
    ws = np.zeros((nworkers, STRIDE), np.int64)
    for w in range(nworkers):
        ws[w, S_MAP] = maps[w].ctypes.data
        ws[w, S_BYTES] = shared_bytes
    table = np.array([ws.ctypes.data, 0, 0, 0], np.int64)
    kernel(grid, block, args, shared_mem, timeout=timeout, checked=True, probes=ProbeLaunch(InitSpec(plan), table))
    return int(ws[:, S_HAZ].sum())
