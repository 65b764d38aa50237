"""Which integer registers are affine in the thread index: value = kx*tid.x + ky*tid.y + kz*tid.z + u,
with constant coefficients and a part u that is the same for every thread of the CTA *when the
threads have taken the same path* (built from parameters, %ctaid, %ntid, %nctaid and constants).

Region mode saves the registers live across a suspension point per thread; restored from memory,
an index is opaque to LLVM, so loads through it become scalar gathers.  For the registers found
here, the dense copy of a region checks once per round that every thread's saved value really is
u + k.tid (threads may sit at different loop iterations) and then rebuilds them from u and the
thread loop's counters, which LLVM sees as contiguous addresses.  The analysis only nominates
candidates: correctness rests on that run-time check.
"""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import defs_uses

Coeffs = tuple[int, int, int]
_VARYING = "varying"
_TID = {"%tid.x": (1, 0, 0), "%tid.y": (0, 1, 0), "%tid.z": (0, 0, 1)}
_UNIFORM_SPECIAL = ("%ctaid", "%ntid", "%nctaid", "%gridid", "%warpsize")
_INT_TYPES = frozenset({"b32", "s32", "u32", "b64", "s64", "u64"})


def tid_affine(fn: ir.Function, kernel_params: set[str],
               block: tuple[int, int, int] | None = None) -> dict[str, Coeffs]:
    """Integer registers whose every definition is affine in %tid with the same coefficients.

    With the block shape known (`block`), `and r, %tid.x, mask` whose mask keeps every bit a
    thread index of the block can have is %tid.x itself: Triton masks the thread index with its
    block size minus one (`and.b32 %r7, %r6, 127` in a 128-thread block) before every offset."""
    state: dict[str, Coeffs | str] = {}
    exact_tid = _exact_tid(fn) if block is not None else {}

    def coeffs(op) -> Coeffs | str | None:
        """The operand's coefficients, _VARYING, or None (not known yet)."""
        if isinstance(op, ir.Imm | ir.Sym):
            return (0, 0, 0)
        if isinstance(op, ir.Reg):
            if op.neg:
                return _VARYING
            if op.name in _TID:
                return _TID[op.name]
            if op.name.split(".")[0] in _UNIFORM_SPECIAL:
                return (0, 0, 0)
            if op.name.startswith("%") and op.name.split(".")[0] in ("%laneid", "%warpid", "%clock",
                                                                      "%clock64", "%smid"):
                return _VARYING
            return state.get(op.name)
        return _VARYING

    def scale(k: Coeffs, c: int) -> Coeffs:
        return (k[0] * c, k[1] * c, k[2] * c)

    def combine(a, b, sign: int = 1):
        if a == _VARYING or b == _VARYING:
            return _VARYING
        if a is None or b is None:
            return None
        return (a[0] + sign * b[0], a[1] + sign * b[1], a[2] + sign * b[2])

    def product(a, b, op_b) -> Coeffs | str | None:
        """a * b where only a constant factor keeps a non-uniform value affine."""
        ka, kb = a, b
        if ka == _VARYING or kb == _VARYING:
            return _VARYING
        if ka is None or kb is None:
            return None
        if kb == (0, 0, 0) and isinstance(op_b, ir.Imm):
            return scale(ka, int(op_b.value))
        if ka == (0, 0, 0) and kb == (0, 0, 0):
            return (0, 0, 0)
        return _VARYING

    def value(ins: ir.Instr) -> Coeffs | str | None:
        ops = ins.operands
        op = ins.opcode
        wide_ok = ins.has("lo") or ins.has("wide") or op in ("add", "sub", "shl", "mov", "cvt", "cvta")
        if op == "ld":
            a = ops[1]
            if ins.has("param") and isinstance(a, ir.Addr) and isinstance(a.base, ir.Sym) \
                    and a.base.name in kernel_params:
                return (0, 0, 0)
            return _VARYING
        if op in ("mov", "cvta") and len(ops) == 2:
            return coeffs(ops[1])
        if op == "cvt" and len(ops) == 2 and not any(m in ins.mods for m in ("sat",)):
            t = ins.types()
            if len(t) == 2 and t[0] in _INT_TYPES | {"u16", "s16"} and t[1] in _INT_TYPES:
                return coeffs(ops[1])
            return _VARYING
        if op == "and" and len(ops) == 3 and block is not None:
            return _identity_mask(ops[1], ops[2], exact_tid, block, ins.types())
        if not wide_ok:
            return _VARYING
        if op in ("add", "sub") and len(ops) == 3 and not ins.has("sat", "cc"):
            return combine(coeffs(ops[1]), coeffs(ops[2]), 1 if op == "add" else -1)
        if op == "mul" and len(ops) == 3:
            a, b = coeffs(ops[1]), coeffs(ops[2])
            r = product(a, b, ops[2])
            return r if r != _VARYING or not isinstance(ops[1], ir.Imm) else product(b, a, ops[1])
        if op == "shl" and len(ops) == 3 and isinstance(ops[2], ir.Imm):
            if not 0 <= int(ops[2].value) < 64:  # (PTX clamps the shift; a huge literal is no coefficient)
                return _VARYING
            a = coeffs(ops[1])
            return a if a in (None, _VARYING) else scale(a, 1 << int(ops[2].value))
        if op == "mad" and len(ops) == 4 and not ins.has("hi", "sat", "cc"):
            return combine(product(coeffs(ops[1]), coeffs(ops[2]), ops[2]), coeffs(ops[3]))
        return _VARYING

    instrs = fn.instructions
    for _ in range(8):  # loop-carried definitions need a few passes to settle
        changed = False
        for ins in instrs:
            d, _u = defs_uses(ins)
            if not d:
                continue
            v = value(ins) if len(d) == 1 and fn.regs.get(d[0]) in _INT_TYPES else _VARYING
            if v is None:
                continue
            for r in d:
                old = state.get(r)
                new = v if old is None or old == v else _VARYING
                if new != old:
                    state[r] = new
                    changed = True
        if not changed:
            break
    return {r: k for r, k in state.items() if k != _VARYING}


