"""CTA barriers and warp collectives, built on suspension points.

A thread reaching a barrier saves its registers and returns to the CTA scheduler, which resumes
all threads once every live thread waits (exited threads count as arrived).  A warp collective
first publishes the thread's operand in its warp's exchange buffer and suspends; the scheduler
releases together the lanes waiting at the same instruction, snapshotting their operands, and
each reads the others' from the snapshot.  The released set plays the role of the active mask.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower import abi
from ptxjit.lower.builders import for_range
from ptxjit.lower.function import FnLowering
from ptxjit.lower.progress import barrier_operands, static_barrier
from ptxjit.lower.registry import RULES, release_prologue, rule
from ptxjit.lower.types import I1, I32, I64, const_int
from ptxjit.passes.dataflow import defs_uses
from ptxjit.passes.remat import recompute_order

# ---------------------------------------------------------------- CTA barriers


@rule("bar", "barrier", family="sync")
def lower_bar(lw: FnLowering, ins: Instr) -> None:
    """bar/barrier .sync/.arrive/.red.{popc,and,or} [id[, count]]; bar.warp.sync.  Barrier ids and
    thread counts are honoured (the region scheduler completes barrier `id` once `count` threads
    arrived, or every live thread when there is no count); bar.arrive counts without waiting."""
    if ins.has("warp"):
        lw.yield_point(warp_level=True)
        return
    if ins.has("arrive"):
        _bar_arrive(lw, ins)
        return
    _store_dynamic_barrier(lw, ins)
    if ins.has("red"):
        _bar_red(lw, ins)
        return
    lw.yield_point(warp_level=False)


def _barrier_id_count(lw: FnLowering, ins: Instr) -> tuple[ll.Value, ll.Value]:
    """This thread's barrier id (0..15) and thread count (0: all threads) as i32 values."""
    b = lw.b
    a, c = barrier_operands(ins)
    bid = b.and_(lw.read(a, "u32"), const_int(I32, abi.NBARRIERS - 1))
    cnt = const_int(I32, 0) if c is None else lw.read(c, "u32")
    return bid, cnt


def _store_dynamic_barrier(lw: FnLowering, ins: Instr) -> None:
    """A barrier whose id or count is a register: the scheduler reads this thread's from W_BARINFO."""
    if not lw.region_mode or static_barrier(ins) is not None:
        return
    b = lw.b
    bid, cnt = _barrier_id_count(lw, ins)
    info = b.or_(bid, b.shl(cnt, const_int(I32, 8)))
    p = lw.typed_ptr(lw.entry_record_ptr(abi.W_BARINFO), I32)
    lw.internal_access(b.store(info, b.gep(p, [lw.tlin])))


def _bar_arrive(lw: FnLowering, ins: Instr) -> None:
    """bar.arrive id, count: counts this thread as arrived at barrier id without waiting (only the
    region scheduler keeps named barriers; elsewhere there is nobody to release)."""
    if not lw.region_mode:
        return
    b = lw.b
    base = abi.arrive_base(lw.nyields)
    sb = static_barrier(ins)
    if sb is not None:  # counted in a register by the thread loop, added to W_PCOUNT after it
        counter = lw._point_counter(base + sb[0])
        b.store(b.add(b.load(counter), const_int(I32, 1)), counter)
        return
    bid, _cnt = _barrier_id_count(lw, ins)
    pc = lw.typed_ptr(lw.entry_record_ptr(abi.W_PCOUNT), I32)
    slot = b.gep(pc, [b.add(bid, const_int(I32, base))])
    lw.internal_access(b.store(b.add(lw.internal_access(b.load(slot)), const_int(I32, 1)), slot))


@rule("spinpoint", family="sync")
def lower_spinpoint(lw: FnLowering, ins: Instr) -> None:
    """spinpoint (inserted by lower/progress.py, not PTX): a spin loop's head; every so many
    iterations the thread yields so that the other threads of its CTA run."""
    lw.spin_point()


def _bar_red(lw: FnLowering, ins: Instr) -> None:
    b = lw.b
    pred = lw.read_pred(ins.operands[-1])
    p64 = b.zext(pred, I64)
    slots = [b.gep(lw.worker, [const_int(I32, abi.W_RED_ACC + k)]) for k in range(3)]
    b.store(b.add(b.load(slots[0]), p64), slots[0])
    b.store(b.and_(b.load(slots[1]), p64), slots[1])
    b.store(b.or_(b.load(slots[2]), p64), slots[2])
    lw.yield_point(warp_level=False)
    if ins.has("popc"):
        lw.write(ins.operands[0], b.trunc(lw.worker_slot(abi.W_RED_RES), I32), "u32")
    else:
        k = 1 if ins.has("and") else 2
        r = b.icmp_unsigned("!=", lw.worker_slot(abi.W_RED_RES + k), const_int(I64, 0))
        lw.write(ins.operands[0], r, "pred")


