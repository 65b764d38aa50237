"""The CTA scheduler of region mode: which resume point runs next, barriers, deadlocks.

The body counts, per resume point, the threads that stop there (W_PCOUNT); between two rounds every
live thread waits at exactly one point, so the counts also give the live threads.  Each round:

1. stop if the launch failed or was cancelled (L_ERROR, read atomically);
2. resume the threads at a warp point (collectives, lockstep points; program order, so lanes that
   left a loop together meet again), else those not started yet;
3. else complete a barrier: barrier `id` completes once its arrivals (threads waiting at any
   bar.sync/bar.red with that id, plus bar.arrive counts) reach its thread count, or, without a
   count, once every live thread waits there (exited threads count as arrived).  All its waiting
   threads are released together: when they wait at several instructions, they are first marked
   RELEASED so that threads arriving there again meanwhile stay put;
4. else resume threads that yielded in a spin loop (lower/progress.py); when only spinners are left
   round after round they wait on another CTA, so the worker also yields its core (sched_yield);
5. else, with live threads left, the CTA is deadlocked: the error names a barrier, its arrivals and
   the threads it needs (raised as KernelDeadlock by the runtime).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as ll

from ptxjit.lower import abi
from ptxjit.lower.builders import complete_barrier, for_range
from ptxjit.lower.types import I1, I8, I32, I64, PTR, const_int

if TYPE_CHECKING:
    from ptxjit.lower.context import ModuleContext
    from ptxjit.lower.function import FnLowering

_NEVER = 0x7FFFFFFF


def _entry_alloca(b: ll.IRBuilder, ty: ll.Type, name: str) -> ll.AllocaInstr:
    """A stack slot in the entry block (one in a loop would grow the stack every round)."""
    with b.goto_entry_block():
        return b.alloca(ty, name=name)


def finish_scheduler(b: ll.IRBuilder, f: ll.Function, done: ll.Block, failed: ll.Block) -> ll.Function:
    """A CTA scheduler's exits: 0 when every thread finished, -1 when the launch failed or was cancelled."""
    b.position_at_end(done)
    b.ret(const_int(I32, 0))
    b.position_at_end(failed)
    b.ret(const_int(I32, -1))
    return f


def stop_if_failed(b: ll.IRBuilder, f: ll.Function, L: ll.Value, failed: ll.Block, go_name: str) -> None:
    """Branch to `failed` when the launch has an error (a trap elsewhere, Ctrl-C, a timeout), else continue
    in a new block `go_name`: checked once per scheduler round so that a launch can always be stopped."""
    err = b.load_atomic(b.gep(L, [const_int(I32, abi.L_ERROR)]), "monotonic", 8)
    go = f.append_basic_block(go_name)
    b.cbranch(b.icmp_unsigned("!=", err, const_int(I64, 0)), failed, go)
    b.position_at_end(go)


def end_if_faulted(cg: ModuleContext, b: ll.IRBuilder, f: ll.Function, W: ll.Value, done: ll.Block,
                   go_name: str) -> None:
    """Bounds-checked code: after a region ran, end the CTA at once (to `done`) if its thread loop flushed
    a fault (W_FAULTED), so that the worker reports it before the CTA runs on.  The fault that happened
    first is then the one reported: a CTA that faults before a grid barrier never arrives there, and
    no CTA gets past it to fault later and end first (runtime/cooperative.py).  (The per-thread
    scheduler does the same with each thread's own fault word: module.py.)"""
    if not cg.checked:
        return
    flag = b.load(b.gep(W, [const_int(I32, abi.W_FAULTED)]))
    go = f.append_basic_block(go_name)
    b.cbranch(b.icmp_unsigned("!=", flag, const_int(I64, 0)), done, go)
    b.position_at_end(go)