def _exact_tid(fn: ir.Function) -> dict[str, str]:
    """Registers equal to a %tid component: the one definition of each is `mov r, %tid.d`."""
    defs: dict[str, list[ir.Instr]] = {}
    for ins in fn.instructions:
        for r in defs_uses(ins)[0]:
            defs.setdefault(r, []).append(ins)
    out = {}
    for r, ds in defs.items():
        ins = ds[0]
        if len(ds) == 1 and ins.opcode == "mov" and ins.guard is None and len(ins.operands) == 2 \
                and isinstance(ins.operands[1], ir.Reg) and ins.operands[1].name in _TID \
                and not ins.operands[1].neg:
            out[r] = ins.operands[1].name
    return out


def _identity_mask(a, m, exact_tid: dict[str, str], block: tuple[int, int, int], types: list[str]):
    """The coefficients of `and a, m` where it is the identity on a thread index, else _VARYING."""
    if isinstance(a, ir.Imm):
        a, m = m, a
    if not (isinstance(a, ir.Reg) and isinstance(m, ir.Imm)) or a.neg or not types \
            or types[0] not in _INT_TYPES:
        return _VARYING
    comp = a.name if a.name in _TID else exact_tid.get(a.name)
    if comp is None:
        return _VARYING
    n = block["xyz".index(comp[-1])]
    mask = int(m.value) & ((1 << (8 * ir.type_size(types[0]))) - 1)
    top = (1 << max(n - 1, 0).bit_length()) - 1  # every bit an index below n can have
    return _TID[comp] if top & ~mask == 0 else _VARYING


_GRID_VARS = {"%tid.x", "%tid.y", "%tid.z", "%ctaid.x", "%ctaid.y", "%ctaid.z"}
_LAUNCH_UNIFORM_SPECIAL = ("%ntid", "%nctaid", "%warpsize")