@rule("lockstep", family="sync")
def lower_lockstep(lw: FnLowering, ins: Instr) -> None:
    """lockstep (inserted by passes/lockstep.py, not PTX): a scheduling point that exchanges nothing."""
    lw.yield_point(warp_level=True)


@rule("warpstep", family="sync")
def lower_warpstep(lw: FnLowering, ins: Instr) -> None:
    """warpstep (inserted by passes/warpsync.py, not PTX): a lockstep round boundary between a warp's
    volatile accesses; a scheduling point that exchanges nothing."""
    lw.yield_point(warp_level=True)


# ---------------------------------------------------------------- warp exchange helpers


class Exchange:
    """Publishes this lane's value, suspends, then reads the released lanes' values."""

    def __init__(self, lw: FnLowering, value: ll.Value | None,
                 more: list[tuple[int, ll.Value]] = ()) -> None:
        """`more`: region mode, the values of the shuffles sharing this suspension (passes/shflsched.py),
        each with its exchange-buffer row pair (FnLowering.xbuf_index)."""
        b = lw.b
        self.lw = lw
        if lw.region_mode:
            self._region(value, more)
            return
        if value is not None:
            v64 = b.zext(value, I64) if value.type.width < 64 else value
            b.store(v64, self._slot(lw.warp_state(), abi.WARP_XBUF, lw.lane()))
        lw.yield_point(warp_level=True)
        self.ws = lw.warp_state()
        self.arrived = b.load(lw.typed_ptr(b.gep(self.ws, [const_int(I32, abi.WARP_MASK)]), I32))

    def _slot(self, ws: ll.Value, base: int, lane: ll.Value) -> ll.Value:
        b = self.lw.b
        off = b.add(const_int(I32, base), b.mul(lane, const_int(I32, 8)))
        return self.lw.typed_ptr(b.gep(ws, [off]), I64)

    def _region(self, value: ll.Value | None, more: list[tuple[int, ll.Value]] = ()) -> None:
        """Region mode: operands go to a CTA-wide buffer, double-buffered per suspension point by
        its release count; the scheduler releases the lanes of each warp waiting there together."""
        lw = self.lw
        b = lw.b
        idx = lw.yield_index[id(lw.cur)]
        # the release count only changes in the scheduler, between two calls of the body: read once per
        # call (in the entry block), so that the region loops see a loop-invariant buffer row
        count = _release_count(lw, idx)
        if value is not None:
            v64 = b.zext(value, I64) if value.type.width < 64 else value
            _xbuf_access(lw, idx, b.store(v64, _xslot(self.lw, idx, count, lw.tlin)))
        for row, v in more:  # (released together with this point: its release count's parity)
            _xbuf_access(lw, row, b.store(b.zext(v, I64), _xslot(self.lw, row, count, lw.tlin)))
        lw.yield_point(warp_level=True)
        parity = b.sub(count, const_int(I32, 1))  # released since: the row written before the suspension
        self.region_idx, self.region_parity = idx, parity
        warp = b.lshr(lw.tlin, const_int(I32, 5))
        self.warp_base = b.shl(warp, const_int(I32, 5))
        # every thread of the CTA released here: each warp's lanes, all of them
        n = lw.cg.block[0] * lw.cg.block[1] * lw.cg.block[2]
        if n % 32 == 0:
            every = const_int(I32, 0xFFFFFFFF)
        else:
            left = b.sub(const_int(I32, n), self.warp_base)
            part = b.sub(b.shl(const_int(I32, 1), b.and_(left, const_int(I32, 31))), const_int(I32, 1))
            every = b.select(b.icmp_unsigned(">=", left, const_int(I32, 32)), const_int(I32, 0xFFFFFFFF), part)
        if lw.dense:
            self.arrived = every
            return
        wm = lw.typed_ptr(b.gep(lw.entry_record_ptr(abi.W_WMASK), [b.mul(b.zext(warp, I64), const_int(I64, 4))]),
                          I32)
        # the guarded copy entered from a dense copy whose precheck failed (arg | REGION_DENSE): the
        # scheduler released every thread and prepared no per-warp masks (lower/scheduler.py)
        from_dense = b.icmp_unsigned("!=", b.and_(lw.llfn.args[3], const_int(I32, abi.REGION_DENSE)),
                                     const_int(I32, 0))
        self.arrived = b.select(from_dense, every, b.load(wm))

    def value_at(self, t: ll.Value, row: int | None = None) -> ll.Value:
        """Region mode: thread t's published value (t: the thread's index in the CTA)."""
        b = self.lw.b
        row = self.region_idx if row is None else row
        return _xbuf_access(self.lw, row, b.load(_xslot(self.lw, row, self.region_parity, t, signed=True)))

    def value_of(self, lane: ll.Value, row: int | None = None) -> ll.Value:
        """Lane `lane`'s published value (region mode: `row`, the row pair of a batched shuffle)."""
        if self.lw.region_mode:
            b = self.lw.b
            row = self.region_idx if row is None else row
            return _xbuf_access(self.lw, row, b.load(
                _xslot(self.lw, row, self.region_parity, b.add(self.warp_base, lane))))
        return self.lw.b.load(self._slot(self.ws, abi.WARP_SNAP, lane))


