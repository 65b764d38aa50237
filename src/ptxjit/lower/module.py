"""Lowering of one kernel (and the device functions it calls) to an LLVM module.

The module exports `ptxjit_worker(i64* launch, i64* worker)`: a worker grabs batches of CTAs from
the launch's atomic cursor and runs each CTA with the CTA scheduler, which runs the kernel body
as a loop over the CTA's threads between suspension points (barriers, warp collectives).
"""

from __future__ import annotations

import time

from llvmlite import ir as ll

from ptxjit.errors import PTXValidationError, UnsupportedInstructionError
from ptxjit.frontend import ir
from ptxjit.lower import abi, shared_code
from ptxjit.lower.function import FnLowering
from ptxjit.lower.layout import GlobalsLayout, param_layout, shared_layout
from ptxjit.lower.layout import local_size as fn_local_size
from ptxjit.lower.progress import spin_points
from ptxjit.lower.scheduler import build_region_scheduler, finish_scheduler, stop_if_failed
from ptxjit.lower.shared_code import WORKER_SYMBOL
from ptxjit.lower.types import I1, I8, I32, I64, PTR, VOID, const_int
from ptxjit.passes.lockstep import lockstep_loops
from ptxjit.passes.shflsched import group_shuffles
from ptxjit.passes.unroll import unroll_lockstep
from ptxjit.passes.warpsync import warp_sync_points
from ptxjit.runtime import globaltimer as _globaltimer  # noqa: F401  (its symbol, as the heap's)
from ptxjit.runtime import heap as _heap  # noqa: F401  (its symbol must exist before cached code is loaded)

EXTERN_FUNCS = {"vprintf", "__assertfail", "malloc", "free", "__nv_assertfail"}