def build_region_scheduler(cg: ModuleContext, body: ll.Function, lw: FnLowering) -> ll.Function:
    f, b = cg.new_cta_function()
    L, W, n = f.args
    c0, c1 = const_int(I32, 0), const_int(I32, 1)
    codes: list[int] = lw.region_codes
    spin = [c for c in codes if c in lw.spin_codes]
    bars = lw.barrier_codes
    warp = [c for c in codes if c & abi.WARP_POINT and c not in spin]
    dynamic = [c for c, (sb, _loc) in bars.items() if sb is None]
    nslots = abi.pcount_slots(lw.nyields)
    abase = abi.arrive_base(lw.nyields)

    def record(idx: int) -> ll.Value:
        return b.bitcast(b.inttoptr(b.load(b.gep(W, [const_int(I32, idx)])), PTR), I32.as_pointer())

    status, pcount, barinfo = record(abi.W_STATUS), record(abi.W_PCOUNT), record(abi.W_BARINFO)
    spin_rounds = _entry_alloca(b, I32, "spin_rounds")
    b.store(c0, spin_rounds)
    last_spin = _entry_alloca(b, I32, "last_spin")  # the spin point resumed last (round robin)
    b.store(const_int(I32, -1), last_spin)
    with for_range(b, c0, n) as t:
        b.store(c0, b.gep(status, [t]))
    b.store(n, b.gep(pcount, [c0]))
    with for_range(b, c1, const_int(I32, nslots)) as k:
        b.store(c0, b.gep(pcount, [k]))
    # released by a barrier, waiting at one of several instructions: threads per code still to run
    rel_codes = sorted(bars)
    relcnt = _entry_alloca(b, ll.ArrayType(I32, lw.nyields + 2), "released")
    pending = _entry_alloca(b, I32, "released_codes")
    b.store(c0, pending)
    with for_range(b, c0, const_int(I32, lw.nyields + 2)) as k:
        b.store(c0, b.gep(relcnt, [c0, k]))
    trapped = f.append_basic_block("trapped")
    done = f.append_basic_block("all_exited")
    main = f.append_basic_block("round")
    b.branch(main)

    # the body has one call site (LLVM may inline it): every resume goes through this block
    run_blk = f.append_basic_block("run")
    b.position_at_end(run_blk)
    run_code, run_arg = b.phi(I32, name="run_code"), b.phi(I32, name="run_arg")
    with b.if_then(b.icmp_unsigned("!=", b.and_(run_code, c1), c0)):
        _prepare_warp_point(b, W, n, status, run_code, run_arg, lw.mask_codes)
    r = b.call(body, [L, W, c0, run_arg])
    ran = f.append_basic_block("ran")
    b.cbranch(b.icmp_signed("==", r, const_int(I32, abi.RESUME_TRAP)), trapped, ran)
    b.position_at_end(ran)
    end_if_faulted(cg, b, f, W, done, "ran_clean")
    b.branch(main)

    def run(code: ll.Value, arg: ll.Value) -> None:
        """Resume the threads at `code` (arg: code, maybe | DENSE or | RELEASED), then next round."""
        run_code.add_incoming(code, b.block)
        run_arg.add_incoming(arg, b.block)
        b.branch(run_blk)

    # 1. cancelled, or failed elsewhere: stop
    b.position_at_end(main)
    stop_if_failed(b, f, L, trapped, "go")
    if rel_codes:
        # threads a barrier released at several instructions run first, one instruction per round
        rel_phase = f.append_basic_block("run_released")
        normal = f.append_basic_block("schedule")
        b.cbranch(b.icmp_signed(">", b.load(pending), c0), rel_phase, normal)
        b.position_at_end(rel_phase)
        # the first yield index with released threads (a loop: kernels may have many barriers)
        head, found = f.append_basic_block("find_released"), f.append_basic_block("found_released")
        b.branch(head)
        b.position_at_end(head)
        idx = b.phi(I32, name="rel_idx")
        idx.add_incoming(c1, rel_phase)
        nxt = b.add(idx, c1)
        idx.add_incoming(nxt, head)
        slot = b.gep(relcnt, [c0, idx])
        b.cbranch(b.icmp_signed(">", b.load(slot), c0), found, head)
        b.position_at_end(found)
        b.store(c0, slot)
        b.store(b.sub(b.load(pending), c1), pending)
        pick = b.shl(idx, c1)
        run(pick, b.or_(pick, const_int(I32, abi.RELEASED)))
        b.position_at_end(normal)
    # 2. warp points in program order, then the start
    run_pick = f.append_basic_block("run_point")
    barrier_phase = f.append_basic_block("barriers")
    pick = _first_waiting(cg, b, f, pcount, warp + [0], run_pick, barrier_phase)
    b.position_at_end(barrier_phase)
    counts = {code: b.load(b.gep(pcount, [const_int(I32, code >> 1)])) for code in codes}
    b.position_at_end(run_pick)
    cp = b.gep(pcount, [b.lshr(pick, c1)])
    waiting = b.load(cp)
    b.store(c0, cp)
    dense = b.icmp_signed("==", waiting, n)
    b.store(c0, spin_rounds)
    run(pick, b.select(dense, b.or_(pick, const_int(I32, abi.REGION_DENSE)), pick))

    # 3. barriers
    b.position_at_end(barrier_phase)
    simple_ids = {sb for sb, _loc in bars.values()}
    if not spin and not dynamic and not lw.dynamic_arrive and not lw.arrive_ids and len(simple_ids) == 1 \
            and next(iter(simple_ids))[1] is None:
        # the usual kernel: one CTA-wide barrier id, no counts, no spinners.  Here every live thread
        # waits at one of its instructions, so the barrier completes (or all threads exited)
        k = next(iter(simple_ids))[0]
        mine = sorted(bars)
        waiting = c0
        pick = const_int(I32, -1)
        for code in reversed(mine):
            waiting = b.add(waiting, counts[code])
            pick = b.select(b.icmp_signed(">", counts[code], c0), const_int(I32, code), pick)
        release = f.append_basic_block("release")
        b.cbranch(b.icmp_signed(">", waiting, c0), release, done)
        b.position_at_end(release)
        complete_barrier(b, W)
        if len(mine) == 1:
            cp = b.gep(pcount, [const_int(I32, mine[0] >> 1)])
            b.store(c0, cp)
            dense = b.icmp_signed("==", waiting, n)
            run(pick, b.select(dense, b.or_(pick, const_int(I32, abi.REGION_DENSE)), pick))
        else:
            _release(cg, b, f, n, status, pcount, barinfo, counts, mine, [], k, run, relcnt, pending, lw.nyields,
                     waiting)
            b.branch(main)
        return finish_scheduler(b, f, done, trapped)
    live = c0
    for code in codes:
        live = b.add(live, counts[code])
    ids = sorted({sb[0] for sb, _loc in bars.values() if sb is not None} | lw.arrive_ids)
    if dynamic or lw.dynamic_arrive:
        ids = list(range(abi.NBARRIERS))
    dyn_wait = dyn_need = None
    if dynamic:
        dyn_wait, dyn_need = _scan_dynamic(b, f, n, status, barinfo, dynamic, counts)
    arrivals: dict[int, ll.Value] = {}
    needs: dict[int, ll.Value] = {}
    for k in ids:
        wk = c0
        count = None
        synced = False
        for code, (sb, _loc) in bars.items():
            if sb is not None and sb[0] == k:
                wk = b.add(wk, counts[code])
                count = sb[1] if count is None else count
                synced = True
        if not synced and not dynamic:  # an id that only bar.arrive names: the count it names
            count = lw.arrive_counts.get(k)
        need = const_int(I32, -1 if count is None else count)  # -1: every live thread
        if dynamic:
            wk = b.add(wk, b.load(b.gep(dyn_wait, [c0, const_int(I32, k)])))
            dn = b.load(b.gep(dyn_need, [c0, const_int(I32, k)]))
            need = b.select(b.icmp_signed(">=", dn, c0), b.select(b.icmp_unsigned("==", dn, c0),
                                                                  const_int(I32, -1), dn), need)
        arrivals[k] = b.add(wk, b.load(b.gep(pcount, [const_int(I32, abase + k)])))
        needs[k] = need
        # no count: every live thread (exited ones count as arrived); a count: exactly that many
        # arrivals, exited threads never arrive (as on the GPU); more than the CTA has: never
        threshold = b.select(b.icmp_signed("<", need, c0), live,
                             b.select(b.icmp_signed(">", need, n), const_int(I32, _NEVER), need))
        complete = b.and_(b.icmp_signed(">=", arrivals[k], threshold), b.icmp_signed(">", arrivals[k], c0))
        release = f.append_basic_block(f"release{k}")
        nxt = f.append_basic_block(f"not_released{k}")
        b.cbranch(complete, release, nxt)
        b.position_at_end(release)
        b.store(c0, spin_rounds)
        arrive_slot = b.gep(pcount, [const_int(I32, abase + k)])
        # bar.arrive alone can complete a phase: `count` threads arrived and none of them waits (an
        # arrive that no thread syncs with, more arrivals than the count).  The phase ends with nobody
        # to release; arrivals beyond the count belong to the next phase
        with_waiters, arrivals_only = f.append_basic_block(f"release{k}_waiters"), \
            f.append_basic_block(f"release{k}_arrivals_only")
        b.cbranch(b.icmp_signed(">", wk, c0), with_waiters, arrivals_only)
        b.position_at_end(arrivals_only)
        left = b.sub(b.load(arrive_slot), threshold)
        keep = b.and_(b.icmp_signed(">", threshold, c0), b.icmp_signed(">", left, c0))
        b.store(b.select(keep, left, c0), arrive_slot)
        b.branch(main)
        b.position_at_end(with_waiters)
        b.store(c0, arrive_slot)
        complete_barrier(b, W)
        mine = [c for c, (sb, _loc) in bars.items() if sb is not None and sb[0] == k]
        _release(cg, b, f, n, status, pcount, barinfo, counts, mine, dynamic, k, run, relcnt, pending, lw.nyields)
        b.branch(main)
        b.position_at_end(nxt)

    # 4. threads that yielded in a spin loop
    if spin:
        # round robin from the point after the last one resumed: a spinner whose wait only a thread at a
        # later spin point can satisfy (an mbarrier producer and its consumers) must not be picked forever
        last = b.load(last_spin)
        pick = after = const_int(I32, -1)
        for code in reversed(spin):
            waiting_here = b.icmp_signed(">", counts[code], c0)
            pick = b.select(waiting_here, const_int(I32, code), pick)
            after = b.select(b.and_(waiting_here, b.icmp_signed(">", const_int(I32, code), last)),
                             const_int(I32, code), after)
        pick = b.select(b.icmp_signed(">=", after, c0), after, pick)
        b.store(pick, last_spin)
        run_spin = f.append_basic_block("run_spinners")
        stuck = f.append_basic_block("stuck")
        b.cbranch(b.icmp_signed(">=", pick, c0), run_spin, stuck)
        b.position_at_end(run_spin)
        rounds = b.add(b.load(spin_rounds), c1)
        b.store(rounds, spin_rounds)
        with b.if_then(b.icmp_unsigned(">", rounds, const_int(I32, 2)), likely=False):
            # nothing else in this CTA can run: the spinners wait on another CTA (or forever)
            b.call(cg.extern_function("sched_yield", I32, []), [])
        cp = b.gep(pcount, [b.lshr(pick, c1)])
        b.store(c0, cp)
        run(pick, pick)
        b.position_at_end(stuck)

    # 5. nothing can run: all threads exited, or deadlock
    dead = f.append_basic_block("deadlock")
    b.cbranch(b.icmp_signed(">", live, c0), dead, done)
    b.position_at_end(dead)
    _report_deadlock(cg, b, f, L, W, n, status, barinfo, bars, arrivals, needs, live)
    b.branch(trapped)

    return finish_scheduler(b, f, done, trapped)


