"""racecheck's screen: shadow memory inside the kernel's code, so that a race-free launch costs one
instrumented run instead of a trace and its analysis.

The screen runs the launch once with a probe at every shared and global access (the instrumentation
layer's protocol: a spec whose emitter lower/function.py calls, ptxjit/instrument/probes.py).  Each
4-byte word of shared memory (per worker) and of every argument array and the module's globals has a
shadow of two 64-bit slots: its last writer and its last reader, each an *actor*

    cta + 1 (32 bits) | CTA barrier epoch (16) | tid (10) | warp barrier epoch (4) | atomic (1) | multi (1)

An access by actor `me` compares with them under racecheck's rules (racecheck.py): another thread's
access is unordered with `me` when it is in another CTA (global memory only) or in the same CTA epoch
and, within one warp, the same warp epoch; a hazard is such a pair with a write (atomic against atomic
excepted).  `multi` on the reader marks a word two threads read in one scope: a later write by either
still races with the other.

The screen is an over-approximation of racecheck's exact analysis: every race the exact analysis
reports makes the screen count a hazard (at some access of the racing word), and a clean screen means no
race.  It counts more than races -- different bytes of one word, the load of a CAS loop, a write published
by `__threadfence()`, epochs equal modulo 2**16 -- and then check() runs the exact, trace-based analysis,
which names the pair.  Between CTAs on different workers the slots are updated with atomic exchange and
compare-and-swap (sequentially consistent), so that of two concurrent accesses at least one sees the
other.  Accesses of memory the screen cannot shadow (`ptxjit.Pointer` arguments without their memory) make the screen
decline; then check() traces.
"""

from __future__ import annotations

import hashlib

import numpy as np
from llvmlite import ir as ll

from ptxjit.instrument.probes import KIND_ATOMIC, KIND_STORE, Plan, is_cta_barrier
from ptxjit.lower import abi
from ptxjit.lower.types import I1, I8, I32, I64, PTR, const_int

I64P = I64.as_pointer()
I32P = I32.as_pointer()

# per-worker state (int64 slots; WS_STRIDE apart: workers never share a cache line)
S_CTA, S_EPOCH, S_WEPOCH, S_SHADOW, S_SHWORDS, S_HAZ, S_RANGES, S_NRANGES = range(8)
WS_STRIDE = 16
T_WS = 0  # the probe table: the per-worker state array

ATOMIC = 1 << 62
MULTI = 1 << 63
THREAD_BITS = 0xFFFFFFFF | (0x3FF << 48)  # cta + 1 and tid: who
_K_LOAD, _K_STORE, _K_ATOMIC = 0, 1, 2


class ShadowSpec:
    """The screen's probe set (the protocol of instrument/emit.py ProbeSpec)."""

    VERSION = 1

    def __init__(self, plan: Plan, skip: frozenset[int] = frozenset()) -> None:
        self.plan = plan
        self.generic = False
        self.skip = skip  # kernel statements whose accesses need no probe (private.py)
        digest = hashlib.sha256(",".join(map(str, sorted(skip))).encode()).hexdigest()[:12] if skip else ""
        self.key = f"race-screen:v{self.VERSION}" + (f":skip={digest}" if skip else "")

    def emitter(self, lw) -> ShadowEmitter:
        return ShadowEmitter(self, lw)

    def worker_prologue(self, b: ll.IRBuilder, L: ll.Value, W: ll.Value) -> None:
        worker_state_row(b, L, W, T_WS, WS_STRIDE)

    def before_cta(self, b: ll.IRBuilder, L: ll.Value, W: ll.Value, c: ll.Value, nthreads: ll.Value) -> None:
        """The CTA's tag (its shadow entries in shared memory from earlier CTAs become stale) and its
        threads' barrier epochs back to 0."""
        ws = b.inttoptr(b.load(b.gep(W, [const_int(I32, abi.W_PROBE)])), I64P)
        b.store(b.add(c, const_int(I64, 1)), b.gep(ws, [const_int(I32, S_CTA)]))
        memset = b.module.globals.get("llvm.memset.p0.i64") or ll.Function(
            b.module, ll.FunctionType(ll.VoidType(), [PTR, I8, I64, I1]), name="llvm.memset.p0.i64")
        n = b.mul(b.zext(nthreads, I64), const_int(I64, 4))
        for slot in (S_EPOCH, S_WEPOCH):
            p = b.inttoptr(b.load(b.gep(ws, [const_int(I32, slot)])), PTR)
            b.call(memset, [p, const_int(I8, 0), n, const_int(I1, 0)])

    def after_cta(self, b: ll.IRBuilder, L: ll.Value, W: ll.Value, c: ll.Value) -> None:
        pass


