"""Forward progress and cancellation inside kernel code.

* Every loop back-edge counts iterations in a per-thread counter (reset when a thread starts or
  resumes) and, every POLL_MASK + 1 iterations, reads the launch's error word atomically: a trap
  elsewhere, Ctrl-C or a timeout (launch.py) then stops the CTA within microseconds.  The check sits
  behind a rarely taken branch on a counter LLVM sees start at 0 for each thread, so when LLVM fully
  unrolls a short loop the counter becomes a constant and the check disappears: the thread loop
  around it still vectorizes.
* Spin loops -- loops that pass over a volatile, acquire/relaxed or atomic load, or over a plain
  load of an unchanging address whose value decides a branch of a loop that writes no memory, and
  have no suspension point of their own -- get a `spinpoint` at their head (`spin_points`), a conditional
  suspension point: after POLL_MASK + 1 iterations the thread yields to the CTA scheduler, which runs
  the CTA's other threads before resuming it.  A thread spinning on a flag that a later thread of
  its CTA sets (valid since Volta's independent thread scheduling) then terminates.
* Barrier operands (`barrier_operands`): id and thread count, as constants when they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.lower import abi
from ptxjit.lower.types import I32, I64, const_int
from ptxjit.passes.dataflow import defs_uses, operand_reg_names, with_marker_after

if TYPE_CHECKING:
    from collections.abc import Callable

SPINPOINT = "spinpoint"
# suspension points that only suspend some of the time: the region after them is also reached
# from the region they are in
CONDITIONAL_YIELDS = frozenset({SPINPOINT})

# loads through which a loop can observe another thread's progress
_SYNC_MODS = frozenset({"volatile", "acquire", "relaxed", "cv", "sys", "gpu", "mmio"})
_SYNC_OPS = frozenset({"atom", "mbarrier", "nanosleep"})


def _observes_others(ins: ir.Instr) -> bool:
    if ins.opcode in _SYNC_OPS:
        return True
    return ins.opcode in ("ld", "ldu") and ins.has(*_SYNC_MODS) and not ins.has("param", "local")


_WRITES = frozenset({"st", "atom", "red", "cp", "stmatrix", "mbarrier", "call"})


def _plain_spin_loads(loop: list[ir.Instr]) -> list[ir.Instr]:
    """The plain (weak) loads of a loop that only a spin-wait would contain: the loop writes no memory,
    the load's address is the same in every iteration (no register of it is written in the loop), and
    the loaded value decides a branch of the loop.  Such a loop waits for another thread's store; LLVM
    would hoist the load out of it (nothing in the loop can change the memory) and spin forever."""

    if any(s.opcode in _WRITES for s in loop):
        return []
    defined: dict[str, list[ir.Instr]] = {}
    for s in loop:
        for r in defs_uses(s)[0]:
            defined.setdefault(r, []).append(s)
    branch_regs = {s.guard.name for s in loop if s.opcode == "bra" and s.guard is not None}
    # registers whose value (transitively, inside the loop) decides a branch
    deciding = set(branch_regs)
    changed = True
    while changed:
        changed = False
        for r in list(deciding):
            for d in defined.get(r, []):
                for u in defs_uses(d)[1]:
                    if u not in deciding:
                        deciding.add(u)
                        changed = True
    out = []
    for s in loop:
        if s.opcode not in ("ld", "ldu") or s.has("param", "local", "const", "nc", *_SYNC_MODS):
            continue
        addr = s.operands[1] if len(s.operands) > 1 else None
        if not isinstance(addr, ir.Addr) or any(r in defined for r in operand_reg_names(addr)):
            continue
        if any(r in deciding for r in defs_uses(s)[0]):
            out.append(s)
    return out


def spin_points(fn: ir.Function, yields: Callable[[ir.Instr], bool]) -> ir.Function:
    """A copy of kernel `fn` with a `spinpoint` at the head of each spin loop (`fn` itself if none).
    Plain loads that only a spin-wait would contain (`_plain_spin_loads`) become volatile, so that every
    iteration reads memory again, as the GPU does."""
    body = fn.body or []
    labels = {st.name: i for i, st in enumerate(body) if isinstance(st, ir.Label)}
    heads: set[int] = set()
    volatile: set[int] = set()
    for k, st in enumerate(body):
        if not (isinstance(st, ir.Instr) and st.opcode == "bra" and st.operands):
            continue
        target = st.operands[0]
        h = labels.get(target.name) if isinstance(target, ir.Sym) else None
        if h is None or h > k:
            continue  # not a back edge
        loop = [s for s in body[h:k + 1] if isinstance(s, ir.Instr)]
        if any(yields(s) for s in loop):
            continue  # the scheduler already gets control in every iteration
        if any(_observes_others(s) for s in loop):
            heads.add(h)
            continue
        plain = _plain_spin_loads(loop)
        if plain:
            heads.add(h)
            volatile.update(id(s) for s in plain)
    if volatile:
        import dataclasses

        fn = dataclasses.replace(fn, body=[
            dataclasses.replace(st, mods=(st.mods[0], "volatile", *st.mods[1:]))
            if isinstance(st, ir.Instr) and id(st) in volatile else st for st in body])
    return with_marker_after(fn, heads, SPINPOINT)


def barrier_operands(ins: ir.Instr) -> tuple[object, object | None]:
    """(barrier id, thread count or None) operands of bar/barrier .sync/.arrive/.red."""
    ops = ins.operands
    if ins.has("red"):  # d, a, {b,} {!}c
        return ops[1], (ops[2] if len(ops) == 4 else None)
    return (ops[0] if ops else ir.Imm(0)), (ops[1] if len(ops) > 1 else None)


def static_barrier(ins: ir.Instr) -> tuple[int, int | None] | None:
    """(id, count or None) when both are constants, else None (the thread stores them at run time)."""
    a, c = barrier_operands(ins)
    if not isinstance(a, ir.Imm) or (c is not None and not isinstance(c, ir.Imm)):
        return None
    return int(a.value) & (abi.NBARRIERS - 1), (None if c is None else int(c.value))


def back_edges(fn: ir.Function) -> set[int]:
    """ids of the branch instructions of `fn` whose target label comes before them, except those into
    a spin loop's head (its spin point polls; one counter stepped twice per iteration would never
    reach the spin point's multiple)."""
    body = fn.body or []
    labels = {st.name: i for i, st in enumerate(body) if isinstance(st, ir.Label)}
    for name, i in list(labels.items()):
        j = i + 1
        while j < len(body) and isinstance(body[j], ir.Label):
            j += 1
        if j < len(body) and body[j].opcode == SPINPOINT:
            del labels[name]  # polled by the spin point
    out: set[int] = set()
    for k, st in enumerate(body):
        if not isinstance(st, ir.Instr) or st.opcode not in ("bra", "brx"):
            continue
        if st.opcode == "bra":
            t = st.operands[0] if st.operands else None
            names = [t.name] if isinstance(t, ir.Sym) else []
        else:
            table = st.operands[1] if len(st.operands) > 1 else None
            names = fn.branch_tables.get(getattr(table, "name", ""), [])
        if any(labels.get(n, k + 1) <= k for n in names):
            out.add(id(st))
    return out