SCAN_FROM = 16  # warp points from which the first waiting one is found by a loop, not a select per point


def _first_waiting(cg: ModuleContext, b: ll.IRBuilder, f: ll.Function, pcount, order: list[int], found: ll.Block,
                   none: ll.Block) -> ll.Value:
    """The first code of `order` with threads waiting there (W_PCOUNT > 0): branch to `found` with it, or to
    `none`.  Few points: one select per point.  Many (Triton's reductions: a shuffle each, row sums ~60):
    a loop over a constant table that stops at the first, usually an early one (the point right after
    the one that ran), instead of loading and testing every point every round."""
    c0 = const_int(I32, 0)
    if len(order) < SCAN_FROM:
        pick = const_int(I32, -1)
        for code in reversed(order):
            count = b.load(b.gep(pcount, [const_int(I32, code >> 1)]))
            pick = b.select(b.icmp_signed(">", count, c0), const_int(I32, code), pick)
        b.cbranch(b.icmp_signed(">=", pick, c0), found, none)
        return pick
    ty = ll.ArrayType(I32, len(order))
    g = ll.GlobalVariable(cg.llmod, ty, name=cg.llmod.get_unique_name("warp_point_order"))
    g.initializer = ll.Constant(ty, order)
    g.global_constant = True
    g.linkage = "internal"
    start = b.block
    head, step = f.append_basic_block("first_waiting"), f.append_basic_block("first_waiting_next")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I32, name="order_index")
    i.add_incoming(c0, start)
    code = b.load(b.gep(g, [c0, i]))
    count = b.load(b.gep(pcount, [b.lshr(code, const_int(I32, 1))]))
    b.cbranch(b.icmp_signed(">", count, c0), found, step)
    b.position_at_end(step)
    nxt = b.add(i, const_int(I32, 1))
    i.add_incoming(nxt, step)
    b.cbranch(b.icmp_signed("<", nxt, const_int(I32, len(order))), head, none)
    return code