def _release_count(lw: FnLowering, idx: int) -> ll.Value:
    """W_CNT[idx] (how often suspension point idx was released), loaded once in the body's entry block."""
    def load(b: ll.IRBuilder) -> ll.Value:
        return b.load(lw.typed_ptr(b.gep(lw.entry_record_ptr(abi.W_CNT), [const_int(I64, 4 * idx)]), I32))
    return lw.once_in_entry(("xbuf_count", idx), load)


def _xbuf_access(lw: FnLowering, idx: int, inst: ll.Instruction) -> ll.Instruction:
    """Alias scopes of a region-mode exchange-buffer access of suspension point `idx`.

    A shuffle's read (lane ^ k, ...) is not affine in the thread index, so LLVM vectorizes a region loop
    only when it knows that read aliases no store of the loop: the register save area and thread states
    (scope 'internal', noalias 'shared'/'local'), global and shared memory, and the buffer of the next
    suspension point.  The buffer's scopes are therefore 'local' in ptxjit's domain (the one scope that
    the runtime's buffers and global accesses exclude but the buffer itself does not, so that it may
    still alias real local memory, which it never claims not to) plus one scope per suspension point in
    a domain of its own: rows of different points never overlap, rows of the same point may (two
    releases apart)."""
    cg = lw.cg
    md = cg.llmod.add_metadata
    domain = md([ll.MetaDataString(cg.llmod, "ptxjit")])
    xdomain = md([ll.MetaDataString(cg.llmod, "ptxjit.xbuf")])

    def scope(name: str, dom) -> ll.MDValue:  # (uniqued: ptxjit's are ModuleCodegen.scopes's nodes)
        return md([ll.MetaDataString(cg.llmod, name), dom])

    fn = lw.fn.name
    points = sorted(set(lw.yield_index.values()) | set(lw.xbuf_index.values())
                    | {r for rows in lw.chain_rows.values() for r in rows})
    inst.set_metadata("alias.scope", md([scope("ptxjit.local", domain), scope(f"xbuf.{fn}.{idx}", xdomain)]))
    inst.set_metadata("noalias", md([scope("ptxjit.internal", domain), scope("ptxjit.shared", domain)]
                                    + [scope(f"xbuf.{fn}.{k}", xdomain) for k in points if k != idx]))
    return inst


def _members(lw: FnLowering, ex: Exchange, ins: Instr, mask_index: int) -> ll.Value:
    if len(ins.operands) > mask_index:
        return lw.b.and_(ex.arrived, lw.read(ins.operands[mask_index], "b32"))
    return ex.arrived


def _dst(op) -> tuple[ir.Reg, ir.Reg | None]:
    if isinstance(op, ir.Pair):
        return op.first, op.second
    return op, None


# ---------------------------------------------------------------- shfl


