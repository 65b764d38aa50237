"""Barrier-free kernels: a CTA's threads as one (vectorizable) loop around the kernel body.

Part of `FnLowering` (lower/function.py): nested z/y/x thread loops, `%tid.x` innermost, and a guard-first
copy for kernels that open with `if (i < n)` so that the common CTA runs without masked stores.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.errors import UnsupportedInstructionError
from ptxjit.frontend import ir
from ptxjit.lower import abi
from ptxjit.lower.types import I1, I32, I64, const_int

# instructions that may not precede a hoisted entry guard (side effects, control, synchronization)
_GUARD_PREFIX_BARS = frozenset({"st", "atom", "red", "call", "bar", "barrier", "trap", "exit", "ret", "brx",
                                "cp", "membar", "fence", "vote", "shfl", "match", "redux", "activemask", "elect",
                                "prefetch", "prefetchu", "nanosleep", "pmevent", "brkpt", "mbarrier"})


class ThreadLoopLowering:
    """Mixin of FnLowering: the thread loop of barrier-free kernels."""

    def _lower_thread_loop(self, entry: ll.Block) -> None:
        """No suspension points: the CTA's threads run as a loop inside this function, so that
        per-launch values (parameters, records) are computed once, before the loop, and the loop
        over threads is visible to LLVM's vectorizer.

        With the block shape known and a kernel that opens with a guard (`if (i < n)`: straight-line
        arithmetic, then a conditional branch), a first loop evaluates just the guard for every
        thread; when no thread takes the branch, a copy of the body without it runs, so its stores
        are plain vector stores instead of masked ones (slow on many x86 cores)."""
        b = self.b
        guard = self._entry_guard() if self.cg.block is not None and not self.cg.baseline else None
        copies = [None] if guard is None else [guard, None]
        # bounds-checked kernels: these copies are fast ones (accesses at pure addresses checked once per
        # CTA by a precheck loop, lower/safety/bounds.py), and a fully checked copy runs when that fails
        hoist = self.bounds.can_hoist
        loop_entries = []
        checked_entry = None
        fast_hoisted: dict = {}
        # traced: each fast copy twice, with unchecked record stores (when the CTA's claims have room for
        # every thread's most records) and checked ones (instrument/room.py)
        room_versions = getattr(self.probes, "room_versions", None) if self.probing else None
        versions = room_versions() if room_versions is not None else (False,)
        for skip, fast, unchecked in [(s, True, u) for s in copies for u in versions] + (
                [(None, False, False)] if hoist else []):
            if len(versions) > 1:
                self.probes.unchecked = unchecked
            self.bounds.begin_copy(fast)
            pre = self.llfn.append_basic_block("thread_pre")
            head, _body, done = self._thread_loops(pre, "thread")
            body_blk = b.block
            b.position_at_end(pre)
            b.branch(head)
            b.position_at_end(done)
            self.bounds.loop_return(b.ret(const_int(I32, 0)))
            b.position_at_end(body_blk)
            self._setup_vars()
            self.reset_progress()  # per thread, so polls of fully unrolled loops fold away
            start = self.llfn.append_basic_block("start")
            b.branch(start)
            self.skip_branch = skip
            self._lower_body(start)
            self.skip_branch = None
            if fast:
                loop_entries.append(pre)
                fast_hoisted.update(self.bounds.hoisted)
            else:
                checked_entry = pre
        self.bounds.begin_copy(False)
        if len(versions) > 1:  # pairs (unchecked, checked) -> one entry that picks by the room check
            self.probes.unchecked = False
            loop_entries = [self._room_pick(u, c) for u, c in zip(loop_entries[::2], loop_entries[1::2],
                                                                  strict=True)]
        if checked_entry is not None and fast_hoisted:
            self.bounds.hoisted = fast_hoisted
            safe = self.bounds.precheck(entry, "precheck")
            entry = self.llfn.append_basic_block("thread_fast")
            b.cbranch(safe, entry, checked_entry)
        # (nothing hoisted: the fast copies are fully checked, the checked copy unreachable: LLVM drops it)
        if guard is None:
            b.position_at_end(entry)
            b.branch(loop_entries[0])
            return
        taken = self._guard_taken_anywhere(entry, guard)
        b.cbranch(taken, loop_entries[1], loop_entries[0])

    def _room_pick(self, unchecked: ll.Block, checked: ll.Block) -> ll.Block:
        """A block that enters `unchecked` when the records of all threads fit the CTA's claims."""
        blk = self.llfn.append_basic_block("room_check")
        with self.b.goto_block(blk):
            n = self.launch_slot(abi.L_NTHREADS) if self.cg.block is None else \
                const_int(I64, self.cg.block[0] * self.cg.block[1] * self.cg.block[2])
            self.b.cbranch(self.probes.room_ok(n), unchecked, checked)
        return blk

    def _entry_guard(self) -> ir.Instr | None:
        """The kernel's first conditional branch, if only side-effect-free register arithmetic
        (no memory but parameters) comes before it."""
        for st in self.fn.body or ():
            if isinstance(st, ir.Label):
                return None
            if st.opcode == "bra":
                return st if st.guard is not None else None
            if st.opcode in _GUARD_PREFIX_BARS or st.guard is not None:
                return None
            if st.opcode in ("ld", "ldu") and not st.has("param"):
                return None
        return None

    def _guard_taken_anywhere(self, entry: ll.Block, guard: ir.Instr) -> ll.Value:
        """A loop over the threads running only the code before `guard`: does any thread branch?"""
        b = self.b
        head, _body, done = self._thread_loops(entry, "guard")
        with b.goto_entry_block():
            acc = b.alloca(I1, name="guard_taken")
            b.store(const_int(I1, 0), acc)
        self._setup_vars()
        probing, self.probing = self.probing, False  # evaluating the guard is no execution of the kernel
        for st in self.fn.body or ():
            if st is guard:
                break
            self.lower_instr(st)
        self.probing = probing
        b.store(b.or_(b.load(acc), self.read_pred(guard.guard)), acc)
        b.branch(self.thread_latch)
        b.position_at_end(entry)
        b.branch(head)
        b.position_at_end(done)
        return b.load(acc)

    def _thread_loops(self, pre: ll.Block, name: str) -> tuple[ll.Block, ll.Block, ll.Block]:
        """Emit loops over the CTA's threads (z, y, x nested when the block shape is known, so that
        %tid.x is the innermost induction variable and addresses are affine in it).  Returns
        (loop entry block, per-thread body block, block after all threads); sets self.tlin,
        self.loop_tid and self.thread_latch."""
        b = self.b
        f = self.llfn
        block = self.cg.block
        if block is None:
            with b.goto_block(pre):  # (the builder may sit after a terminator: the previous copy's end)
                dims = [b.trunc(self.launch_slot(abi.L_NTHREADS), I32)]
        else:
            dims = [const_int(I32, block[2]), const_int(I32, block[1]), const_int(I32, block[0])]
        done = f.append_basic_block(f"{name}_done")
        outer_exit, prev, prev_body = done, pre, pre
        phis = []
        latches = []
        first_head = None
        for k, n in enumerate(dims):
            head = f.append_basic_block(f"{name}_h{k}")
            first_head = first_head or head
            body = f.append_basic_block(f"{name}_b{k}")
            latch = f.append_basic_block(f"{name}_l{k}")
            b.position_at_end(head)
            phi = b.phi(I32, name=f"{name}_i{k}")
            phi.add_incoming(const_int(I32, 0), prev)
            b.cbranch(b.icmp_unsigned("<", phi, n), body, outer_exit)
            b.position_at_end(latch)
            phi.add_incoming(b.add(phi, const_int(I32, 1)), latch)
            b.branch(head)
            if latches:  # the enclosing loop's body enters this loop
                b.position_at_end(prev_body)
                b.branch(head)
            phis.append(phi)
            latches.append(latch)
            outer_exit, prev, prev_body = latch, body, body
        b.position_at_end(prev_body)
        if block is None:
            self.tlin = phis[0]
            self.loop_tid = None
        else:
            tz, ty, tx = phis
            self.tlin = b.add(b.mul(b.add(b.mul(tz, const_int(I32, block[1])), ty), const_int(I32, block[0])), tx)
            self.loop_tid = (tx, ty, tz)
        # the thread's own block: values of the thread index alone are computed here, once per thread,
        # however often the code asks for them (FnLowering.per_thread); the thread's code starts after it
        self.thread_home = (self.tlin, prev_body)
        start = f.append_basic_block(f"{name}_t")
        b.branch(start)
        b.position_at_end(start)
        self.thread_latch = latches[-1]
        return first_head, prev_body, done

    def _lower_body(self, start: ll.Block) -> None:
        """Lower the function's statements, beginning in block `start` (labels get fresh blocks)."""
        b = self.b
        self.labels = {}
        for st in self.fn.body or ():
            if isinstance(st, ir.Label):
                if st.name in self.labels:
                    raise UnsupportedInstructionError(st.pos, st.name + ":", "label defined twice")
                self.labels[st.name] = self.llfn.append_basic_block(st.name.replace("$", "_"))
        b.position_at_end(start)
        for st in self.fn.body or ():
            if isinstance(st, ir.Label):
                target = self.labels[st.name]
                if not b.block.is_terminated:
                    b.branch(self.bounds.loop_entry(st.name, target, fallthrough=True))
                b.position_at_end(target)
                continue
            if b.block.is_terminated:
                b.position_at_end(self.llfn.append_basic_block("dead"))
            self.lower_instr(st)
        if not b.block.is_terminated:
            self.emit_return()

