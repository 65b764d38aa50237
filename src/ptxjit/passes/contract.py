"""Multiply-add contraction, as ptxas does it by default (`ptxas --fmad=true`).

PTX lets the assembler fuse a `mul` with a following `add`/`sub` into one fused multiply-add when
neither carries a rounding modifier; ptxas does, and a GPU's results depend on it (a fused product
is not rounded: Black-Scholes or n-body differ by up to 1,000 ulp between fused and unfused). This
pass rewrites the PTX IR the same way before lowering, so ptxjit's results are the hardware's.

The rule, read off ptxas 13's SASS for sm_90 on probe kernels (tests/data/fmad/ regenerates the
evidence with ptxas + nvdisasm and tests/test_contract.py checks the decisions against it):

- candidates are `mul` and `add`/`sub` of f32, f64, f16, bf16, f16x2 or bf16x2 without a rounding
  modifier (`.rn` etc. forbid fusing), with the same `.ftz`; the `mul` must not be `.sat` and not
  guarded (a guarded `add` may absorb it; `.sat` on the `add` carries over to the fma);
- the product may reach the add through `mov` and `neg` (a negated product fuses as `fma(-a, b, c)`),
  but not through `abs` or any other instruction;
- a product is fused only when *every* use of it is such an add/sub in the same basic block (a product
  that is also stored, selected, multiplied or live out of the block stays a separate `mul`); it is
  then fused into each of them (ptxas duplicates the multiply);
- an add whose two operands are both fusable products absorbs its first operand; an add of a
  product with itself is not fused.

Rewrites use only ordinary PTX: `fma.rn[.ftz][.sat]` plus `neg` into fresh registers where an
operand must be negated (negation is exact, so `c - a*b == fma(-a, b, c)` bit for bit).

`div.approx.f32` and `div.full.f32` are products too: ptxas expands `a / d` to `a * MUFU.RCP(d)` (with
`div.full`, a and d both scaled by 1/4 when |d| > 2**126; without `.ftz`, both by 2**24 when d is
subnormal) and contracts that multiply with a following add under the same rules, e.g. Triton's
layer norm `var / N + eps` is one FFMA on the GPU (its H100 outputs in tests/data/triton/golden need
it).  The rewrite emits the same scaling in PTX (`abs`, `setp`, `mul.rn`, `selp`), then
`rcp.approx.ftz.f32` and the fma.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ptxjit.frontend import ir
from ptxjit.passes import approx_fold
from ptxjit.passes.dataflow import build_cfg, defs_uses, liveness

FUSABLE_TYPES = {"f32": "f32", "f64": "f64", "f16": "b16", "bf16": "b16", "f16x2": "b32", "bf16x2": "b32"}
ROUNDING = frozenset({"rn", "rz", "rm", "rp"})


@dataclass
class Product:
    """A `mul` whose value may be fused: the instruction, its block, and where it is used."""

    mul: ir.Instr
    index: int  # position in the function body
    uses: list[tuple[ir.Instr, int, bool]] = field(default_factory=list)  # (add/sub, operand index, negated)
    blocked: bool = False  # some use is not a contractible add/sub


def _ftype(ins: ir.Instr) -> str | None:
    ts = ins.types()
    return ts[-1] if len(ts) == 1 and ts[-1] in FUSABLE_TYPES else None


def _is_mul(ins: ir.Instr) -> bool:
    return (ins.opcode == "mul" and ins.guard is None and _ftype(ins) is not None
            and not ROUNDING.intersection(ins.mods) and not ins.has("sat")
            and isinstance(ins.operands[0], ir.Reg) and len(ins.operands) == 3) or _is_div(ins)


def _is_div(ins: ir.Instr) -> bool:
    """`div.approx/full(.ftz).f32`: a multiply by MUFU.RCP(d) once ptxas has expanded it."""
    return (ins.opcode == "div" and ins.guard is None and _ftype(ins) == "f32" and ins.has("approx", "full")
            and isinstance(ins.operands[0], ir.Reg) and len(ins.operands) == 3)


def _contractible_add(ins: ir.Instr, t: str, ftz: bool) -> bool:
    return (ins.opcode in ("add", "sub") and _ftype(ins) == t and not ROUNDING.intersection(ins.mods)
            and ins.has("ftz") == ftz and len(ins.operands) == 3 and isinstance(ins.operands[0], ir.Reg))


def _reads(ins: ir.Instr, reg: str) -> list[int]:
    """Operand positions (1-based source operands) that read `reg` as a plain register."""
    return [i for i, op in enumerate(ins.operands) if i > 0 and isinstance(op, ir.Reg) and op.name == reg]


def contract_fma(fn: ir.Function) -> int:
    """Fuse mul + add/sub pairs in `fn` as ptxas does; returns how many adds became fmas."""
    body = fn.body
    if not body or not any(isinstance(s, ir.Instr) and _is_mul(s) for s in body):
        return 0
    blocks, _ = build_cfg(fn)
    _, live_after = liveness(fn)
    products: list[Product] = []
    for blk in blocks:
        for i in range(blk.start, blk.end):
            st = body[i]
            if isinstance(st, ir.Instr) and _is_mul(st):
                p = Product(st, i)
                _collect_uses(p, body, i, blk.end, st.operands[0].name, False, live_after)
                products.append(p)
    chosen = _choose(products)
    if not chosen:
        return 0
    return _rewrite(fn, chosen)


def _collect_uses(p: Product, body: list, start: int, end: int, reg: str, negated: bool,
                  live_after: dict[int, set[str]]) -> None:
    """Follow the value of `reg` (defined at body[start]) to the end of its block."""
    t = _ftype(p.mul)
    ftz = p.mul.has("ftz")
    for j in range(start + 1, end):
        st = body[j]
        if not isinstance(st, ir.Instr):
            continue
        d, u = defs_uses(st)
        if reg in u:
            pos = _reads(st, reg)
            if _contractible_add(st, t, ftz) and len(pos) == 1 and st.operands[0] != ir.Reg("_"):
                p.uses.append((st, pos[0], negated))
            elif (st.opcode in ("mov", "neg") and st.guard is None and len(pos) == 1 and len(st.operands) == 2
                  and isinstance(st.operands[0], ir.Reg) and st.operands[0].name != reg
                  and (st.opcode == "mov" or (_ftype(st) == t and not st.has("ftz")))):
                _collect_uses(p, body, j, end, st.operands[0].name, negated ^ (st.opcode == "neg"), live_after)
            else:
                p.blocked = True
        if reg in d and st.guard is None:
            return  # redefined: the product's value ends here
    last = next((body[j] for j in range(end - 1, start, -1) if isinstance(body[j], ir.Instr)), body[start])
    if reg in live_after.get(id(last), ()):
        p.blocked = True  # live out of the block: used elsewhere


def _choose(products: list[Product]) -> dict[int, tuple[Product, int, bool]]:
    """Per add (by id): the product it absorbs, at which operand, whether negated."""
    fusable = [p for p in products if p.uses and not p.blocked]
    while True:
        by_add: dict[int, list[tuple[Product, int, bool]]] = {}
        for p in fusable:
            for add, pos, neg in p.uses:
                by_add.setdefault(id(add), []).append((p, pos, neg))
        chosen: dict[int, tuple[Product, int, bool]] = {}
        for key, cands in by_add.items():
            if len({id(c[0]) for c in cands}) != len(cands):  # the same product twice: a*b + a*b
                continue
            chosen[key] = min(cands, key=lambda c: c[1])  # the first operand wins
        # a product is fused only if every one of its adds absorbs it; otherwise drop it and retry
        keep = [p for p in fusable if all(chosen.get(id(a), (None,))[0] is p for a, _, _ in p.uses)]
        if len(keep) == len(fusable):
            return chosen
        fusable = keep


def _rewrite(fn: ir.Function, chosen: dict[int, tuple[Product, int, bool]]) -> int:
    body = fn.body
    out: list = []
    counter = [0]

    def fresh(t: str) -> ir.Reg:
        counter[0] += 1
        name = f"%__fmad{counter[0]}"
        while name in fn.regs:
            counter[0] += 1
            name = f"%__fmad{counter[0]}"
        fn.regs[name] = FUSABLE_TYPES.get(t, t)
        return ir.Reg(name)

    # a mul operand redefined between the product and its add: copy it at the mul, fuse the copy
    position = {id(s): i for i, s in enumerate(body)}
    copies: set[int] = set()
    for add_key, (p, _pos, _neg) in chosen.items():
        if id(p.mul) in copies:
            continue
        written: set[str] = set()
        for s in body[p.index:position[add_key]]:  # from the mul itself (mul.f32 %f5, %f5, %f4)
            if isinstance(s, ir.Instr):
                written.update(defs_uses(s)[0])
        if any(isinstance(o, ir.Reg) and o.name in written for o in p.mul.operands[1:3]):
            copies.add(id(p.mul))
    copy_regs: dict[int, list] = {}
    fused_divs = {id(p.mul) for p, _pos, _neg in chosen.values() if _is_div(p.mul)}
    copies -= fused_divs  # their factors are computed at the div, from the values it sees
    div_regs: dict[int, list] = {}
    n = 0
    for st in body:
        if not isinstance(st, ir.Instr):
            out.append(st)
            continue
        if _is_div(st) and id(st) in fused_divs:
            div_regs[id(st)] = _div_factors(st, out, fresh)
            out.append(st)
            continue
        if id(st) in copies:
            t = _ftype(st)
            regs = []
            for o in st.operands[1:3]:
                if isinstance(o, ir.Reg):
                    r = fresh(t)
                    out.append(ir.Instr("mov", (FUSABLE_TYPES[t],), [r, o], None, st.pos, st.src_loc))
                    regs.append(r)
                else:
                    regs.append(o)
            copy_regs[id(st)] = regs
            out.append(st)
            continue
        pick = chosen.get(id(st))
        if pick is None:
            out.append(st)
            continue
        p, pos, neg = pick
        t = _ftype(p.mul)
        a, b = div_regs.get(id(p.mul)) or copy_regs.get(id(p.mul), p.mul.operands[1:3])
        c = st.operands[3 - pos]
        neg_product = neg ^ (st.opcode == "sub" and pos == 2)
        neg_c = st.opcode == "sub" and pos == 1
        if neg_product:
            a = _negated(a, t, st, out, fresh)
        if neg_c:
            c = _negated(c, t, st, out, fresh)
        mods = ("rn", *(m for m in ("ftz", "sat") if st.has(m)), t)
        out.append(ir.Instr("fma", mods, [st.operands[0], a, b, c], st.guard, st.pos, st.src_loc))
        n += 1
    fn.body = out
    return n


def _negated(op, t: str, at: ir.Instr, out: list, fresh) -> ir.Reg:
    """A register holding -op (emitted before the fma; `neg` is exact for every value)."""
    r = fresh(t)
    out.append(ir.Instr("neg", (t,), [r, op], None, at.pos, at.src_loc))
    return r


F32_QUARTER, F32_TWO24, F32_TWO126, F32_MIN_NORMAL = 0x3E800000, 0x4B800000, 0x7E800000, 0x00800000


def _f32_imm(bits: int) -> ir.FImm:
    return ir.FImm(struct.unpack("<f", struct.pack("<I", bits))[0], bits, 32)


def _div_factors(div: ir.Instr, out: list, fresh) -> list:
    """[a', MUFU.RCP(d')] of `div.approx/full(.ftz).f32 q, a, d` as ptxas computes them (q = a' * rcp):
    emitted before the div into fresh registers (read by the fmas that absorb the quotient)."""
    a, d = div.operands[1:3]
    ftz = ("ftz",) if div.has("ftz") else ()

    def emit(op: str, mods: tuple, *ops) -> ir.Reg:
        r = fresh("pred" if op == "setp" else "f32")
        out.append(ir.Instr(op, mods, [r, *ops], None, div.pos, div.src_loc))
        return r

    def scaled(cond: ir.Reg, factor: int) -> None:
        nonlocal a, d
        k = _f32_imm(factor)
        a = emit("selp", ("f32",), emit("mul", ("rn", *ftz, "f32"), a, k), a, cond)
        d = emit("selp", ("f32",), emit("mul", ("rn", *ftz, "f32"), d, k), d, cond)

    known = approx_fold.imm_bits(d)
    fold = None if known is None else approx_fold.folded_divisor(known, div.has("full"), bool(ftz))
    if fold is not None:  # an immediate divisor: ptxas multiplies by its correctly rounded reciprocal
        scale, rcp = fold
        if scale != 0x3F800000:
            a = emit("mul", ("rn", *ftz, "f32"), a, _f32_imm(scale))
        return [a, _f32_imm(rcp)]
    mag = emit("abs", (*ftz, "f32"), d)
    if div.has("full"):  # FSETP.GT |d| > 2**126: both scaled by 1/4
        scaled(emit("setp", ("gt", *ftz, "f32"), mag, _f32_imm(F32_TWO126)), F32_QUARTER)
    if not ftz:  # FSETP.GEU |d| >= 2**-126 false (subnormal or zero, not NaN): both scaled by 2**24
        scaled(emit("setp", ("lt", "f32"), mag, _f32_imm(F32_MIN_NORMAL)), F32_TWO24)
    return [a, emit("rcp", ("approx", "ftz", "f32"), d)]