class ModuleCodegen:
    def __init__(self, module: ir.Module, kernel: ir.Function, globals_layout: GlobalsLayout,
                 block: tuple[int, int, int] | None = None, checked: bool = False, probes=None,
                 spec=None, instrumented: bool = False, baseline: bool = False) -> None:
        """`instrumented`: lower as for `probes` (set when only the kernel as lowered is wanted: the probe
        plan's view, ptxjit/instrument/trace.py lowered_kernel).  `baseline`: for the baseline build
        (jit/engine.py BASELINE), one copy of each thread loop: no fast copies whose accesses are checked
        once per CTA before the loop, no copy without the kernel's entry guard, no counted loops checked
        on entry (each saves run time only after LLVM's optimizations, and costs its IR every time)."""
        self.module = module
        self.analysis_seconds = 0.0  # build(): the time of the passes over the PTX (FnLowering's analyses)
        from ptxjit.passes.recursion import recursive_functions

        self.recursive = recursive_functions(module)  # device functions that get a stack guard
        # profile-guided specialization (ptxjit/tiers/specialize.py): parameter bytes by offset and
        # launch-record slots read as constants; the launches that run this code are guarded to match
        self.spec_params: dict[int, bytes] = dict(spec.params) if spec is not None else {}
        self.launch_consts: dict[int, int] = dict(spec.launch) if spec is not None else {}
        # tier 1's branch weights from tier 0's block counters: (function, stmt) -> (taken, fall-through)
        self.branch_weights: dict[tuple[str, int], tuple[int, int]] = {
            (f, i): (t, n) for f, i, t, n in getattr(spec, "weights", ())}
        # instrumentation (ptxjit/instrument): an object that emits probes into the code (FnLowering's
        # `probes`) and the worker loop (worker_prologue, before_cta, after_cta); None: plain code
        self.probes = probes
        # memory safety (lower/bounds.py); kernels calling device malloc also accept the heap's live blocks
        self.checked = checked
        self.baseline = baseline
        self.fault_scan = False  # lower/bounds.py: faults recorded per thread outside thread loops (scan W_FAULT)
        # (a module that declares malloc or free: its kernels may reach blocks another launch allocated)
        self.uses_heap = checked and any(
            name in module.functions and module.functions[name].body is None for name in ("malloc", "free"))
        # launch-time specialization: a known block shape makes %ntid, %tid and the thread loop's
        # trip count constants (None: generic code reading them from the launch record)
        self.block = block
        self.kernel = kernel
        self.glay = globals_layout
        self.llmod = ll.Module(name=kernel.name)
        play = param_layout(kernel.params)
        self.kparams = {p.name: off for p, off in zip(kernel.params, play.offsets, strict=True)}
        self.kparam_size = play.size
        self.shared = shared_layout(module, kernel)
        # tier 1's branch weights by instruction object (the kernel's statements as the counters
        # indexed them: lowered_kernel, before unrolling and shuffle grouping move them)
        self.weights_of: dict[int, tuple[int, int]] = {}
        if block is not None:  # region mode can run stride loops in lockstep across the CTA
            self.kernel = lockstep_loops(kernel, self.yields, block)
            # warp-synchronous volatile code runs its steps in lockstep rounds (passes/warpsync.py)
            self.kernel = warp_sync_points(self.kernel, self.yields)
            # and suspend threads that spin on a flag, so that the thread setting it runs
            self.kernel = spin_points(self.kernel, self.yields)
            counted_body = self.kernel.body or []
            for (f, i), w in self.branch_weights.items():
                if f == kernel.name and 0 <= i < len(counted_body):
                    self.weights_of[id(counted_body[i])] = w
            unroll = dict(getattr(spec, "unroll", ()))
            if unroll:  # tier 1: lockstep loops unrolled by the trip counts tier 0 saw (passes/unroll.py)
                self.kernel, origin = unroll_lockstep(self.kernel, unroll)
                for new_id, old in origin.items():
                    if id(old) in self.weights_of:
                        self.weights_of[new_id] = self.weights_of[id(old)]
            # independent shuffles back to back, to share suspension points (not in instrumented code:
            # its probe plans count one point per shuffle, in the PTX's order)
            if probes is None and not instrumented:
                self.kernel = group_shuffles(self.kernel)
        self.locations: list[ir.Instr] = []
        self._loc_ids: dict[int, int] = {}
        self.funcs: dict[str, ll.Function] = {}
        self.pending: list[ir.Function] = []
        self.body_save_stride = 0

    # ------------------------------------------------------------------ queries used by FnLowering
    def symbol(self, name: str, fn: ir.Function, ins: ir.Instr | None) -> tuple[str, int]:
        if fn is self.kernel and name in self.kparams:
            return "kparam", self.kparams[name]
        if name in self.shared.offsets:
            return "shared", self.shared.offsets[name]
        if name in self.glay.offsets:
            return self.glay.offsets[name]
        f = self.module.functions.get(name)
        if f is not None and f.body is not None and not f.is_entry:
            return "func", 0
        raise PTXValidationError(ins.pos if ins else fn.pos, f"unknown symbol '{name}' in function '{fn.name}'")

    def yields(self, ins: ir.Instr) -> bool:
        from ptxjit.lower.rules import RULES

        r = RULES.get(ins.opcode)
        if r is None or not r.yields:
            return False
        # bar.arrive counts an arrival and goes on: not a suspension point
        return not (ins.opcode in ("bar", "barrier") and ins.has("arrive") and not ins.has("warp"))

    def location_id(self, ins: ir.Instr | None) -> int:
        if ins is None:
            return -1
        key = id(ins)
        if key not in self._loc_ids:
            self._loc_ids[key] = len(self.locations)
            self.locations.append(ins)
        return self._loc_ids[key]

    def intrinsic(self, name: str, ret: ll.Type, args: list[ll.Type], exact: bool = False) -> ll.Function:
        """Declare (once) an LLVM intrinsic; overloaded names get the first argument's type suffix."""
        if not exact:
            t = args[0] if args else ret
            name = f"{name}.{_type_suffix(t)}"
        return self.extern_function(name, ret, args)

    def scopes(self, *names: str):
        """A list of alias scopes.  'internal' holds the runtime's own per-thread buffers (register
        save area, thread states, warp exchange), which kernel memory accesses never touch;
        'shared' and 'local' hold those state spaces, which global addresses never reach.  Telling
        LLVM lets it vectorize loops whose addresses it cannot analyse (indices restored from the
        save area) past their stores."""
        cache = self.__dict__.setdefault("_scopes", {})
        if not cache:
            cache["domain"] = self.llmod.add_metadata([ll.MetaDataString(self.llmod, "ptxjit")])
        key = tuple(sorted(names))
        md = cache.get(key)
        if md is None:
            scope = [cache.get(("scope", n)) or cache.setdefault(("scope", n), self.llmod.add_metadata(
                [ll.MetaDataString(self.llmod, "ptxjit." + n), cache["domain"]])) for n in key]
            md = cache[key] = self.llmod.add_metadata(scope)
        return md

    def empty_md(self):
        md = getattr(self, "_empty_md", None)
        if md is None:
            md = self._empty_md = self.llmod.add_metadata([])
        return md

    SCRATCH_BYTES = 256  # larger than any single load or store (a .v8 of 64-bit elements is 64 bytes)

    def scratch_area(self, store: bool, size: int) -> ll.Value:
        """Where a bounds-checked access goes when it is out of bounds (lower/bounds.py redirected):
        for loads a constant block of zeros, for stores a junk block nobody reads (racy writes of junk
        by several workers are harmless)."""
        if size > self.SCRATCH_BYTES:
            raise ValueError(f"access of {size} bytes is larger than the bounds-check scratch area")
        name = "__ptxjit_oob_junk" if store else "__ptxjit_oob_zeros"
        g = self.llmod.globals.get(name)
        if g is None:
            ty = ll.ArrayType(I8, self.SCRATCH_BYTES)
            g = ll.GlobalVariable(self.llmod, ty, name=name)
            g.linkage = "internal"
            g.align = 64
            g.initializer = ll.Constant(ty, None)
            g.global_constant = not store
        return g.bitcast(PTR)

    def extern_function(self, name: str, ret: ll.Type, args: list[ll.Type]) -> ll.Function:
        g = self.llmod.globals.get(name)
        if g is None:
            g = ll.Function(self.llmod, ll.FunctionType(ret, args), name=name)
        return g

    def local_stride(self, fn: ir.Function) -> int:
        return fn_local_size(fn)

    def device_function(self, name: str, ins: ir.Instr) -> ll.Function:
        f = self.funcs.get(name)
        if f is not None:
            return f
        target = self.module.functions.get(name)
        if target is None:
            raise UnsupportedInstructionError(ins.pos, ins.text, f"call to unknown function '{name}'")
        if target.body is None:
            raise UnsupportedInstructionError(ins.pos, ins.text, f"call to external function '{name}'")
        nargs = len(target.params) + len(target.rets)
        fnty = ll.FunctionType(VOID, [I64.as_pointer(), I64.as_pointer(), I32] + [PTR] * nargs)
        f = ll.Function(self.llmod, fnty, name="dev." + name)
        f.linkage = "internal"
        noalias_records(f)
        self.funcs[name] = f
        self.pending.append(target)
        return f

    # ------------------------------------------------------------------ build
    def build(self) -> ll.Module:
        i64p = I64.as_pointer()
        body_ty = ll.FunctionType(I32, [i64p, i64p, I32, I32])
        body = ll.Function(self.llmod, body_ty, name="body")
        body.linkage = "internal"
        noalias_records(body)
        t0 = time.perf_counter()
        lw = FnLowering(self, self.kernel, body, is_kernel=True)
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
            FnLowering(self, fn, self.funcs[fn.name], is_kernel=False).lower()
        # the baseline build links the worker loop (and warp mode's CTA scheduler) from the process's
        # shared code (lower/shared_code.py): the same for every kernel, so not built again per kernel
        share = self.baseline and self.probes is None
        self.shared_code: list[str] = []
        if self.region_mode:
            cta = build_region_scheduler(self, body, lw)
        elif share and self.has_yields:
            cta = self._shared_stub(shared_code.WarpScheduler(self.checked), body)
        else:
            cta = self._build_cta_scheduler(body, self.has_yields)
        if share:
            self._shared_stub(shared_code.WorkerLoop(self.checked, self.fault_scan, self.shared.reserved,
                                                     self.shared.reserved_bytes if self.shared.reserved >= 0 else 0),
                              cta)
        else:
            self._build_worker(cta)
        # a device function's local accesses may reach its callers' frames, which lie between its stack
        # pointer and the worker's entry (lower/bounds.py _local_ranges): no frame keeps data below its
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
    def _new_cta_function(self) -> tuple[ll.Function, ll.IRBuilder]:
        i64p = I64.as_pointer()
        f = ll.Function(self.llmod, ll.FunctionType(I32, [i64p, i64p, I32]), name="run_cta")
        f.linkage = "internal"
        noalias_records(f)
        return f, ll.IRBuilder(f.append_basic_block("entry"))

    def _build_cta_scheduler(self, body: ll.Value, has_yields: bool, f: ll.Function | None = None) -> ll.Function:
        """run_cta; `f`: a shared scheduler (lower/shared_code.py) whose last argument is the body."""
        if f is None:
            f, b = self._new_cta_function()
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
        # .local variables a device function may be passed (lower/bounds.py _local_ranges: its bounds
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
        """After a CTA: did a thread record an out-of-bounds access (W_FAULT, lower/bounds.py)?  The
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


def complete_barrier(b: ll.IRBuilder, W: ll.Value) -> None:
    """A CTA barrier completes: bar.red results take the accumulators, which start over."""
    for k, ident in enumerate((0, 1, 0)):
        acc = b.gep(W, [const_int(I32, abi.W_RED_ACC + k)])
        b.store(b.load(acc), b.gep(W, [const_int(I32, abi.W_RED_RES + k)]))
        b.store(const_int(I64, ident), acc)


def noalias_records(f: ll.Function) -> None:
    """The launch and worker records are only touched by the runtime's own code: telling LLVM that
    kernel memory accesses never alias them lets it hoist their loads out of the thread loop."""
    for a, size in zip(f.args[:2], (abi.L_SIZE * 8, abi.W_SIZE * 8), strict=True):
        a.add_attribute("noalias")
        a.attributes.dereferenceable = size  # so loads of record slots can be hoisted freely


def _type_suffix(t: ll.Type) -> str:
    if isinstance(t, ll.IntType):
        return f"i{t.width}"
    if isinstance(t, ll.FloatType):
        return "f32"
    if isinstance(t, ll.DoubleType):
        return "f64"
    if isinstance(t, ll.HalfType):
        return "f16"
    if isinstance(t, ll.VectorType):
        return f"v{t.count}{_type_suffix(t.element)}"
    raise TypeError(f"no intrinsic suffix for {t}")


class for_range:
    """`with for_range(b, start, end) as i:` emits a counted loop; the body goes inside the block."""

    def __init__(self, b: ll.IRBuilder, start: ll.Value, end: ll.Value) -> None:
        self.b = b
        self.start = start
        self.end = end

    def __enter__(self) -> ll.Value:
        b = self.b
        f = b.function
        self.pre = b.block
        self.head = f.append_basic_block("for.head")
        self.body = f.append_basic_block("for.body")
        self.exit = f.append_basic_block("for.end")
        b.branch(self.head)
        b.position_at_end(self.head)
        self.i = b.phi(self.start.type)
        self.i.add_incoming(self.start, self.pre)
        b.cbranch(b.icmp_signed("<", self.i, self.end), self.body, self.exit)
        b.position_at_end(self.body)
        return self.i

    def __exit__(self, *exc) -> None:
        if exc[0] is not None:
            return
        b = self.b
        nxt = b.add(self.i, ll.Constant(self.i.type, 1))
        self.i.add_incoming(nxt, b.block)
        b.branch(self.head)
        b.position_at_end(self.exit)
