"""Counted loops and the accesses whose address moves with their counter (grid-stride loops).

For the bounds checks (lower/bounds_loops.py): in

    $L__BB0_2:
        mul.wide.s32  %rd6, %r13, 4;        // address = %rd1 + 4 * sext(%r13)
        add.s64       %rd7, %rd1, %rd6;
        ld.global.f32 %f7, [%rd7];
        add.s32       %r13, %r13, %r4;      // the counter, by a loop-invariant step
        setp.lt.s32   %p2, %r13, %r8;       // ... while below a loop-invariant bound
        @%p2 bra      $L__BB0_2;

every value the counter takes inside the loop lies in [i0, max(i0, bound - 1)] (i0: its value on entry),
given step > 0 and no wrap (bound and i0 <= MAX - step: checked on entry), so the addresses lie between
those at the two ends and one check on entry covers every iteration.  Only a shape that is easy to prove
is recognized; anything else keeps its per-access checks:

* the loop: a backward conditional branch to a label (one label at the header), no suspension point or
  call inside, entered only at the header (no branch from outside into the body, none from later code
  back to the header);
* the counter: one unguarded `add.s32/.u32 i, i, step` in the latch block (the block ending with the
  branch back) followed there by the loop's test `setp.lt i, bound` (or `gt bound, i`; `ge`/`le` with a
  negated guard) of the same signedness, the only definitions of i and of the predicate in the loop;
  step and bound are registers not written in the loop, or immediates;
* the address: a 64-bit register computed from i before its increment by `mul.wide` / `cvt` (extension
  of the loop test's signedness), then `add` of registers not written in the loop or of immediates,
  `shl`/`mul.lo` by an immediate, `mov`; each such register defined once in the loop, unguarded, in the
  header block or earlier in the access's own block; accessed by a plain (non-volatile, unordered)
  `ld`/`ldu`/`st`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import TERMINATORS, defs_uses

_MAX_COEF = 1 << 20  # |coefficient| of the counter: coef * 2**32 stays far inside 64 bits
_MAX_CONST = 1 << 40


@dataclass(frozen=True)
class Linear:
    """sum(terms) + const + coef * ext(i): terms are registers not written in the loop."""

    terms: tuple[str, ...]
    const: int
    coef: int


@dataclass
class CountedLoop:
    header: str                 # the header label
    start: int                  # body index of the header label
    end: int                    # body index of the branch back
    iv: str                     # the counter (32-bit)
    signed: bool
    step: ir.Reg | ir.Imm
    bound: ir.Reg | ir.Imm
    accesses: dict[int, tuple[Linear, int]] = field(default_factory=dict)  # id(instr) -> (address, bytes)


def _is_plain_access(ins: ir.Instr) -> bool:
    if ins.opcode not in ("ld", "ldu", "st") or ins.has("volatile", "relaxed", "acquire", "release", "mmio"):
        return False
    t = ins.types()
    return bool(t) and t[-1] != "b128" and not ins.has("param")


def _access_size(ins: ir.Instr) -> int:
    n = 8 if ins.has("v8") else 4 if ins.has("v4") else 2 if ins.has("v2") else 1
    return ir.type_size(ins.types()[-1]) * n


def counted_loops(fn: ir.Function, yields, reg_bits) -> list[CountedLoop]:
    """The counted loops of `fn` and their accesses (see the module docstring).  `yields(instr)`: is it a
    suspension point; `reg_bits(name)`: a register's width in bits (None: not an integer register)."""
    body = fn.body or []
    labels = {st.name: k for k, st in enumerate(body) if isinstance(st, ir.Label)}
    branches = [(k, st) for k, st in enumerate(body) if isinstance(st, ir.Instr) and st.opcode in ("bra", "brx")]
    targets: dict[int, list[int]] = {}  # label index -> indices of the branches to it
    for k, st in branches:
        for op in st.operands:
            for name in _label_names(op):
                if name in labels:
                    targets.setdefault(labels[name], []).append(k)
    out = []
    for k, st in branches:
        if st.opcode != "bra" or st.guard is None or not st.operands or not isinstance(st.operands[0], ir.Sym):
            continue
        h = labels.get(st.operands[0].name)
        if h is None or h >= k or isinstance(body[h - 1], ir.Label) or isinstance(body[h + 1], ir.Label):
            continue
        loop = _analyse(body, h, k, st, targets, yields, reg_bits)
        if loop is not None and loop.accesses:
            out.append(loop)
    return out