class ShadowEmitter:
    """Per lowered function: the screen's probe at each shared/global access, and the epoch counters."""

    def __init__(self, spec: ShadowSpec, lw) -> None:
        self.plan = spec.plan
        self.lw = lw
        self.fname = lw.fn.name
        self.stmt = {id(st): i for i, st in enumerate(lw.fn.body or [])}
        self.skip = spec.skip if lw.is_kernel else frozenset()

    # ------------------------------------------------------------------ hooks (FnLowering)
    def enter(self, ins) -> None:
        pass

    def after(self, ins) -> None:
        pass

    def finish(self) -> None:
        pass

    def execute(self, ins) -> None:
        """A CTA barrier starts the thread's next epoch, `bar.warp.sync` its next warp epoch."""
        if is_cta_barrier(ins):
            self._bump_epoch(S_EPOCH)
        elif ins.opcode in ("bar", "barrier") and ins.has("warp"):
            self._bump_epoch(S_WEPOCH)

    def memory(self, ins, p: ll.Value, part: int) -> None:
        if ins is None:
            return
        stmt = self.stmt.get(id(ins), -1)
        site = self.plan.memory_at.get((self.fname, stmt, part))
        if site is None or site.space not in ("shared", "global", "") or site.size <= 0 or stmt in self.skip:
            return
        lw, b = self.lw, self.lw.b
        kind = _K_ATOMIC if site.kind == KIND_ATOMIC else _K_STORE if site.kind == KIND_STORE else _K_LOAD
        me = self._actor(kind == _K_ATOMIC)
        words = const_int(I64, (site.size + 3) // 4)
        a = b.ptrtoint(p, I64)
        ws = self._ws()
        if site.space == "global":
            b.call(_checker(lw.cg.llmod, "global", kind), [ws, a, me, words])
            return
        off = b.sub(a, b.ptrtoint(lw.shared_ptr(), I64))
        if site.space == "shared":
            b.call(_checker(lw.cg.llmod, "shared", kind), [ws, off, me, words])
            return
        # generic: the CTA's shared memory, else an array (a local address is in neither)
        b.call(_checker(lw.cg.llmod, "generic", kind), [ws, a, me, words, off])

    # ------------------------------------------------------------------ pieces
    def _ws(self) -> ll.Value:
        raw = self.lw.entry_record_ptr(abi.W_PROBE)
        return self.lw.once_in_entry((id(self), "ws"), lambda b: b.bitcast(raw, I64P))

    def _fixed(self, slot: int) -> ll.Value:
        ws = self._ws()
        return self.lw.once_in_entry((id(self), "slot", slot), lambda b: self.lw.internal_access(
            b.load(b.gep(ws, [const_int(I32, slot)]), align=8)))

    def _epoch_ptr(self, slot: int) -> ll.Value:
        v = self._fixed(slot)
        arr = self.lw.once_in_entry((id(self), "ptr", slot), lambda b: b.inttoptr(v, I32P))
        return self.lw.b.gep(arr, [self.lw.tlin])

    def _bump_epoch(self, slot: int) -> None:
        b, lw = self.lw.b, self.lw
        p = self._epoch_ptr(slot)
        lw.internal_access(b.store(b.add(lw.internal_access(b.load(p)), const_int(I32, 1)), p))

    def _actor(self, atomic: bool) -> ll.Value:
        """me: cta + 1 | epoch << 32 | tid << 48 | warp epoch << 58 | atomic << 62."""
        b, lw = self.lw.b, self.lw
        cta = b.and_(self._fixed(S_CTA), const_int(I64, 0xFFFFFFFF))
        ep = b.zext(b.and_(lw.internal_access(b.load(self._epoch_ptr(S_EPOCH))), const_int(I32, 0xFFFF)), I64)
        wep = b.zext(b.and_(lw.internal_access(b.load(self._epoch_ptr(S_WEPOCH))), const_int(I32, 0xF)), I64)
        tid = b.zext(b.and_(lw.tlin, const_int(I32, 0x3FF)), I64)
        me = b.or_(cta, b.shl(ep, const_int(I64, 32)))
        me = b.or_(me, b.shl(tid, const_int(I64, 48)))
        me = b.or_(me, b.shl(wep, const_int(I64, 58)))
        return b.or_(me, const_int(I64, ATOMIC)) if atomic else me


# ---------------------------------------------------------------------- the checkers (LLVM functions)
def _checker(mod: ll.Module, space: str, kind: int) -> ll.Function:
    """void race_<space>_<kind>(i64* ws, i64 addr_or_offset, i64 me, i64 words[, i64 shared offset]):
    check and update the shadow of `words` 4-byte words from the address; a hazard counts in ws[S_HAZ]."""
    name = f"ptxjit.race.{space}.{kind}"
    fn = mod.globals.get(name)
    if fn is not None:
        return fn
    args = [I64P, I64, I64, I64] + ([I64] if space == "generic" else [])
    fn = ll.Function(mod, ll.FunctionType(ll.VoidType(), args), name=name)
    fn.linkage = "internal"
    ws, a, me, words = fn.args[:4]
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    done = fn.append_basic_block("done")

    def slot(k: int) -> ll.Value:
        return b.load(b.gep(ws, [const_int(I32, k)]), align=8)

    def shared_part(off: ll.Value, next_block: ll.Block) -> None:
        nwords = slot(S_SHWORDS)
        idx = b.lshr(off, const_int(I64, 2))
        inside = b.icmp_unsigned("<", idx, nwords)
        go = fn.append_basic_block("shared")
        b.cbranch(inside, go, next_block)
        b.position_at_end(go)
        base = b.inttoptr(slot(S_SHADOW), I64P)
        _words(fn, b, base, idx, nwords, words, me, kind, shared=True, ws=ws, done=done)

    if space == "shared":
        shared_part(a, done)
    else:
        if space == "generic":
            global_block = fn.append_basic_block("global")
            shared_part(fn.args[4], global_block)
            b.position_at_end(global_block)
        _global_part(fn, b, ws, a, me, words, kind, done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _loop_head(fn, b: ll.IRBuilder, name: str, more, done) -> ll.Value:
    """A counted loop from 0: its counter (a phi in the loop's head block: the caller adds the back edge's
    value and branches back to counter.parent); the builder is left in the body, entered while
    more(counter), else on to `done`."""
    pre = b.block
    head = fn.append_basic_block(name)
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    i.add_incoming(const_int(I64, 0), pre)
    body = fn.append_basic_block(f"{name}.body")
    b.cbranch(more(i), body, done)
    b.position_at_end(body)
    return i


def _global_part(fn, b: ll.IRBuilder, ws, a, me, words, kind: int, done) -> None:
    """Find the array holding a (a loop over the launch's few ranges), then check its words."""
    ranges = b.inttoptr(b.load(b.gep(ws, [const_int(I32, S_RANGES)]), align=8), I64P)
    n = b.load(b.gep(ws, [const_int(I32, S_NRANGES)]), align=8)
    i = _loop_head(fn, b, "range", lambda i: b.icmp_signed("<", i, n), done)
    row = b.mul(i, const_int(I64, 3))
    lo = b.load(b.gep(ranges, [row]))
    length = b.load(b.gep(ranges, [b.add(row, const_int(I64, 1))]))
    d = b.sub(a, lo)
    inside = b.icmp_unsigned("<", d, length)
    found = fn.append_basic_block("range.found")
    nxt = fn.append_basic_block("range.next")
    b.cbranch(inside, found, nxt)
    b.position_at_end(nxt)
    i.add_incoming(b.add(i, const_int(I64, 1)), nxt)
    b.branch(i.parent)
    b.position_at_end(found)
    shadow = b.inttoptr(b.load(b.gep(ranges, [b.add(row, const_int(I64, 2))])), I64P)
    nwords = b.lshr(b.add(length, const_int(I64, 3)), const_int(I64, 2))
    _words(fn, b, shadow, b.lshr(d, const_int(I64, 2)), nwords, words, me, kind, shared=False, ws=ws, done=done)


def _words(fn, b: ll.IRBuilder, base, idx, nwords, words, me, kind: int, shared: bool, ws, done) -> None:
    """For each word idx .. idx + words - 1 (those inside the shadow): check it; count a hazard."""
    j = _loop_head(fn, b, "word", lambda j: b.and_(b.icmp_unsigned("<", j, words),
                                                      b.icmp_unsigned("<", b.add(idx, j), nwords)), done)
    w = b.add(idx, j)
    cell = b.gep(base, [b.mul(w, const_int(I64, 2))])
    haz = _check_word(b, cell, b.gep(cell, [const_int(I64, 1)]), me, kind, shared)
    count = fn.append_basic_block("word.hazard")
    nxt = fn.append_basic_block("word.next")
    b.cbranch(haz, count, nxt)
    b.position_at_end(count)
    hp = b.gep(ws, [const_int(I32, S_HAZ)])
    b.store(b.add(b.load(hp, align=8), const_int(I64, 1)), hp, align=8)
    b.branch(nxt)
    b.position_at_end(nxt)
    j.add_incoming(b.add(j, const_int(I64, 1)), nxt)
    b.branch(j.parent)


def _check_word(b: ll.IRBuilder, wslot, rslot, me, kind: int, shared: bool) -> ll.Value:
    """The shadow protocol of one word (module doc); i1: a hazard.  Shared memory belongs to one worker
    (plain loads and stores); global slots are updated atomically, each side first publishing itself and
    then reading the other slot (so that of two concurrent accesses one sees the other)."""
    def c(v: int) -> ll.Value:
        return const_int(I64, v & ((1 << 64) - 1))

    def field_eq(x, shift: int, mask: int) -> ll.Value:
        return b.icmp_unsigned("==", b.and_(b.lshr(x, c(shift)), c(mask)), c(0))

    def scope(old) -> ll.Value:
        """old is an access unordered with me (either thread)."""
        x = b.xor(old, me)
        same_cta = field_eq(x, 0, 0xFFFFFFFF)
        unordered = b.and_(field_eq(x, 32, 0xFFFF), b.or_(b.not_(field_eq(x, 53, 0x1F)), field_eq(x, 58, 0xF)))
        nonzero = b.icmp_unsigned("!=", old, c(0))
        # shared memory: another CTA's entry is stale (CTAs share no shared memory)
        other = const_int(I1, 0) if shared else b.not_(same_cta)
        return b.and_(nonzero, b.or_(b.and_(same_cta, unordered), other))

    def conflict(old) -> ll.Value:
        other_thread = b.icmp_unsigned("!=", b.and_(b.xor(old, me), c(THREAD_BITS)), c(0))
        both_atomic = b.icmp_unsigned("!=", b.and_(b.and_(old, me), c(ATOMIC)), c(0))
        return b.and_(b.and_(scope(old), other_thread), b.not_(both_atomic))

    def multi(old) -> ll.Value:
        return b.and_(b.icmp_unsigned("!=", b.and_(old, c(MULTI)), c(0)), scope(old))

    def load(p) -> ll.Value:
        if shared:
            return b.load(p, align=8)
        v = b.load_atomic(p, "seq_cst", align=8)
        return v

    def update(p, new_of) -> ll.Value:
        """p = new_of(old), atomically; returns old."""
        if shared:
            old = b.load(p, align=8)
            b.store(new_of(old), p, align=8)
            return old
        first = b.load_atomic(p, "monotonic", align=8)
        pre = b.block
        fn = pre.function
        loop = fn.append_basic_block("cas")
        out = fn.append_basic_block("cas.done")
        b.branch(loop)
        b.position_at_end(loop)
        old = b.phi(I64)
        old.add_incoming(first, pre)
        pair = b.cmpxchg(p, old, new_of(old), "seq_cst", "seq_cst")
        seen, ok = b.extract_value(pair, 0), b.extract_value(pair, 1)
        old.add_incoming(seen, loop)
        b.cbranch(ok, out, loop)
        b.position_at_end(out)
        return old

    if kind == _K_STORE:
        if shared:
            old_w = b.load(wslot, align=8)
            b.store(me, wslot, align=8)
        else:
            old_w = b.atomic_rmw("xchg", wslot, me, "seq_cst")
        old_r = load(rslot)
        return b.or_(b.or_(conflict(old_w), conflict(old_r)), multi(old_r))
    if kind == _K_ATOMIC:
        # a plain access in scope stays the writer: a later atomic of another thread still races with it
        old_w = update(wslot, lambda old: b.select(
            b.and_(scope(old), b.icmp_unsigned("==", b.and_(old, c(ATOMIC)), c(0))), old, me))
        old_r = load(rslot)
        return b.or_(b.or_(conflict(old_w), conflict(old_r)), multi(old_r))
    # a plain load: publish me as the reader (multi when another thread read in scope), then the writer.
    # Most loads change nothing -- the word's reader is already me, or already `multi` in this scope
    # (a tile every thread of a CTA reads) -- and skip the update (its store, or its compare-and-swap)
    def reader(old) -> ll.Value:
        other = b.icmp_unsigned("!=", b.and_(b.xor(old, me), c(THREAD_BITS)), c(0))
        again = b.or_(other, b.icmp_unsigned("!=", b.and_(old, c(MULTI)), c(0)))
        return b.select(b.and_(scope(old), again), b.or_(me, c(MULTI)), me)
    seen = load(rslot)
    done_already = b.or_(b.icmp_unsigned("==", seen, me), multi(seen))
    fn = b.block.function
    upd = fn.append_basic_block("reader.update")
    join = fn.append_basic_block("reader.done")
    b.cbranch(done_already, join, upd)
    b.position_at_end(upd)
    update(rslot, reader)
    b.branch(join)
    b.position_at_end(join)
    return conflict(load(wslot))


# ---------------------------------------------------------------------- the runtime side
class Screen:
    """One screened launch's memory: per-worker state, epochs and shared-memory shadow; per array its
    shadow; the range table [lo, len, shadow address] the checkers search."""

    def __init__(self, kernel, args, nworkers: int, nthreads: int, shared_bytes: int,
                 private: set[int] = frozenset()) -> None:
        from ptxjit.runtime.memory import memory_of

        # only memory the kernel may write can race: the arrays of parameters it may write through
        # (runtime/access.py's sound analysis).  The checkers find an array by address, so a read through
        # another parameter of the same memory still meets its shadow; reads of the rest cost a miss.
        # Nor can the arrays every thread touches a part of its own (`private`, private.py).
        writes = [p.may_write for p in kernel._access.params]
        arrays = []
        for i, a in enumerate(args):
            arr = memory_of(a)
            if arr is not None and arr.nbytes and (i >= len(writes) or writes[i]) and i not in private:
                arrays.append(arr)
        if kernel.module.globals.nbytes:
            arrays.append(kernel.module.globals)
        self.shadows = [np.zeros(2 * ((a.nbytes + 3) // 4), np.uint64) for a in arrays]
        self.ranges = np.array([[a.ctypes.data, a.nbytes, s.ctypes.data] for a, s in zip(arrays, self.shadows,
                                                                                          strict=True)]
                               or [[0, 0, 0]], np.int64)
        words = (shared_bytes + 3) // 4
        self.ws = np.zeros((nworkers, WS_STRIDE), np.int64)
        self.epochs = np.zeros((nworkers, 2, max(nthreads, 1)), np.int32)
        self.shared = np.zeros((nworkers, 2 * max(words, 1)), np.uint64)
        for w in range(nworkers):
            self.ws[w, S_EPOCH] = self.epochs[w, 0].ctypes.data
            self.ws[w, S_WEPOCH] = self.epochs[w, 1].ctypes.data
            self.ws[w, S_SHADOW] = self.shared[w].ctypes.data
            self.ws[w, S_SHWORDS] = words
            self.ws[w, S_RANGES] = self.ranges.ctypes.data
            self.ws[w, S_NRANGES] = len(arrays)
        self.table = np.zeros(4, np.int64)
        self.table[T_WS] = self.ws.ctypes.data

    def hazards(self) -> int:
        return int(self.ws[:, S_HAZ].sum())


def screen(kernel, grid, block, args, shared_mem: int, timeout: float | None) -> int | None:
    """Run the launch once with the shadow probes (bounds-checked); the hazards it counted (0: no race),
    or None when the screen cannot judge the launch (a raw Pointer argument without its memory) and nothing
    ran."""
    from ptxjit.checking.private import unshadowed
    from ptxjit.instrument.probes import ProbeLaunch, lowered_kernel
    from ptxjit.instrument.trace import kernel_plan
    from ptxjit.lower.layout import shared_layout
    from ptxjit.runtime.launch import worker_count
    from ptxjit.runtime.memory import Pointer

    if any(isinstance(a, Pointer) and a.memory is None for a in args):
        return None
    nthreads = block[0] * block[1] * block[2]
    layout = shared_layout(kernel.module.ir, kernel.fn)
    shared_bytes = layout.dynamic_offset + shared_mem if shared_mem else layout.static_size
    plan = kernel_plan(kernel, block, ("memory",))
    private, skip = unshadowed(kernel, lowered_kernel(kernel, block), grid, block, args)
    spec = ShadowSpec(plan, skip)
    s = Screen(kernel, args, worker_count(), nthreads, shared_bytes, private)
    kernel(grid, block, args, shared_mem, timeout=timeout, checked=True, probes=ProbeLaunch(spec, s.table))
    return s.hazards()


def worker_state_row(b: ll.IRBuilder, L: ll.Value, W: ll.Value, entry: int, stride: int) -> None:
    """W[W_PROBE] = this worker's state row: the probe table's entry `entry` (an array of per-worker rows
    of `stride` 8-byte words), row W_ID.  The checking screens' worker prologue."""
    table = b.inttoptr(b.load(b.gep(L, [const_int(I32, abi.L_PROBE)])), I64P)
    base = b.load(b.gep(table, [const_int(I32, entry)]))
    wid = b.load(b.gep(W, [const_int(I32, abi.W_ID)]))
    b.store(b.add(base, b.mul(wid, const_int(I64, 8 * stride))), b.gep(W, [const_int(I32, abi.W_PROBE)]))
