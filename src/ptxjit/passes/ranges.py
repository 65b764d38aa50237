"""Value ranges of integer registers, known at translation time: every value a register can hold lies in
[lo, hi] with 0 <= lo <= hi < 2**(width - 1).

For bounds checks that the translation can decide (lower/safety/bounds.py): histogram's `atomicAdd(&h[data[i]],
1)` indexes a 256-word shared array with a byte it loaded, so the address is inside the array whatever the
data.  Only non-negative values below the register's sign bit are tracked, where the signed and unsigned
readings agree and no extension or truncation changes a value; anything else (or not understood) has no
range.  A register read before any write is 0 (lower/function.py), so the range of a register that some
path reads before writing starts from [0, 0]; the others start empty (a kernel's `ld.param` of a
divisor then keeps its value's range, without 0).  The analysis joins every definition (guarded ones
too) until nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import defs_uses, liveness

Range = tuple[int, int]
_LOADED = {"u8": 255, "u16": 65535}  # ld.u8/.u16 zero-extend into the register
_BITS = {"8": 8, "16": 16, "32": 32, "64": 64}
_WIDEN_AFTER = 4  # passes before a still-growing range is given up (loops)


class _Pending(Exception):
    """An operand with no value yet (its definitions not reached in this pass): its user waits."""


def _bits(t: str) -> int | None:
    return _BITS.get(t[1:]) if t[:1] in "usb" else None


# the largest block CUDA allows: 1024 threads, at most 64 in z
_MAX_NTID = {"x": 1024, "y": 1024, "z": 64}


def special_ranges(block: tuple[int, int, int] | None,
                   grid: tuple[int, int, int] | None = None) -> dict[str, Range]:
    """The thread index and block size as the launch bounds them: exact with the block shape known
    (a block-specialized translation), else CUDA's limits; %laneid below the warp size; with the grid
    known (a tier-1 version's assumption, ptxjit/tiers) the CTA index and grid size too."""
    out: dict[str, Range] = {"%laneid": (0, 31)}
    for i, d in enumerate("xyz"):
        n = block[i] if block is not None else None
        out[f"%tid.{d}"] = (0, (n if n is not None else _MAX_NTID[d]) - 1)
        out[f"%ntid.{d}"] = (n, n) if n is not None else (1, _MAX_NTID[d])
        if grid is not None and grid[i] > 0:
            out[f"%ctaid.{d}"] = (0, grid[i] - 1)
            out[f"%nctaid.{d}"] = (grid[i], grid[i])
    return out


def value_ranges(fn: ir.Function, sym_value: Callable[[str], int | None],
                 block: tuple[int, int, int] | None = None, grid: tuple[int, int, int] | None = None,
                 param_value: Callable[[str, int, int], int | None] | None = None) -> dict[str, Range]:
    """Register -> [lo, hi] for the integer registers whose every value is known to lie there.
    `sym_value(name)`: a symbol's value as an operand (a shared variable's offset), None if unknown;
    `block`: the block shape the translation is for (bounds %tid and %ntid; None: CUDA's limits);
    `grid` and `param_value(name, offset, size)` (a parameter's bytes as an unsigned integer, None where
    not known): a tier-1 version's constants (ptxjit/tiers/specialize.py), true whenever it runs."""
    blocks, _ = liveness(fn)
    read_first = blocks[0].live_in if blocks else set()  # read before any write on some path: 0 then
    # None: no range; absent from `state` but in `fn.regs`: no definition reached yet (empty)
    state: dict[str, Range | None] = {r: (0, 0) for r, t in fn.regs.items() if _bits(t) and r in read_first}
    empty = {r for r, t in fn.regs.items() if _bits(t) and r not in read_first}
    special = special_ranges(block, grid)
    parts = _tid_parts(fn)
    remainders = _remainders(fn, blocks)

    def fits(r: Range | None, bits: int | None) -> Range | None:
        return r if r is not None and bits and 0 <= r[0] and r[1] < 1 << (bits - 1) else None

    def operand(op, t: str) -> Range | None:
        if isinstance(op, ir.Imm):
            return fits((int(op.value), int(op.value)), _bits(t))
        if isinstance(op, ir.Sym):
            v = sym_value(op.name)
            return fits((v + op.offset, v + op.offset), _bits(t)) if v is not None else None
        if isinstance(op, ir.Reg) and not (op.neg or op.sel or op.minus):
            if op.name in empty:
                raise _Pending
            return fits(state.get(op.name, special.get(op.name)), _bits(t))
        return None

    def value(ins: ir.Instr) -> Range | None:
        ops, op, types = ins.operands, ins.opcode, ins.types()
        t = types[-1] if types else ""
        if ins.has("sat", "cc", "hi") or not t:
            return None
        if op == "ld" and len(ops) == 2 and t in _LOADED:
            return 0, _LOADED[t]
        if op == "ld" and len(ops) == 2 and param_value is not None and ins.has("param") \
                and isinstance(ops[1], ir.Addr) and isinstance(ops[1].base, ir.Sym) and _bits(t):
            v = param_value(ops[1].base.name, ops[1].offset, _bits(t) // 8)
            return fits((v, v), _bits(t)) if v is not None else None
        if op == "mov" and len(ops) == 2:
            return operand(ops[1], t)
        if op == "cvt" and len(ops) == 2 and len(types) == 2:
            return fits(operand(ops[1], types[1]), _bits(types[0]))
        if op in ("and", "or", "xor") and len(ops) == 3:
            # bits of non-negative operands: `and` keeps at most the smaller's (a non-negative mask bounds
            # it whatever the other operand), `or`/`xor` at most the larger's bit length
            a, c = operand(ops[1], t), operand(ops[2], t)
            if op == "and":
                his = [x[1] for x in (a, c) if x is not None]
                mask = int(ops[2].value) if isinstance(ops[2], ir.Imm) else None
                if mask is not None and mask >= 0:
                    his.append(mask)
                if not his:
                    return None
                # a mask whose low k bits are clear gives a multiple of 2**k (scan's `(tid >> 3) & ~3`)
                low = (mask & -mask).bit_length() - 1 if mask else 0
                return fits((0, min(his) >> low << low), _bits(t))
            if a is None or c is None:
                return None
            return fits((0, (1 << max(a[1], c[1]).bit_length()) - 1), _bits(t))
        if op == "rem" and t.startswith("u") and len(ops) == 3 and isinstance(ops[2], ir.Imm) \
                and int(ops[2].value) > 0:
            return fits((0, int(ops[2].value) - 1), _bits(t))
        if op in ("div", "rem") and t[:1] in "us" and len(ops) == 3:
            # non-negative operands (below the sign bit: signed and unsigned agree), a positive divisor:
            # framework kernels' `(i / plane) % channels` with the sizes known
            a, c = operand(ops[1], t), operand(ops[2], t)
            if a is None or c is None or c[0] <= 0:
                return None
            if op == "div":
                return a[0] // c[1], a[1] // c[0]
            return 0, min(a[1], c[1] - 1)
        if op == "shr" and len(ops) == 3 and isinstance(ops[2], ir.Imm) and 0 <= int(ops[2].value) < 64:
            a = operand(ops[1], t)
            return (a[0] >> int(ops[2].value), a[1] >> int(ops[2].value)) if a else None
        wide = ins.has("wide")
        out_bits = (_bits(t) or 0) * (2 if wide else 1)
        if op == "shl" and len(ops) == 3 and isinstance(ops[2], ir.Imm) and 0 <= int(ops[2].value) < 64:
            a, s = operand(ops[1], t), int(ops[2].value)
            return fits((a[0] << s, a[1] << s), out_bits) if a else None
        xs = [operand(o, t) for o in ops[1:3]]
        if op == "mad" and len(ops) == 4:  # (.wide: the addend has the result's width)
            xs.append(operand(ops[3], f"{t[0]}{out_bits}"))
        if None in xs:
            return None
        if op == "add" and len(xs) == 2:
            return fits((xs[0][0] + xs[1][0], xs[0][1] + xs[1][1]), out_bits)
        if op == "sub" and len(xs) == 2:
            lo = xs[0][0] - xs[1][1]
            if lo < 0 and _covers(parts, ops[1], ops[2]):
                lo = 0  # bitonic's `2 * tid - (tid & (j - 1))`: a multiple of tid less bits of tid
            rem = remainders.get(id(ins))
            if rem is not None:
                c = operand(ir.Reg(rem[1]), t)  # a - (a / c) * c: a's remainder (nvcc's `i % c` after `i / c`)
                if c is not None and c[0] > 0:
                    return 0, min(xs[0][1], c[1] - 1)
            return fits((lo, xs[0][1] - xs[1][0]), out_bits)
        if op == "mul" and len(xs) == 2 and (wide or ins.has("lo")):
            return fits((xs[0][0] * xs[1][0], xs[0][1] * xs[1][1]), out_bits)
        if op == "mad" and len(xs) == 3 and (wide or ins.has("lo")):
            return fits((xs[0][0] * xs[1][0] + xs[2][0], xs[0][1] * xs[1][1] + xs[2][1]), out_bits)
        return None

    for it in range(64):
        changed = False
        for ins in fn.instructions:
            d, _u = defs_uses(ins)
            if not d:
                continue
            single = len(d) == 1 and len(ins.operands) > 0 and isinstance(ins.operands[0], ir.Reg)
            try:
                v = value(ins) if single else None
            except _Pending:
                continue
            for r in d:
                if r in empty:  # its first definition reached
                    empty.discard(r)
                    state[r] = fits(v, _bits(fn.regs[r]))
                    changed = True
                    continue
                if r not in state:
                    continue
                old = state[r]
                # the register holds the result converted to its own width: in range only below its sign bit
                v_r = fits(v, _bits(fn.regs[r])) if old is not None else None
                new = None if v_r is None or old is None else (min(old[0], v_r[0]), max(old[1], v_r[1]))
                if new != old and it >= _WIDEN_AFTER and new is not None:
                    new = None  # still growing after a few passes: a loop-carried range, given up
                if new != old:
                    state[r] = new
                    changed = True
        if not changed:
            break
    else:
        return {}
    return {r: v for r, v in state.items() if v is not None}


def _tid_parts(fn: ir.Function) -> dict[str, tuple[str, str]]:
    """Registers with one definition that is a thread index x (`mov r, %tid.d`: the same in every
    execution of a thread), x shifted left ("up": >= x) or x masked or shifted right ("down": <= x):
    register -> (kind, the %tid register)."""
    defs: dict[str, list[ir.Instr]] = {}
    for ins in fn.instructions:
        for r in defs_uses(ins)[0]:
            defs.setdefault(r, []).append(ins)
    base: dict[str, str] = {}
    for r, ds in defs.items():
        i = ds[0]
        if len(ds) == 1 and i.opcode == "mov" and i.guard is None and len(i.operands) == 2 \
                and isinstance(i.operands[1], ir.Reg) and i.operands[1].name.startswith("%tid.") \
                and not (i.operands[1].neg or i.operands[1].sel or i.operands[1].minus):
            base[r] = i.operands[1].name
    out: dict[str, tuple[str, str]] = {r: ("same", x) for r, x in base.items()}
    for r, ds in defs.items():
        i = ds[0]
        if len(ds) != 1 or i.guard is not None or len(i.operands) != 3 or not isinstance(i.operands[1], ir.Reg):
            continue
        x = base.get(i.operands[1].name)
        if x is None or i.operands[1].neg:
            continue
        k = i.operands[2]
        if i.opcode == "shl" and isinstance(k, ir.Imm) and 0 <= int(k.value) < 16:
            out[r] = ("up", x)
        elif (i.opcode == "and" and i.types() and i.types()[-1] in ("b32", "u32", "s32")) or \
                (i.opcode == "shr" and isinstance(k, ir.Imm) and 0 <= int(k.value) < 32 and i.has("u32")):
            out[r] = ("down", x)
    return out


def _covers(parts: dict[str, tuple[str, str]], a, b) -> bool:
    """a >= b for every thread: a is a thread index x or x shifted left, b is x masked or shifted right
    (x < 2**10, so no shift by under 16 wraps a 32-bit register)."""
    if not (isinstance(a, ir.Reg) and isinstance(b, ir.Reg)):
        return False
    pa = ("same", a.name) if a.name.startswith("%tid.") else parts.get(a.name)
    pb = ("same", b.name) if b.name.startswith("%tid.") else parts.get(b.name)
    return pa is not None and pb is not None and pa[1] == pb[1] and pa[0] in ("same", "up") \
        and pb[0] in ("same", "down")



def _remainders(fn: ir.Function, blocks) -> dict[int, tuple[str, str]]:
    """nvcc's `i % c` after `i / c`: the `sub r, a, m` instructions (by id) where, earlier in the same
    basic block, `div q, a, c` and then `mul.lo m, q, c` (or `m, c, q`) computed m, with no write to a, c,
    q or m between them: r = a - (a / c) * c.  -> (a, c)."""

    out: dict[int, tuple[str, str]] = {}
    body = fn.body or []
    for blk in blocks:
        divs: dict[str, tuple[str, str]] = {}  # q -> (a, c) of a div still valid at this point
        muls: dict[str, tuple[str, str]] = {}  # m -> (a, c)
        for st in body[blk.start:blk.end]:
            if not isinstance(st, ir.Instr):
                continue
            ops, t = st.operands, st.types()[-1:]
            plain = len(ops) == 3 and st.guard is None and all(
                isinstance(o, ir.Reg) and not (o.neg or o.sel or o.minus) for o in ops)
            if plain and st.opcode == "sub" and ops[2].name in muls and muls[ops[2].name][0] == ops[1].name:
                out[id(st)] = muls[ops[2].name]
            found = None
            if plain and st.opcode == "div" and ops[1].name != ops[0].name != ops[2].name:
                found = ("div", ops[0].name, (ops[1].name, ops[2].name), t)
            elif plain and st.opcode == "mul" and st.has("lo"):
                for q, c in ((ops[1], ops[2]), (ops[2], ops[1])):
                    ac = divs.get(q.name)
                    if ac is not None and ac[1] == c.name and ac[2] == t:
                        found = ("mul", ops[0].name, ac[:2], t)
                        break
            written = set(defs_uses(st)[0])  # a write to a, c, q or m ends what it took part in
            for table in (divs, muls):
                for k, (a, c, *_) in list(table.items()):
                    if written & {k, a, c}:
                        del table[k]
            if found is not None and found[1] not in found[2]:
                (divs if found[0] == "div" else muls)[found[1]] = (*found[2], found[3])
    return {k: (a, c) for k, (a, c, *_) in out.items()}
