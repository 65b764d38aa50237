"""Memory safety: bounds checks of kernel loads, stores and atomics (on by default; `unchecked=True`,
PTXJIT_UNCHECKED=1 turn them off).

Every global/generic/const access through a register address, and every shared/local access through a
register address, checks that [a, a + size) lies inside a legal range:

* global/generic: the arrays passed for the kernel's 64-bit parameters, the module's globals buffer,
  the kernel parameter buffer, the CTA's shared memory, the worker's local memory, and (device
  functions) the function's own local variables.  Where pointer inference proves that the address
  derives from kernel parameter k, only k's array is checked (one compare).
* shared: [0, shared size of the CTA); local: the thread's local memory (a kernel: its own slice of the
  worker's local memory; a device function: that slice, its own `.local` variables, and the native
  stack frames of the calls it runs under, which hold its callers' `.local` variables -- a caller may
  pass it a local array by pointer).
* Where pointer inference proves that a (local or generic) address derives from a `.local` variable
  (nvcc's `mov.u64 %SPL, __local_depot0`, `cvta.local`, `add`), only that variable is legal: an index
  past the end of a local array faults, even where it lands in other local memory of the thread.

Addresses given by a symbol plus a constant offset are not checked (they are not data-dependent).

The range table (`L_RANGES`) holds [lo, len) int64 pairs: one per 64-bit kernel parameter (len 0 for
non-pointers, the whole address space for a raw `Pointer`), then the globals and the parameter buffer;
runtime/launch.py fills it.  A bad access is not executed (a load gives 0).

Where the checks go (what makes them cheap; measured by bench/, the `ptxjit_unchecked` peer):

* Hoisted (`precheck`): each loop over a CTA's threads (thread-loop mode, and region mode's dense
  copies) is lowered twice.  The fast copy leaves unchecked every access whose address is a pure
  function of %tid/%ctaid/parameters (passes/remat.py); before it, one check per CTA covers those
  accesses for all threads -- at the block's corners for addresses affine in %tid, by a vectorized loop
  over the threads otherwise.  A CTA that fails runs the fully checked copy.
* Decided at translation time: a shared access whose register's value range (passes/ranges.py, e.g. a
  loaded byte times 4) keeps it inside the static shared memory (histogram's `h[data[i]]`).
* Per access, branch-free (`redirected`), in the thread's inner loops: the pointer becomes a scratch
  area when out of bounds, so an unrolled loop body stays one basic block (SLP vectorization).
* Per access, with a branch (`guarded`) elsewhere: LLVM if-converts it into masked vector accesses
  when it vectorizes the loop over threads.  In region mode the fault is recorded on the branch's
  out-of-bounds side only (those loops are rarely vectorized; the reduction cost more than the check).

A fault is recorded without stopping the thread: in loop modes per access site as an unsigned-min
reduction of (thread << 48 | address) that LLVM vectorizes, written to W_FAULT of the faulting thread
after the loop (`flush_sites`); in other modes directly in W_FAULT.  After the CTA the worker loop turns
the first recorded fault into ERR_FAULT.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.isa.special import is_special
from ptxjit.lower import abi, heap_code
from ptxjit.lower.registry import RULES
from ptxjit.lower.safety.corners import CornerChecks
from ptxjit.lower.safety.loops import LoopHoisting
from ptxjit.lower.safety.ranges import RangeQueries
from ptxjit.lower.types import I1, I32, I64, PTR, VOID, const_int
from ptxjit.passes.affine import grid_linear, tid_affine
from ptxjit.passes.conditions import execution_conditions
from ptxjit.passes.dataflow import defs_uses, operand_reg_names
from ptxjit.passes.ivloops import inner_loop_instructions
from ptxjit.passes.pointers import provenance
from ptxjit.passes.remat import is_pure, recompute_order

# fault word (W_FAULT, per thread): bits 0..47 address (shared: offset) mod 2**48, 48..61 instruction
# id + 1, 62..63 kind; 0: no fault
ADDR_BITS = 48
ID_MAX = (1 << 14) - 1
KIND_HOST, KIND_SHARED, KIND_LOCAL = 0, 1, 2
HEAP_RANGE = ("device heap",)  # stands for the live blocks of the device heap in a list of ranges


def pack_fault(ins_id: int, kind: int) -> int:
    return (kind << 62) | (min(ins_id + 1, ID_MAX) << ADDR_BITS)


def unpack_fault(word: int) -> tuple[int, int, int]:
    """(instruction id or -1, kind, address modulo 2**48) of a fault word."""
    word &= (1 << 64) - 1
    ins = (word >> ADDR_BITS) & ID_MAX
    return (ins - 1 if 0 < ins < ID_MAX else -1), word >> 62, word & ((1 << ADDR_BITS) - 1)


def range_params(params: list[ir.VarDecl]) -> list[int]:
    """Indices of the kernel parameters that get a range table entry (64-bit scalars: pointers)."""
    return [i for i, p in enumerate(params) if not p.dims and ir.type_size(p.type) == 8]


class BoundsChecks(CornerChecks, RangeQueries):
    """Per FnLowering (`lw`, lower/function.py): range values (loaded once, in the entry block) and the
    checks themselves; the precheck of fast copies is CornerChecks' (lower/safety/corners.py)."""

    def __init__(self, lw) -> None:
        self.lw = lw
        cg = lw.cg
        self.enabled = cg.checked
        self.table_index: dict[str, int] = {}
        self.prov: dict[str, str] = {}
        self.local_vars: dict[str, ir.VarDecl] = {}
        self.sites: list[tuple[ll.AllocaInstr, int]] | None = None
        self.can_hoist = self.hoist_mode = False
        self.hoisted: dict[tuple, tuple[ir.Addr, str, int, tuple]] = {}  # (addr, space, size, conditions)
        self.loops = None  # counted loops' checks on entry (lower/safety/loops.py)
        if not self.enabled:
            return
        kp = cg.kernel.params
        self.table_index = {kp[i].name: j for j, i in enumerate(range_params(kp))}
        self.nparam_ranges = len(self.table_index)
        self.local_vars = {v.name: v for v in lw.fn.vars if v.space == "local"}
        self.prov = provenance(lw.fn, set(cg.kparams) if lw.is_kernel else set(), lw.pointer_regs,
                               frozenset(self.local_vars))
        # kernels lowered as loops over threads record faults per access site (see _record_site):
        # (alloca, packed instruction id/kind) per site; flushed to W_FAULT before every return
        # (the baseline build records a fault on the out-of-bounds path alone: _record_direct)
        self.sites = (
            [] if lw.is_kernel and (lw.thread_loop or lw.region_mode) and not cg.baseline else None)
        self._flush_groups: list[tuple[ll.Instruction, list]] = []
        # hoisting (see precheck): while a fast copy of a thread loop is lowered, accesses whose address
        # is a pure function of %tid/%ctaid/parameters go unchecked and are collected here
        self.can_hoist = self.sites is not None and not cg.baseline
        self.in_inner_loop = (inner_loop_instructions(lw.fn, cg.yields) if self.sites is not None else set())
        if cg.baseline:  # every access checked where it runs (ModuleCodegen baseline)
            return
        self.loops = LoopHoisting(self)

    def loop_entry(self, name: str, blk: ll.Block, fallthrough: bool = False) -> ll.Block:
        """Where an edge to label `name` goes: a counted loop's check on entry (loops.py), or `blk`."""
        return blk if self.loops is None else self.loops.entry(name, blk, fallthrough)

    # ---------------------------------------------------------------- range values
    def _entry(self, key, make):
        return self.lw.once_in_entry((id(self), key), make)

    def _table(self, k: int) -> tuple[ll.Value, ll.Value]:
        def make(b):
            slot = b.bitcast(b.gep(self.lw.launch, [const_int(I32, abi.L_RANGES)]), I64.as_pointer().as_pointer())
            tab = b.load(slot, align=8)
            lo = b.load(b.gep(tab, [const_int(I32, 2 * k)]), align=8)
            n = b.load(b.gep(tab, [const_int(I32, 2 * k + 1)]), align=8)
            for x in (lo, n):
                x.set_metadata("invariant.load", self.lw.cg.empty_md())
            return lo, n
        return self._entry(("tab", k), make)

    def _worker_range(self, base_slot: int, size_slot: int) -> tuple[ll.Value, ll.Value]:
        return self._entry(("w", base_slot), lambda b: (
            b.load(b.gep(self.lw.worker, [const_int(I32, base_slot)])),
            b.load(b.gep(self.lw.worker, [const_int(I32, size_slot)]))))

    def _limit(self, rng: tuple[ll.Value, ll.Value], size: int) -> ll.Value:
        """len - size + 1 (0 when no access of `size` bytes fits): ok iff (a - lo) <u limit."""
        key = ("lim", id(rng[1]), size)

        if isinstance(rng[1], ll.Constant):  # (a local variable's size) decided now
            return const_int(I64, max(rng[1].constant + 1 - size, 0))

        def make(b):
            n = rng[1]
            fits = b.icmp_unsigned(">=", n, const_int(I64, size))
            return b.select(fits, b.add(n, const_int(I64, 1 - size)), const_int(I64, 0))
        return self._entry(key, make)

    def _in(self, a: ll.Value, rng, size: int) -> ll.Value:
        b = self.lw.b
        if rng is HEAP_RANGE:  # inside a live block of the device heap (a call: device malloc is rare)
            return b.call(heap_code.function(self.lw.cg.llmod, "find"), [a, const_int(I64, size)])
        return b.icmp_unsigned("<", b.sub(a, rng[0]), self._limit(rng, size))

    def _local_ranges(self) -> list[tuple[ll.Value, ll.Value]]:
        """The thread's local memory.  A kernel: its slice of the worker's local memory (the current
        thread's: computed where the access is, as the thread loop and the corner checks set it).  A
        device function: its own allocas, the calling thread's slice, and the native stack from here up
        to where the worker began (W_STACK): the frames of the device functions it runs under."""
        lw = self.lw
        if lw.is_kernel:
            if not self._has_thread_slice():
                return []
            return [(lw.b.ptrtoint(lw.thread_local, I64), const_int(I64, lw.cg.local_stride(lw.fn)))]
        out = []
        for v in lw.fn.vars:
            if v.space == "local" and v.name in lw.var_ptrs:
                p, n = lw.var_ptrs[v.name], max(v.size, 1)
                out.append(self._entry(("lv", v.name), lambda b, p=p, n=n: (b.ptrtoint(p, I64), const_int(I64, n))))
        stride = lw.cg.local_stride(lw.cg.kernel)
        if stride:
            def slice_of(b):
                base = b.load(b.gep(lw.worker, [const_int(I32, abi.W_LOCAL)]))
                n = const_int(I64, stride)
                return b.add(base, b.mul(b.zext(lw.tlin, I64), n)), n
            out.append(self._entry("kernel_local", slice_of))

        def frames(b):
            sp = b.ptrtoint(b.call(lw.cg.intrinsic("llvm.stacksave.p0", PTR, [], exact=True), []), I64)
            return sp, b.sub(b.load(b.gep(lw.worker, [const_int(I32, abi.W_STACK)])), sp)
        out.append(self._entry("call_frames", frames))
        return out

    def _has_thread_slice(self) -> bool:
        return getattr(self.lw, "thread_local", None) is not None and self.lw.cg.local_stride(self.lw.fn) > 0

    def _local_var(self, addr: ir.Addr) -> ir.VarDecl | None:
        """The `.local` variable a register address always derives from (pointer provenance), if any."""
        base = addr.base
        k = self.prov.get(base.name) if isinstance(base, ir.Reg) else None
        return self.local_vars.get(k) if k is not None and k in self.lw.var_ptrs else None

    def _local_in_bounds_always(self, addr: ir.Addr, size: int) -> bool:
        """An access through a register that always holds a `.local` variable's address plus a constant
        (nvcc's `add.u64 %rd1, %SPL, 0` then `[%rd1+96]`): decided now, as a variable plus a constant."""
        var = self._local_var(addr)
        off = self._local_offsets().get(addr.base.name) if var is not None else None
        return off is not None and 0 <= off + addr.offset and off + addr.offset + size <= var.size

    def _local_offsets(self) -> dict[str, int]:
        """Register -> the constant it always adds to the `.local` variable it derives from (self.prov):
        every definition is a mov/cvta of the variable or of such a register, or an add/sub of such a
        register and an immediate, all with the same constant."""
        offs = self.__dict__.get("_loffs")
        if offs is not None:
            return offs

        local_regs = {r for r, k in self.prov.items() if k in self.local_vars}
        defs: dict[str, list[ir.Instr]] = {}
        for ins in self.lw.fn.instructions:
            for r in defs_uses(ins)[0]:
                if r in local_regs:
                    defs.setdefault(r, []).append(ins)
        unknown = object()
        val: dict[str, object] = dict.fromkeys(defs, unknown)  # unknown (not yet seen), int, or None

        def offset(ins: ir.Instr):
            src = ins.operands[1:]
            if ins.opcode in ("mov", "cvta") and len(src) == 1:
                s = src[0]
                if isinstance(s, ir.Sym):
                    return 0
                return val.get(s.name) if isinstance(s, ir.Reg) and not (s.neg or s.sel or s.minus) else None
            if ins.opcode in ("add", "sub") and len(src) == 2 and not ins.has("cc", "sat"):
                a, c = src
                if ins.opcode == "add" and isinstance(a, ir.Imm):
                    a, c = c, a
                if not (isinstance(a, ir.Reg) and isinstance(c, ir.Imm)) or a.neg or a.sel or a.minus:
                    return None
                base = val.get(a.name)
                if base is unknown or base is None:
                    return base
                return base + (c.value if ins.opcode == "add" else -c.value)
            return None

        changed = True
        while changed:
            changed = False
            for r, ds in defs.items():
                if val[r] is None:
                    continue
                new = val[r]
                for ins in ds:
                    o = offset(ins)
                    if o is unknown:
                        continue
                    if o is None or (new is not unknown and o != new):
                        new = None
                        break
                    new = o
                if new is not val[r] and new != val[r]:
                    val[r] = new
                    changed = True
        offs = self._loffs = {r: v for r, v in val.items() if isinstance(v, int)}
        return offs

    def _var_range(self, v: ir.VarDecl) -> tuple[ll.Value, ll.Value]:
        # (not cached: in a kernel the variable's address is the current thread's)
        return self.lw.b.ptrtoint(self.lw.var_ptrs[v.name], I64), const_int(I64, max(v.size, 1))

    # ---------------------------------------------------------------- checks
    def ok(self, addr: ir.Addr, space: str, p: ll.Value, size: int) -> tuple[ll.Value, ll.Value, int] | None:
        """(ok, fault address or offset, kind) for an access of `size` bytes at `p`, or None: unchecked."""
        if not self.enabled:
            return None
        if isinstance(addr.base, ir.Sym):  # a variable plus a constant: decided now
            if self.static_in_bounds(addr, size):
                return None
            if space == "shared":  # reported as the offset in the CTA's shared memory it is
                off, _ranges, kind = self._where(addr, space, p)
                return const_int(I1, 0), off, kind
            return const_int(I1, 0), self.lw.b.ptrtoint(p, I64), KIND_HOST
        if space == "param":
            return None
        if isinstance(addr.base, ir.Reg) and self._local_in_bounds_always(addr, size):
            return None
        if space == "shared" and isinstance(addr.base, ir.Reg) and self._shared_in_bounds_always(addr, size):
            return None
        if self.hoist_mode and isinstance(addr.base, ir.Reg) and self._hoistable(addr.base.name) \
                and -(1 << 47) <= addr.offset < (1 << 47):  # (larger offsets trap in lw.address)
            # (the predicates under which it runs, passes/conditions.py: checked where they hold)
            cond = () if self.corners_only else self._conditions().get(id(self.lw.cur), ())
            g = self.lw.cur.guard if self.lw.cur is not None and not self.corners_only else None
            if isinstance(g, ir.Reg) and g.name in self.lw.remat and not (g.sel or g.minus):
                cond = (*cond, (g.name, not g.neg))  # a predicated access: where its guard holds
            self.hoisted.setdefault((addr.base.name, addr.offset, space, size, cond), (addr, space, size, cond))
            return None  # checked for every thread at once, before the loop (precheck)
        w = self._where(addr, space, p)
        if w is None:
            return None
        a, rs, kind = w
        return self._any(a, rs, size), a, kind

    def static_in_bounds(self, addr: ir.Addr, size: int) -> bool:
        """An access of `size` bytes at variable + constant offset: inside the variable (or a variable of
        unknown size: extern shared, or not a variable)?  Outside, it faults whenever it runs.  An
        extern shared array ends where the launch's dynamic shared memory does (the launch refuses too
        little for the largest constant offset: runtime/args.py), and may not reach below the CTA's
        shared window (a negative offset past the static variables before it)."""
        v = self._variables().get(addr.base.name)
        if v is None or any(d is None for d in v.dims):
            if v is not None and v.space == "shared":
                start = self.lw.cg.shared.offsets.get(v.name)
                return start is None or start + addr.offset >= 0
            return True
        return 0 <= addr.offset and addr.offset + size <= v.size

    def _shared_in_bounds_always(self, addr: ir.Addr, size: int) -> bool:
        """A shared access through a register whose range (passes/ranges.py: e.g. a loaded byte times 4
        plus a shared array's offset) keeps it inside the CTA's static shared memory whatever the data."""
        r = self.register_ranges().get(addr.base.name)
        return r is not None and r[0] + addr.offset >= 0 \
            and r[1] + addr.offset + size <= self.lw.cg.shared.static_size

    def _variables(self) -> dict:
        vs = getattr(self, "_vars", None)
        if vs is None:
            lw = self.lw
            vs = self._vars = {v.name: v for v in [*lw.cg.module.globals, *lw.fn.params, *lw.fn.vars]}
        return vs

    def _where(self, addr: ir.Addr, space: str, p: ll.Value) -> tuple[ll.Value, list, int] | None:
        """(address or shared offset, the legal [lo, len) ranges, fault kind) of an access at `p`."""
        lw, b = self.lw, self.lw.b
        if space == "shared":
            off = b.sub(b.ptrtoint(p, I64), b.ptrtoint(lw.shared_ptr(), I64))
            rng = self._entry("shared_size", lambda b: (
                const_int(I64, 0), b.load(b.gep(lw.worker, [const_int(I32, abi.W_SHARED_SIZE)]))))
            return off, [rng], KIND_SHARED
        a = b.ptrtoint(p, I64)
        var = self._local_var(addr)
        if var is not None:
            return a, [self._var_range(var)], KIND_LOCAL
        if space == "local":
            return a, self._local_ranges(), KIND_LOCAL
        base = addr.base
        k = self.prov.get(base.name) if isinstance(base, ir.Reg) else None
        if k is not None and k in self.table_index:
            return a, [self._table(self.table_index[k])], KIND_HOST
        rs = [self._table(j) for j in range(self.nparam_ranges + 2)]
        if self.lw.cg.uses_heap:  # device malloc: the live blocks of the heap too (runtime/heap.py)
            rs.append(HEAP_RANGE)
        rs.append(self._worker_range(abi.W_SHARED, abi.W_SHARED_SIZE))
        rs.append(self._worker_range(abi.W_LOCAL, abi.W_LOCAL_SIZE))
        if not lw.is_kernel:
            rs += self._local_ranges()
        return a, rs, KIND_HOST

    def _any(self, a: ll.Value, rs: list, size: int) -> ll.Value:
        b = self.lw.b
        ok = const_int(I1, 0)
        for r in rs:
            ok = b.or_(ok, self._in(a, r, size))
        return ok

    def redirected(self, addr: ir.Addr, space: str, p: ll.Value, size: int, store: bool) -> ll.Value | None:
        """For a plain load or store in an inner loop of the thread (see inner_loop_instructions): the
        pointer to use, `p` when the access is in bounds, else a scratch area (zeros for a load, junk
        for a store), with the fault recorded; None where `guarded` is the better form.  No branch: an
        unrolled loop body stays one basic block, as the SLP vectorizer and the scheduler need (a branch
        per access made nbody 7x slower).  Elsewhere `guarded`'s branch is better: LLVM if-converts it
        into masked loads/stores when it vectorizes the loop over threads, where a select of pointers
        would become a gather."""
        if self.sites is None or not self._flush_groups or id(self.lw.cur) not in self.in_inner_loop:
            return None
        chk = self.ok(addr, space, p, size)
        if chk is None:
            return p
        ok, where, kind = chk
        b = self.lw.b
        proven = self.loops.covered(size) if self.loops is not None else None
        if proven is None:
            self._record_site(ok, where, kind)
            return b.select(ok, p, self.lw.cg.scratch_area(store, size))
        # in bounds for the whole loop (checked on entry): a branch LLVM unswitches out of the loop
        pre, slow = b.block, self.lw.llfn.append_basic_block("loop_unproven")
        join = self.lw.llfn.append_basic_block("after_check")
        b.cbranch(proven, join, slow)
        b.position_at_end(slow)
        self._record_site(ok, where, kind)
        q = b.select(ok, p, self.lw.cg.scratch_area(store, size))
        slow_end = b.block
        b.branch(join)
        b.position_at_end(join)
        phi = b.phi(p.type)
        phi.add_incoming(p, pre)
        phi.add_incoming(q, slow_end)
        return phi

    def guarded(self, addr: ir.Addr, space: str, p: ll.Value, size: int, emit):
        """Run emit() (which returns None, a value or a list of values) only if the access is in
        bounds; otherwise record the fault and give zeros."""
        chk = self.ok(addr, space, p, size)
        if chk is None:
            return emit()
        proven = self.loops.covered(size) if self.loops is not None else None
        if proven is None:
            return self._guarded(chk, emit)
        # in bounds for the whole loop (checked on entry): a branch LLVM unswitches out of the loop
        lw, b = self.lw, self.lw.b
        fast, slow = lw.llfn.append_basic_block("loop_proven"), lw.llfn.append_basic_block("loop_unproven")
        join = lw.llfn.append_basic_block("after_check")
        b.cbranch(proven, fast, slow)
        ends = []
        for blk, make in ((fast, emit), (slow, lambda: self._guarded(chk, emit))):
            b.position_at_end(blk)
            ends.append((make(), b.block))
            b.branch(join)
        b.position_at_end(join)
        if ends[0][0] is None:
            return None
        vals = [r if isinstance(r, list) else [r] for r, _ in ends]
        out = []
        for k in range(len(vals[0])):
            phi = b.phi(vals[0][k].type)
            for (_r, end), vs in zip(ends, vals, strict=True):
                phi.add_incoming(vs[k], end)
            out.append(phi)
        return out if isinstance(ends[0][0], list) else out[0]

    def _guarded(self, chk, emit):
        ok, where, kind = chk
        lw, b = self.lw, self.lw.b
        then = lw.llfn.append_basic_block("inbounds")
        cont = lw.llfn.append_basic_block("after_access")
        if lw.region_mode or lw.cg.baseline:
            # the fault is recorded on the out-of-bounds side only: region loops (lockstep rounds of
            # grid-stride loops, code between barriers) are rarely vectorized, and there a reduction per
            # access site kept live across the loop costs registers and a dependency chain per access
            # (dot 2.7x -> 1.1x, sgemm 1.65x -> 1.15x the unchecked time)
            oob = lw.llfn.append_basic_block("out_of_bounds")
            b.cbranch(ok, then, oob)
            b.position_at_end(oob)
            if lw.cg.baseline:
                self._record_direct(where, kind)
            else:
                self._record_fault(ok, where, kind)
            pre = b.block
            b.branch(cont)
        else:
            self._record_fault(ok, where, kind)
            pre = b.block
            b.cbranch(ok, then, cont)
        b.position_at_end(then)
        r = emit()
        then_end = b.block
        b.branch(cont)
        b.position_at_end(cont)
        if r is None:
            return None
        vals = r if isinstance(r, list) else [r]
        out = []
        for v in vals:
            phi = b.phi(v.type)
            phi.add_incoming(v, then_end)
            phi.add_incoming(ll.Constant(v.type, None), pre)
            out.append(phi)
        return out if isinstance(r, list) else out[0]

    def _record_fault(self, ok: ll.Value, where: ll.Value, kind: int) -> None:
        if self.sites is not None and self._flush_groups:
            self._record_site(ok, where, kind)
        else:
            self._record(ok, where, kind)

    def _record_direct(self, where: ll.Value, kind: int) -> None:
        """The baseline build, on the out-of-bounds path: the thread's fault word (W_FAULT[tlin]) and the
        worker's flag (W_FAULTED), set by a call of the module's one out-of-line recorder where the fault
        happens.  Nothing on the in-bounds path and no per-site reduction (the optimized builds keep those
        for the loop vectorizer, which the baseline does not run): 3 lines of IR off the in-bounds path
        per checked access instead of 15-20."""
        lw, b = self.lw, self.lw.b
        t = lw.tlin if lw.tlin.type == I32 else b.trunc(lw.tlin, I32)
        b.call(_fault_recorder(lw.cg.llmod), [lw.worker, t, where,
                                               const_int(I64, pack_fault(lw.cg.location_id(lw.cur), kind))])

    def _record_site(self, ok: ll.Value, where: ll.Value, kind: int) -> None:
        """site = umin(site, ok ? ~0 : tlin << 48 | address): one unsigned-min reduction per access
        site, which LLVM's loop vectorizer accepts beside masked loads and stores (a per-thread store
        would stop it), and which keeps the lowest faulting thread of the site."""
        lw, b = self.lw, self.lw.b
        with b.goto_entry_block():
            slot = b.alloca(I64, name="fault_site")
            b.store(const_int(I64, -1), slot)
        site = (slot, pack_fault(lw.cg.location_id(lw.cur), kind))
        self.sites.append(site)
        self._flush_groups[-1][1].append(site)
        word = b.or_(b.and_(where, const_int(I64, (1 << ADDR_BITS) - 1)),
                     b.shl(b.zext(lw.tlin, I64), const_int(I64, ADDR_BITS)))
        new = b.select(ok, const_int(I64, -1), word)
        umin = lw.cg.intrinsic("llvm.umin", I64, [I64, I64])
        b.store(b.call(umin, [b.load(slot), new]), slot)

    def begin_copy(self, fast: bool, corners_only: bool = False) -> None:
        """A copy of a thread loop is lowered next: `fast` ones leave hoistable accesses to precheck
        (`corners_only`: only those checked at the block's corners, for a copy run once per round of a
        lockstep loop, where a loop over the threads would cost as much as the round)."""
        self.hoist_mode = fast and self.can_hoist
        self.corners_only = corners_only
        self.hoisted = {}
        self.segment_defs: dict[str, ir.Instr] = {}
        self.segment_leaves: set[str] = set()
        self.segment_live: set[str] = set()  # segment_defs defined so far in the current segment
        self.in_segment = False

    # ---------------------------------------------------------------- region entry segments
    # A dense region copy starts with the registers that its preheader verified affine (regions.py
    # affine_restore: u + k.tid, e.g. the index of a grid-stride loop, rebuilt from the loop counters).
    # Up to the end of the first basic block (straight-line code), a register computed only from those
    # and from rematerializable registers is as pure a function of the thread index as a remat one, so
    # its accesses are hoisted too: corner-checked, with the restored registers set to u + k.c.
    def begin_segment(self, leaves) -> None:
        self.in_segment = self.hoist_mode
        self.segment_leaves = set(leaves) if self.in_segment else set()
        self.segment_live = set()

    def end_segment(self) -> None:
        self.in_segment = False
        self.segment_leaves = set()

    def note_instr(self, ins: ir.Instr) -> None:
        """After lowering `ins` inside a segment: which registers are still pure functions there."""
        if not self.in_segment:
            return

        d, _u = defs_uses(ins)
        lw = self.lw
        if not hasattr(self, "_ndefs"):
            self._ndefs: dict[str, int] = {}
            for i in lw.fn.instructions:
                for r in defs_uses(i)[0]:
                    self._ndefs[r] = self._ndefs.get(r, 0) + 1
        srcs = [x for op in ins.operands[1:] for x in operand_reg_names(op)]
        pure = (len(d) == 1 and ins.guard is None and is_pure(ins) and not ins.has("cc")
                and not any(isinstance(op, ir.Addr) for op in ins.operands)
                and all(x in lw.remat or x in self.segment_leaves or x in self.segment_live or is_special(x)
                        for x in srcs))
        if any(r in self.segment_leaves for r in d):  # a restored register redefined: the segment ends
            self.end_segment()  # (the corner check evaluates every definition from the restored values)
            return
        for r in d:
            if pure and self._ndefs.get(r) == 1:  # (read before this point: the previous iteration's value)
                self.segment_defs[r] = ins
                self.segment_live.add(r)

    def _hoistable(self, name: str) -> bool:
        lw = self.lw
        if name in lw.remat and not self.corners_only:
            # an address computed with a division (scalar on x86): the precheck's loop over the threads
            # would divide again for every thread (batchnorm checked 8.4 -> 12.5 ms); checked where it
            # is used instead, unless its range bounds it (offset_range: two compares per CTA)
            return not self.divides_by_unknown(name) or self.offset_range(name) is not None
        if name not in lw.remat and not (self.in_segment and (name in self.segment_live
                                                              or name in self.segment_leaves)):
            return False
        # (segment registers and lockstep copies: only where the corner check applies)
        _instrs, regs = self._chain(name, {id(i): k for k, i in enumerate(lw.fn.instructions)})
        return lw.cg.block is not None and all(r in self._affine_regs() for r in regs)

    def _conditions(self) -> dict:
        c = self.__dict__.get("_conds")
        if c is None:
            c = self._conds = execution_conditions(self.lw.fn, set(self.lw.remat))
        return c

    def _affine_regs(self) -> dict:
        if not hasattr(self, "_affine"):
            self._affine = tid_affine(self.lw.fn, set(self.lw.cg.kparams), self.lw.cg.block)
            self._uniform, self._grid_linear = grid_linear(self.lw.remat)  # coefficients known at run time
        return self._affine

    def _chain(self, name: str, order: dict) -> tuple[list[ir.Instr], list[str]]:
        """The instructions computing register `name` from leaves (remat and segment definitions, in
        program order) and the registers involved (restored segment leaves included)."""

        leaves = set(self.lw.affine_restore)  # (restored values: never recomputed from a definition)
        defs = {**self.lw.remat, **{r: i for r, i in self.segment_defs.items() if r not in leaves}}
        instrs = recompute_order({name}, defs, order)
        regs = [r for r, d in defs.items() if d in instrs]
        used = {x for i in instrs for op in i.operands[1:] for x in operand_reg_names(op)} | {name}
        return instrs, regs + sorted(used & leaves - set(regs))

    def _lower_slice(self, instrs: list[ir.Instr]) -> None:
        lw = self.lw
        for ins in instrs:
            lw.cur = ins
            RULES[ins.opcode].lower(lw, ins)

    def _reg_value(self, name: str) -> ll.Value:
        """Register `name` as an i128 pair (sign-extended, zero-extended)."""
        b = self.lw.b
        v = b.load(self.lw.regs[name])
        if v.type == PTR:
            v = b.ptrtoint(v, I64)
        i128 = ll.IntType(128)
        return b.sext(v, i128), b.zext(v, i128)

    def _site_ranges(self, site) -> list:
        addr, space, _size, *_ = site
        if space == "shared" or self._local_var(addr) is not None:
            return [None]
        if space == "local":  # (counted without emitting the kernel's range values here)
            return [None] * int(self._has_thread_slice()) if self.lw.is_kernel else self._local_ranges()
        k = self.prov.get(addr.base.name)
        if k is not None and k in self.table_index:
            return [None]
        return [None] * (self.nparam_ranges + 4 + (0 if self.lw.is_kernel else len(self._local_ranges()))
                         + (1 if self.lw.cg.uses_heap else 0))  # HEAP_RANGE

    def stop_if_faulted(self) -> None:
        """At a loop's poll (every POLL_MASK + 1 iterations, lower/progress.py): a fault recorded in this
        loop over the threads ends the launch now, as the GPU's illegal-address error would, so that a
        loop that never leaves its out-of-bounds range (it may count past its end forever) stops.
        (The baseline build: its kernel returns; the scheduler and the worker report W_FAULT.)"""
        if self.enabled and self.lw.cg.baseline and self.lw.is_kernel:
            b = self.lw.b
            flag = b.load(b.gep(self.lw.worker, [const_int(I32, abi.W_FAULTED)]))
            with b.if_then(b.icmp_unsigned("!=", flag, const_int(I64, 0)), likely=False):
                b.ret(const_int(I32, 0))
            return
        if not self.sites or not self._flush_groups or not self._flush_groups[-1][1]:
            return
        lw, b = self.lw, self.lw.b
        hit_any, word, tid = const_int(I1, 0), const_int(I64, 0), const_int(I64, 0)
        for slot, ident in self._flush_groups[-1][1]:
            v = b.load(slot)
            hit = b.icmp_unsigned("!=", v, const_int(I64, -1))
            word = b.select(hit, b.or_(b.and_(v, const_int(I64, (1 << ADDR_BITS) - 1)), const_int(I64, ident)), word)
            tid = b.select(hit, b.lshr(v, const_int(I64, ADDR_BITS)), tid)
            hit_any = b.or_(hit_any, hit)
        with b.if_then(hit_any, likely=False):
            res = b.cmpxchg(b.gep(lw.launch, [const_int(I32, abi.L_ERROR)]), const_int(I64, 0),
                            const_int(I64, abi.ERR_FAULT), "seq_cst", "seq_cst")
            with b.if_then(b.extract_value(res, 1)):  # (as the worker loop reports a fault after a CTA)
                b.store(lw._linear_cta(), b.gep(lw.launch, [const_int(I32, abi.L_ERR_CTA)]))
                b.store(tid, b.gep(lw.launch, [const_int(I32, abi.L_ERR_TID)]))
                b.store(word, b.gep(lw.launch, [const_int(I32, abi.L_ERR_ARG)]))
            lw._abandon()

    def loop_return(self, ret: ll.Instruction) -> None:
        """The return after a loop over the CTA's threads: the sites lowered from now on (the loop's
        body) flush before it (flush_sites), so each site's value lives only in its own loop."""
        if self.sites is not None:
            self._flush_groups.append((ret, []))

    def flush_sites(self) -> None:
        """Before the return after each thread loop: every site of the loop that saw a fault writes
        its fault word to W_FAULT of the (lowest) faulting thread, where the worker loop looks after
        the CTA.  (Traps return early without: the trap is the launch's error.)"""
        if not self.sites:
            return
        b = ll.IRBuilder()
        for ret, sites in self._flush_groups:
            if not sites:
                continue
            b.position_before(ret)
            arr = b.bitcast(b.load(b.bitcast(b.gep(self.lw.worker, [const_int(I32, abi.W_FAULT)]),
                                             PTR.as_pointer())), I64.as_pointer())
            for slot, ident in sites:
                v = b.load(slot)
                hit = b.icmp_unsigned("!=", v, const_int(I64, -1))
                cell = b.gep(arr, [b.select(hit, b.lshr(v, const_int(I64, ADDR_BITS)), const_int(I64, 0))])
                old = b.load(cell, align=8)
                word = b.or_(b.and_(v, const_int(I64, (1 << ADDR_BITS) - 1)), const_int(I64, ident))
                # (sites flush in program order: a thread's first faulting site is the one reported)
                first = b.and_(hit, b.icmp_unsigned("==", old, const_int(I64, 0)))
                b.store(b.select(first, word, old), cell, align=8)
                flag = b.gep(self.lw.worker, [const_int(I32, abi.W_FAULTED)])
                b.store(b.select(hit, const_int(I64, 1), b.load(flag)), flag)

    def _record(self, ok: ll.Value, where: ll.Value, kind: int) -> None:
        """W_FAULT[tlin] = ok ? W_FAULT[tlin] : fault word (a plain load/select/store, no branch)."""
        lw, b = self.lw, self.lw.b
        lw.cg.fault_scan = True  # (W_FAULTED is not set here: the worker loop scans W_FAULT after every CTA)
        arr = b.bitcast(lw.entry_record_ptr(abi.W_FAULT), I64.as_pointer())
        slot = b.gep(arr, [lw.tlin])
        old = lw.internal_access(b.load(slot, align=8))
        word = b.or_(b.and_(where, const_int(I64, (1 << ADDR_BITS) - 1)),
                     const_int(I64, pack_fault(lw.cg.location_id(lw.cur), kind)))
        lw.internal_access(b.store(b.select(ok, old, word), slot, align=8))


