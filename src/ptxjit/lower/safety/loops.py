"""Bounds checks hoisted out of counted loops (part of lower/safety/bounds.py; the analysis: passes/ivloops.py).

Every edge into a counted loop's header from outside the loop goes through a block of its own (the
"preheader", made here the first time a branch or fallthrough to the header is lowered) that checks, for
each access whose address moves with the loop counter, the addresses at both ends of the counter's
range [i0, max(i0, bound - 1)], and that the counter cannot wrap; the result goes to a flag (false
until the loop is first entered).  Each such access then branches on the flag: set, the plain access;
clear, the usual per-access check.  The flag is invariant in the loop, so LLVM unswitches the loop
into a copy without checks and one with them (dot's grid-stride loop: the checks cost 1.26x -> 1.0x).
A thread whose range fails the check runs the checked copy, which faults only where an access really
goes out of bounds.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.isa.effects import space_of
from ptxjit.lower.types import I1, I64, PTR, const_int
from ptxjit.passes.ivloops import CountedLoop, counted_loops

_INT_BITS = {"b": True, "s": True, "u": True}
I128 = ll.IntType(128)


class LoopHoisting:
    """Per BoundsChecks (`bc`, lower/safety/bounds.py): the counted loops of the function, their flags and
    preheaders."""

    def __init__(self, bc) -> None:
        self.bc = bc
        lw = bc.lw
        fn = lw.fn
        self.index = {id(st): k for k, st in enumerate(fn.body or [])}
        self.instrs = {id(st): st for st in fn.body or [] if isinstance(st, ir.Instr)}

        def bits(name: str) -> int | None:
            t = fn.regs.get(name)
            return ir.type_size(t) * 8 if t and t[0] in _INT_BITS and t[1:].isdigit() else None

        loops = counted_loops(fn, lw.cg.yields, bits)
        self.by_header = {lp.header: lp for lp in loops}
        self.by_access = {a: lp for lp in loops for a in lp.accesses}
        self.flags: dict[int, ll.AllocaInstr] = {}
        self.preheaders: dict[int, ll.Block] = {}

    # ------------------------------------------------------------------ edges into a loop
    def entry(self, name: str, blk: ll.Block, fallthrough: bool) -> ll.Block:
        """The block an edge to label `name` (block `blk`) goes to: the loop's preheader for an edge
        from outside a counted loop, else `blk`.  `fallthrough`: from the statement before the label
        (else a branch, lw.cur)."""
        loop = self.by_header.get(name)
        if loop is None:
            return blk
        if not fallthrough:
            src = self.index.get(id(self.bc.lw.cur))
            if src is None or loop.start <= src <= loop.end:
                return blk
        pre = self.preheaders.get(id(blk))
        if pre is None:
            lw = self.bc.lw
            pre = self.preheaders[id(blk)] = lw.llfn.append_basic_block(f"{name.replace('$', '_')}_pre")
            with lw.b.goto_block(pre):
                saved = lw.cur
                lw.b.store(self._check(loop), self._flag(loop))
                lw.cur = saved
                lw.b.branch(blk)
        return pre

    def _flag(self, loop: CountedLoop) -> ll.AllocaInstr:
        f = self.flags.get(id(loop))
        if f is None:
            b = self.bc.lw.b
            with b.goto_entry_block():
                f = self.flags[id(loop)] = b.alloca(I1, name="loop_in_bounds")
                b.store(const_int(I1, 0), f)
        return f

    def covered(self, size: int) -> ll.Value | None:
        """For the access being lowered (lw.cur) of `size` bytes: its loop's flag, or None."""
        cur = self.bc.lw.cur
        loop = self.by_access.get(id(cur)) if cur is not None else None
        if loop is None or size > loop.accesses[id(cur)][2]:
            return None
        return self.bc.lw.b.load(self._flag(loop))

    # ------------------------------------------------------------------ the check on entry
    def _check(self, loop: CountedLoop) -> ll.Value:
        bc, lw = self.bc, self.bc.lw
        b = lw.b
        ok, count = self._count(loop)
        cache: dict = {}

        def atom(a) -> ll.Value:  # an atom's value on entry, as i128
            if a not in cache:
                kind, name = a
                v = b.load(lw.regs[name])
                if v.type == PTR:
                    v = b.ptrtoint(v, I64)
                cache[a] = b.zext(v, I128) if kind == "u32" else b.sext(v, I128)
            return cache[a]

        def value(lin) -> ll.Value:
            v = ll.Constant(I128, lin.const)
            for a, f in lin.atoms:
                v = b.add(v, b.mul(atom(a), ll.Constant(I128, f)))
            return v

        last_k = b.sext(b.sub(count, const_int(I64, 1)), I128)
        for aid, (base, delta, size) in loop.accesses.items():
            ins = self.instrs[aid]
            lw.cur = ins
            addr = ins.operands[0] if ins.opcode == "st" else ins.operands[1]
            space = space_of(ins)
            first = value(base)
            inside = None
            for e in (first, b.add(first, b.mul(last_k, value(delta)))):
                val = b.trunc(e, I64)
                ok = b.and_(ok, b.icmp_signed("==", b.sext(val, I128), e))  # (no 64-bit wrap)
                p = b.gep(lw.shared_ptr(), [val]) if space == "shared" else b.inttoptr(val, PTR)
                w = bc._where(addr, space, p)
                if w is None:
                    break
                a, rs, _kind = w
                flags = [bc._in(a, rng, size) for rng in rs]
                inside = flags if inside is None else [b.and_(x, y) for x, y in zip(inside, flags, strict=True)]
            else:
                any_range = const_int(I1, 0)
                for f in inside or ():
                    any_range = b.or_(any_range, f)
                ok = b.and_(ok, any_range)
        return ok

    def _count(self, loop: CountedLoop) -> tuple[ll.Value, ll.Value]:
        """(no wrap, number of iterations K >= 1 as i64) on entry."""
        lw = self.bc.lw
        b = lw.b
        t = "s32" if loop.signed else "u32"
        ext = b.sext if loop.signed else b.zext
        c0 = ext(lw.read(ir.Reg(loop.counter), t), I64)
        one = const_int(I64, 1)
        if loop.down:
            s = const_int(I64, loop.down)
            if loop.down_test == "ne":  # c0 = K * s exactly (as unsigned), else it wraps past 0
                u = b.zext(lw.read(ir.Reg(loop.counter), "u32"), I64)
                ok = b.and_(b.icmp_unsigned("!=", u, const_int(I64, 0)),
                            b.icmp_unsigned("==", b.urem(u, s), const_int(I64, 0)))
                return ok, b.select(ok, b.udiv(u, s), one)
            pos = b.icmp_signed(">", c0, const_int(I64, 0))
            return const_int(I1, 1), b.select(pos, b.sdiv(b.add(c0, const_int(I64, loop.down - 1)), s), one)
        ok = const_int(I1, 1)
        step = const_int(I64, 0)
        for a in loop.addends:
            v = ext(lw.read(a, t), I64)
            ok = b.and_(ok, b.icmp_signed(">", v, const_int(I64, 0)))
            step = b.add(step, v)
        limit = b.sub(const_int(I64, 0x7FFFFFFF if loop.signed else 0xFFFFFFFF), step)
        bound = ext(lw.read(loop.bound, t), I64)
        # no wrap: the counter (and every `counter + addends` of an iteration) stays <= MAX
        ok = b.and_(ok, b.and_(b.icmp_signed("<=", bound, limit), b.icmp_signed("<=", c0, limit)))
        last = b.select(b.icmp_signed(">=", c0, bound), c0, b.sub(bound, one))
        safe_step = b.select(ok, step, one)
        return ok, b.add(b.udiv(b.sub(last, c0), safe_step), one)