def _prepare_warp_point(b: ll.IRBuilder, W, n, status, code, arg, mask_codes: set[int]) -> None:
    """A warp point: flip its exchange-buffer parity; when not every thread is there, the lanes
    released per warp are those waiting at this point."""

    c0, c1 = const_int(I32, 0), const_int(I32, 1)
    cnt = b.bitcast(b.inttoptr(b.load(b.gep(W, [const_int(I32, abi.W_CNT)])), PTR), I32.as_pointer())
    ccp = b.gep(cnt, [b.lshr(code, c1)])
    b.store(b.add(b.load(ccp), c1), ccp)
    needs_mask = const_int(I1, 0)
    for mc in sorted(mask_codes):
        needs_mask = b.or_(needs_mask, b.icmp_unsigned("==", code, const_int(I32, mc)))
    dense = b.icmp_unsigned("!=", b.and_(arg, const_int(I32, abi.REGION_DENSE)), c0)
    with b.if_then(b.and_(needs_mask, b.not_(dense))):
        wmask = b.bitcast(b.inttoptr(b.load(b.gep(W, [const_int(I32, abi.W_WMASK)])), PTR), I32.as_pointer())
        nwarps = b.lshr(b.add(n, const_int(I32, 31)), const_int(I32, 5))
        with for_range(b, c0, nwarps) as w:
            b.store(c0, b.gep(wmask, [w]))
        with for_range(b, c0, n) as t:
            same = b.icmp_signed("==", b.load(b.gep(status, [t])), code)
            with b.if_then(same):
                wp = b.gep(wmask, [b.lshr(t, const_int(I32, 5))])
                bit = b.shl(c1, b.and_(t, const_int(I32, 31)))
                b.store(b.or_(b.load(wp), bit), wp)


