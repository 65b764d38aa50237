"""Value ranges of integer registers, known at translation time: every value a register can hold lies in
[lo, hi] with 0 <= lo <= hi < 2**(width - 1).

For bounds checks that the translation can decide (lower/bounds.py): histogram's `atomicAdd(&h[data[i]],
1)` indexes a 256-word shared array with a byte it loaded, so the address is inside the array whatever the
data.  Only non-negative values below the register's sign bit are tracked, where the signed and unsigned
readings agree and no extension or truncation changes a value; anything else (or not understood) has no
range.  A register read before any write is 0 (lower/function.py), so every range includes 0's start: the
analysis begins from [0, 0] and joins every definition (guarded ones too) until nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import defs_uses

Range = tuple[int, int]
_LOADED = {"u8": 255, "u16": 65535}  # ld.u8/.u16 zero-extend into the register
_BITS = {"8": 8, "16": 16, "32": 32, "64": 64}
_WIDEN_AFTER = 4  # passes before a still-growing range is given up (loops)


def _bits(t: str) -> int | None:
    return _BITS.get(t[1:]) if t[:1] in "usb" else None


def value_ranges(fn: ir.Function, sym_value: Callable[[str], int | None]) -> dict[str, Range]:
    """Register -> [lo, hi] for the integer registers whose every value is known to lie there.
    `sym_value(name)`: a symbol's value as an operand (a shared variable's offset), None if unknown."""
    state: dict[str, Range | None] = {r: (0, 0) for r, t in fn.regs.items() if _bits(t)}  # None: no range

    def fits(r: Range | None, bits: int | None) -> Range | None:
        return r if r is not None and bits and 0 <= r[0] and r[1] < 1 << (bits - 1) else None

    def operand(op, t: str) -> Range | None:
        if isinstance(op, ir.Imm):
            return fits((int(op.value), int(op.value)), _bits(t))
        if isinstance(op, ir.Sym):
            v = sym_value(op.name)
            return fits((v + op.offset, v + op.offset), _bits(t)) if v is not None else None
        if isinstance(op, ir.Reg) and not (op.neg or op.sel or op.minus):
            return fits(state.get(op.name), _bits(t))
        return None

    def value(ins: ir.Instr) -> Range | None:
        ops, op, types = ins.operands, ins.opcode, ins.types()
        t = types[-1] if types else ""
        if ins.has("sat", "cc", "hi") or not t:
            return None
        if op == "ld" and len(ops) == 2 and t in _LOADED:
            return 0, _LOADED[t]
        if op == "mov" and len(ops) == 2:
            return operand(ops[1], t)
        if op == "cvt" and len(ops) == 2 and len(types) == 2:
            return fits(operand(ops[1], types[1]), _bits(types[0]))
        if op == "and" and len(ops) == 3 and isinstance(ops[2], ir.Imm) and int(ops[2].value) >= 0:
            return fits((0, int(ops[2].value)), _bits(t))  # whatever the other operand
        if op == "rem" and t.startswith("u") and len(ops) == 3 and isinstance(ops[2], ir.Imm) \
                and int(ops[2].value) > 0:
            return fits((0, int(ops[2].value) - 1), _bits(t))
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
            return fits((xs[0][0] - xs[1][1], xs[0][1] - xs[1][0]), out_bits)
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
            v = value(ins) if single else None
            for r in d:
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