def _label_names(op) -> list[str]:
    if isinstance(op, ir.Sym):
        return [op.name]
    if isinstance(op, ir.Vec | ir.CallList):
        return [n for x in op.items for n in _label_names(x)]
    return []


def _analyse(body, h, k, back: ir.Instr, targets, yields, reg_bits) -> CountedLoop | None:
    span = [(j, body[j]) for j in range(h + 1, k + 1) if isinstance(body[j], ir.Instr)]
    if any(yields(x) or x.opcode == "call" for _, x in span):
        return None
    # entered only at the header: no branch from outside into the body, none from later code to the header
    for lab, srcs in targets.items():
        if h < lab <= k and any(not h < s <= k for s in srcs):
            return None
        if lab == h and any(s > k for s in srcs):
            return None
    ndefs: dict[str, int] = {}
    for _, x in span:
        for r in defs_uses(x)[0]:
            ndefs[r] = ndefs.get(r, 0) + 1
    # blocks: header block = from h to the first terminator or label; latch block = after the last label
    header_end = next((j for j, x in span if x.opcode in TERMINATORS), k)
    for j in range(h + 1, header_end):
        if isinstance(body[j], ir.Label):
            header_end = j
            break
    latch_start = max([j for j in range(h + 1, k + 1) if isinstance(body[j], ir.Label)], default=h)
    if any(x.opcode in TERMINATORS for j, x in span if latch_start < j < k):
        return None
    pred = back.guard.name
    setp = [(j, x) for j, x in span if pred in defs_uses(x)[0]]
    if len(setp) != 1 or ndefs.get(pred) != 1:
        return None
    js, sp = setp[0]
    test = _loop_test(sp, back.guard.neg)
    if test is None or js <= latch_start or sp.guard is not None:
        return None
    iv, bound, signed = test
    adds = [(j, x) for j, x in span if iv in defs_uses(x)[0]]
    if len(adds) != 1 or ndefs.get(iv) != 1:
        return None
    ja, add = adds[0]
    step = _increment(add, iv, signed)
    if step is None or not latch_start < ja < js or reg_bits(iv) != 32:
        return None
    for v in (step, bound):
        if isinstance(v, ir.Reg) and (v.name in ndefs or reg_bits(v.name) != 32):
            return None
    loop = CountedLoop(body[h].name, h, k, iv, signed, step, bound)
    sym: dict[str, tuple[Linear, int]] = {}  # register -> (value, body index of its definition)

    def dominates(jd: int, j: int) -> bool:
        """Does the definition at jd run before j in every iteration (header block, or j's block)?"""
        return jd < j and (jd < header_end or not any(
            isinstance(body[m], ir.Label) or isinstance(body[m], ir.Instr) and body[m].opcode in TERMINATORS
            for m in range(jd + 1, j)))

    for j, x in span:
        if _is_plain_access(x):
            addr = x.operands[0] if x.opcode == "st" else x.operands[1]
            if isinstance(addr, ir.Addr) and isinstance(addr.base, ir.Reg) and addr.base.name in sym:
                lin, jd = sym[addr.base.name]
                if dominates(jd, j) and abs(lin.const + addr.offset) < _MAX_CONST:
                    loop.accesses[id(x)] = (Linear(lin.terms, lin.const + addr.offset, lin.coef), _access_size(x))
        d = defs_uses(x)[0]
        if len(d) != 1 or x.guard is not None or ndefs.get(d[0]) != 1 or reg_bits(d[0]) != 64:
            continue
        srcs = [op.name for op in x.operands[1:] if isinstance(op, ir.Reg) and op.name in sym]
        if not all(dominates(sym[r][1], j) for r in srcs):
            continue
        lin = _linear(x, iv, signed, sym, ndefs, reg_bits, before_increment=j < ja)
        if lin is not None and abs(lin.coef) <= _MAX_COEF and abs(lin.const) < _MAX_CONST:
            sym[d[0]] = (lin, j)
    return loop