def _scan_dynamic(b: ll.IRBuilder, f, n, status, barinfo, dynamic: list[int], counts):
    """Per barrier id: threads waiting at a barrier whose id/count are registers, and that count
    (-1: none seen, 0: no count).  Only scans when such a barrier has waiters."""

    c0 = const_int(I32, 0)
    arr = ll.ArrayType(I32, abi.NBARRIERS)
    wait, need = _entry_alloca(b, arr, "dyn_wait"), _entry_alloca(b, arr, "dyn_need")
    for k in range(abi.NBARRIERS):
        b.store(c0, b.gep(wait, [c0, const_int(I32, k)]))
        b.store(const_int(I32, -1), b.gep(need, [c0, const_int(I32, k)]))
    any_waiting = const_int(I1, 0)
    for code in dynamic:
        any_waiting = b.or_(any_waiting, b.icmp_signed(">", counts[code], c0))
    with b.if_then(any_waiting, likely=False):
        with for_range(b, c0, n) as t:
            s = b.load(b.gep(status, [t]))
            at = const_int(I1, 0)
            for code in dynamic:
                at = b.or_(at, b.icmp_signed("==", s, const_int(I32, code)))
            with b.if_then(at):
                info = b.load(b.gep(barinfo, [t]))
                k = b.and_(info, const_int(I32, abi.NBARRIERS - 1))
                wp = b.gep(wait, [c0, k])
                b.store(b.add(b.load(wp), const_int(I32, 1)), wp)
                b.store(b.lshr(info, const_int(I32, 8)), b.gep(need, [c0, k]))
    return wait, need


