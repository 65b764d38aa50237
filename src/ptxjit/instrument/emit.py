"""The probes as LLVM IR: `ProbeEmitter` (one per lowered function, FnLowering's `probes`) and the
worker-loop hooks (`worker_prologue`, `before_cta`, `after_cta`, called by ModuleCodegen._build_worker),
and `ProbeSpec`, the probe set a translation is given, whose methods they are.

The same hooks serve every lowering mode: the thread loop (barrier-free kernels), region mode (kernels
with bar.sync: one loop over the threads per barrier-to-barrier region, lower/regions.py) and the
per-thread scheduler; only the current thread (`lw.tlin`) and per-worker state (abi.W_PROBE) are used,
never the loop structure.  Values fixed for a CTA (the CTA index, buffer pointers, claim ends) are loaded
once in the function's entry block; the positions and the sequence counter are loads and stores of the
worker's state, marked as the runtime's own memory (`internal`) and the buffers as a scope of their own
(`trace`), so LLVM keeps kernel accesses, state and records apart.  A probe changes no kernel register or
memory: results are those of the uninstrumented code.

Counting mode: per counter execution an increment.  Trace mode: per record, position = pos++ (per type)
and seq++; the record goes to buffer[position] when the position is inside the CTA's claim, else to the
scratch record (dropped; counted from pos after the CTA) -- except in the thread loop's unchecked copy,
which runs only when the claim has room for every thread's most records (instrument/room.py).  Records
are written with non-temporal stores (the buffers are only read after the launch) where that pays
(`_streaming`).

In a kernel body without calls, the counters, positions and the sequence counter live in registers
(allocas: promoted, and in the thread loop reductions LLVM vectorizes) from the entry block, where they
are loaded from the worker's state, to every return, where `finish` writes them back (counting: adds
them, and their records per type to the CTA's totals).  Device functions, and kernels that call them
(the callee advances the same state), update the worker's state in memory directly.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.instrument.buffers import ADDR_BITS, ADDR_MASK
from ptxjit.instrument.clock import read_counter
from ptxjit.instrument.probes import (
    NTYPES,
    RECORD_TYPES,
    T_BARRIERS,
    T_BLOCKS,
    T_BRANCHES,
    T_MEMORY,
    Plan,
    is_cta_barrier,
)
from ptxjit.instrument.table import (
    TB_CAP,
    TB_CTA,
    TB_CTA_START,
    TB_CTA_TIME,
    TB_CTA_USED,
    TB_CURSOR,
    TB_PATTERNS,
    TB_WS,
    WS_BUF,
    WS_COUNTERS,
    WS_CTA,
    WS_END,
    WS_EPOCH,
    WS_PAT_CUR,
    WS_POS,
    WS_SCRATCH,
    WS_SEQ,
    WS_START,
    WS_STRIDE,
    WS_TOT,
    ws_slot,
)
from ptxjit.lower import abi
from ptxjit.lower.types import I1, I8, I32, I64, PTR, const_int

I64P = I64.as_pointer()
I32P = I32.as_pointer()
MASK32 = (1 << 32) - 1
_DRAINS = frozenset({"atom", "red", "membar", "fence"})  # locked instructions and fences (see _streaming)


class ProbeEmitter:
    def __init__(self, spec, lw) -> None:
        self.spec = spec
        self.plan = spec.plan
        self.lw = lw
        self.trace = spec.mode == "trace"
        self.fname = lw.fn.name
        self.stmt = {id(st): i for i, st in enumerate(lw.fn.body or [])}
        self.want = set(spec.types)
        self._cache: dict = {}
        # dynamic state in registers (see module doc): state slot -> alloca; counter -> alloca
        self.in_registers = lw.is_kernel and not any(i.opcode == "call" for i in lw.fn.instructions)
        self._regs: dict[int, ll.AllocaInstr] = {}
        self._counts: dict[int, ll.AllocaInstr] = {}
        self._pending: list = []  # values: memory records of the instruction being lowered
        # the room check (instrument/room.py): per type the most records a thread writes in one call,
        # None when unbounded; `unchecked`: the copy being lowered stores records without the check
        self._room: tuple[int, ...] | None | bool = False
        self.unchecked = spec.exact  # exact claims (instrument/independence.py): every store unchecked
        self.patterns = None  # counting with patterns: per-thread accumulators (instrument/patterns.py)
        if spec.patterns:
            from ptxjit.instrument.patterns import PatternEmitter

            self.patterns = PatternEmitter(self)

    # ------------------------------------------------------------------ hooks (FnLowering)
    def enter(self, ins) -> None:
        """Before instruction `ins` (and its guard): a basic block starts here when it is a block site."""
        site = self.plan.block_at.get((self.fname, self.stmt.get(id(ins), -1)))
        if site is None:
            return
        if not self.trace:
            self._count(site.counter)
        elif T_BLOCKS in self.want:
            self._write(T_BLOCKS, self._head(site.ident))

    def rule(self, ins, r):
        """The rule that lowers `ins`: `r`, or in the counting variant without memory accesses
        (spec.drop_memory) for a load, store or atomic one that only counts it."""
        if not self.spec.drop_memory:
            return r
        from ptxjit.instrument.independence import droppable

        kparams = self._cache.get("kparams")
        if kparams is None:
            kparams = self._cache["kparams"] = set(self.lw.cg.kparams) if self.lw.is_kernel else set()
        return _DROPPED if droppable(ins, kparams) else r

    def dropped(self, ins) -> None:
        """`ins` (guard holding) would access memory: the counting variant only counts a guarded
        access (its own counter; an unguarded one is its block's)."""
        if ins.guard is not None:
            site = self.plan.memory_at.get((self.fname, self.stmt.get(id(ins), -1), 0))
            if site is not None:
                self._count(site.counter)

    def execute(self, ins) -> None:
        """`ins` executes (its guard, if any, holds; a conditional branch: it is evaluated): its branch
        or barrier record; a CTA barrier starts the thread's next epoch."""
        key = (self.fname, self.stmt.get(id(ins), -1))
        branch = self.plan.branch_at.get(key)
        if branch is not None:
            self._check(branch, ins)
        if branch is not None and self.patterns is not None:
            self.patterns.branch(branch, self.lw.read_pred(ins.guard))
        if branch is not None and self.trace and T_BRANCHES in self.want:
            b = self.lw.b
            head = self._head(2 * branch.ident)
            taken = b.zext(self.lw.read_pred(ins.guard), I32)
            head[-1] = b.or_(head[-1], b.shl(taken, const_int(I32, 16)))  # the site's low bit
            self._write(T_BRANCHES, head)
        barrier = self.plan.barrier_at.get(key)
        if barrier is not None:
            self._check(barrier, ins)
            if not self.trace:
                own = self.plan.own_counter_at.get(key)
                if own is not None:  # guarded: its own counter (else its block's)
                    self._count(own)
            elif T_BARRIERS in self.want:
                self._write(T_BARRIERS, [read_counter(self.lw.b), *self._head(barrier.ident)])
        if self.trace and self.plan.has_barriers and is_cta_barrier(ins):
            b = self.lw.b
            p = b.gep(self._epochs(), [self.lw.tlin])
            self.lw.internal_access(b.store(b.add(self.lw.internal_access(b.load(p)), const_int(I32, 1)), p))

    def memory(self, ins, p: ll.Value, part: int) -> None:
        """`ins` accesses host pointer `p` (its access number `part`)."""
        if ins is None:
            return
        site = self.plan.memory_at.get((self.fname, self.stmt.get(id(ins), -1), part))
        if site is None:
            return
        self._check(site, ins)
        if not self.trace:
            if ins.guard is not None and part == 0:  # guarded: its own counter (else its block's)
                self._count(site.counter)
            if self.patterns is not None:
                self.patterns.memory(site, self._address(p, site.space))
            return
        if T_MEMORY not in self.want:
            return
        if self.spec.values:  # written by `after`, once the value is known (a load's result)
            self._pending.append((site, self._address(p, site.space)))
            return
        self._write(T_MEMORY, self._memory_words(self._address(p, site.space), site.ident))

    def after(self, ins) -> None:
        """After `ins` was lowered (where it executed): with values, its memory records, each with the
        bits of the first element accessed -- a load's or an atomic's result, a store's or a
        reduction's operand (cp.async: 0)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        value = self._value(ins)
        for site, addr in pending:
            self._write(T_MEMORY, [*self._memory_words(addr, site.ident), value])

    def _value(self, ins) -> ll.Value:
        from ptxjit.frontend import ir

        b, lw = self.lw.b, self.lw
        op = ins.opcode
        ops = ins.operands
        if op in ("ld", "ldu", "atom"):
            src = ops[0]
        elif op == "st":
            src = ops[1]
        elif op == "red":
            src = ops[1] if len(ops) > 1 else None
        else:
            src = None
        if isinstance(src, ir.Vec):
            src = src.items[0]
        ts = ins.types()
        if src is None or not ts or isinstance(src, ir.Sym):
            return const_int(I64, 0)
        v = lw.read(src, ts[-1])
        if not isinstance(v.type, ll.IntType):
            v = b.bitcast(v, _int_of(v.type))
        width = v.type.width
        if width < 64:
            return b.zext(v, I64)
        return v if width == 64 else b.trunc(v, I64)

    # ------------------------------------------------------------------ pieces
    def _check(self, site, ins) -> None:
        if site.text != ins.text:  # the plan was built from another form of the function
            raise AssertionError(f"probe plan out of step at {self.fname}:{site.stmt}: {site.text} vs {ins.text}")

    def _entry(self, key, make):
        return self.lw.once_in_entry((id(self), key), make)

    def _ws(self) -> ll.Value:
        raw = self.lw.entry_record_ptr(abi.W_PROBE)
        return self._entry("ws", lambda b: b.bitcast(raw, I64P))

    def _slot_ptr(self, k: int) -> ll.Value:
        ws = self._ws()
        return self._entry(("slot", k), lambda b: b.gep(ws, [const_int(I32, k)]))

    def _fixed(self, k: int) -> ll.Value:
        """A state slot that stays the same while the CTA runs, loaded once in the entry block."""
        ptr = self._slot_ptr(k)
        return self._entry(("fixed", k), lambda b: self.lw.internal_access(b.load(ptr, align=8)))

    def _fixed_ptr(self, k: int, ty: ll.Type) -> ll.Value:
        v = self._fixed(k)
        return self._entry(("fixed_ptr", k), lambda b: b.inttoptr(v, ty))

    def _bump(self, k: int, by: int = 1) -> ll.Value:
        """state[k] += by; the old value."""
        b, lw = self.lw.b, self.lw
        if self.in_registers:
            reg = self._regs.get(k)
            if reg is None:
                ptr = self._slot_ptr(k)

                def make(b):
                    a = b.alloca(I64, name=f"probe_state{k}")
                    b.store(lw.internal_access(b.load(ptr, align=8)), a)
                    return a
                reg = self._regs[k] = self._entry(("reg", k), make)
            old = b.load(reg)
            b.store(b.add(old, const_int(I64, by)), reg)
            return old
        ptr = self._slot_ptr(k)
        old = lw.internal_access(b.load(ptr, align=8))
        lw.internal_access(b.store(b.add(old, const_int(I64, by)), ptr, align=8))
        return old

    def finish(self) -> None:
        """After the function is lowered: before each of its returns, the state kept in registers goes
        back to the worker's state (positions, sequence), the counters are added to the worker's."""
        if not (self._regs or self._counts):
            return
        lw = self.lw
        b = ll.IRBuilder()
        for blk in list(lw.llfn.blocks):
            term = blk.terminator
            if term is None or term.opname != "ret":
                continue
            b.position_before(term)
            for k, reg in self._regs.items():
                lw.internal_access(b.store(b.load(reg), self._slot_ptr(k), align=8))
            tot = [None] * NTYPES
            for counter, reg in self._counts.items():
                n = b.load(reg)
                ptr = b.gep(self._fixed_ptr(WS_COUNTERS, I64P), [const_int(I64, counter)])
                lw.internal_access(b.store(b.add(lw.internal_access(b.load(ptr, align=8)), n), ptr, align=8))
                for t in self.spec.types:
                    r = self.plan.counter_records[counter][t]
                    if r:
                        add = b.mul(n, const_int(I64, r)) if r != 1 else n
                        tot[t] = add if tot[t] is None else b.add(tot[t], add)
            for t, v in enumerate(tot):
                if v is not None:
                    ptr = self._slot_ptr(ws_slot(t, WS_TOT))
                    lw.internal_access(b.store(b.add(lw.internal_access(b.load(ptr, align=8)), v), ptr, align=8))

    def _epochs(self) -> ll.Value:
        return self._fixed_ptr(WS_EPOCH, I32P)

    def _head(self, site: int, tid_site: bool = True) -> list[ll.Value]:
        """The i32 fields every record ends with (instrument/buffers.py record_dtypes): seq (when
        several record types are traced), epoch (kernels with CTA barriers), tid | site << 16 (unless
        `tid_site` is false: a packed memory key holds them)."""
        b, lw = self.lw.b, self.lw
        head = []
        if len(self.spec.types) > 1:
            head.append(b.trunc(self._bump(WS_SEQ), I32))
        if self.plan.has_barriers:
            head.append(lw.internal_access(b.load(b.gep(self._epochs(), [lw.tlin]))))
        if tid_site:
            head.append(b.or_(b.and_(lw.tlin, const_int(I32, 0xFFFF)), const_int(I32, (site << 16) & MASK32)))
        return head

    def _memory_words(self, addr: ll.Value, site: int) -> list[ll.Value]:
        """A memory record's fields but the value: addr and head, or with `spec.tid_bits` (set by
        ptxjit.trace when they fit, instrument/buffers.py key_tid_bits) one 64-bit key
        addr (low ADDR_BITS) | tid << ADDR_BITS | site << (ADDR_BITS + tid_bits), then seq and epoch:
        8 bytes a record instead of 12 in a barrier-free kernel.  Fewer bytes, and one store."""
        tid_bits = getattr(self.spec, "tid_bits", None)
        if tid_bits is None:
            return [addr, *self._head(site)]
        b = self.lw.b
        tid = b.zext(b.and_(self.lw.tlin, const_int(I32, (1 << tid_bits) - 1)), I64)
        top = b.or_(b.shl(tid, const_int(I64, ADDR_BITS)), const_int(I64, site << (ADDR_BITS + tid_bits)))
        return [b.or_(b.and_(addr, const_int(I64, ADDR_MASK)), top), *self._head(site, tid_site=False)]

    def _address(self, p: ll.Value, space: str) -> ll.Value:
        b, lw = self.lw.b, self.lw
        a = b.ptrtoint(p, I64)
        if space == "shared":
            return b.sub(a, b.ptrtoint(lw.shared_ptr(), I64))
        local = getattr(lw, "thread_local", None)
        if space == "local" and lw.is_kernel and local is not None:
            return b.sub(a, b.ptrtoint(local, I64))
        return a

    def _write(self, t: int, words: list[ll.Value]) -> None:
        """Write one record of type t: its fields (i64 or i32 values), packed in order."""
        b, lw = self.lw.b, self.lw
        pos = self._bump(ws_slot(t, WS_POS))
        if self.unchecked:  # the call's room check passed: consecutive records, consecutive addresses
            idx = pos
        else:
            ok = b.icmp_signed("<", pos, self._fixed(ws_slot(t, WS_END)))
            idx = b.select(ok, pos, self._fixed(ws_slot(t, WS_SCRATCH)))
        size = sum(w.type.width // 8 for w in words)
        packed: list[ll.Value] = []  # neighbouring i32 fields as one i64: fewer (non-temporal) stores
        for w in words:
            if packed and w.type.width == 32 and packed[-1].type.width == 32:
                lo, hi = b.zext(packed[-1], I64), b.zext(w, I64)
                packed[-1] = b.or_(lo, b.shl(hi, const_int(I64, 32)))
                continue
            packed.append(w)
        words = packed
        buf = self._fixed_ptr(ws_slot(t, WS_BUF), PTR)
        base = b.mul(idx, const_int(I64, size))
        off = 0
        for w in words:
            at = b.bitcast(b.gep(buf, [b.add(base, const_int(I64, off)) if off else base]), w.type.as_pointer())
            st = b.store(w, at, align=8 if size % 8 == 0 and off % 8 == 0 and w.type.width == 64 else 4)
            off += w.type.width // 8
            st.set_metadata("alias.scope", lw.cg.scopes("trace"))
            st.set_metadata("noalias", lw.cg.scopes("internal", "shared", "local"))
            if self._streaming():
                st.set_metadata("nontemporal", self._nontemporal())

    # ------------------------------------------------------------------ the room check (instrument/room.py)
    def room(self) -> tuple[int, ...] | None:
        """Per record type, the most records one thread writes in one call of this function (None: no
        bound, or the room check is off for this translation): computed once."""
        if self._room is False:
            lw = self.lw
            self._room = None
            if self.trace and self.spec.room and lw.is_kernel and self.in_registers:
                from ptxjit.instrument.room import record_bounds

                self._room = record_bounds(lw.fn, self.plan, self.spec.types, lw.suspends)
        return self._room

    def room_versions(self) -> tuple[bool, ...]:
        """The record-store versions of a copy of the thread loop to lower: unchecked (taken when
        `room_ok` holds) and checked, or just the checked one."""
        if self.spec.exact:  # one copy, unchecked (self.unchecked stays true)
            return (True,)
        room = self.room()
        return (True, False) if room is not None and any(room) else (False,)  # (no records: one copy)

    def room_ok(self, nthreads: ll.Value) -> ll.Value:
        """At the builder's position (before the loop over `nthreads` threads, i64): does every type's
        claim have room for nthreads x its per-thread bound more records?"""
        b = self.lw.b
        ok = const_int(I1, 1)
        for t, r in enumerate(self.room() or ()):
            reg = self._regs.get(ws_slot(t, WS_POS))
            if not r or reg is None:
                continue
            left = b.sub(self._fixed(ws_slot(t, WS_END)), b.load(reg))
            ok = b.and_(ok, b.icmp_signed(">=", left, b.mul(nthreads, const_int(I64, r))))
        return ok

    def _streaming(self) -> bool:
        """Store records with the non-temporal hint?  spec.nontemporal "always", "never", or "auto": not in
        the thread loop's unchecked copy (LLVM then writes a thread's records as one interleaved vector
        store: vadd's traced run 5.0x -> 2.7x the plain launch), nor in kernels with atomics or fences
        (a locked instruction drains the write-combining buffers, so every record becomes a partial-line
        write: histogram 8.5x -> 2.2x); elsewhere yes (bitonic 6.1x -> 5.2x)."""
        mode = self.spec.nontemporal
        if mode != "auto":
            return mode == "always"
        if self.unchecked and not (self.spec.exact and (self.lw.region_mode or not any(self.room() or ()))):
            # (exact claims store unchecked everywhere; where the room check gives no unchecked copy, in
            # region mode or without a bound, the stores stream as the checked code's do)
            return False
        key = "streaming"
        if key not in self._cache:
            self._cache[key] = not any(i.opcode in _DRAINS for i in self.lw.fn.instructions)
        return self._cache[key]

    def _nontemporal(self):
        md = self._cache.get("nontemporal")
        if md is None:
            md = self._cache["nontemporal"] = self.lw.cg.llmod.add_metadata([const_int(I32, 1)])
        return md

    def _count(self, counter: int) -> None:
        b, lw = self.lw.b, self.lw
        if self.in_registers:
            reg = self._counts.get(counter)
            if reg is None:
                def make(b):
                    a = b.alloca(I64, name=f"probe_count{counter}")
                    b.store(const_int(I64, 0), a)
                    return a
                reg = self._counts[counter] = self._entry(("count", counter), make)
            b.store(b.add(b.load(reg), const_int(I64, 1)), reg)
            return
        ptr = b.gep(self._fixed_ptr(WS_COUNTERS, I64P), [const_int(I64, counter)])
        lw.internal_access(b.store(b.add(lw.internal_access(b.load(ptr, align=8)), const_int(I64, 1)), ptr,
                                   align=8))
        for t in self.spec.types:
            r = self.plan.counter_records[counter][t]
            if r:
                self._bump(ws_slot(t, WS_TOT), r)


class _Dropped:
    """The stand-in rule of a memory access in the counting variant (ProbeEmitter.rule)."""
    handles_guard = False
    yields = False

    @staticmethod
    def lower(lw, ins) -> None:
        lw.probes.dropped(ins)


_DROPPED = _Dropped()


def _int_of(ty: ll.Type) -> ll.IntType:
    """The integer type of a float type's bits."""
    return ll.IntType({"half": 16, "bfloat": 16, "float": 32, "double": 64}.get(str(ty), 32))


