"""Memory safety: bounds checks of kernel loads, stores and atomics (opt-in: `checked=True`,
PTXJIT_CHECKED=1; off by default until it costs little enough: see the note at the end).

Every global/generic/const access through a register address, and every shared/local access through a
register address, checks that [a, a + size) lies inside a legal range:

* global/generic: the arrays passed for the kernel's 64-bit parameters, the module's globals buffer,
  the kernel parameter buffer, the CTA's shared memory, the worker's local memory, and (device
  functions) the function's own local variables.  Where pointer inference proves that the address
  derives from kernel parameter k, only k's array is checked (one compare).
* shared: [0, shared size of the CTA); local: the thread's local memory.

Addresses given by a symbol plus a constant offset are not checked (they are not data-dependent).

The range table (`L_RANGES`) holds [lo, len) int64 pairs: one per 64-bit kernel parameter (len 0 for
non-pointers, the whole address space for a raw `Pointer`), then the globals and the parameter buffer;
runtime/launch.py fills it.  A bad access is not executed (a load gives 0), and no branch leaves the
thread loop: the thread records the access in its W_FAULT slot (load/select/store), and after the
CTA the worker loop turns the first recorded fault into ERR_FAULT.

Cost (LLVM 22): thread loops with checked accesses mostly no longer vectorize.  The conditional access
alone vectorizes (masked loads/stores), but with the W_FAULT store loop access analysis gives up
("cannot identify array bounds"); recording into worker-record slots that LLVM promotes to registers
(umin reductions) fails too: LLVM accepts one min/max per reduction chain.  Hence opt-in for now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.lower import abi
from ptxjit.lower.types import I1, I32, I64, const_int

if TYPE_CHECKING:
    from ptxjit.lower.function import FnLowering

# fault word (W_FAULT, per thread): bits 0..47 address (shared: offset) mod 2**48, 48..61 instruction
# id + 1, 62..63 kind; 0: no fault
ADDR_BITS = 48
ID_MAX = (1 << 14) - 1
KIND_HOST, KIND_SHARED, KIND_LOCAL = 0, 1, 2


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


def provenance(fn: ir.Function, kparams: set[str], pointer_regs: set[str]) -> dict[str, str]:
    """Pointer register -> the kernel parameter its value always derives from (where one does)."""
    from ptxjit.passes.dataflow import defs_uses

    defs: dict[str, list[ir.Instr]] = {}
    for ins in fn.instructions:
        d, _ = defs_uses(ins)
        for r in d:
            if r in pointer_regs:
                defs.setdefault(r, []).append(ins)
    top, bottom = "", None
    prov: dict[str, str | None] = {r: top for r in defs}

    def source(ins: ir.Instr):
        src = ins.operands[1:]
        if ins.opcode == "ld":
            a = src[0] if src else None
            if isinstance(a, ir.Addr) and isinstance(a.base, ir.Sym) and a.base.name in kparams:
                return a.base.name
            return bottom
        if ins.opcode == "cvta" and any(m.startswith("shared") for m in ins.mods):
            return bottom
        for s in src:
            if isinstance(s, ir.Reg) and s.name in pointer_regs:
                return prov.get(s.name, bottom)
        return bottom

    changed = True
    while changed:
        changed = False
        for r, ds in defs.items():
            cur = prov[r]
            if cur is bottom:
                continue
            for ins in ds:
                s = source(ins)
                if s == top:
                    continue
                if s is bottom or (cur != top and s != cur):
                    cur = bottom
                    break
                cur = s
            if cur != prov[r]:
                prov[r] = cur
                changed = True
    return {r: p for r, p in prov.items() if p}


class BoundsChecks:
    """Per FnLowering: range values (loaded once, in the entry block) and the checks themselves."""

    def __init__(self, lw: FnLowering) -> None:
        self.lw = lw
        cg = lw.cg
        self.enabled = cg.checked
        self.table_index: dict[str, int] = {}
        self.prov: dict[str, str] = {}
        if not self.enabled:
            return
        kp = cg.kernel.params
        self.table_index = {kp[i].name: j for j, i in enumerate(range_params(kp))}
        self.nparam_ranges = len(self.table_index)
        if lw.is_kernel:
            self.prov = provenance(lw.fn, set(cg.kparams), lw.pointer_regs)
        self._cache: dict = {}

    # ---------------------------------------------------------------- range values
    def _entry(self, key, make):
        v = self._cache.get(key)
        if v is None:
            with self.lw.b.goto_entry_block():
                v = make(self.lw.b)
            self._cache[key] = v
        return v

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

        def make(b):
            n = rng[1]
            fits = b.icmp_unsigned(">=", n, const_int(I64, size))
            return b.select(fits, b.add(n, const_int(I64, 1 - size)), const_int(I64, 0))
        return self._entry(key, make)

    def _in(self, a: ll.Value, rng, size: int) -> ll.Value:
        b = self.lw.b
        return b.icmp_unsigned("<", b.sub(a, rng[0]), self._limit(rng, size))

    def _local_ranges(self) -> list[tuple[ll.Value, ll.Value]]:
        """Local memory: the worker's (every thread's slices: kernel), or the function's own allocas."""
        lw = self.lw
        if lw.is_kernel:
            return [self._worker_range(abi.W_LOCAL, abi.W_LOCAL_SIZE)]
        out = []
        for v in lw.fn.vars:
            if v.space == "local" and v.name in lw.var_ptrs:
                p, n = lw.var_ptrs[v.name], max(v.size, 1)
                out.append(self._entry(("lv", v.name), lambda b, p=p, n=n: (b.ptrtoint(p, I64), const_int(I64, n))))
        return out

    # ---------------------------------------------------------------- checks
    def ok(self, addr: ir.Addr, space: str, p: ll.Value, size: int) -> tuple[ll.Value, ll.Value, int] | None:
        """(ok, fault address or offset, kind) for an access of `size` bytes at `p`, or None: unchecked."""
        if not self.enabled or space == "param" or isinstance(addr.base, ir.Sym):
            return None
        lw, b = self.lw, self.lw.b
        if space == "shared":
            off = b.sub(b.ptrtoint(p, I64), b.ptrtoint(lw.shared_ptr(), I64))
            rng = self._entry("shared_size", lambda b: (
                const_int(I64, 0), b.load(b.gep(lw.worker, [const_int(I32, abi.W_SHARED_SIZE)]))))
            return self._in(off, rng, size), off, KIND_SHARED
        a = b.ptrtoint(p, I64)
        if space == "local":
            rs = self._local_ranges()
            return self._any(a, rs, size), a, KIND_LOCAL
        base = addr.base
        k = self.prov.get(base.name) if isinstance(base, ir.Reg) else None
        if k is not None and k in self.table_index:
            return self._in(a, self._table(self.table_index[k]), size), a, KIND_HOST
        if self.lw.cg.uses_heap:  # device malloc: heap pointers have no known range
            return None
        rs = [self._table(j) for j in range(self.nparam_ranges + 2)]
        rs.append(self._worker_range(abi.W_SHARED, abi.W_SHARED_SIZE))
        rs.append(self._worker_range(abi.W_LOCAL, abi.W_LOCAL_SIZE))
        if not lw.is_kernel:
            rs += self._local_ranges()
        return self._any(a, rs, size), a, KIND_HOST

    def _any(self, a: ll.Value, rs: list, size: int) -> ll.Value:
        b = self.lw.b
        ok = const_int(I1, 0)
        for r in rs:
            ok = b.or_(ok, self._in(a, r, size))
        return ok

    def guarded(self, addr: ir.Addr, space: str, p: ll.Value, size: int, emit):
        """Run emit() (which returns None, a value or a list of values) only if the access is in
        bounds; otherwise record the fault and give zeros."""
        chk = self.ok(addr, space, p, size)
        if chk is None:
            return emit()
        ok, where, kind = chk
        lw, b = self.lw, self.lw.b
        self._record(ok, where, kind)
        pre = b.block
        then = lw.llfn.append_basic_block("inbounds")
        cont = lw.llfn.append_basic_block("after_access")
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

    def _record(self, ok: ll.Value, where: ll.Value, kind: int) -> None:
        """W_FAULT[tlin] = ok ? W_FAULT[tlin] : fault word (a plain load/select/store, no branch)."""
        lw, b = self.lw, self.lw.b
        arr = b.bitcast(lw.entry_record_ptr(abi.W_FAULT), I64.as_pointer())
        slot = b.gep(arr, [lw.tlin])
        old = lw.internal_access(b.load(slot, align=8))
        word = b.or_(b.and_(where, const_int(I64, (1 << ADDR_BITS) - 1)),
                     const_int(I64, pack_fault(lw.cg.location_id(lw.cur), kind)))
        lw.internal_access(b.store(b.select(ok, old, word), slot, align=8))