def _release(cg: ModuleContext, b: ll.IRBuilder, f, n, status, pcount, barinfo, counts, mine: list[int],
             dynamic: list[int], k: int, run, relcnt, pending, nyields: int, total: ll.Value | None = None) -> None:
    """Resume every thread waiting at barrier k.  At one instruction (the usual case): run its
    threads now.  At several: mark them RELEASED (so that threads arriving there again meanwhile
    stay put) and count them per instruction; the next rounds run them."""

    c0, c1 = const_int(I32, 0), const_int(I32, 1)
    if not dynamic:
        # one instruction has waiters when the first one's count is their total
        if total is None:
            total = c0
            for code in mine:
                total = b.add(total, counts[code])
        pick = const_int(I32, -1)
        for code in reversed(mine):
            pick = b.select(b.icmp_signed(">", counts[code], c0), const_int(I32, code), pick)
        first = b.load(b.gep(pcount, [b.lshr(pick, c1)]))
        one = f.append_basic_block(f"release{k}_one")
        several = f.append_basic_block(f"release{k}_several")
        b.cbranch(b.icmp_unsigned("==", first, total), one, several)
        b.position_at_end(one)
        cp = b.gep(pcount, [b.lshr(pick, c1)])
        dense = b.icmp_signed("==", b.load(cp), n)  # dense: every thread of the CTA waits there
        b.store(c0, cp)
        run(pick, b.select(dense, b.or_(pick, const_int(I32, abi.REGION_DENSE)), pick))
        b.position_at_end(several)
    # which barrier id each yield index waits for (-1: not a CTA barrier, -2: id in W_BARINFO), so
    # that one pass over the threads marks and counts the released ones without a test per code
    table = [-1] * (nyields + 2)
    for code in mine:
        table[code >> 1] = k
    for code in dynamic:
        table[code >> 1] = -2
    ty = ll.ArrayType(I8, len(table))
    g = ll.GlobalVariable(cg.llmod, ty, name=f"barrier_ids{k}")
    g.initializer = ll.Constant(ty, table)
    g.global_constant = True
    g.linkage = "internal"
    for code in mine + dynamic:
        b.store(c0, b.gep(relcnt, [c0, const_int(I32, code >> 1)]))
    limit = const_int(I32, nyields + 2)
    with for_range(b, c0, n) as t:
        sp = b.gep(status, [t])
        s = b.load(sp)
        idx = b.lshr(s, c1)
        waiting = b.and_(b.icmp_signed(">", s, c0), b.icmp_unsigned("<", idx, limit))
        waiting = b.and_(waiting, b.icmp_unsigned("==", b.and_(s, c1), c0))
        with b.if_then(waiting):
            bid = b.sext(b.load(b.gep(g, [c0, idx])), I32)
            if dynamic:
                info = b.load(b.gep(barinfo, [t]))
                bid = b.select(b.icmp_signed("==", bid, const_int(I32, -2)),
                               b.and_(info, const_int(I32, abi.NBARRIERS - 1)), bid)
            with b.if_then(b.icmp_signed("==", bid, const_int(I32, k))):
                b.store(b.or_(s, const_int(I32, abi.RELEASED)), sp)
                rp = b.gep(relcnt, [c0, idx])
                b.store(b.add(b.load(rp), c1), rp)
    for code in mine + dynamic:
        got = b.load(b.gep(relcnt, [c0, const_int(I32, code >> 1)]))
        cp = b.gep(pcount, [const_int(I32, code >> 1)])
        b.store(b.sub(b.load(cp), got), cp)
        b.store(b.add(b.load(pending), b.zext(b.icmp_signed(">", got, c0), I32)), pending)


