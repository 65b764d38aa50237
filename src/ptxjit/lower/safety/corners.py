"""The bounds precheck of fast copies (lower/safety/bounds.py): at the corners of the block, by launch, or per thread.

An access whose address is an affine function of the thread index over the whole block is in a range
for every thread iff it is in it at the block's corners (a range is convex).  What has to be shown is
that the address *is* affine over the block, which the translation cannot know where the computation
may wrap (32-bit indices) or where coefficients are parameters (jacobi's `y * pitch`).  Two ways:

* `corner_check`: coefficients known at translation time (passes/affine.py tid_affine): every register
  of the computation is evaluated at the block's corners and verified to equal its value at thread 0
  plus k.tid (in 128-bit arithmetic, so without wrapping).  Per CTA, inline.
* `grid_check`: coefficients known at run time only (passes/affine.py grid_linear: linear in %tid and
  %ctaid with launch-uniform coefficients).  Once per launch (remembered in the launch record), the
  computation is evaluated at the corners of the whole launch (blocks x grid, six axes) and at the unit
  vectors, which measure the coefficients; every value that is extended (where a wrap would break
  linearity: passes/affine.py extension_operands) and every address is verified exact at the corners:
  value(c) == value(0) + sum(c_i * k_i) in 128-bit arithmetic.  Per CTA then only the addresses at the
  block's corners are compared with the ranges, in a function of its own (see _lowering_into).

Why the corners suffice: a value computed from affine integers by add/sub/mul by a uniform factor/shl
is T mod 2**w for an affine integer function T, i.e. T - n(t) * 2**w with a wrap count
n(t) = floor((T + h) / 2**w) whose steps along an axis are all floor(k / 2**w) or floor(k / 2**w) + 1.
If the value is exact at both ends of an edge with the coefficient measured at its first step, the
steps along that edge sum to (length * first step), so all are equal: the value is affine along the
edge, and by the same argument along each axis between edges and faces, affine over the whole box with
the measured coefficients.  Same-width arithmetic keeps "affine modulo 2**w"; only extensions need the
value itself affine, so only they (and the addresses) are verified.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.lower import abi
from ptxjit.lower.builders import for_range
from ptxjit.lower.types import I1, I32, I64, PTR, const_int
from ptxjit.passes.affine import extension_operands
from ptxjit.passes.remat import recompute_order

I128 = ll.IntType(128)

# launch record word where a launch remembers its grid checks: the grid id's low 32 bits in the high half,
# and per grid_check of the translation (index j < GRID_CHECKS_KEPT) bit 2j passed, bit 2j + 1 failed.
# Each check verifies its own sites' computations: one passing says nothing of another's (a shared verdict
# once let a region whose 32-bit index wraps in the middle of the block run unchecked).  A stale word never
# matches (every launch has its own record and grid id); checks past GRID_CHECKS_KEPT verify every time.
L_GRID_CHECK = 30
GRID_CHECKS_KEPT = 15
assert L_GRID_CHECK < abi.L_SIZE and L_GRID_CHECK not in {
    v for k, v in vars(abi).items() if k.startswith("L_") and k != "L_SIZE"}, "launch record slot taken"

# FnLowering state that belongs to the LLVM function being built: swapped while a check function is
# lowered (values cached in one function's entry block must not be used in another)
_FN_STATE = ("llfn", "entry", "b", "launch", "worker", "tlin", "loop_tid", "regs", "var_ptrs", "cur", "probing")
_FN_CACHES = ("_entry_values", "_record_ptrs", "_shared_ptr", "_param_values", "_param_base", "_progress_ctr",
              "thread_local", "carry_flag")


def _at_thread(lw, c: tuple[int, int, int]) -> None:
    dims = lw.cg.block
    lw.loop_tid = tuple(const_int(I32, x) for x in c)
    lw.tlin = const_int(I32, c[0] + dims[0] * (c[1] + dims[1] * c[2]))
    lw._setup_vars()  # this thread's local variables


def _all_inside(b: ll.IRBuilder, inside: list) -> ll.Value:
    """Every site: all corners in one and the same range."""
    ok = const_int(I1, 1)
    for flags in inside:
        any_range = const_int(I1, 0)
        for f in flags:
            any_range = b.or_(any_range, f)
        ok = b.and_(ok, any_range)
    return ok


def ir_size(t: str) -> int:
    from ptxjit.frontend import ir

    return ir.type_size(t)


def _reg_int(lw, name: str) -> ll.Value:
    v = lw.b.load(lw.regs[name])
    return lw.b.ptrtoint(v, I64) if v.type == PTR else v


# ------------------------------------------------------------------------------ own functions
@contextlib.contextmanager
def _lowering_into(lw, f: ll.Function) -> Iterator[None]:
    """Lower into function `f` (same arguments as the kernel body) with fresh registers and caches."""
    saved = {k: getattr(lw, k, None) for k in _FN_STATE}
    caches = {k: lw.__dict__.pop(k) for k in _FN_CACHES if k in lw.__dict__}
    try:
        lw.llfn = f
        lw.entry = f.append_basic_block("entry")
        body = f.append_basic_block("check")
        lw.b = b = ll.IRBuilder(lw.entry)
        lw.launch, lw.worker, lw.tlin = f.args[0], f.args[1], f.args[2]
        lw.loop_tid, lw.cur, lw.probing = None, None, False
        lw.regs, lw.var_ptrs = {}, {}
        for name, slot in saved["regs"].items():
            ty = slot.type.pointee
            lw.regs[name] = b.alloca(ty)
            b.store(ll.Constant(ty, None), lw.regs[name])  # (as FnLowering.lower: never undef)
        b.branch(body)
        b.position_at_end(body)
        yield
    finally:
        for k in _FN_CACHES:
            lw.__dict__.pop(k, None)
        lw.__dict__.update(caches)
        for k, v in saved.items():
            setattr(lw, k, v)


class CornerChecks:
    """The precheck of fast copies (a base of lower/safety/bounds.py BoundsChecks): see the module's text."""

    def precheck(self, entry: ll.Block, tag: str) -> ll.Value:
        """From block `entry` (unterminated): whether every access collected while lowering a fast copy
        (addresses that are pure functions of %tid/%ctaid/parameters: passes/remat.py) is in bounds for
        every thread of the CTA; the builder is left after the check.  The fast copy runs only then,
        otherwise the checked copy.  Its accesses stay plain vector loads/stores (masked ones are slow on
        x86).  An access under a branch is checked for all threads first; where that fails, accesses under
        branches on pure predicates are checked again only where their conditions hold (a CTA where some
        thread that runs an access would fail it runs the checked copy, which faults only if the access
        really happens).

        Addresses affine in %tid are checked at the corners of the block only (lower/safety/corners.py):
        with coefficients known now (passes/affine.py tid_affine) every register of their computation is
        verified exact there; with coefficients known at run time only (grid_linear: jacobi's
        `y * pitch`) the launch verifies once that the computation is linear over the whole grid, and each
        CTA compares its corners with the ranges.  The other addresses are computed for every thread by a
        (vectorized) loop."""
        lw, b = self.lw, self.lw.b
        self.hoist_mode = False
        order = {id(i): k for k, i in enumerate(lw.fn.instructions)}
        self._affine_regs()
        sites = list(self.hoisted.values())
        b.position_at_end(entry)
        ok = self._check_all(sites, order, tag)
        if any(cond for *_, cond in sites):
            # accesses under conditions (passes/conditions.py): where the check above fails because a thread
            # that never runs one would overrun (a reduction's s[t + stride], the last CTA past n), check
            # every site again thread by thread, each where its conditions hold (most CTAs pass the first)
            pre = b.block
            slow = lw.llfn.append_basic_block(f"{tag}_conditions")
            join = lw.llfn.append_basic_block(f"{tag}_checked")
            b.cbranch(ok, join, slow)
            b.position_at_end(slow)
            again = self._loop_check(sites, order, f"{tag}_c")
            slow_end = b.block
            b.branch(join)
            b.position_at_end(join)
            ok = b.phi(I1)
            ok.add_incoming(const_int(I1, 1), pre)
            ok.add_incoming(again, slow_end)
        return ok

    def _check_all(self, sites: list, order: dict, tag: str) -> ll.Value:
        """Every site (addr, space, size, conditions) in bounds for every thread of the CTA, whatever the
        conditions: at the block's corners, with the launch's grid check, or by a loop over the threads."""
        lw, b = self.lw, self.lw.b
        corner, grid, ranged, looped = [], [], [], []
        for addr, space, size, _cond in sites:
            site = (addr, space, size, *self._chain(addr.base.name, order))
            regs = site[4]
            if lw.cg.block is not None and all(r in self._affine for r in regs):
                corner.append(site)
            elif lw.cg.block is not None and all(r in self._uniform or r in self._grid_linear for r in regs):
                grid.append(site)
            elif (r := self.offset_range(addr.base.name)) is not None:
                ranged.append((addr, space, size, r))
            else:
                looped.append((addr, space, size, ()))
        ok = self.corner_check(corner, order) if corner else const_int(I1, 1)
        if grid:
            ok = b.and_(ok, self.grid_check(grid, order))
        if ranged:
            ok = b.and_(ok, self._call_in_own_function("ranged", lambda: self._ranged_in_range(ranged, order)))
        if looped:
            ok = b.and_(ok, self._loop_check(looped, order, tag))
        return ok

    def _loop_check(self, sites: list, order: dict, tag: str) -> ll.Value:
        """Every thread's addresses, by a loop over the CTA's threads."""

        lw, b = self.lw, self.lw.b
        saved = (lw.tlin, lw.loop_tid, lw.thread_latch, lw.cur)
        with b.goto_entry_block():
            flag = b.alloca(I1, name="in_bounds")
        b.store(const_int(I1, 1), flag)
        entry = b.block
        head, _body, done = lw._thread_loops(entry, tag)
        body = b.block
        b.position_at_end(entry)
        b.branch(head)
        b.position_at_end(body)
        lw._setup_vars()
        names = {a.base.name for a, *_ in sites} | {p for *_, cond in sites for p, _ in cond}
        self._lower_slice(recompute_order(names, lw.remat, order))
        ok = const_int(I1, 1)
        for addr, space, size, cond in sites:
            chk = self.ok(addr, space, lw.address(addr, space), size)
            if chk is None:
                continue
            site_ok = chk[0]
            for p, holds in cond:  # a thread that does not run the access passes
                v = lw.read_pred(ir.Reg(p))
                site_ok = b.or_(site_ok, b.not_(v) if holds else v)
            ok = b.and_(ok, site_ok)
        b.store(b.and_(b.load(flag), ok), flag)
        b.branch(lw.thread_latch)
        b.position_at_end(done)
        lw.tlin, lw.loop_tid, lw.thread_latch, lw.cur = saved
        return b.load(flag)

    def _ranged_in_range(self, sites: list, order: dict) -> ll.Value:
        """Sites (addr, space, size, (u, lo, hi)) at u + v with v in [lo, hi] (ranges.py offset_range):
        both ends inside one and the same range, without wrapping between them."""

        lw, b = self.lw, self.lw.b
        lw.loop_tid, lw.tlin = (const_int(I32, 0),) * 3, const_int(I32, 0)  # (u is the same in every thread)
        lw._setup_vars()
        self._lower_slice(recompute_order({u for *_, (u, _lo, _hi) in sites}, lw.remat, order))
        ok = const_int(I1, 1)
        for addr, space, size, (u, lo, hi) in sites:
            base = _reg_int(lw, u)
            ends = [b.add(base, const_int(I64, (d + addr.offset) & ((1 << 64) - 1))) for d in (lo, hi)]
            ok = b.and_(ok, b.icmp_unsigned("<=", ends[0], ends[1]))
            where = [self._where(addr, space, b.inttoptr(e, PTR)) for e in ends]
            any_range = const_int(I1, 0)
            for j, rng in enumerate(where[0][1]):
                both = b.and_(self._in(where[0][0], rng, size), self._in(where[1][0], where[1][1][j], size))
                any_range = b.or_(any_range, both)
            ok = b.and_(ok, any_range)
        return ok

    def corner_check(self, sites: list, order: dict) -> ll.Value:
        """Sites ((addr, space, size, instrs, regs) each) whose registers all have coefficients known now."""

        lw, b = self.lw, self.lw.b
        saved = (lw.tlin, lw.loop_tid, lw.cur)
        dims = lw.cg.block
        instrs = sorted({id(i): i for s in sites for i in s[3]}.values(), key=lambda i: order[id(i)])
        regs = sorted({r for *_, rs in sites for r in rs if any(self._affine[r])})
        # registers a dense region copy restored as u + k.tid (bounds.py segments): set for each corner
        restored = sorted({r for *_, rs in sites for r in rs if r in lw.affine_restore})
        base: dict[str, tuple] = {}
        exact = {r: [const_int(I1, 1), const_int(I1, 1)] for r in regs}  # signed, unsigned
        inside = [[const_int(I1, 1) for _ in self._site_ranges(s)] for s in sites]
        for c in itertools.product(*[(0, n - 1) if n > 1 else (0,) for n in dims]):
            _at_thread(lw, c)
            for r in restored:
                u, k = lw.affine_restore[r]
                b.store(lw._affine_value(u, k, lw.loop_tid, nsw=False), lw.regs[r])
            self._lower_slice(instrs)
            for r in regs:
                vals = self._reg_value(r)
                if not any(c):
                    base[r] = vals
                    continue
                step = sum(k * x for k, x in zip(self._affine[r], c, strict=True))
                for j in (0, 1):
                    want = b.add(base[r][j], ll.Constant(I128, step))
                    exact[r][j] = b.and_(exact[r][j], b.icmp_unsigned("==", vals[j], want))
            self._in_ranges(sites, inside)
        lw.tlin, lw.loop_tid, lw.cur = saved
        ok = const_int(I1, 1)
        for r in regs:
            ok = b.and_(ok, b.or_(*exact[r]))
        return b.and_(ok, _all_inside(b, inside))

    def _in_ranges(self, sites: list, inside: list) -> None:
        """inside[site][range] &= this thread's access of the site is in that range."""
        lw, b = self.lw, self.lw.b
        for s, flags in zip(sites, inside, strict=True):
            addr, space, size, *_ = s
            a, rs, _kind = self._where(addr, space, lw.address(addr, space))
            for j, rng in enumerate(rs):
                flags[j] = b.and_(flags[j], self._in(a, rng, size))

    def grid_check(self, sites: list, order: dict) -> ll.Value:
        """Sites whose registers are grid-linear (passes/affine.py grid_linear): the launch's verdict on
        their linearity (computed by the first CTA of each worker that asks, then read from the launch
        record) and this CTA's corners in range."""
        lw, b = self.lw, self.lw.b
        j = lw.cg.__dict__.get("_grid_checks", 0)  # this check's own verdict bits (L_GRID_CHECK)
        lw.cg._grid_checks = j + 1
        if j >= GRID_CHECKS_KEPT:
            verdict = self._call_in_own_function("grid_check", lambda: self._grid_linear_verified(sites, order))
        else:
            slot = b.gep(lw.launch, [const_int(I32, L_GRID_CHECK)])
            key = b.shl(b.and_(lw.launch_slot(abi.L_GRIDID), const_int(I64, 0xFFFFFFFF)), const_int(I64, 32))
            known = b.load_atomic(slot, "monotonic", 8)
            mine = b.icmp_unsigned("==", b.and_(known, const_int(I64, -(1 << 32))), key)
            bits = b.lshr(known, const_int(I64, 2 * j))
            passed = b.and_(mine, b.trunc(bits, I1))
            decided = b.and_(mine, b.icmp_unsigned("!=", b.and_(bits, const_int(I64, 3)), const_int(I64, 0)))
            here = b.block
            compute = lw.llfn.append_basic_block("grid_check")
            done = lw.llfn.append_basic_block("grid_checked")
            b.cbranch(decided, done, compute)
            b.position_at_end(compute)
            linear = self._call_in_own_function("grid_check", lambda: self._grid_linear_verified(sites, order))
            bit = b.select(linear, const_int(I64, 1 << (2 * j)), const_int(I64, 2 << (2 * j)))
            b.atomic_rmw("or", slot, b.or_(key, bit), "monotonic")
            b.branch(done)
            b.position_at_end(done)
            verdict = b.phi(I1)
            verdict.add_incoming(passed, here)
            verdict.add_incoming(linear, compute)
        ranges = self._call_in_own_function("corners", lambda: self._corners_in_range(sites, order))
        return b.and_(verdict, ranges)

    def _corners_in_range(self, sites: list, order: dict) -> ll.Value:
        lw = self.lw
        dims = lw.cg.block
        instrs = recompute_order({a.base.name for a, *_ in sites}, lw.remat, order)
        inside = [[const_int(I1, 1) for _ in self._site_ranges(s)] for s in sites]
        for c in itertools.product(*[(0, n - 1) if n > 1 else (0,) for n in dims]):
            _at_thread(lw, c)
            self._lower_slice(instrs)
            self._in_ranges(sites, inside)
        return _all_inside(lw.b, inside)

    def _grid_linear_verified(self, sites: list, order: dict) -> ll.Value:
        """Over the whole launch (six axes: %tid within the block, %ctaid within the grid): every extended
        value and every address of `sites` is exactly affine (see the module's docstring)."""

        lw, b = self.lw, self.lw.b
        dims = lw.cg.block
        instrs = recompute_order({a.base.name for a, *_ in sites}, lw.remat, order)
        # the worker record, copied, so that %ctaid (read from it) can be set to any CTA of the grid
        with b.goto_entry_block():
            wrec = b.alloca(ll.ArrayType(I64, abi.W_SIZE))
            wptr = b.bitcast(wrec, lw.worker.type)
            for i in range(abi.W_SIZE):
                b.store(b.load(b.gep(lw.worker, [const_int(I32, i)])), b.gep(wptr, [const_int(I32, i)]))
        lw.worker = wptr
        grid = [lw.launch_slot(abi.L_GRID + i) for i in range(3)]
        # (register, signed) read with an extension, and the address registers narrower than 64 bits
        need: set[tuple[str, bool]] = set()
        for ins in instrs:
            need.update(extension_operands(ins, lw.reg_types))
        for addr, *_ in sites:
            t = lw.reg_types.get(addr.base.name)
            if t is not None and ir_size(t) < 8:
                need.add((addr.base.name, False))
        need_list = sorted(need)
        # unit vectors measure the coefficients (unrolled: 7 evaluations); the 63 other corners of the launch
        # verify them, in a loop (unrolled, their i128 arithmetic took LLVM 1.3 s for jacobi's 5 accesses)
        n64 = [const_int(I64, 0)] * 3

        def evaluate(tid: list[ll.Value], ctaid: list[ll.Value]) -> list[ll.Value]:
            for i in range(3):
                b.store(ctaid[i], b.gep(wptr, [const_int(I32, abi.W_CTA + i)]))
            lw.loop_tid = tuple(tid)
            lw.tlin = b.add(tid[0], b.mul(const_int(I32, dims[0]), b.add(tid[1], b.mul(const_int(I32, dims[1]),
                                                                                           tid[2]))))
            lw._setup_vars()
            self._lower_slice(instrs)
            vals = [b.sext(v, I128) if signed else b.zext(v, I128)
                    for v, signed in ((_reg_int(lw, r), signed) for r, signed in need_list)]
            for addr, space, *_ in sites:
                a, _rs, _kind = self._where(addr, space, lw.address(addr, space))
                vals.append(b.zext(a, I128))
            return vals

        def unit(axis: int) -> tuple[list[ll.Value], list[ll.Value]]:
            one = [const_int(I32, int(i == axis)) for i in range(3)]
            return (one, n64) if axis < 3 else ([const_int(I32, 0)] * 3, [const_int(I64, int(i == axis - 3))
                                                                           for i in range(3)])

        origin = evaluate([const_int(I32, 0)] * 3, n64)
        units = [evaluate(*unit(axis)) for axis in range(6)]
        coef = [[b.sub(u[j], origin[j]) for u in units] for j in range(len(origin))]

        with b.goto_entry_block():
            flag = b.alloca(I1, name="grid_linear")
        b.store(const_int(I1, 1), flag)
        with for_range(b, const_int(I32, 1), const_int(I32, 64)) as q:  # bits 0-2: the block's far corner
            bit = [b.icmp_unsigned("!=", b.and_(q, const_int(I32, 1 << i)), const_int(I32, 0)) for i in range(6)]
            tid = [b.select(bit[i], const_int(I32, dims[i] - 1), const_int(I32, 0)) for i in range(3)]
            ctaid = [b.select(bit[3 + i], b.sub(grid[i], const_int(I64, 1)), const_int(I64, 0)) for i in range(3)]
            vals = evaluate(tid, ctaid)
            at = [b.zext(t, I128) for t in tid] + [b.zext(c, I128) for c in ctaid]
            ok = b.load(flag)
            for j, v in enumerate(vals):
                want = origin[j]
                for axis in range(6):
                    want = b.add(want, b.mul(coef[j][axis], at[axis]))
                ok = b.and_(ok, b.icmp_unsigned("==", v, want))
            b.store(ok, flag)
        return b.load(flag)

    def _call_in_own_function(self, what: str, emit) -> ll.Value:
        """emit() lowered in an internal noinline function with the kernel body's arguments, and called.
        Inline, LLVM combined the evaluations at constant thread indices with the thread loop's index
        arithmetic and no longer vectorized jacobi's fast copy (an `or` where an add was)."""
        lw = self.lw
        main = lw.llfn
        f = ll.Function(lw.cg.llmod, ll.FunctionType(I1, [a.type for a in main.args]),
                        lw.cg.llmod.get_unique_name(f"{main.name}.{what}"))
        f.linkage = "internal"
        f.attributes.add("noinline")
        with _lowering_into(lw, f):
            lw.b.ret(emit())
        return lw.b.call(f, list(main.args))
