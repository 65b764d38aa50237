"""Counted loops and the accesses whose address moves by a fixed amount per iteration.

For the bounds checks (lower/safety/loops.py): in a loop that runs K times, an address that is
`base + k * delta` in iteration k (base, delta: values known on entry) lies between its values at
k = 0 and k = K - 1, so one check of both ends on entry covers every iteration.  nvcc's loops:

    $L__BB0_6:                               // up-counter, unrolled by 4 (an index i, step 4 * %r13)
        mul.wide.s32  %rd10, %r26, 4;        // &a[i]:     base %rd1 + 4 * sext(i0), delta 16 * %r13
        add.s64       %rd11, %rd1, %rd10;
        ld.global.f32 %f13, [%rd11];
        add.s64       %rd12, %rd11, %rd6;    // &a[i + s]: an invariant added
        ...
        add.s32       %r21, %r26, %r13;      // i + s, i + 2s, i + 3s
        ...
        add.s32       %r26, %r23, %r13;      // i += 4s
        setp.lt.s32   %p5, %r26, %r12;       // while i < n
        @%p5 bra      $L__BB0_6;

    $L__BB0_3:                               // down-counter (the remainder loop), a pointer stepped
        ld.global.f32 %f12, [%rd18];
        add.s64       %rd18, %rd18, %rd3;
        add.s32       %r25, %r25, -1;
        setp.ne.s32   %p3, %r25, 0;
        @%p3 bra      $L__BB0_3;

Recognized, everything else keeps its per-access checks:

* the loop: a backward conditional branch to a label (one label at the header), no suspension point or
  call inside, entered only at the header, and the branch back the only branch to the header from
  inside (no `continue` that skips the latch);
* the count K, from the loop's test in the latch block (the block ending with the branch back): an
  up-counter `add i, i + a1 + ... , s` (32-bit, addends and step registers not written in the loop or
  immediates, each > 0 at run time) tested `i < bound` (`lt`, `gt` swapped, `ge`/`le` with a negated
  guard; signed or unsigned): K = (max(i0, bound - 1) - i0) / S + 1 with no wrap (bound and i0 <=
  MAX - S, checked on entry); or a down-counter `add c, c, -s` tested `c != 0` (K = c0 / s when s
  divides c0 != 0) or `c > 0` signed (K = ceil(c0 / s), at least 1);
* values: the up-counter and 32-bit registers `i + invariants` read before the counter's increment,
  extended by `mul.wide` / `cvt` of the loop test's signedness; pointers stepped once per iteration
  (`add.s64 p, p, invariant` in the header or latch block); 64-bit `add`/`sub`/`shl`/`mul.lo`/`mov` of
  those with invariants or immediates.  Every register involved is written once in the loop, unguarded,
  in the header block or earlier in the block of its use;
* accesses: plain (non-volatile, unordered) `ld`/`ldu`/`st` through such a register.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import TERMINATORS, defs_uses

Atom = tuple[str, str]  # ("r64", reg): a 64-bit register's value on entry; ("s32"/"u32", reg): extended
_MAX_FACTOR = 1 << 24


@dataclass(frozen=True)
class Lin:
    """sum(factor * atom) + const, the atoms read on entry to the loop."""

    atoms: tuple[tuple[Atom, int], ...] = ()
    const: int = 0

    def __add__(self, o: Lin) -> Lin:
        d = dict(self.atoms)
        for a, f in o.atoms:
            d[a] = d.get(a, 0) + f
        return Lin(tuple(sorted((a, f) for a, f in d.items() if f)), self.const + o.const)

    def scale(self, f: int) -> Lin:
        return Lin(tuple((a, g * f) for a, g in self.atoms), self.const * f)

    def small(self) -> bool:
        return all(abs(f) <= _MAX_FACTOR for _, f in self.atoms) and abs(self.const) < 1 << 47


@dataclass
class CountedLoop:
    header: str                 # the header label
    start: int                  # body index of the header label
    end: int                    # body index of the branch back
    counter: str                # the 32-bit counter
    signed: bool
    down: int                   # 0: up-counter; else the down-counter's decrement s
    down_test: str              # "ne" or "gt" (down-counters)
    addends: list               # up-counter: the invariants (ir.Reg / ir.Imm) summing to its step S
    bound: ir.Reg | ir.Imm | None
    accesses: dict[int, tuple[Lin, Lin, int]] = field(default_factory=dict)  # id -> (base, delta, bytes)


def _is_plain_access(ins: ir.Instr) -> bool:
    if ins.opcode not in ("ld", "ldu", "st") or ins.has("volatile", "relaxed", "acquire", "release", "mmio"):
        return False
    t = ins.types()
    return bool(t) and t[-1] != "b128" and not ins.has("param")


def _access_size(ins: ir.Instr) -> int:
    n = 8 if ins.has("v8") else 4 if ins.has("v4") else 2 if ins.has("v2") else 1
    return ir.type_size(ins.types()[-1]) * n


def _label_names(op) -> list[str]:
    if isinstance(op, ir.Sym):
        return [op.name]
    if isinstance(op, ir.Vec | ir.CallList):
        return [n for x in op.items for n in _label_names(x)]
    return []


def counted_loops(fn: ir.Function, yields, reg_bits) -> list[CountedLoop]:
    """The counted loops of `fn` with accesses to check on entry (see the module docstring).
    `yields(instr)`: a suspension point?  `reg_bits(name)`: an integer register's width (else None)."""
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
        loop = _Analysis(body, h, k, st, targets, reg_bits).run(yields)
        if loop is not None and loop.accesses:
            out.append(loop)
    return out