def _report_deadlock(cg, b: ll.IRBuilder, f, L, W, n, status, barinfo, bars, arrivals, needs, live) -> None:
    """Record ERR_DEADLOCK (first error of the launch wins): the first waiting thread's barrier."""

    c0 = const_int(I32, 0)
    first = _entry_alloca(b, I32, "first_waiter")
    b.store(const_int(I32, -1), first)
    with for_range(b, c0, n) as t:
        s = b.load(b.gep(status, [t]))
        with b.if_then(b.and_(b.icmp_signed(">", s, c0), b.icmp_signed("<", b.load(first), c0))):
            b.store(t, first)
    t = b.load(first)
    s = b.load(b.gep(status, [b.select(b.icmp_signed("<", t, c0), c0, t)]))
    where = const_int(I64, -1)
    bid = b.and_(b.load(b.gep(barinfo, [b.select(b.icmp_signed("<", t, c0), c0, t)])),
                 const_int(I32, abi.NBARRIERS - 1))
    for code, (sb, loc) in bars.items():
        at = b.icmp_signed("==", s, const_int(I32, code))
        where = b.select(at, const_int(I64, loc), where)
        if sb is not None:
            bid = b.select(at, const_int(I32, sb[0]), bid)
    arrived, need = c0, const_int(I32, -1)
    for k in arrivals:
        this = b.icmp_unsigned("==", bid, const_int(I32, k))
        arrived = b.select(this, arrivals[k], arrived)
        need = b.select(this, needs[k], need)
    err = b.gep(L, [const_int(I32, abi.L_ERROR)])
    res = b.cmpxchg(err, const_int(I64, 0), const_int(I64, abi.ERR_DEADLOCK), "seq_cst", "seq_cst")
    with b.if_then(b.extract_value(res, 1)):
        cx, cy, cz = (b.load(b.gep(W, [const_int(I32, abi.W_CTA + i)])) for i in range(3))
        gx, gy = (b.load(b.gep(L, [const_int(I32, abi.L_GRID + i)])) for i in range(2))
        cta = b.add(cx, b.mul(gx, b.add(cy, b.mul(gy, cz))))
        for slot, v in ((abi.L_ERR_CTA, cta), (abi.L_ERR_TID, b.sext(t, I64)), (abi.L_ERR_WHERE, where),
                        (abi.L_ERR_ARG, b.zext(bid, I64)), (abi.L_ERR_FILE, b.sext(arrived, I64)),
                        (abi.L_ERR_LINE, b.sext(need, I64)), (abi.L_ERR_LIVE, b.sext(live, I64))):
            b.store(v, b.gep(L, [const_int(I32, slot)]))