@rule("shfl", family="warp")
def lower_shfl(lw: FnLowering, ins: Instr) -> None:
    """shfl[.sync].up/down/bfly/idx.b32 d[|p], a, b, c[, membermask] with clamp and segment mask.

    Region mode: a run of independent shuffles (passes/shflsched.py) shares the first one's suspension:
    it publishes every operand of the run, suspends once and writes every result; the others emit
    nothing (they stand right after it, and no instruction of the run reads what another writes)."""
    if id(ins) in lw.xbuf_index:
        return
    run = lw.shfl_runs.get(id(ins), [])
    a = lw.read(ins.operands[1], "b32")
    ex = Exchange(lw, a, [(lw.xbuf_index[id(m)], lw.read(m.operands[1], "b32")) for m in run])
    for m, row in [(ins, None)] + [(m, lw.xbuf_index[id(m)]) for m in run]:
        chain = lw.chain_of.get(id(m))
        if chain is None:
            _shfl_result(lw, m, ex, row)
        else:  # a shuffle chain's result, computed for every thread before the region's loop
            last = lw.chain_rows[id(m)][-1]
            v = _xbuf_access(lw, last, lw.b.load(_xslot(lw, last, const_int(I32, 0), lw.tlin)))
            lw.write(ir.Reg(chain.result), lw.b.trunc(v, I32), "b32")


@release_prologue("shfl")
def chain_prologue(lw: FnLowering, point: Instr) -> None:
    """Region mode, once per release of suspension point `point` (before the region's loop over the
    threads): run the shuffle chains that start there (passes/shflchain.py), step by step over every
    thread of the CTA, from the values published at the point to each step's own row.  For thread t a
    step sets its shuffle's result (and predicate) from the previous row as the shuffle would, then
    lowers the step's instructions with their own rules, the registers they read from outside the chain
    recomputed for t first (pure functions of the thread index: passes/remat.py).  Every register it
    sets is reset to 0 after (a register read before any write is 0: FnLowering.lower).  The point's
    dense and guarded copies share it (lower/regions.py)."""

    members = [(point, lw.yield_index[id(point)])] + [(m, lw.xbuf_index[id(m)])
                                                    for m in lw.shfl_runs.get(id(point), [])]
    chains = [(lw.chain_of[id(m)], row) for m, row in members if id(m) in lw.chain_of]
    b = lw.b
    n = lw.cg.block[0] * lw.cg.block[1] * lw.cg.block[2]
    parity = b.sub(_release_count(lw, lw.yield_index[id(point)]), const_int(I32, 1))
    saved = lw.tlin, lw.loop_tid
    touched: set[str] = set()
    lw.loop_tid = None  # %tid from lw.tlin (lower/special.py)
    for chain, row in chains:
        src, src_parity = row, parity
        for step, dst in zip(chain.steps, lw.chain_rows[id(chain.head)], strict=True):
            with for_range(b, const_int(I32, 0), const_int(I32, n)) as t:
                lw.tlin = t

                def at(u, signed=False, _row=src, _par=src_parity):
                    return b.trunc(_xbuf_access(lw, _row, b.load(_xslot(lw, _row, _par, u, signed))), I32)
                own = at(t)
                kk = const_int(I32, step.k)
                lane = b.and_(t, const_int(I32, 31))
                if step.mode == "bfly":  # (a power of two: the partner is t - k or t + k, as lane & k says)
                    ok = const_int(I1, 1)
                    v = b.select(b.icmp_unsigned("!=", b.and_(t, kk), const_int(I32, 0)), at(b.sub(t, kk), True),
                                 at(b.add(t, kk)))
                elif step.mode == "up":
                    ok = b.icmp_unsigned(">=", lane, kk)
                    v = b.select(ok, at(b.sub(t, kk), True), own)
                else:
                    ok = b.icmp_unsigned("<=", b.add(lane, kk), const_int(I32, 31))
                    v = b.select(ok, at(b.add(t, kk)), own)
                d, p = _dst(step.shfl.operands[0])
                lw.write(step.shfl.operands[1], own, "b32")
                for r in step.copies:  # (what the value sent is a copy of: the same bits)
                    lw.write(ir.Reg(r), own, "b32")
                lw.write(d, v, "b32")
                if p is not None:
                    lw.write(p, ok, "pred")
                order = lw.instr_order
                for ins in recompute_order(set(step.outside), lw.remat, order) + list(step.ops):
                    lw.cur = ins
                    RULES[ins.opcode].lower(lw, ins)
                    touched.update(defs_uses(ins)[0])
                res = b.zext(lw.read(ir.Reg(step.value), "b32"), I64)
                _xbuf_access(lw, dst, b.store(res, _xslot(lw, dst, const_int(I32, 0), t)))
            src, src_parity = dst, const_int(I32, 0)
            touched.update(r for r in (step.sent, step.received, step.pred, *step.copies) if r)
    lw.tlin, lw.loop_tid = saved
    for r in sorted(touched):
        slot = lw.regs.get(r)
        if slot is not None:
            b.store(ll.Constant(slot.type.pointee, None), slot)