def grid_linear(remat: dict[str, ir.Instr]) -> tuple[set[str], set[str]]:
    """(launch-uniform, grid-linear) registers among the rematerializable ones (one pure definition
    each: passes/remat.py).  Launch-uniform: the same value in every thread of the launch (parameters,
    %ntid, %nctaid, constants).  Grid-linear: (u + k . (tid, ctaid)) mod 2**width with launch-uniform
    coefficients, which may be known only at run time (`y * pitch` with a parameter `pitch`).

    Built from %tid/%ctaid and launch-uniform values by add/sub, mul.lo/mad.lo/mul.wide/mad.wide with
    one launch-uniform factor, shl by a literal, mov, cvta and integer cvt.  Same-width operations keep
    a value linear modulo 2**width; an extension (cvt to a wider type, .wide, a 32-bit cvta) is linear
    only where its operand does not wrap over the grid, which the bounds precheck verifies at run time
    (lower/safety/corners.py; see extension_operands): this only nominates."""
    uniform: set[str] = set()
    linear: set[str] = set()

    def kind(op) -> str | None:
        """'u' (launch-uniform), 'l' (grid-linear), None (neither, or not known yet)."""
        if isinstance(op, ir.Imm):
            return "u"
        if not isinstance(op, ir.Reg) or op.neg or op.sel or op.minus:
            return None
        if op.name in _GRID_VARS:
            return "l"
        if op.name.split(".")[0] in _LAUNCH_UNIFORM_SPECIAL or op.name in uniform:
            return "u"
        return "l" if op.name in linear else None

    def classify(ins: ir.Instr) -> str | None:
        ops, op = ins.operands, ins.opcode
        if op == "ld":  # rematerializable loads read kernel parameters
            return "u"
        if ins.guard is not None or ins.has("sat", "cc", "hi") or op not in _LINEAR_OPS:
            return None
        ks = [kind(o) for o in ops[1:]]
        if None in ks:
            return None
        if all(k == "u" for k in ks):
            return "u"
        if op in ("mov", "cvta") and len(ops) == 2:
            return "l"
        if op == "cvt" and len(ops) == 2:
            t = ins.types()
            return "l" if len(t) == 2 and all(x in _INT_TYPES | _NARROW for x in t) else None
        if op in ("add", "sub") and len(ops) == 3:
            return "l"
        if op == "mul" and len(ops) == 3 and ins.has("lo", "wide"):
            return "l" if "u" in ks else None
        if op == "mad" and len(ops) == 4 and ins.has("lo", "wide"):
            return "l" if "u" in ks[:2] else None
        if op == "shl" and len(ops) == 3 and isinstance(ops[2], ir.Imm):
            return "l" if 0 <= int(ops[2].value) < 64 else None
        return None

    changed = True
    while changed:
        changed = False
        for r, ins in remat.items():
            d = ins.operands[0] if ins.operands else None
            if r in uniform or r in linear or not isinstance(d, ir.Reg) or d.name != r:
                continue
            k = classify(ins)
            if k is not None:
                (uniform if k == "u" else linear).add(r)
                changed = True
    return uniform, linear


_LINEAR_OPS = frozenset({"mov", "cvta", "cvt", "add", "sub", "mul", "mad", "shl"})
_NARROW = frozenset({"u16", "s16", "b16", "u8", "s8", "b8"})


def extension_operands(ins: ir.Instr, reg_types: dict[str, str]) -> list[tuple[str, bool]]:
    """(register, signed) for each register operand that `ins` (a grid-linear definition) widens:
    cvt to a wider type, mul/mad.wide factors, cvta of a 32-bit address, and a register narrower than
    the instruction's type (read with an extension).  Only there may a wrapped value break linearity."""
    ops, op = ins.operands, ins.opcode
    types = ins.types()
    out = []
    for i, o in enumerate(ops[1:], start=1):
        if not isinstance(o, ir.Reg) or o.name not in reg_types:
            continue
        have = ir.type_size(reg_types[o.name])
        if op == "cvt" and len(types) == 2:
            src = types[1]
            if ir.type_size(types[0]) > ir.type_size(src) or have < ir.type_size(src):
                out.append((o.name, src.startswith("s")))
        elif op in ("mul", "mad") and ins.has("wide") and i <= 2:
            out.append((o.name, bool(types) and types[-1].startswith("s")))
        elif op == "cvta" and have < 8:
            out.append((o.name, False))
        elif types and have < ir.type_size(types[-1]):
            out.append((o.name, types[-1].startswith("s")))
    return out