class ProgressLowering:
    """Mixin of FnLowering: back-edge polls and spin points."""

    def _progress_counter(self) -> ll.AllocaInstr:
        c = self.__dict__.get("_progress_ctr")
        if c is None:
            b = self.b
            with b.goto_entry_block():
                c = b.alloca(I32, name="progress")
                b.store(const_int(I32, 0), c)
            self._progress_ctr = c
        return c

    def reset_progress(self) -> None:
        """A thread starts or resumes here: its loops count from 0 (lets LLVM fold the polls of
        loops it unrolls completely)."""
        if self.back_edges or self.has_spinpoints:
            self.b.store(const_int(I32, 0), self._progress_counter())

    def _count_iteration(self, spin: bool = False) -> ll.Value:
        """Count one loop iteration; true once every POLL_MASK + 1 iterations.  Loops nested in
        each other share the counter, so every multiple is seen by one of their polls; a spin point
        (which resets the counter when it yields) tests `>` instead: inner loops may step over its
        multiples."""
        b = self.b
        ctr = self._progress_counter()
        c = b.add(b.load(ctr), const_int(I32, 1))
        b.store(c, ctr)
        if spin:
            return b.icmp_unsigned(">", c, const_int(I32, abi.POLL_MASK))
        return b.icmp_unsigned("==", b.and_(c, const_int(I32, abi.POLL_MASK)), const_int(I32, 0))

    def _launch_failed(self) -> ll.Value:
        """The launch's error word, read atomically (other workers and the runtime write it)."""
        b = self.b
        slot = b.gep(self.launch, [const_int(I32, abi.L_ERROR)])
        return b.icmp_unsigned("!=", b.load_atomic(slot, "monotonic", 8), const_int(I64, 0))

    def _abandon(self) -> None:
        """Stop this thread because the launch failed or was cancelled (nothing to record)."""
        if self.is_kernel:
            self.b.ret(const_int(I32, abi.RESUME_TRAP))
        else:
            self.b.ret_void()  # the caller sees L_ERROR set (check_error_after_call)

    def poll_backedge(self) -> None:
        """At a loop back-edge: every POLL_MASK + 1 iterations, stop if the launch was cancelled."""
        b = self.b
        with b.if_then(self._count_iteration(), likely=False):
            self.bounds.stop_if_faulted()
            with b.if_then(self._launch_failed(), likely=False):
                self._abandon()

    def hurry_spin_point(self, failed: ll.Value) -> None:
        """A wait that failed (mbarrier test_wait/try_wait: only another thread of the CTA can complete
        the phase): the next spin point yields at once instead of after POLL_MASK + 1 iterations."""
        if not self.has_spinpoints:
            return
        b = self.b
        with b.if_then(failed):
            b.store(const_int(I32, abi.POLL_MASK), self._progress_counter())

    def spin_point(self) -> None:
        """At a spin loop's head: every POLL_MASK + 1 iterations, stop if the launch was cancelled,
        else suspend so that the CTA's other threads run (resuming here)."""
        b = self.b
        f = self.llfn
        cold = f.append_basic_block("spin_cold")
        cont = f.append_basic_block("spin_cont")
        br = b.cbranch(self._count_iteration(spin=True), cold, cont)
        br.set_weights([1, 99])
        b.position_at_end(cold)
        stop = f.append_basic_block("spin_stop")
        suspend = f.append_basic_block("spin_yield")
        b.cbranch(self._launch_failed(), stop, suspend)
        b.position_at_end(stop)
        self._abandon()
        b.position_at_end(suspend)
        self.yield_point(warp_level=True)  # continues in the resume block
        self.reset_progress()
        b.branch(cont)
        b.position_at_end(cont)