def _loop_test(sp: ir.Instr, negated: bool):
    """(counter, bound, signed) of `setp` deciding to loop again, or None."""
    if sp.opcode != "setp" or len(sp.operands) != 3 or isinstance(sp.operands[0], ir.Pair):
        return None
    t = sp.types()
    if not t or t[-1] not in ("s32", "u32"):
        return None
    signed = t[-1] == "s32"
    cmp = next((m for m in sp.mods if m in ("lt", "gt", "ge", "le")), None)
    a, b = sp.operands[1], sp.operands[2]
    if not negated and cmp == "lt" or negated and cmp == "ge":
        iv, bound = a, b
    elif not negated and cmp == "gt" or negated and cmp == "le":
        iv, bound = b, a
    else:
        return None
    if not isinstance(iv, ir.Reg) or iv.neg or not isinstance(bound, ir.Reg | ir.Imm):
        return None
    if isinstance(bound, ir.Reg) and bound.neg:
        return None
    return iv.name, bound, signed


def _increment(add: ir.Instr, iv: str, signed: bool):
    if add.opcode != "add" or add.guard is not None or len(add.operands) != 3 or add.mods not in (("s32",), ("u32",)):
        return None
    a, b = add.operands[1], add.operands[2]
    if isinstance(a, ir.Reg) and a.name == iv:
        step = b
    elif isinstance(b, ir.Reg) and b.name == iv:
        step = a
    else:
        return None
    if isinstance(step, ir.Imm):
        return step if step.value > 0 else None
    return step if isinstance(step, ir.Reg) and not step.neg and step.name != iv else None


def _linear(x: ir.Instr, iv: str, signed: bool, sym, ndefs, reg_bits, before_increment: bool) -> Linear | None:
    ops = x.operands[1:]
    t = x.types()

    def invariant(op) -> Linear | None:
        if isinstance(op, ir.Imm):
            return Linear((), int(op.value), 0)
        if isinstance(op, ir.Reg) and not op.neg and op.name not in ndefs and reg_bits(op.name) == 64:
            return Linear((op.name,), 0, 0)
        return None

    def value(op) -> Linear | None:
        if isinstance(op, ir.Reg) and op.name in sym:
            return sym[op.name][0]
        return invariant(op)

    def is_iv(op) -> bool:
        return before_increment and isinstance(op, ir.Reg) and op.name == iv and not op.neg

    ext = "s32" if signed else "u32"
    if x.opcode == "mul" and x.has("wide") and t == [ext] and len(ops) == 2:
        a, b = ops
        if is_iv(a) and isinstance(b, ir.Imm):
            return Linear((), 0, int(b.value))
        if is_iv(b) and isinstance(a, ir.Imm):
            return Linear((), 0, int(a.value))
        return None
    if x.opcode == "cvt" and t == [("s64" if signed else "u64"), ext] and len(ops) == 1 and is_iv(ops[0]) \
            and not any(m.startswith("r") and len(m) == 3 for m in x.mods if m not in ("s64", "u64", "s32", "u32")):
        return Linear((), 0, 1)
    if x.opcode == "add" and t in (["s64"], ["u64"], ["b64"]) and len(ops) == 2:
        a, b = value(ops[0]), value(ops[1])
        if a is None or b is None:
            return None
        return Linear(a.terms + b.terms, a.const + b.const, a.coef + b.coef)
    if x.opcode == "sub" and t in (["s64"], ["u64"]) and len(ops) == 2 and isinstance(ops[1], ir.Imm):
        a = value(ops[0])
        return None if a is None else Linear(a.terms, a.const - int(ops[1].value), a.coef)
    if x.opcode in ("shl", "mul") and (x.opcode == "shl" and t == ["b64"] or
                                       x.opcode == "mul" and x.has("lo") and t in (["s64"], ["u64"])) \
            and len(ops) == 2 and isinstance(ops[1], ir.Imm):
        a = value(ops[0])
        if a is None or a.terms:
            return None
        f = 1 << int(ops[1].value) if x.opcode == "shl" else int(ops[1].value)
        if not 0 <= int(ops[1].value) < 32 and x.opcode == "shl":
            return None
        return Linear((), a.const * f, a.coef * f)
    if x.opcode == "mov" and t in (["b64"], ["u64"], ["s64"]) and len(ops) == 1:
        return value(ops[0]) if isinstance(ops[0], ir.Reg) else None
    return None