# ---------------------------------------------------------------------- worker loop hooks
def _slot(b: ll.IRBuilder, base: ll.Value, k) -> ll.Value:
    return b.gep(base, [k if isinstance(k, ll.Value) else const_int(I32, k)])


def _table(b: ll.IRBuilder, L: ll.Value) -> ll.Value:
    return b.inttoptr(b.load(_slot(b, L, abi.L_PROBE)), I64P)


def _state(b: ll.IRBuilder, W: ll.Value) -> ll.Value:
    return b.inttoptr(b.load(_slot(b, W, abi.W_PROBE)), I64P)


def worker_prologue(spec, b: ll.IRBuilder, L: ll.Value, W: ll.Value) -> None:
    """W[W_PROBE] = this worker's state (the table's state array, row W_ID)."""
    base = b.load(_slot(b, _table(b, L), TB_WS))
    wid = b.load(_slot(b, W, abi.W_ID))
    b.store(b.add(base, b.mul(wid, const_int(I64, 8 * WS_STRIDE))), _slot(b, W, abi.W_PROBE))


def before_cta(spec, b: ll.IRBuilder, L: ll.Value, W: ll.Value, c: ll.Value, nthreads: ll.Value) -> None:
    """Before CTA c (linear index): reset the sequence counter (and the threads' epochs); trace: claim
    the CTA's records of each type with one atomic add on the type's cursor; count: zero the totals."""
    ws, T = _state(b, W), _table(b, L)
    b.store(const_int(I64, 0), _slot(b, ws, WS_SEQ))
    b.store(c, _slot(b, ws, WS_CTA))
    if spec.patterns:
        from ptxjit.instrument.patterns import before_cta as patterns_before_cta

        ctl = b.inttoptr(b.load(_slot(b, T, TB_PATTERNS)), I64P)
        patterns_before_cta(b, ctl, _slot(b, ws, WS_PAT_CUR), b.load(_slot(b, W, abi.W_ID)), c)
    if spec.mode == "trace":  # which worker ran the CTA, and when
        row = b.mul(c, const_int(I64, 3))
        times = b.inttoptr(b.load(_slot(b, T, TB_CTA_TIME)), I64P)
        b.store(b.load(_slot(b, W, abi.W_ID)), _slot(b, times, row))
        b.store(read_counter(b), _slot(b, times, b.add(row, const_int(I64, 1))))
    if spec.mode == "trace" and spec.plan.has_barriers:
        memset = b.module.globals.get("llvm.memset.p0.i64") or ll.Function(
            b.module, ll.FunctionType(ll.VoidType(), [PTR, I8, I64, I1]), name="llvm.memset.p0.i64")
        epochs = b.inttoptr(b.load(_slot(b, ws, WS_EPOCH)), PTR)
        b.call(memset, [epochs, const_int(I8, 0), b.mul(b.zext(nthreads, I64), const_int(I64, 4)),
                        const_int(I1, 0)])
    for t in spec.types:
        if spec.mode == "count":
            b.store(const_int(I64, 0), _slot(b, ws, ws_slot(t, WS_TOT)))
            continue
        claims = b.inttoptr(b.load(_slot(b, T, TB_CTA)), I64P)
        n = b.load(_slot(b, claims, b.add(b.mul(c, const_int(I64, NTYPES)), const_int(I64, t))))
        start = b.atomic_rmw("add", _slot(b, T, TB_CURSOR + t), n, "monotonic")
        cap = b.load(_slot(b, T, TB_CAP + t))
        end = b.add(start, n)
        end = b.select(b.icmp_signed("<", end, cap), end, cap)
        for k, v in ((WS_POS, start), (WS_START, start), (WS_END, end)):
            b.store(v, _slot(b, ws, ws_slot(t, k)))