def _fault_recorder(mod: ll.Module) -> ll.Function:
    """record_fault(worker, thread, address, site): W_FAULT[thread] = the fault word unless the thread
    already has one (its first fault is the one reported), and W_FAULTED = 1.  One per module, not
    inlined: the baseline build's checked accesses call it on their out-of-bounds paths."""
    f = mod.globals.get("record_fault")
    if f is not None:
        return f
    i64p = I64.as_pointer()
    f = ll.Function(mod, ll.FunctionType(VOID, [i64p, I32, I64, I64]), name="record_fault")
    f.linkage = "internal"
    f.attributes.add("noinline")
    f.attributes.add("cold")
    w, t, where, site = f.args
    b = ll.IRBuilder(f.append_basic_block("entry"))
    arr = b.inttoptr(b.load(b.gep(w, [const_int(I32, abi.W_FAULT)])), i64p)
    slot = b.gep(arr, [t])
    old = b.load(slot, align=8)
    word = b.or_(b.and_(where, const_int(I64, (1 << ADDR_BITS) - 1)), site)
    b.store(b.select(b.icmp_unsigned("==", old, const_int(I64, 0)), word, old), slot, align=8)
    b.store(const_int(I64, 1), b.gep(w, [const_int(I32, abi.W_FAULTED)]))
    b.ret_void()
    return f
