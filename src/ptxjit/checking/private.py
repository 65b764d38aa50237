"""Arrays whose every access is private to one thread: the race screen (shadow.py) need not shadow them.

`out[i] = ...` with `i = blockIdx.x * blockDim.x + threadIdx.x` touches a word no other thread touches;
such an array cannot race, and shadowing it is the screen's main cost in memory-bound kernels.  The proof
has a static half and a launch half:

* static (once per kernel): every global or generic access of the kernel has an address that is a
  polynomial in the kernel's pointer parameters, %tid, %ctaid, %ntid, %nctaid, scalar parameters and
  constants (symbolic evaluation of single-definition registers: mov, ld.param, cvta, add, sub, mul,
  mad, shl, cvt); the accesses through pointer parameter p all share one such index polynomial
  (offsets aside).  A kernel with an access this cannot describe, or with calls, proves nothing.
* at launch: with the launch's shape and scalar values the index becomes linear in the thread and CTA
  coordinates; it is injective over the grid with room for the accesses' span (mixed radix:
  coefficients sorted by size, each at least the reach of the smaller ones plus the span); no 32-bit
  intermediate can wrap over the grid; and p's array overlaps no other argument.

Then threads touch pairwise disjoint bytes of p's array: no race on it is possible, whatever the
kernel's control flow (a guard only removes accesses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product

from ptxjit.frontend import ir
from ptxjit.util import PerObject

Poly = dict[tuple[str, ...], int]  # monomial (sorted atoms) -> coefficient; () is the constant
_VARS = ("%tid.x", "%tid.y", "%tid.z", "%ctaid.x", "%ctaid.y", "%ctaid.z")
_SHAPE = ("%ntid.x", "%ntid.y", "%ntid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z")
S32 = (-(1 << 31), (1 << 31) - 1)
U31 = (0, (1 << 31) - 1)


def _add(a: Poly, b: Poly, sign: int = 1) -> Poly:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + sign * c
    return {m: c for m, c in out.items() if c}


def _mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for (ma, ca), (mb, cb) in product(a.items(), b.items()):
        m = tuple(sorted(ma + mb))
        out[m] = out.get(m, 0) + ca * cb
    return {m: c for m, c in out.items() if c}


@dataclass
class Access:
    stmt: int           # the instruction's index in the function body
    param: str          # the pointer parameter
    index: Poly         # address minus the parameter's base, without its constant
    lo: int             # constant offset
    hi: int             # constant offset + access size


@dataclass
class KernelShape:
    """The static half: per pointer parameter its accesses, and the 32-bit values to check at launch."""
    accesses: dict[str, list[Access]] = field(default_factory=dict)
    narrow: list[tuple[Poly, tuple[int, int]]] = field(default_factory=list)  # (value, allowed range)


class _Eval:
    def __init__(self, fn: ir.Function, pointer_params: set[str], scalar_params: set[str]) -> None:
        from ptxjit.passes.dataflow import defs_uses

        self.defs: dict[str, list[ir.Instr]] = {}
        for ins in fn.instructions:
            for r in defs_uses(ins)[0]:
                self.defs.setdefault(r, []).append(ins)
        self.pointers, self.scalars = pointer_params, scalar_params
        self.memo: dict[str, Poly | None] = {}
        self.narrow: list[tuple[Poly, tuple[int, int]]] = []

    def operand(self, op) -> Poly | None:
        if isinstance(op, ir.Imm) and isinstance(op.value, int):
            return {(): op.value} if op.value else {}
        if isinstance(op, ir.Reg) and not op.neg:
            if op.name in _VARS or op.name in _SHAPE:
                return {(op.name,): 1}
            return self.reg(op.name)
        return None

    def reg(self, name: str) -> Poly | None:
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = None  # a cycle (a loop-carried register) proves nothing
        ds = self.defs.get(name, [])
        got = self._define(ds[0]) if len(ds) == 1 and ds[0].guard is None else None
        self.memo[name] = got
        return got

    def _define(self, ins: ir.Instr) -> Poly | None:
        op, ts, src = ins.opcode, ins.types(), ins.operands[1:]
        wide = bool(ts) and ts[0][1:] == "64"
        if op == "ld" and ins.has("param") and src and isinstance(src[0], ir.Addr) \
                and isinstance(src[0].base, ir.Sym) and not src[0].offset:
            p = src[0].base.name
            if p in self.pointers and wide:
                return {(f"ptr:{p}",): 1}
            return {(f"param:{p}",): 1} if p in self.scalars else None
        vals = [self.operand(s) for s in src]
        if any(v is None for v in vals):
            return None
        if op in ("mov", "cvta") and len(vals) == 1 and not (op == "cvta" and ins.has("shared")):
            return vals[0]
        if op == "cvt" and len(ts) == 2 and ts[0][1:] == "64" and ts[1][1:] == "32" and ts[0][0] == ts[1][0]:
            self.narrow.append((vals[0], S32 if ts[1][0] == "s" else U31))
            return vals[0]
        if op in ("add", "sub") and len(vals) == 2:
            r = _add(vals[0], vals[1], 1 if op == "add" else -1)
        elif op == "mul" and len(vals) == 2 and (ins.has("lo") or ins.has("wide")):
            r = _mul(vals[0], vals[1])
            if ins.has("wide"):  # the operands are 32-bit, the product exact in 64 bits
                for v in vals:
                    self.narrow.append((v, S32 if ts[0][0] == "s" else U31))
                return r
        elif op == "mad" and len(vals) == 3 and ins.has("lo"):
            r = _add(_mul(vals[0], vals[1]), vals[2])
        elif op == "shl" and len(vals) == 2 and set(vals[1]) <= {()}:
            r = _mul(vals[0], {(): 1 << vals[1].get((), 0)})
        else:
            return None
        if not wide:
            self.narrow.append((r, S32 if ts and ts[0][0] == "s" else U31))
        return r


def kernel_shape(fn: ir.Function) -> KernelShape | None:
    """The static half of the proof for a kernel function as lowered (instrument/trace.py kernel_plan), or
    None: nothing provable."""
    from ptxjit.instrument.probes import memory_accesses

    if any(i.opcode == "call" for i in fn.instructions):
        return None
    params = {p.name: p for p in fn.params}
    pointers = {n for n, p in params.items() if not p.dims and ir.type_size(p.type) == 8}
    scalars = {n for n, p in params.items() if not p.dims and n not in pointers}
    ev = _Eval(fn, pointers, scalars)
    out = KernelShape()
    for stmt, ins in enumerate(fn.body or []):
        if not isinstance(ins, ir.Instr):
            continue
        for space, size, _kind in memory_accesses(ins, set(params)):
            if space not in ("global", ""):
                continue
            addr = ins.operands[0 if ins.opcode in ("st", "red") else 1] if ins.opcode != "cp" else None
            if not isinstance(addr, ir.Addr) or not isinstance(addr.base, ir.Reg) or size <= 0:
                return None
            poly = ev.reg(addr.base.name)
            bases = [m for m in (poly or {}) if any(a.startswith("ptr:") for a in m)]
            if poly is None or len(bases) != 1 or len(bases[0]) != 1 or poly[bases[0]] != 1:
                return None  # an access of unknown memory: it might reach any array
            p = bases[0][0][4:]
            index = {m: c for m, c in poly.items() if m != bases[0] and m != ()}
            off = poly.get((), 0) + (addr.offset or 0)
            out.accesses.setdefault(p, []).append(Access(stmt, p, index, off, off + size))
    out.narrow = ev.narrow
    return out


def _value(atom: str, env: dict[str, int]) -> int | None:
    return env.get(atom)


def _range(poly: Poly, env: dict[str, int], ext: dict[str, int]) -> tuple[int, int] | None:
    """The range of poly over the grid (each varying atom in [0, ext - 1]); None if a term is unknown."""
    lo = hi = 0
    for m, c in poly.items():
        mlo, mhi = c, c
        for a in m:
            if a in ext:
                cands = [x * y for x in (mlo, mhi) for y in (0, ext[a] - 1)]
                mlo, mhi = min(cands), max(cands)
            else:
                v = _value(a, env)
                if v is None:
                    return None
                mlo, mhi = sorted((mlo * v, mhi * v))
        lo, hi = lo + mlo, hi + mhi
    return lo, hi


_SHAPES = PerObject()  # kernel -> {id of a lowered function of it: its KernelShape, or None}


def unshadowed(kernel, fn: ir.Function, grid, block, args) -> tuple[set[int], frozenset[int]]:
    """What the screen need not watch in this launch of kernel (lowered as fn): the indices of the
    pointer parameters whose arrays no two threads can both touch, or that nothing writes, and the
    statements of fn that access only such arrays.  Nothing when the kernel's accesses are not all
    described (kernel_shape) or arrays overlap."""
    import numpy as np

    from ptxjit.runtime.memory import memory_of

    shapes = _SHAPES.of(kernel)
    shape = shapes.get(id(fn), False)  # fn: one of the kernel's lowered functions, which it keeps alive
    if shape is False:
        shape = shapes[id(fn)] = kernel_shape(fn)
    if shape is None or not shape.accesses:
        return set(), frozenset()
    names = [p.name for p in fn.params]
    writes = [p.may_write for p in kernel._access.params]
    env: dict[str, int] = dict(zip(_SHAPE, (*block, *grid), strict=True))
    for n, a in zip(names, args, strict=False):
        if isinstance(a, int | np.integer) and not isinstance(a, bool):
            env[f"param:{n}"] = int(a)
    ext = {v: e for v, e in zip(_VARS, (*block, *grid), strict=True) if e > 1}
    env.update({v: 0 for v in _VARS if v not in ext})  # a coordinate of extent 1 is always 0
    for poly, (lo, hi) in shape.narrow:  # no 32-bit value may wrap anywhere in the grid
        r = _range(poly, env, ext)
        if r is None or r[0] < lo or r[1] > hi:
            return set(), frozenset()
    arrays = []
    for i, a in enumerate(args):
        arr = memory_of(a)
        if arr is not None and arr.nbytes:
            arrays.append((i, arr.ctypes.data, arr.ctypes.data + arr.nbytes))
    out = set()
    for p, accs in shape.accesses.items():
        i = names.index(p)
        mine = [r for r in arrays if r[0] == i]
        if not mine or any(j != i and s < mine[0][2] and mine[0][1] < e for j, s, e in arrays):
            continue  # no array, or one another parameter also reaches
        if not writes[i] or _injective(accs, env, ext):
            out.add(i)
    stmts = frozenset(a.stmt for p, accs in shape.accesses.items() for a in accs if names.index(p) in out)
    # a statement with an access of another array (cp-style pairs) stays watched
    stmts -= {a.stmt for p, accs in shape.accesses.items() for a in accs if names.index(p) not in out}
    return out, stmts


def _linear(index: Poly, env: dict[str, int], ext: dict[str, int]) -> tuple[dict[str, int], int] | None:
    """index at this launch: (coefficient per varying coordinate, constant), or None if not linear."""
    coeff: dict[str, int] = {}
    const = 0
    for m, c in index.items():
        varying = [a for a in m if a in ext]
        if len(varying) > 1:
            return None
        k = c
        for a in m:
            if a not in ext:
                v = _value(a, env)
                if v is None:
                    return None
                k *= v
        if varying:
            coeff[varying[0]] = coeff.get(varying[0], 0) + k
        else:
            const += k
    return {v: k for v, k in coeff.items() if k}, const


def _injective(accs: list[Access], env: dict[str, int], ext: dict[str, int]) -> bool:
    """Distinct threads reach disjoint bytes through these accesses (module doc: mixed radix)."""
    forms = [_linear(a.index, env, ext) for a in accs]
    if any(f is None for f in forms) or any(f[0] != forms[0][0] for f in forms):  # type: ignore[index]
        return False
    coeff = forms[0][0]  # type: ignore[index]
    lo = min(a.lo + f[1] for a, f in zip(accs, forms, strict=True))  # type: ignore[index]
    hi = max(a.hi + f[1] for a, f in zip(accs, forms, strict=True))  # type: ignore[index]
    reach = hi - lo  # every thread's bytes lie within [start, start + reach) of the smaller digits
    for c, e in sorted((abs(coeff.get(v, 0)), e) for v, e in ext.items()):
        if c < reach:
            return False
        reach = c * (e - 1) + reach
    return True