def after_cta(spec, b: ll.IRBuilder, L: ll.Value, W: ll.Value, c: ll.Value) -> None:
    """After CTA c: count: its record totals per type; trace: where its records start and how many it
    wrote (attempted: more than its claim means dropped records)."""
    ws, T = _state(b, W), _table(b, L)
    if spec.mode == "trace":
        times = b.inttoptr(b.load(_slot(b, T, TB_CTA_TIME)), I64P)
        b.store(read_counter(b), _slot(b, times, b.add(b.mul(c, const_int(I64, 3)), const_int(I64, 2))))
    for t in spec.types:
        cell = b.add(b.mul(c, const_int(I64, NTYPES)), const_int(I64, t))
        if spec.mode == "count":
            tot = b.inttoptr(b.load(_slot(b, T, TB_CTA)), I64P)
            b.store(b.load(_slot(b, ws, ws_slot(t, WS_TOT))), _slot(b, tot, cell))
            continue
        start = b.load(_slot(b, ws, ws_slot(t, WS_START)))
        pos = b.load(_slot(b, ws, ws_slot(t, WS_POS)))
        b.store(start, _slot(b, b.inttoptr(b.load(_slot(b, T, TB_CTA_START)), I64P), cell))
        b.store(b.sub(pos, start), _slot(b, b.inttoptr(b.load(_slot(b, T, TB_CTA_USED)), I64P), cell))


