"""Lowering of one kernel (and the device functions it calls) to an LLVM module.

The module exports `ptxjit_worker(i64* launch, i64* worker)`: a worker grabs batches of CTAs from
the launch's atomic cursor and runs each CTA with the CTA scheduler, which runs the kernel body
as a loop over the CTA's threads between suspension points (barriers, warp collectives).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from llvmlite import ir as ll

from ptxjit.lower import abi
from ptxjit.lower import rules as _rules  # noqa: F401  (registers every rule: the complete rule table)
from ptxjit.lower.builders import complete_barrier, for_range, noalias_records
from ptxjit.lower.context import ModuleContext
from ptxjit.lower.function import FnLowering
from ptxjit.lower.rules.mma import batched_mmas
from ptxjit.lower.scheduler import build_region_scheduler, finish_scheduler, stop_if_failed
from ptxjit.lower.shared_code import WORKER_SYMBOL, WarpScheduler, WorkerLoop, shape_of
from ptxjit.lower.types import I1, I8, I32, I64, PTR, VOID, const_int


class ModuleCodegen(ModuleContext):
    """Builds the LLVM module of one kernel: its body (FnLowering), the CTA scheduler and the worker loop."""

    # ------------------------------------------------------------------ build
    def build(self) -> ll.Module:
        i64p = I64.as_pointer()
        body_ty = ll.FunctionType(I32, [i64p, i64p, I32, I32])
        body = ll.Function(self.llmod, body_ty, name="body")
        body.linkage = "internal"
        noalias_records(body)
        t0 = time.perf_counter()
        lw = FnLowering(self, self.kernel, body, is_kernel=True, batched=batched_mmas(self.kernel))
        self.analysis_seconds = time.perf_counter() - t0
        lw.lower()
        lw.bounds.flush_sites()
        if lw.probes is not None:
            lw.probes.finish()  # instrumentation state kept in registers goes back before every return
        self.body_save_stride = lw.save_stride
        self.has_yields = not lw.thread_loop
        self.region_mode = lw.region_mode
        self.nyields = lw.nyields
        self.xbuf_points = lw.xbuf_points
        while self.pending:
            fn = self.pending.pop()
            FnLowering(self, fn, self.funcs[fn.name], is_kernel=False, batched=batched_mmas(fn)).lower()
        # the baseline build links the worker loop (and warp mode's CTA scheduler) from the process's
        # shared code (lower/shared_code.py): the same for every kernel, so not built again per kernel
        share = self.baseline and self.probes is None
        self.shared_code: list[str] = []
        if self.region_mode:
            cta = build_region_scheduler(self, body, lw)
        elif share and self.has_yields:
            cta = self._shared_stub(WarpScheduler(self.checked), body)
        else:
            cta = self._build_cta_scheduler(body, self.has_yields)
        if share:
            self._shared_stub(WorkerLoop(self.checked, self.fault_scan, self.shared.reserved,
                                                     self.shared.reserved_bytes if self.shared.reserved >= 0 else 0),
                              cta)
        else:
            self._build_worker(cta)
        # a device function's local accesses may reach its callers' frames, which lie between its stack
        # pointer and the worker's entry (lower/safety/bounds.py _local_ranges): no frame keeps data below its
        # stack pointer (x86-64's red zone), wherever LLVM inlines the calls
        for f in self.llmod.functions:
            if not f.is_declaration:
                f.attributes.add("noredzone")
        return self.llmod

    def _shared_stub(self, shape, callee: ll.Function) -> ll.Function:
        """This module's run_cta or ptxjit_worker as a call of the shared function `shape` names, passing
        `callee` (the body, or run_cta) as its last argument."""
        ty = shape.function_type()
        target = self.extern_function(shape.symbol(), ty.return_type, list(ty.args))
        own = ll.FunctionType(ty.return_type, list(ty.args[:-1]))
        f = ll.Function(self.llmod, own, name=shape.stub_name)
        if shape.stub_name != WORKER_SYMBOL:
            f.linkage = "internal"
        b = ll.IRBuilder(f.append_basic_block("entry"))
        r = b.call(target, [*f.args, callee])
        b.ret_void() if own.return_type == VOID else b.ret(r)
        self.shared_code.append(shape.symbol())
        return f

    # ------------------------------------------------------------------ CTA scheduler
    def _build_cta_scheduler(self, body: ll.Value, has_yields: bool, f: ll.Function | None = None) -> ll.Function:
        """run_cta; `f`: a shared scheduler (lower/shared_code.py) whose last argument is the body."""
        if f is None:
            f, b = self.new_cta_function()
        else:
            b = ll.IRBuilder(f.append_basic_block("entry"))
        L, W, n = f.args[:3]
        c0, c1 = const_int(I32, 0), const_int(I32, 1)
        trap_blk = f.append_basic_block("trapped")
        if not has_yields:
            # no suspension points: the body itself loops over the CTA's threads
            r = b.call(body, [L, W, c0, c0])
            bad = b.icmp_signed("==", r, const_int(I32, abi.RESUME_TRAP))
            ok = f.append_basic_block("ok")
            b.cbranch(bad, trap_blk, ok)
            b.position_at_end(ok)
            b.ret(c0)
            b.position_at_end(trap_blk)
            b.ret(const_int(I32, -1))
            return f

        faulted_blk = f.append_basic_block("faulted")  # a thread faulted: the worker reports it at once
        with b.goto_block(faulted_blk):
            b.ret(c0)
        status = b.bitcast(b.inttoptr(b.load(b.gep(W, [const_int(I32, abi.W_STATUS)])), PTR), I32.as_pointer())
        fault_words = (b.bitcast(b.inttoptr(b.load(b.gep(W, [const_int(I32, abi.W_FAULT)])), PTR), I64.as_pointer())
                       if self.checked else None)
        warp_base = b.load(b.gep(W, [const_int(I32, abi.W_WARP)]))
        with for_range(b, c0, n) as t:
            b.store(c0, b.gep(status, [t]))
        nwarps = b.lshr(b.add(n, const_int(I32, 31)), const_int(I32, 5))
        any_bar = b.alloca(I1)
        main = f.append_basic_block("main")
        b.branch(main)
        b.position_at_end(main)
        # a round: stop when the launch failed elsewhere or was cancelled (Ctrl-C, timeout)
        stop_if_failed(b, f, L, trap_blk, "round_go")
        b.store(const_int(I1, 0), any_bar)
        released = const_int(I32, abi.RELEASED)
        with for_range(b, c0, nwarps) as w:
            lo = b.mul(w, const_int(I32, 32))
            hi_raw = b.add(lo, const_int(I32, 32))
            hi = b.select(b.icmp_unsigned("<", hi_raw, n), hi_raw, n)
            warp_loop = f.append_basic_block("warp_loop")
            b.branch(warp_loop)
            b.position_at_end(warp_loop)
            # run every runnable lane of this warp until it suspends or exits
            with for_range(b, lo, hi) as t:
                sp = b.gep(status, [t])
                s = b.load(sp)
                nonneg = b.icmp_signed(">=", s, c0)
                runnable = b.or_(b.icmp_signed("==", s, c0), b.icmp_unsigned("!=", b.and_(s, released), c0))
                with b.if_then(b.and_(nonneg, runnable)):
                    r = b.call(body, [L, W, t, b.and_(s, const_int(I32, ~abi.RELEASED))])
                    bad = b.icmp_signed("==", r, const_int(I32, abi.RESUME_TRAP))
                    ok = f.append_basic_block("ok")
                    b.cbranch(bad, trap_blk, ok)
                    b.position_at_end(ok)
                    if fault_words is not None:  # this thread recorded a fault: the worker reports it now
                        word = b.load(b.gep(fault_words, [t]))
                        clean = f.append_basic_block("ok_clean")
                        b.cbranch(b.icmp_unsigned("!=", word, const_int(I64, 0)), faulted_blk, clean)
                        b.position_at_end(clean)
                    b.store(b.select(b.icmp_signed("==", r, c0), const_int(I32, abi.STATUS_EXITED), r), sp)
            # lanes waiting at the same warp point (that of the first waiting lane) are released
            # together; their published operands are snapshot so that released lanes can run on
            # and publish again without clobbering what the others still have to read
            with b.goto_entry_block():  # not in the loop: that would grow the stack every round
                mask_slot = b.alloca(I32)
                code_slot = b.alloca(I32)
            b.store(c0, mask_slot)
            b.store(c0, code_slot)
            with for_range(b, lo, hi) as t:
                s = b.load(b.gep(status, [t]))
                waiting = b.and_(b.icmp_signed(">", s, c0), b.icmp_unsigned("==", b.and_(s, released), c0))
                at_warp = b.and_(waiting, b.icmp_unsigned("!=", b.and_(s, c1), c0))
                at_bar = b.and_(waiting, b.icmp_unsigned("==", b.and_(s, c1), c0))
                with b.if_then(at_bar):
                    b.store(const_int(I1, 1), any_bar)
                first = b.and_(at_warp, b.icmp_unsigned("==", b.load(code_slot), c0))
                with b.if_then(first):
                    b.store(s, code_slot)
                same = b.and_(at_warp, b.icmp_unsigned("==", s, b.load(code_slot)))
                m = b.load(mask_slot)
                b.store(b.select(same, b.or_(m, b.shl(c1, b.sub(t, lo))), m), mask_slot)
            mask = b.load(mask_slot)
            has_warp = b.icmp_unsigned("!=", mask, c0)
            release_warp = f.append_basic_block("release_warp")
            warp_done = f.append_basic_block("warp_done")
            b.cbranch(has_warp, release_warp, warp_done)
            b.position_at_end(release_warp)
            ws = b.inttoptr(b.add(warp_base, b.mul(b.zext(w, I64), const_int(I64, abi.WARP_STRIDE))), PTR)
            b.store(mask, b.bitcast(b.gep(ws, [const_int(I32, abi.WARP_MASK)]), I32.as_pointer()))
            xbuf = b.bitcast(b.gep(ws, [const_int(I32, abi.WARP_XBUF)]), I64.as_pointer())
            snap = b.bitcast(b.gep(ws, [const_int(I32, abi.WARP_SNAP)]), I64.as_pointer())
            with for_range(b, lo, hi) as t:
                lane = b.sub(t, lo)
                bit = b.and_(b.lshr(mask, lane), c1)
                with b.if_then(b.icmp_unsigned("!=", bit, c0)):
                    b.store(b.load(b.gep(xbuf, [lane])), b.gep(snap, [lane]))
                    sp = b.gep(status, [t])
                    b.store(b.or_(b.load(sp), released), sp)
            b.branch(warp_loop)
            b.position_at_end(warp_done)
        done = f.append_basic_block("all_exited")
        release = f.append_basic_block("release_barrier")
        b.cbranch(b.load(any_bar), release, done)
        b.position_at_end(release)
        complete_barrier(b, W)
        with for_range(b, c0, n) as t:
            sp = b.gep(status, [t])
            s = b.load(sp)
            with b.if_then(b.icmp_signed(">", s, c0)):
                b.store(b.or_(s, released), sp)
        b.branch(main)
        return finish_scheduler(b, f, done, trap_blk)

    # ------------------------------------------------------------------ worker loop
    def _build_worker(self, cta: ll.Value, f: ll.Function | None = None) -> None:
        """ptxjit_worker; `f`: a shared worker loop (lower/shared_code.py) whose last argument is run_cta."""
        i64p = I64.as_pointer()
        if f is None:
            f = ll.Function(self.llmod, ll.FunctionType(VOID, [i64p, i64p]), name=WORKER_SYMBOL)
        L, W = f.args[:2]
        b = ll.IRBuilder(f.append_basic_block("entry"))

        def slot(rec, idx):
            return b.gep(rec, [const_int(I32, idx)])

        if self.block is not None:
            nthreads = const_int(I32, self.block[0] * self.block[1] * self.block[2])
        else:
            nthreads = b.trunc(b.load(slot(L, abi.L_NTHREADS)), I32)
        nctas = b.load(slot(L, abi.L_NCTAS))
        batch = b.load(slot(L, abi.L_BATCH))
        gx = b.load(slot(L, abi.L_GRID))
        gy = b.load(slot(L, abi.L_GRID + 1))
        loop = f.append_basic_block("grab")
        exit_blk = f.append_basic_block("exit")
        if self.checked:
            self._fault_slots = (b.alloca(I64), b.alloca(I32))
        # where the recursion guard measures the native stack from, and where the frames end whose
        # .local variables a device function may be passed (lower/safety/bounds.py _local_ranges: its bounds
        # checks and isspacep.local)
        sp = b.call(self.intrinsic("llvm.stacksave.p0", PTR, [], exact=True), [])
        b.store(b.ptrtoint(sp, I64), slot(W, abi.W_STACK))
        if self.probes is not None:
            self.probes.worker_prologue(b, L, W)
        b.branch(loop)
        b.position_at_end(loop)
        # atomic: the runtime (cancel, timeout) and other workers (traps) write it meanwhile
        err = b.load_atomic(slot(L, abi.L_ERROR), "monotonic", 8)
        work = f.append_basic_block("work")
        b.cbranch(b.icmp_unsigned("!=", err, const_int(I64, 0)), exit_blk, work)
        b.position_at_end(work)
        # L_RANGED (stream launches): the runtime chose this call's batch [W_BSTART, W_BEND)
        ranged = b.icmp_unsigned("!=", b.load(slot(L, abi.L_RANGED)), const_int(I64, 0))
        cursor = f.append_basic_block("cursor")
        given = f.append_basic_block("given")
        b.cbranch(ranged, given, cursor)
        b.position_at_end(given)
        g_start = b.load(slot(W, abi.W_BSTART))
        g_end = b.load(slot(W, abi.W_BEND))
        have = f.append_basic_block("have")
        b.branch(have)
        b.position_at_end(cursor)
        c_start = b.atomic_rmw("add", slot(L, abi.L_NEXT), batch, "monotonic")
        clip = f.append_basic_block("clip")
        b.cbranch(b.icmp_signed(">=", c_start, nctas), exit_blk, clip)
        b.position_at_end(clip)
        end_raw = b.add(c_start, batch)
        c_end = b.select(b.icmp_signed("<", end_raw, nctas), end_raw, nctas)
        b.branch(have)
        b.position_at_end(have)
        start = b.phi(I64)
        start.add_incoming(g_start, given)
        start.add_incoming(c_start, clip)
        end = b.phi(I64)
        end.add_incoming(g_end, given)
        end.add_incoming(c_end, clip)
        with for_range(b, start, end) as c:
            b.store(b.urem(c, gx), slot(W, abi.W_CTA))
            q = b.udiv(c, gx)
            b.store(b.urem(q, gy), slot(W, abi.W_CTA + 1))
            b.store(b.udiv(q, gy), slot(W, abi.W_CTA + 2))
            for k, ident in enumerate((0, 1, 0)):
                b.store(const_int(I64, ident), slot(W, abi.W_RED_ACC + k))
            if self.probes is not None:
                self.probes.before_cta(b, L, W, c, nthreads)
            if self.checked:  # a fault flag left by a CTA an error stopped must not end this one early
                b.store(const_int(I64, 0), slot(W, abi.W_FAULTED))
            if self.shared.reserved >= 0:  # the reserved shared region starts each CTA zeroed (lower/layout.py)
                memset = self.intrinsic("llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1], exact=True)
                region = b.inttoptr(b.add(b.load(slot(W, abi.W_SHARED)), const_int(I64, self.shared.reserved)), PTR)
                b.call(memset, [region, const_int(I8, 0), const_int(I64, self.shared.reserved_bytes),
                                const_int(I1, 0)])
            r = b.call(cta, [L, W, nthreads])
            ok = f.append_basic_block("cta_ok")
            b.cbranch(b.icmp_signed("!=", r, const_int(I32, 0)), exit_blk, ok)
            b.position_at_end(ok)
            if self.probes is not None:
                self.probes.after_cta(b, L, W, c)
            if self.checked:
                self._check_faults(f, b, L, W, nthreads, c, exit_blk)
            # between CTAs too: a batch of loop-free CTAs can still take long
            cancelled = b.load_atomic(slot(L, abi.L_ERROR), "monotonic", 8)
            nxt = f.append_basic_block("cta_next")
            b.cbranch(b.icmp_unsigned("!=", cancelled, const_int(I64, 0)), exit_blk, nxt)
            b.position_at_end(nxt)
        b.atomic_rmw("add", slot(L, abi.L_DONE), b.sub(end, start), "monotonic")
        b.cbranch(ranged, exit_blk, loop)
        b.position_at_end(exit_blk)
        b.ret_void()


    def _check_faults(self, f, b, L, W, nthreads, c, exit_blk) -> None:
        """After a CTA: did a thread record an out-of-bounds access (W_FAULT, lower/safety/bounds.py)?  The
        first one becomes the launch's error (ERR_FAULT, unless another error came first); this worker
        stops.  The runtime clears W_FAULT after a failed launch."""
        acc, first = self._fault_slots
        faulted = f.append_basic_block("cta_faulted")
        clean = f.append_basic_block("cta_clean")
        if not self.fault_scan:
            # every fault word came from a thread loop's flush, which also set W_FAULTED: scanning
            # W_FAULT (8 bytes per thread) only then saves memory-bound kernels' small CTAs ~10%
            flag = b.gep(W, [const_int(I32, abi.W_FAULTED)])
            scan = f.append_basic_block("cta_fault_scan")
            b.cbranch(b.icmp_unsigned("!=", b.load(flag), const_int(I64, 0)), scan, clean)
            b.position_at_end(scan)
            b.store(const_int(I64, 0), flag)
        fault = b.bitcast(b.inttoptr(b.load(b.gep(W, [const_int(I32, abi.W_FAULT)])), PTR), I64.as_pointer())
        b.store(const_int(I64, 0), acc)
        with for_range(b, const_int(I32, 0), nthreads) as t:  # an OR reduction: vectorizes
            b.store(b.or_(b.load(acc), b.load(b.gep(fault, [t]))), acc)
        b.cbranch(b.icmp_unsigned("!=", b.load(acc), const_int(I64, 0)), faulted, clean)
        b.position_at_end(faulted)
        b.store(const_int(I32, -1), first)
        with for_range(b, const_int(I32, 0), nthreads) as t:
            hit = b.and_(b.icmp_unsigned("!=", b.load(b.gep(fault, [t])), const_int(I64, 0)),
                         b.icmp_signed("<", b.load(first), const_int(I32, 0)))
            b.store(b.select(hit, t, b.load(first)), first)
        t = b.load(first)
        word = b.load(b.gep(fault, [t]))
        res = b.cmpxchg(b.gep(L, [const_int(I32, abi.L_ERROR)]), const_int(I64, 0),
                        const_int(I64, abi.ERR_FAULT), "seq_cst", "seq_cst")
        with b.if_then(b.extract_value(res, 1)):
            b.store(c, b.gep(L, [const_int(I32, abi.L_ERR_CTA)]))
            b.store(b.zext(t, I64), b.gep(L, [const_int(I32, abi.L_ERR_TID)]))
            b.store(word, b.gep(L, [const_int(I32, abi.L_ERR_ARG)]))
        b.branch(exit_blk)
        b.position_at_end(clean)


# ---------------------------------------------------------------- shared code
@dataclass
class _Reserved:
    reserved: int
    reserved_bytes: int


def build_shared_module(symbol: str) -> ll.Module:
    """The LLVM module of one shared function (lower/shared_code.py), lowered by the same code as a
    kernel's own copy."""
    shape = shape_of(symbol)
    cg = _SharedCodegen(shape)
    f = ll.Function(cg.llmod, shape.function_type(), name=symbol)
    noalias_records(f)
    f.attributes.add("noredzone")
    if isinstance(shape, WorkerLoop):
        ModuleCodegen._build_worker(cg, f.args[2], f)
    else:
        ModuleCodegen._build_cta_scheduler(cg, f.args[3], True, f)
    return cg.llmod


class _SharedCodegen:
    """What ModuleCodegen's worker-loop and scheduler builders read, for a shape instead of a kernel."""

    def __init__(self, shape: WorkerLoop | WarpScheduler) -> None:
        self.llmod = ll.Module(name=shape.symbol())
        self.block = None  # the thread count comes from the launch record (L_NTHREADS)
        self.checked = shape.checked
        self.probes = None
        self.fault_scan = getattr(shape, "fault_scan", False)
        self.shared = _Reserved(getattr(shape, "reserved", -1), getattr(shape, "reserved_bytes", 0))
        self.intrinsic = ModuleCodegen.intrinsic.__get__(self)
        self.extern_function = ModuleCodegen.extern_function.__get__(self)
        self._check_faults = ModuleCodegen._check_faults.__get__(self)