class _Analysis:
    def __init__(self, body, h: int, k: int, back: ir.Instr, targets, reg_bits) -> None:
        self.body, self.h, self.k, self.back, self.targets, self.bits = body, h, k, back, targets, reg_bits
        self.span = [(j, body[j]) for j in range(h + 1, k + 1) if isinstance(body[j], ir.Instr)]
        self.ndefs: dict[str, int] = {}
        for _, x in self.span:
            for r in defs_uses(x)[0]:
                self.ndefs[r] = self.ndefs.get(r, 0) + 1
        self.header_end = next((j for j, x in self.span if x.opcode in TERMINATORS), k)
        for j in range(h + 1, self.header_end):
            if isinstance(body[j], ir.Label):
                self.header_end = j
                break
        self.latch_start = max([j for j in range(h + 1, k + 1) if isinstance(body[j], ir.Label)], default=h)

    def invariant(self, op, bits: int) -> bool:
        return isinstance(op, ir.Imm) or (isinstance(op, ir.Reg) and not op.neg and op.name not in self.ndefs
                                          and self.bits(op.name) == bits)

    def dominates(self, jd: int, j: int) -> bool:
        """Does the definition at jd run before j in every iteration (header block, or j's own block)?"""
        body = self.body
        return jd < j and (jd < self.header_end or not any(
            isinstance(body[m], ir.Label) or isinstance(body[m], ir.Instr) and body[m].opcode in TERMINATORS
            for m in range(jd + 1, j)))

    def once(self, name: str) -> tuple[int, ir.Instr] | None:
        """The single unguarded definition of `name` in the loop, if so."""
        if self.ndefs.get(name) != 1:
            return None
        j, x = next((j, x) for j, x in self.span if name in defs_uses(x)[0])
        return None if x.guard is not None else (j, x)

    # ------------------------------------------------------------------ the loop and its count
    def run(self, yields) -> CountedLoop | None:
        h, k = self.h, self.k
        if any(yields(x) or x.opcode == "call" for _, x in self.span):
            return None
        for lab, srcs in self.targets.items():  # entered only at the header; no other way back to it
            if h < lab <= k and any(not h < s <= k for s in srcs):
                return None
            if lab == h and any(s > h and s != k for s in srcs):
                return None
        if any(x.opcode in TERMINATORS for j, x in self.span if self.latch_start < j < k):
            return None
        pred = self.back.guard.name
        d = self.once(pred)
        if d is None or d[0] <= self.latch_start:
            return None
        loop = self._counter(d[1], self.back.guard.neg)
        if loop is None:
            return None
        self.loop = loop
        self._values()
        return loop

    def _counter(self, sp: ir.Instr, negated: bool) -> CountedLoop | None:
        if sp.opcode != "setp" or len(sp.operands) != 3 or isinstance(sp.operands[0], ir.Pair):
            return None
        t = sp.types()
        if not t or t[-1] not in ("s32", "u32", "b32"):
            return None
        cmp = next((m for m in sp.mods if m in ("lt", "gt", "ge", "le", "ne", "eq")), None)
        a, b = sp.operands[1], sp.operands[2]
        zero = ir.Imm(0)
        if cmp in ("ne", "eq") and (not negated) == (cmp == "ne") and zero in (a, b):
            return self._down(b if a == zero else a, "ne")
        positive = (cmp == "gt" and not negated and b == zero) or (cmp == "lt" and not negated and a == zero) \
            or (cmp == "le" and negated and b == zero) or (cmp == "ge" and negated and a == zero)
        if t[-1] == "s32" and positive:
            return self._down(a if b == zero else b, "gt")
        if t[-1] == "b32":
            return None
        if (not negated and cmp == "lt") or (negated and cmp == "ge"):
            iv, bound = a, b
        elif (not negated and cmp == "gt") or (negated and cmp == "le"):
            iv, bound = b, a
        else:
            return None
        if not isinstance(iv, ir.Reg) or iv.neg or not self.invariant(bound, 32) or self.bits(iv.name) != 32:
            return None
        d = self.once(iv.name)
        if d is None or not self.latch_start < d[0]:
            return None
        ja, add = d
        if add.opcode != "add" or add.mods not in (("s32",), ("u32",)) or len(add.operands) != 3:
            return None
        self.counter, self.ja = iv.name, ja
        self.rel32: dict[str, tuple[list, int]] = {}  # 32-bit register -> (addends after the counter, def)
        self._walk32(ja)
        x, s = add.operands[1], add.operands[2]
        for p, q in ((x, s), (s, x)):
            chain = self._rel(p, ja)
            if chain is not None and self.invariant(q, 32):
                return CountedLoop(self.body[self.h].name, self.h, self.k, iv.name, t[-1] == "s32", 0, "",
                                   chain + [q], bound)
        return None

    def _down(self, c, test: str) -> CountedLoop | None:
        if not isinstance(c, ir.Reg) or c.neg or self.bits(c.name) != 32:
            return None
        d = self.once(c.name)
        if d is None or not self.latch_start < d[0]:
            return None
        add = d[1]
        ops = add.operands
        if add.opcode == "add" and len(ops) == 3 and ops[1] == ir.Reg(c.name) and isinstance(ops[2], ir.Imm):
            s = -int(ops[2].value)
        elif add.opcode == "sub" and len(ops) == 3 and ops[1] == ir.Reg(c.name) and isinstance(ops[2], ir.Imm):
            s = int(ops[2].value)
        else:
            return None
        if not 0 < s < 1 << 16 or add.mods not in (("s32",), ("u32",)):
            return None
        self.counter, self.ja, self.rel32 = c.name, d[0], {}
        return CountedLoop(self.body[self.h].name, self.h, self.k, c.name, True, s, test, [], None)

    def _walk32(self, ja: int) -> None:
        """Registers `counter + invariants` (32-bit), defined before the counter's increment."""
        for j, x in self.span:
            if j >= ja:
                break
            d = defs_uses(x)[0]
            if x.opcode != "add" or x.mods not in (("s32",), ("u32",)) or len(d) != 1 or x.guard is not None \
                    or self.ndefs.get(d[0]) != 1:
                continue
            a, b = x.operands[1], x.operands[2]
            for p, q in ((a, b), (b, a)):
                chain = self._rel(p, j)
                if chain is not None and self.invariant(q, 32):
                    self.rel32[d[0]] = (chain + [q], j)
                    break

    def _rel(self, op, j: int) -> list | None:
        """op read at j as `counter + addends`: the addends, or None."""
        if not isinstance(op, ir.Reg) or op.neg:
            return None
        if op.name == self.counter:
            return [] if j <= self.ja else None
        r = self.rel32.get(op.name)
        return list(r[0]) if r is not None and self.dominates(r[1], j) else None

    # ------------------------------------------------------------------ values and accesses
    def _values(self) -> None:
        loop = self.loop
        step = Lin()
        ext = "s32" if loop.signed else "u32"
        for a in loop.addends:
            step = step + self._atom32(a, ext)
        self.sym: dict[str, tuple[Lin, Lin, int]] = {}  # 64-bit register -> (base, delta, definition)
        self.ptrs: dict[str, tuple[Lin, int]] = {}  # pointer stepped per iteration -> (delta, definition)
        for name, n in self.ndefs.items():
            if n == 1 and self.bits(name) == 64:
                j, x = self.once(name) or (None, None)
                if x is not None and x.opcode == "add" and x.mods in (("s64",), ("u64",)) \
                        and (j < self.header_end or j > self.latch_start) and len(x.operands) == 3:
                    a, b = x.operands[1], x.operands[2]
                    for p, q in ((a, b), (b, a)):
                        if p == ir.Reg(name) and self.invariant(q, 64):
                            self.ptrs[name] = (self._atom64(q), j)
        for j, x in self.span:
            if _is_plain_access(x):
                addr = x.operands[0] if x.opcode == "st" else x.operands[1]
                if isinstance(addr, ir.Addr) and isinstance(addr.base, ir.Reg):
                    v = self._value64(addr.base, j, step)
                    if v is not None and abs(v[0].const + addr.offset) < 1 << 47:
                        self.loop.accesses[id(x)] = (v[0] + Lin((), addr.offset), v[1], _access_size(x))
            d = defs_uses(x)[0]
            if len(d) != 1 or x.guard is not None or self.ndefs.get(d[0]) != 1 or self.bits(d[0]) != 64 \
                    or d[0] in self.ptrs:
                continue
            v = self._define64(x, j, step, ext)
            if v is not None and v[0].small() and v[1].small():
                self.sym[d[0]] = (v[0], v[1], j)

    def _atom32(self, op, ext: str) -> Lin:
        return Lin((), int(op.value)) if isinstance(op, ir.Imm) else Lin((((ext, op.name), 1),))

    def _atom64(self, op) -> Lin:
        return Lin((), int(op.value)) if isinstance(op, ir.Imm) else Lin(((("r64", op.name), 1),))

    def _value64(self, op, j: int, step: Lin) -> tuple[Lin, Lin] | None:
        """(base, delta) of 64-bit operand `op` read at j, or None."""
        if isinstance(op, ir.Imm):
            return Lin((), int(op.value)), Lin()
        if not isinstance(op, ir.Reg) or op.neg:
            return None
        if op.name in self.sym:
            base, delta, jd = self.sym[op.name]
            return (base, delta) if self.dominates(jd, j) else None
        if op.name in self.ptrs:
            delta, jd = self.ptrs[op.name]
            p0 = self._atom64(op)
            if self.dominates(jd, j):  # stepped already in this iteration
                return p0 + delta, delta
            if j < jd and (jd > self.latch_start or j < self.header_end):  # stepped later in it
                return p0, delta
            return None
        return (self._atom64(op), Lin()) if self.invariant(op, 64) else None

    def _define64(self, x: ir.Instr, j: int, step: Lin, ext: str) -> tuple[Lin, Lin] | None:
        ops, t = x.operands[1:], x.types()
        if x.opcode in ("mul", "cvt") and not self.loop.down:
            if x.opcode == "mul" and x.has("wide") and t == [ext] and len(ops) == 2:
                pairs = [(ops[0], ops[1]), (ops[1], ops[0])]
                pairs = [(p, int(q.value)) for p, q in pairs if isinstance(q, ir.Imm)]
            elif x.opcode == "cvt" and t == [("s64" if ext == "s32" else "u64"), ext] and len(ops) == 1 \
                    and len(x.mods) == 2:
                pairs = [(ops[0], 1)]
            else:
                return None
            for p, f in pairs:
                chain = self._rel(p, j)
                if chain is not None:
                    base = self._atom32(ir.Reg(self.counter), ext)
                    for a in chain:
                        base = base + self._atom32(a, ext)
                    return base.scale(f), step.scale(f)
            return None
        if x.opcode == "add" and t in (["s64"], ["u64"], ["b64"]) and len(ops) == 2:
            a, b = self._value64(ops[0], j, step), self._value64(ops[1], j, step)
            return None if a is None or b is None else (a[0] + b[0], a[1] + b[1])
        if x.opcode == "sub" and t in (["s64"], ["u64"], ["b64"]) and len(ops) == 2 and isinstance(ops[1], ir.Imm):
            a = self._value64(ops[0], j, step)
            return None if a is None else (a[0] + Lin((), -int(ops[1].value)), a[1])
        if len(ops) == 2 and isinstance(ops[1], ir.Imm) and (
                x.opcode == "shl" and t == ["b64"] and 0 <= int(ops[1].value) < 24
                or x.opcode == "mul" and x.has("lo") and t in (["s64"], ["u64"])):
            a = self._value64(ops[0], j, step)
            f = 1 << int(ops[1].value) if x.opcode == "shl" else int(ops[1].value)
            return None if a is None else (a[0].scale(f), a[1].scale(f))
        if x.opcode == "mov" and t in (["b64"], ["u64"], ["s64"]) and len(ops) == 1 and isinstance(ops[0], ir.Reg):
            return self._value64(ops[0], j, step)
        return None


def inner_loop_instructions(fn: ir.Function, yields) -> set[int]:
    """ids of the instructions in the thread's own loops that contain no suspension point (by program
    text, between a label and a later branch back to it): loops inside the loop over threads, which
    LLVM's loop vectorizer then leaves alone (it vectorizes innermost loops)."""
    body = fn.body or []
    labels = {st.name: i for i, st in enumerate(body) if isinstance(st, ir.Label)}
    out: set[int] = set()
    for k, st in enumerate(body):
        if isinstance(st, ir.Instr) and st.opcode == "bra" and st.operands and isinstance(st.operands[0], ir.Sym):
            i = labels.get(st.operands[0].name, k + 1)
            span = [x for x in body[i:k + 1] if isinstance(x, ir.Instr)]
            if i <= k and not any(yields(x) for x in span):
                out.update(id(x) for x in span)
    return out