class ProbeSpec:
    """The probe set of one translation, the object a translation is given (`ModuleCodegen(probes=...)`):
    its `key` is part of the translation cache key, `emitter(lw)` makes the per-function ProbeEmitter and
    its worker hooks set up each CTA; the lowering never imports this package, it only calls these
    methods.  mode 'count': block-execution counters and per-CTA record totals (the counting run);
    'trace': records written into the per-type buffers."""

    VERSION = 3

    def __init__(self, plan: Plan, mode: str, records: tuple[str, ...], generic: bool = False,
                 values: bool = False, room: bool = True, nontemporal: str = "auto",
                 drop_memory: bool = False, exact: bool = False, patterns: bool = False) -> None:
        assert mode in ("count", "trace")
        self.plan = plan
        self.mode = mode
        self.records = records
        self.types = tuple(RECORD_TYPES.index(r) for r in records)
        self.generic = generic  # translate for any block shape (the per-thread scheduler; tests)
        self.values = values and mode == "trace"  # memory records carry the value accessed
        # the room check (instrument/room.py): unchecked record stores where a call's records fit
        self.room = room and mode == "trace"
        self.nontemporal = nontemporal  # the non-temporal hint on record stores: "auto", "always", "never"
        # counting: the variant that performs no memory access (instrument/independence.py proved that
        # no record count depends on memory)
        self.drop_memory = drop_memory and mode == "count"
        # trace: every CTA's paths are those the counting run counted (same proof), so its records fill
        # its claim exactly: record stores need no check at all (instrument/room.py)
        self.exact = exact and mode == "trace"
        # counting: per-thread accumulators in sampled CTAs for branch uniformity and memory strides,
        # alignment and sectors (instrument/patterns.py)
        self.patterns = patterns and mode == "count"
        self.key = f"v{self.VERSION}:{mode}:{','.join(records)}" + (":values" if self.values else "") \
            + ("" if self.room else ":noroom") + ("" if nontemporal == "auto" else f":nt-{nontemporal}") \
            + (":nomem" if self.drop_memory else "") + (":exact" if self.exact else "") \
            + (":patterns" if self.patterns else "")

    def emitter(self, lw) -> ProbeEmitter:
        return ProbeEmitter(self, lw)

    def worker_prologue(self, b, L, W) -> None:
        worker_prologue(self, b, L, W)

    def before_cta(self, b, L, W, c, nthreads) -> None:
        before_cta(self, b, L, W, c, nthreads)

    def after_cta(self, b, L, W, c) -> None:
        after_cta(self, b, L, W, c)
