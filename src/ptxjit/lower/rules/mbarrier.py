"""mbarrier objects (PTX ISA §9.7.13.15): their word, the `mbarrier` rule, and `mbar_modify`, which every
arrive, expect_tx and complete_tx (the async copies', async_copy.py; a multicast's, cluster.py) goes through.

An mbarrier is a 64-bit word in shared memory.  The PTX ISA leaves its layout opaque; ptxjit keeps
  bits  0..19  pending arrivals of the current phase
  bits 20..39  expected arrivals (what a new phase starts with; arrive_drop lowers it)
  bits 40..61  transaction count, 22-bit two's complement (expect_tx adds, complete_tx subtracts)
  bit  63      the current phase's parity
A phase completes when both its pending arrivals and its transaction count are zero: the parity
flips and the pending count starts over.  The state a thread's arrive returns is the phase parity
at the arrive (bit 63) with the pending count after it (bits 0..19): test_wait/try_wait(state)
succeed once the barrier's parity differs from the state's, test_wait/try_wait.parity(P) once it
differs from P.  A CTA runs on one worker, but another block's cp.async.bulk .multicast::cluster may complete
transactions on the word at the same time (cluster.py), so changes are compare-and-swaps (monotonic, never
cached across a spin loop's iterations).  try_wait returns at once; wait
loops get forward progress from the spin points of lower/progress.py (mbarrier ops observe others).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.types import I1, I8, I32, I64, PTR, const_int

PEND_BITS = 20
PEND_MASK = (1 << PEND_BITS) - 1
EXP_SHIFT = 20
TX_SHIFT = 40
TX_BITS = 22
PHASE_SHIFT = 63


def space_name(ins: Instr, default: str = "") -> str:
    if ins.has("shared") or ins.has("shared::cta") or ins.has("shared::cluster"):
        return "shared"  # a cluster of one CTA: shared::cluster is this CTA's shared memory
    return default


def memcpy_intrinsics(lw: FnLowering) -> tuple[ll.Function, ll.Function]:
    memcpy = lw.cg.intrinsic("llvm.memcpy.p0.p0.i64", ll.VoidType(), [PTR, PTR, I64, I1], exact=True)
    memset = lw.cg.intrinsic("llvm.memset.p0.i64", ll.VoidType(), [PTR, I8, I64, I1], exact=True)
    return memcpy, memset


def _mbar_word(lw: FnLowering, ins: Instr, addr: ir.Addr, space: str, emit) -> ll.Value | None:
    """emit(pointer to the i64 word) if the mbarrier at `addr` is in bounds (zeros otherwise)."""
    p = lw.address(addr, space)
    return lw.bounds.guarded(addr, space, p, 8, lambda: emit(lw.typed_ptr(p, I64)))


def _load(lw: FnLowering, p: ll.Value, space: str) -> ll.Value:
    return lw.user_access(lw.b.load_atomic(p, "monotonic", 8), space)


def _store(lw: FnLowering, v: ll.Value, p: ll.Value, space: str) -> None:
    lw.user_access(lw.b.store_atomic(v, p, "monotonic", 8), space)


def _field(b: ll.IRBuilder, w: ll.Value, shift: int, bits: int = PEND_BITS) -> ll.Value:
    return b.and_(b.lshr(w, const_int(I64, shift)), const_int(I64, (1 << bits) - 1))


def mbar_modify(lw: FnLowering, ins: Instr, addr: ir.Addr, arrivals: ll.Value | None = None,
                 tx: ll.Value | None = None, drop: bool = False, space: str | None = None) -> ll.Value | None:
    """Count `arrivals` (i64) on the mbarrier (also off its expected count: `drop`) and add `tx` (i64)
    to its transaction count; complete the phase when both reach zero.  Returns the state (i64)."""
    b = lw.b
    space = space_name(ins) if space is None else space
    zero = const_int(I64, 0)

    def emit(p: ll.Value) -> ll.Value:
        # a compare-and-swap loop: another block's multicast complete_tx (cluster.py) may change the word
        head = lw.llfn.append_basic_block("mbar_rmw")
        b.branch(head)
        b.position_at_end(head)
        w = _load(lw, p, space)
        pend, exp = _field(b, w, 0), _field(b, w, EXP_SHIFT)
        txc = b.ashr(b.shl(w, const_int(I64, 64 - TX_SHIFT - TX_BITS)), const_int(I64, 64 - TX_BITS))
        phase = b.lshr(w, const_int(I64, PHASE_SHIFT))
        if arrivals is not None:
            pend = b.sub(pend, arrivals)
            if drop:
                exp = b.sub(exp, arrivals)
        if tx is not None:
            txc = b.add(txc, tx)
        done = b.and_(b.icmp_unsigned("==", b.and_(pend, const_int(I64, PEND_MASK)), zero),
                      b.icmp_unsigned("==", b.and_(txc, const_int(I64, (1 << TX_BITS) - 1)), zero))
        state = b.or_(b.shl(phase, const_int(I64, PHASE_SHIFT)), b.and_(pend, const_int(I64, PEND_MASK)))
        new_pend = b.select(done, exp, pend)
        new_phase = b.xor(phase, b.zext(done, I64))
        nw = b.or_(b.and_(new_pend, const_int(I64, PEND_MASK)),
                   b.shl(b.and_(exp, const_int(I64, PEND_MASK)), const_int(I64, EXP_SHIFT)))
        nw = b.or_(nw, b.shl(b.and_(txc, const_int(I64, (1 << TX_BITS) - 1)), const_int(I64, TX_SHIFT)))
        nw = b.or_(nw, b.shl(new_phase, const_int(I64, PHASE_SHIFT)))
        res = lw.user_access(b.cmpxchg(p, w, nw, "monotonic", "monotonic"), space)
        swapped = lw.llfn.append_basic_block("mbar_rmw_done")
        b.cbranch(b.extract_value(res, 1), swapped, head)
        b.position_at_end(swapped)
        return state
    return _mbar_word(lw, ins, addr, space, emit)


def _count_operand(lw: FnLowering, ins: Instr, k: int) -> ll.Value:
    if len(ins.operands) > k:
        return lw.b.zext(lw.read(ins.operands[k], "u32"), I64)
    return const_int(I64, 1)


@rule("mbarrier", family="sync")
def lower_mbarrier(lw: FnLowering, ins: Instr) -> None:
    """mbarrier.init/inval/arrive{.noComplete}{.expect_tx}/arrive_drop/expect_tx/complete_tx/test_wait/
    try_wait{.parity}/pending_count on the 64-bit mbarrier word (layout: module docstring)."""
    b = lw.b
    space = space_name(ins)
    ops = ins.operands
    if ins.has("init"):
        count = b.and_(b.zext(lw.read(ops[1], "u32"), I64), const_int(I64, PEND_MASK))
        word = b.or_(count, b.shl(count, const_int(I64, EXP_SHIFT)))
        _mbar_word(lw, ins, ops[0], space, lambda p: _store(lw, word, p, space))
        return
    if ins.has("inval"):
        _mbar_word(lw, ins, ops[0], space, lambda p: _store(lw, const_int(I64, 0), p, space))
        return
    if ins.has("expect_tx") and not ins.has("arrive", "arrive_drop"):
        mbar_modify(lw, ins, ops[0], tx=b.zext(lw.read(ops[1], "u32"), I64))
        return
    if ins.has("complete_tx"):
        mbar_modify(lw, ins, ops[0], tx=b.sub(const_int(I64, 0), b.zext(lw.read(ops[1], "u32"), I64)))
        return
    if ins.has("arrive", "arrive_drop"):
        if ins.has("expect_tx"):  # expect_tx, then an arrive of count 1
            state = mbar_modify(lw, ins, ops[1], arrivals=const_int(I64, 1),
                                 tx=b.zext(lw.read(ops[2], "u32"), I64), drop=ins.has("arrive_drop"))
        else:
            state = mbar_modify(lw, ins, ops[1], arrivals=_count_operand(lw, ins, 2), drop=ins.has("arrive_drop"))
        if not (isinstance(ops[0], ir.Reg) and ops[0].name == "_"):
            lw.write(ops[0], state, "b64")
        return
    if ins.has("test_wait", "try_wait"):
        if ins.has("parity"):
            want = b.zext(b.and_(lw.read(ops[2], "u32"), const_int(I32, 1)), I64)
        else:
            want = b.lshr(lw.read(ops[2], "b64"), const_int(I64, PHASE_SHIFT))

        def test(p: ll.Value) -> ll.Value:
            return b.icmp_unsigned("!=", b.lshr(_load(lw, p, space), const_int(I64, PHASE_SHIFT)), want)
        done = _mbar_word(lw, ins, ops[1], space, test)
        lw.hurry_spin_point(b.not_(done))  # copies run at issue: only another thread can complete the phase
        lw.write(ops[0], done, "pred")
        return
    if ins.has("pending_count"):
        lw.write(ops[0], b.trunc(b.and_(lw.read(ops[1], "b64"), const_int(I64, PEND_MASK)), I32), "u32")
        return
    raise lw.unsupported("unknown mbarrier operation")