def _xslot(lw: FnLowering, idx: int, count: ll.Value, t: ll.Value, signed: bool = False) -> ll.Value:
    """Thread t's slot in the exchange-buffer row pair of point (batched shuffle, chain step) idx, the
    row of `count`'s parity; `signed`: t may be below 0 (a butterfly's t - k, read but not used)."""
    b = lw.b
    n = lw.cg.block[0] * lw.cg.block[1] * lw.cg.block[2]
    row = b.add(const_int(I64, 2 * idx * n), b.mul(b.zext(b.and_(count, const_int(I32, 1)), I64),
                                                   const_int(I64, n)))
    off = b.mul(b.add(row, b.sext(t, I64) if signed else b.zext(t, I64)), const_int(I64, 8))
    return lw.typed_ptr(b.gep(lw.entry_record_ptr(abi.W_XBUF), [off]), I64)


def _shfl_result(lw: FnLowering, ins: Instr, ex: Exchange, row: int | None) -> None:
    b = lw.b
    lane = lw.lane()
    k, c = ins.operands[2:4]
    if lw.region_mode and ins.has("bfly") and isinstance(k, ir.Imm) and isinstance(c, ir.Imm) \
            and c.value & 0x1F1F == 31 and (k.value & 31) & ((k.value & 31) - 1) == 0:
        # a butterfly over the whole warp (Triton's and CUB's reductions) at a power-of-two distance k
        # (lane ^ 3 is no lane +- 3): the partner of thread t is t - k or t + k, as lane & k says; two
        # reads at a constant distance from t, which LLVM widens into two vector loads and a blend,
        # where the read of (lane ^ k) would be a gather (the buffer has room past its last row:
        # runtime/launch.py)
        kk = k.value & 31
        up = ex.value_at(b.add(lw.tlin, const_int(I32, kk)), row)
        down = ex.value_at(b.sub(lw.tlin, const_int(I32, kk)), row)
        high = b.icmp_unsigned("!=", b.and_(lane, const_int(I32, kk)), const_int(I32, 0))
        d, p = _dst(ins.operands[0])
        lw.write(d, b.trunc(b.select(high, down, up), I32), "b32")
        if p is not None:
            lw.write(p, const_int(I1, 1), "pred")
        return
    bval = b.and_(lw.read(ins.operands[2], "b32"), const_int(I32, 31))
    c = lw.read(ins.operands[3], "b32")
    cval = b.and_(c, const_int(I32, 31))
    segmask = b.and_(b.lshr(c, const_int(I32, 8)), const_int(I32, 31))
    max_lane = b.or_(b.and_(lane, segmask), b.and_(cval, b.not_(segmask)))
    min_lane = b.and_(lane, segmask)
    if ins.has("up"):
        j = b.sub(lane, bval)
        ok = b.icmp_signed(">=", j, max_lane)
    elif ins.has("down"):
        j = b.add(lane, bval)
        ok = b.icmp_signed("<=", j, max_lane)
    elif ins.has("bfly"):
        j = b.xor(lane, bval)
        ok = b.icmp_signed("<=", j, max_lane)
    else:
        j = b.or_(min_lane, b.and_(bval, b.not_(segmask)))
        ok = b.icmp_signed("<=", j, max_lane)
    src = b.select(ok, b.and_(j, const_int(I32, 31)), lane)
    v = b.trunc(ex.value_of(src, row), I32)
    d, p = _dst(ins.operands[0])
    lw.write(d, v, "b32")
    if p is not None:
        lw.write(p, ok, "pred")


# ---------------------------------------------------------------- vote / match / redux


def _ballot(lw: FnLowering, ex: Exchange, members: ll.Value, test) -> ll.Value:
    """Bitmask of member lanes for which test(value_of(lane)) holds."""
    b = lw.b
    acc = const_int(I32, 0)
    for i in range(32):
        v = ex.value_of(const_int(I32, i))
        bit = b.zext(test(v), I32)
        acc = b.or_(acc, b.shl(bit, const_int(I32, i)))
    return b.and_(acc, members)


