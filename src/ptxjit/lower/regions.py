"""Region mode and suspension points: barriers and warp collectives split a kernel into regions.

Part of `FnLowering` (lower/function.py). Each region (from the start or one suspension point to the next)
is lowered as its own loop over the CTA's threads (dense and guarded copies); registers live across a
suspension point are saved structure-of-arrays, affine ones rebuilt from the loop counters.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.lower import abi
from ptxjit.lower.builders import for_range
from ptxjit.lower.progress import CONDITIONAL_YIELDS, SPINPOINT, static_barrier
from ptxjit.lower.registry import RULES
from ptxjit.lower.types import I1, I32, I64, PTR, const_int
from ptxjit.passes.dataflow import build_cfg, defs_uses
from ptxjit.passes.remat import recompute_order


def _warp_level(ins: ir.Instr) -> bool:
    """Is this suspension point a warp collective (else a CTA barrier)?"""
    return ins.opcode not in ("bar", "barrier") or ins.has("warp")


class RegionLowering:
    """Mixin of FnLowering: region copies, save/restore, yields and warp state."""

    def _lower_regions(self, entry: ll.Block) -> None:
        """Region mode: one loop over the CTA's threads per resume point (start, each barrier), each
        with its own copy of the code reachable from there, so that every loop has a constant entry
        and LLVM can vectorize it; the entry block dispatches on the resume code."""
        b = self.b
        raw = self.entry_record_ptr(abi.W_STATUS)
        with self.b.goto_entry_block():
            self.status_ptr = self.typed_ptr(raw, I32)
        codes = [0] + [(self.yield_index[id(i)] << 1) | (abi.WARP_POINT if _warp_level(i) else 0)
                       for i in self.fn.instructions if id(i) in self.yield_index]
        self.region_codes = codes
        # warp points whose instruction reads the set of lanes released together (shfl does not)
        self.mask_codes = {(self.yield_index[id(i)] << 1) | abi.WARP_POINT for i in self.fn.instructions
                           if id(i) in self.yield_index
                           and i.opcode in ("vote", "match", "redux", "activemask", "elect")}
        self._collect_schedule_info()
        points = {(self.yield_index[id(i)] << 1) | abi.WARP_POINT: i for i in self.fn.instructions
                  if id(i) in self.yield_index and i.opcode == "shfl"}
        pcount = self.entry_record_ptr(abi.W_PCOUNT)
        heads = {}  # where the entry's switch sends each resume code
        starts: dict[int, ll.Block] = {}  # each copy's own start (its check, or its loop)
        prologues: dict[int, tuple[ll.Block, ll.Block]] = {}  # chain prologue per point: first, last block
        checks = []
        # two copies per resume point: "dense" when every thread of the CTA waits there (no per-thread
        # check, so the loop vectorizes), and a guarded one for when some have exited.  The baseline
        # build lowers the guarded copy alone (it runs dense resumes too: the entry's switch ignores
        # REGION_DENSE): a fifth to a quarter less IR, and code that runs hot is re-optimized by the tiers
        copies = (False,) if self.cg.baseline else (True, False)
        for code in codes:
            for dense in copies:
                tag = f"region{code}{'d' if dense else 's'}"
                self.dense = dense
                self.region_code = code
                affine = self._affine_candidates(code) if dense else []
                # bounds-checked kernels: the dense copy also needs its hoisted accesses in bounds for
                # every thread (lower/safety/bounds.py precheck); otherwise the fully checked guarded copy runs
                hoist = dense and self.bounds.can_hoist
                need_pre = bool(affine) or hoist
                # shuffle chains starting at this point run first, once per release (sync.py)
                point = points.get(code)
                chained = point is not None and any(id(m) in self.chain_of for m in
                                                    [point] + self.shfl_runs.get(id(point), []))
                pre = self.llfn.append_basic_block(f"{tag}_check") if need_pre else entry
                go = self.llfn.append_basic_block(f"{tag}_affine") if need_pre or chained else entry
                head, _body, done = self._thread_loops(go, tag)
                thread = b.block
                if need_pre or chained:
                    b.position_at_end(go)
                    b.branch(head)
                b.position_at_end(done)
                ret = b.ret(const_int(I32, 0))
                self.bounds.loop_return(ret)
                b.position_at_end(thread)
                # how many threads stop at each point: counted in registers (a reduction LLVM
                # vectorizes), added to the worker's per-point counts when the loop is done
                self._point_counters: dict[int, ll.AllocaInstr] = {}
                self._outgoing: dict[str, ll.AllocaInstr] = {}
                run = self.llfn.append_basic_block(f"{tag}_run")
                if dense:
                    b.branch(run)
                else:
                    # the threads waiting at this point; the scheduler passes code | RELEASED for those
                    # of them released by a barrier when others arrived there since (lower/scheduler.py),
                    # and a dense copy whose affine check fails comes here with code | REGION_DENSE
                    st = self.internal_access(b.load(b.gep(self.status_ptr, [self.tlin])))
                    with b.goto_entry_block():
                        want = b.and_(self.llfn.args[3], const_int(I32, ~abi.REGION_DENSE))
                    b.cbranch(b.icmp_signed("==", st, want), run, self.thread_latch)
                b.position_at_end(run)
                self._setup_vars()
                self.reset_progress()
                if code == 0:  # a thread's first run
                    self.zero_resident()
                setup_end = b.block
                self.yield_blocks = []
                if need_pre:
                    b.position_at_end(pre)
                    self.affine_restore, all_affine = (self._affine_check(affine) if affine
                                                       else ({}, const_int(I1, 1)))
                    checks.append([b.block, all_affine, go, code])
                    b.position_at_end(setup_end)
                self.bounds.begin_copy(hoist, corners_only=bool(code & abi.WARP_POINT))
                target = self._lower_region_copy(code, tag)
                if hoist and self.bounds.hoisted:
                    after = b.block
                    safe = self.bounds.precheck(checks[-1][0], f"{tag}_pre")
                    checks[-1][0], checks[-1][1] = b.block, b.and_(checks[-1][1], safe)
                    b.position_at_end(after)
                self.bounds.begin_copy(False)
                self.affine_restore = {}
                if self._outgoing:
                    self._store_outgoing(run)
                b.position_at_end(setup_end)
                b.branch(target)
                b.position_before(ret)
                for k, counter in self._point_counters.items():
                    slot = self.typed_ptr(b.gep(pcount, [const_int(I64, 4 * k)]), I32)
                    # (an atomic store, unordered: no SLP seed, so the counters of the loop stay scalar
                    # registers; a <2 x i32> of them cost histogram's checked rounds 1.5x, lower/safety/bounds.py)
                    b.store_atomic(b.add(b.load(slot), b.load(counter)), slot, "unordered", 4)
                key = code | (abi.REGION_DENSE if dense else 0)
                starts[key] = heads[key] = pre if need_pre else go if chained else head
                if chained:  # both copies enter through the point's one chain prologue
                    if code not in prologues:
                        first = self.llfn.append_basic_block(f"region{code}_chains")
                        b.position_at_end(first)
                        release = RULES[point.opcode].release
                        assert release is not None  # (a chained point is a shfl: lower/rules/sync.py)
                        release(self, point)
                        prologues[code] = (first, b.block)
                    heads[key] = prologues[code][0]
        for code, (_first, last) in prologues.items():  # then on to the copy the scheduler asked for
            b.position_at_end(last)
            dense_asked = b.icmp_unsigned("!=", b.and_(self.llfn.args[3], const_int(I32, abi.REGION_DENSE)),
                                          const_int(I32, 0))
            b.cbranch(dense_asked, starts.get(code | abi.REGION_DENSE, starts[code]), starts[code])
        for check_end, all_affine, go, code in checks:
            # the saved registers are not all affine (threads at different iterations): guarded copy
            # (past the chain prologue, which has run)
            b.position_at_end(check_end)
            b.cbranch(all_affine, go, starts[code])
            if isinstance(starts[code].instructions[0], ll.PhiInstr):
                starts[code].instructions[0].add_incoming(const_int(I32, 0), check_end)  # its first counter
        b.position_at_end(entry)
        resume = self.llfn.args[3] if len(copies) == 2 else b.and_(self.llfn.args[3], const_int(I32, ~abi.REGION_DENSE))
        sw = b.switch(resume, heads[0])
        for key, head in heads.items():
            if key != 0:
                sw.add_case(const_int(I32, key), head)
        for code in self.barrier_codes:
            # a second switch edge into the guarded loop: its first counter needs a second entry
            sw.add_case(const_int(I32, code | abi.RELEASED), heads[code])
            heads[code].instructions[0].add_incoming(const_int(I32, 0), entry)

    def _collect_schedule_info(self) -> None:
        """What the region scheduler needs per resume point: spin points, and each CTA barrier's
        id and thread count (None when the thread stores them at run time), and PTX location."""
        self.spin_codes: list[int] = []
        self.barrier_codes: dict[int, tuple[tuple[int, int | None] | None, int]] = {}
        self.arrive_ids: set[int] = set()
        self.arrive_counts: dict[int, int] = {}  # barrier id -> the thread count its bar.arrive names
        self.dynamic_arrive = False
        for i in self.fn.instructions:
            if i.opcode in ("bar", "barrier") and i.has("arrive"):
                sb = static_barrier(i)
                if sb is None:
                    self.dynamic_arrive = True
                else:
                    self.arrive_ids.add(sb[0])
                    if sb[1] is not None:
                        self.arrive_counts.setdefault(sb[0], sb[1])
            if id(i) not in self.yield_index:
                continue
            code = self.yield_index[id(i)] << 1
            if i.opcode == SPINPOINT:
                self.spin_codes.append(code | abi.WARP_POINT)
            elif not _warp_level(i):
                self.barrier_codes[code] = (static_barrier(i), self.cg.location_id(i))

    def _store_outgoing(self, run: ll.Block) -> None:
        """Dense copies save registers once per thread, at the loop latch, whatever point the thread
        stopped at: each saved register is undefined at the start of the thread's run, so on paths
        that do not save it the store writes a value nobody reads (the thread's next resume point
        does not restore it), and LLVM emits plain vector stores instead of masked ones."""
        b = self.b
        b.position_at_start(run)
        for out in self._outgoing.values():
            b.store(ll.Constant(out.type.pointee, ll.Undefined), out)
        b.position_at_start(self.thread_latch)
        for name, out in self._outgoing.items():
            self.internal_access(b.store(b.load(out), self._saved(name, self.regs[name])))

    def _affine_candidates(self, code: int) -> list[str]:
        """Registers restored at resume point `code` that may be affine in %tid (passes/affine.py)."""
        if code == 0 or self.live_after is None:
            return []
        ins = next(i for i in self.fn.instructions if self.yield_index.get(id(i)) == code >> 1)
        keep = self.live_after.get(id(ins), set())
        return sorted(r for r in keep if r in self.affine and r not in self.remat)

    def _affine_check(self, regs: list[str]) -> tuple[dict, ll.Value]:
        """In a dense region's preheader: each candidate's base u (thread 0's saved value), and
        whether every thread's saved value is u + k.tid without signed overflow."""
        b = self.b
        bx, by, bz = self.cg.block
        n = bx * by * bz
        restore = {}
        ok = const_int(I1, 1)
        for name in regs:
            k = self.affine[name]
            slot = self.regs[name]
            u = self.internal_access(b.load(self._saved(name, slot, const_int(I32, 0))))
            restore[name] = (u, k)
            if u.type == PTR:
                continue  # addresses: gep arithmetic, no overflow promise needed
            width = u.type.width
            hi = sum(max(c, 0) * (d - 1) for c, d in zip(k, (bx, by, bz), strict=True))
            lo = sum(min(c, 0) * (d - 1) for c, d in zip(k, (bx, by, bz), strict=True))
            smax, smin = (1 << (width - 1)) - 1, -(1 << (width - 1))
            if hi > smax or lo < smin:
                ok = const_int(I1, 0)
                continue
            ok = b.and_(ok, b.icmp_signed("<=", u, const_int(u.type, smax - hi)))
            ok = b.and_(ok, b.icmp_signed(">=", u, const_int(u.type, smin - lo)))
        acc = b.alloca(I1)  # cheap enough outside the entry block: one per dense region check
        b.store(ok, acc)

        with for_range(b, const_int(I32, 0), const_int(I32, n)) as t:
            tid = (b.urem(t, const_int(I32, bx)), b.urem(b.udiv(t, const_int(I32, bx)), const_int(I32, by)),
                   b.udiv(t, const_int(I32, bx * by)))
            same = const_int(I1, 1)
            for name in regs:
                u, k = restore[name]
                got = self.internal_access(b.load(self._saved(name, self.regs[name], t)))
                want = self._affine_value(u, k, tid, nsw=False)
                if got.type == PTR:
                    got, want = b.ptrtoint(got, I64), b.ptrtoint(want, I64)
                same = b.and_(same, b.icmp_unsigned("==", got, want))
            b.store(b.and_(b.load(acc), same), acc)
        return restore, b.load(acc)

    def _affine_value(self, u: ll.Value, k: tuple[int, int, int], tid, nsw: bool) -> ll.Value:
        """u + kx*tid.x + ky*tid.y + kz*tid.z in u's type (a byte offset for pointers)."""
        b = self.b
        ty = I64 if u.type == PTR else u.type
        off = None
        for c, t in zip(k, tid, strict=True):
            if c == 0:
                continue
            tv = b.zext(t, ty) if ty.width > 32 else t
            term = b.mul(tv, const_int(ty, c), flags=["nsw"] if nsw else [])
            off = term if off is None else b.add(off, term, flags=["nsw"] if nsw else [])
        if off is None:
            return u
        if u.type == PTR:
            return b.gep(u, [off])
        return b.add(u, off, flags=["nsw"] if nsw else [])

    def _lower_region_copy(self, code: int, tag: str) -> ll.Block:
        """Lower the code reachable from resume point `code` without passing another suspension point
        (regions partition the kernel, so all copies together stay linear in its size).  Returns the
        block the region's threads start in."""

        b = self.b
        body = self.fn.body or []
        if not hasattr(self, "_cfg"):
            self._cfg = build_cfg(self.fn)[0]
            self._block_of = {}
            for bi, blk in enumerate(self._cfg):
                for i in range(blk.start, blk.end):
                    self._block_of[i] = bi
            self._yield_pos = {self.yield_index[id(st)]: i for i, st in enumerate(body)
                               if isinstance(st, ir.Instr) and id(st) in self.yield_index}
        blocks = self._cfg
        entry_i = 0 if code == 0 else self._yield_pos[code >> 1]
        entry_b = self._block_of.get(entry_i, 0)

        def scan(bi: int, i0: int) -> list[int]:
            """Successor blocks reached from statement i0 of block bi (none if a suspension point stops it)."""
            for i in range(i0, blocks[bi].end):
                st = body[i]
                if isinstance(st, ir.Instr) and id(st) in self.yield_index and i != entry_i \
                        and st.opcode not in CONDITIONAL_YIELDS:
                    return []
            return blocks[bi].succs

        reach: set[int] = set()
        stack = list(scan(entry_b, entry_i))
        while stack:
            bi = stack.pop()
            if bi in reach:
                continue
            reach.add(bi)
            stack.extend(scan(bi, blocks[bi].start))
        llblocks = {bi: self.llfn.append_basic_block(f"{tag}_bb{bi}") for bi in sorted(reach)}
        self.labels = {}
        for bi in reach:
            k = blocks[bi].start
            while k < blocks[bi].end and isinstance(body[k], ir.Label):
                self.labels[body[k].name] = llblocks[bi]
                k += 1

        def lower_from(bi: int, i0: int) -> None:
            for i in range(i0, blocks[bi].end):
                st = body[i]
                if isinstance(st, ir.Label):
                    continue
                if b.block.is_terminated:
                    b.position_at_end(self.llfn.append_basic_block(f"{tag}_dead"))
                stops = id(st) in self.yield_index and i != entry_i and st.opcode not in CONDITIONAL_YIELDS
                self.lower_instr(st)
                self.bounds.note_instr(st)  # (bounds.py segments: registers still pure functions of tid)
                if i == entry_i and code:  # resumed here: the restored registers start a segment
                    self.bounds.begin_segment(self.affine_restore)
                if stops:  # the rest of this block belongs to the region after that point
                    if not b.block.is_terminated:
                        b.unreachable()
                    return
            if not b.block.is_terminated:
                nxt = bi + 1
                if nxt in llblocks:
                    first = body[blocks[nxt].start]
                    b.branch(self.bounds.loop_entry(first.name, llblocks[nxt], fallthrough=True)
                             if isinstance(first, ir.Label) else llblocks[nxt])
                else:
                    self.emit_return()

        entry_blk = self.llfn.append_basic_block(f"{tag}_entry")
        b.position_at_end(entry_blk)
        lower_from(entry_b, entry_i)
        self.bounds.end_segment()  # (a segment ends with its basic block)
        for bi in sorted(reach):
            b.position_at_end(llblocks[bi])
            lower_from(bi, blocks[bi].start)
            self.bounds.end_segment()
        return entry_blk if code == 0 else dict(self.yield_blocks)[code]

    # ------------------------------------------------------------------ suspension points
    def yield_point(self, warp_level: bool) -> None:
        """Suspend the thread: save registers, return a resume code; continue in the resume block."""
        b = self.b
        code = (self.yield_index[id(self.cur)] << 1) | (abi.WARP_POINT if warp_level else 0)
        # (resident registers, the baseline build's, stay where they are: Registers.items() leaves them out)
        live = self.regs.items()
        recompute: list[ir.Instr] = []
        if self.live_after is not None and self.cur is not None and id(self.cur) in self.live_after:
            keep, again = self._kept_across(self.cur)
            again = {r for r in again if r not in self.regs.resident}
            if again:
                recompute = recompute_order(again, self.remat, self.instr_order)
            live = [(n, s) for n, s in self.regs.items() if n in keep and n not in again]
        for name, slot in live:
            if self.dense:  # stored at the loop latch (see _store_outgoing)
                b.store(b.load(slot), self._outgoing_slot(name, slot))
                continue
            self.internal_access(b.store(b.load(slot), self._saved(name, slot)))
        if self.region_mode:
            self.internal_access(b.store(const_int(I32, code), b.gep(self.status_ptr, [self.tlin])))
            counter = self._point_counter(code >> 1)
            b.store(b.add(b.load(counter), const_int(I32, 1)), counter)
            b.branch(self.thread_latch)
        else:
            b.ret(const_int(I32, code))
        resume = self.llfn.append_basic_block(f"resume{code}")
        b.position_at_end(resume)
        for name, slot in live:
            if name in self.affine_restore and code == self.region_code:
                # checked in the preheader: rebuilt from the thread loop's counters, so LLVM sees
                # the addresses derived from it as contiguous across threads
                u, k = self.affine_restore[name]
                b.store(self._affine_value(u, k, self.loop_tid, nsw=True), slot)
                continue
            b.store(self.internal_access(b.load(self._saved(name, slot))), slot)
        if recompute:
            cur = self.cur
            for ins in recompute:
                self.cur = ins
                RULES[ins.opcode].lower(self, ins)
            self.cur = cur
        self.yield_blocks.append((code, resume))

    def _kept_across(self, ins: ir.Instr) -> tuple[set[str], set[str]]:
        """At suspension point `ins`: the registers live across it, and those of them recomputed after the
        resume instead of saved: pure functions of tid/ctaid/parameters (but not through a division by a
        value unknown now: scalar on x86, dearer than a save and restore)."""
        keep = self.live_after[id(ins)]
        return keep, {r for r in keep if r in self.remat and not self.bounds.divides_by_unknown(r)}

    def _resident_registers(self) -> dict[str, ll.Type]:
        """The baseline build keeps each register live across some suspension point in the thread's save
        area for the whole run (its slot there: _saved), loaded and stored there as others are in their
        stack slots, so that no code saves, restores or recomputes it at the suspension points.
        Tensor-core kernels keep hundreds of registers live across dozens of points: those copies were a
        third of their IR and of the time to the first launch (and recomputing the pure functions of
        %tid after each of a bitonic sort's 56 barriers a fifth of its IR); what the optimized builds
        keep in registers (SROA) between the points is memory traffic here, which tier 0's code
        generator spills to the stack anyway.  Not the registers that a shuffle chain's prologue sets
        for every thread of the CTA in turn, as temporaries (sync.py chain_prologue)."""
        if not self.cg.baseline or not self.live_after:
            return {}
        names = set().union(*self.live_after.values()) - self._chain_registers()
        return {n: self.register_type(n) for n in self.fn.regs if n in names}

    def _chain_registers(self) -> set[str]:
        """Every register a shuffle chain's prologue reads or writes (sync.py chain_prologue)."""
        if not self.chain_of:
            return set()

        out: set[str] = set()
        for chain in self.chain_of.values():
            for step in chain.steps:
                out |= {r for r in (step.sent, step.received, step.pred, step.value, *step.copies) if r}
                out |= step.outside
                for ins in recompute_order(set(step.outside), self.remat, self.instr_order) + [step.shfl,
                                                                                             *step.ops]:
                    d, u = defs_uses(ins)
                    out |= set(d) | set(u)
        return out

    def resident_slot(self, name: str) -> ll.Value:
        """Where resident register `name` of this thread is kept (Registers): its slot in the save area,
        computed once per thread (in the entry block, or the thread's block of a region loop)."""
        ty = self.regs.resident[name]
        if self.region_mode:  # (the area's address first: loaded into the entry block from inside the
            self.entry_record_ptr(abi.W_SAVE)  # thread's block, it would leave the builder past its end)
        return self.per_thread(("resident", name), lambda b: self._saved(name, ty))

    def zero_resident(self) -> None:
        """Where a thread starts: its resident registers read before any write are 0, as a stack slot's
        (FnLowering.new_register_slot); the save area still holds what the worker's previous CTA left."""
        for name in self.regs.zeroed_resident:
            self.b.store(ll.Constant(self.regs.resident[name], None), self.regs[name])

    def _outgoing_slot(self, name: str, slot: ll.AllocaInstr) -> ll.AllocaInstr:
        out = self._outgoing.get(name)
        if out is None:
            with self.b.goto_entry_block():
                out = self.b.alloca(slot.type.pointee, name=f"out_{name.lstrip('%')}")
            self._outgoing[name] = out
        return out

    def _point_counter(self, index: int) -> ll.AllocaInstr:
        """This region loop's count of threads stopping at yield point `index` (zeroed on entry)."""
        c = self._point_counters.get(index)
        if c is None:
            b = self.b
            with b.goto_entry_block():
                c = b.alloca(I32, name=f"stopped{index}")
                b.store(const_int(I32, 0), c)
            self._point_counters[index] = c
        return c

    def _saved(self, name: str, slot: ll.Value | ll.Type, tlin: ll.Value | None = None) -> ll.Value:
        """Where register `name` of this thread (or of thread `tlin`) is kept across a suspension point
        (`slot`: its stack slot, or the type of a resident register)."""
        b = self.b
        tlin = self.tlin if tlin is None else tlin
        ty = slot if isinstance(slot, ll.Type) else slot.type.pointee
        if self.region_mode:
            # structure of arrays: register-major, contiguous across threads
            base = self.entry_record_ptr(abi.W_SAVE)
            size = max(1, ir.type_size(self.reg_types[name]))
            block = self.cg.block
            n = const_int(I64, block[0] * block[1] * block[2]) if block is not None else self.launch_slot(
                abi.L_NTHREADS)
            if tlin is self.tlin:  # (this thread's column of the area, once per thread and register size)
                column = self.per_thread(("soa", size), lambda bb: bb.gep(
                    base, [bb.mul(bb.zext(tlin, I64), const_int(I64, size))]))
            else:
                column = b.gep(base, [b.mul(b.zext(tlin, I64), const_int(I64, size))])
            return self.typed_ptr(b.gep(column, [b.mul(n, const_int(I64, self.soa_offsets[name]))]), ty)
        return self.typed_ptr(b.gep(self._save_area(), [const_int(I64, self._save_slot(name))]), ty)

    def _save_slot(self, name: str) -> int:
        return self.save_slots[name]

    def _save_area(self) -> ll.Value:
        """This thread's save area.  The thread is the function's argument here (the worker calls the
        function once per thread), so the address is computed once, in the entry block, rather than
        at every saved and restored register (a tensor-core kernel saves hundreds at each barrier)."""
        def area(b: ll.IRBuilder) -> ll.Value:
            base = b.load(b.gep(self.worker, [const_int(I32, abi.W_SAVE)]))
            return b.inttoptr(b.add(base, b.mul(b.zext(self.tlin, I64), const_int(I64, self.save_stride))), PTR)

        return self.per_thread("save_area", area)

    def warp_state(self) -> ll.Value:
        """i8* to this thread's warp collective state."""
        def state(b: ll.IRBuilder) -> ll.Value:
            base = b.load(b.gep(self.worker, [const_int(I32, abi.W_WARP)]))
            warp = b.zext(b.lshr(self.tlin, const_int(I32, 5)), I64)
            return b.inttoptr(b.add(base, b.mul(warp, const_int(I64, abi.WARP_STRIDE))), PTR)

        return self.per_thread("warp_state", state)