@rule("vote", family="warp")
def lower_vote(lw: FnLowering, ins: Instr) -> None:
    """vote[.sync].all/any/uni.pred and vote[.sync].ballot.b32."""
    b = lw.b
    pred = lw.read_pred(ins.operands[1])
    ex = Exchange(lw, b.zext(pred, I64))
    members = _members(lw, ex, ins, 2)
    ballot = _ballot(lw, ex, members, lambda v: b.icmp_unsigned("!=", v, const_int(I64, 0)))
    zero = const_int(I32, 0)
    if ins.has("ballot"):
        lw.write(ins.operands[0], ballot, "b32")
        return
    if ins.has("all"):
        r = b.icmp_unsigned("==", ballot, members)
    elif ins.has("any"):
        r = b.icmp_unsigned("!=", ballot, zero)
    else:
        r = b.or_(b.icmp_unsigned("==", ballot, zero), b.icmp_unsigned("==", ballot, members))
    lw.write(ins.operands[0], r, "pred")


@rule("match", family="warp")
def lower_match(lw: FnLowering, ins: Instr) -> None:
    """match.any/all.sync.b32/.b64 d[|p], a, membermask."""
    b = lw.b
    t = ins.types()[-1]
    a = lw.read(ins.operands[1], t)
    ex = Exchange(lw, a)
    members = _members(lw, ex, ins, 2)
    a = lw.read(ins.operands[1], t)  # re-read after the suspension point
    own = b.zext(a, I64) if a.type.width < 64 else a
    same = _ballot(lw, ex, members, lambda v: b.icmp_unsigned("==", v, own))
    d, p = _dst(ins.operands[0])
    if ins.has("any"):
        lw.write(d, same, "b32")
        return
    all_eq = b.icmp_unsigned("==", same, members)
    lw.write(d, b.select(all_eq, members, const_int(I32, 0)), "b32")
    if p is not None:
        lw.write(p, all_eq, "pred")


@rule("redux", family="warp")
def lower_redux(lw: FnLowering, ins: Instr) -> None:
    """redux.sync.add/min/max/and/or/xor.u32/.s32/.b32 d, a, membermask."""
    b = lw.b
    t = ins.types()[-1]
    a = lw.read(ins.operands[1], t)
    ex = Exchange(lw, a)
    members = _members(lw, ex, ins, 2)
    signed = t.startswith("s")
    op = next(m for m in ins.mods if m in ("add", "min", "max", "and", "or", "xor"))
    ident = {"add": 0, "and": -1, "or": 0, "xor": 0,
             "min": 0x7FFFFFFF if signed else -1, "max": -0x80000000 if signed else 0}[op]
    acc = const_int(I32, ident)
    for i in range(32):
        v = b.trunc(ex.value_of(const_int(I32, i)), I32)
        if op == "add":
            nv = b.add(acc, v)
        elif op in ("and", "or", "xor"):
            nv = {"and": b.and_, "or": b.or_, "xor": b.xor}[op](acc, v)
        else:
            lt = b.icmp_signed("<", v, acc) if signed else b.icmp_unsigned("<", v, acc)
            take = lt if op == "min" else b.not_(b.or_(lt, b.icmp_unsigned("==", v, acc)))
            nv = b.select(take, v, acc)
        member = b.icmp_unsigned("!=", b.and_(members, const_int(I32, 1 << i)), const_int(I32, 0))
        acc = b.select(member, nv, acc)
    lw.write(ins.operands[0], acc, t)


@rule("activemask", family="warp")
def lower_activemask(lw: FnLowering, ins: Instr) -> None:
    """activemask.b32 d: the lanes of the warp that reach this point together."""
    ex = Exchange(lw, None)
    lw.write(ins.operands[0], ex.arrived, "b32")



@rule("elect", family="warp")
def lower_elect(lw: FnLowering, ins: Instr) -> None:
    """elect.sync d|p, membermask: of the member lanes that reach this point together, the lowest is the
    leader; d = its lane id (every member gets it), p = whether this thread is the leader."""
    b = lw.b
    ex = Exchange(lw, None)
    members = _members(lw, ex, ins, 1)
    cttz = lw.cg.llmod.globals.get("llvm.cttz.i32") or ll.Function(
        lw.cg.llmod, ll.FunctionType(I32, [I32, ll.IntType(1)]), name="llvm.cttz.i32")
    leader = b.call(cttz, [members, const_int(ll.IntType(1), 0)])  # 32 when no member (d unspecified)
    d, p = _dst(ins.operands[0])
    if not (isinstance(d, ir.Reg) and d.name == "_"):
        lw.write(d, leader, "b32")
    if p is not None:
        lw.write(p, b.icmp_unsigned("==", leader, lw.lane()), "pred")
