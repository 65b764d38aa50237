"""Warp-level matrix multiply-accumulate: mma.sync.aligned (PTX ISA §9.7.14.5.14).

How a warp multiplies.  Every lane owns a fragment of A (M x K), B (K x N) and C (M x N) in its
registers.  A lane reaching `mma` writes its fragment elements, decoded to 64-bit values, into its
warp's dense A/B/C matrices in the tensor scratch area (worker record slot W_TC, sized by the
runtime from the kernel's instruction texts: `scratch_per_thread`), bumps its own sequence number and
suspends at a warp point.  Once the warp is released, the first lane to resume sees that the warp's
`done` word lags its sequence number, computes all of D = A x B + C in place of C (one call of a
per-variant LLVM function) and records the sequence number; every lane then reads its own D elements.
No lane needs another lane's registers after the release, and a lane that runs ahead to the next
mma only rewrites A/B/C after the whole warp arrived there, so D is never overwritten early.

Runs of mma.sync (`batched_mmas`: back to back, independent) can share one suspension: the first
publishes the whole run (one scratch area per mma, MAX_RUN areas per warp) and each writes its own D
after it.  A suspension saves and restores every live register of every thread, so this halves the
time of Triton's sm_80 tl.dot (8-16 mma in a row).  It takes effect where FnLowering leaves the
batched mma out of its suspension points (a three-line hook in lower/function.py: pending).

Fragment layouts (lane l, g = l >> 2, t = l & 3; e = element within a register, epr elements per
register, mr = M / 8):  A reg j elem e -> row g + 8 (j % mr), col t epr + e + 4 epr (j // mr);
B reg j elem e -> k = t epr + e + 4 epr j, n = g; C/D element i -> row g + 8 (i // 2), col 2t + i % 2
(f16 accumulators: register j holds elements 2j and 2j + 1).  For .b1 an "element" is a 32-bit word
of the k dimension.  These match the H100 on every golden case (shared/gpu-golden/tc mma_*).

Numerics (mma_numerics.py): integer and .b1 are exact; f64 is a chain of fused multiply-adds in k
order; f16/bf16/tf32/fp8 follow the H100's block-fused model described there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower import abi
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.rules import mma_numerics as nm
from ptxjit.lower.rules.fp8 import E4M3, E5M2, decode8
from ptxjit.lower.rules.half import F16, encode
from ptxjit.lower.types import F32, F64, I16, I32, I64, PTR, const_int

_SHAPE = re.compile(r"m(\d+)n(\d+)k(\d+)")
_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f64": 64, "s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1,
         "e4m3": 8, "e5m2": 8, "f32": 32, "s32": 32}
_FLOATS = ("f16", "bf16", "tf32", "e4m3", "e5m2")
SUPPORTED = {  # (shape, a type) -> accepted (d, c) types
    **{("m16n8k8", t): ("f32", "f16") for t in ("f16", "bf16", "tf32")},
    **{("m16n8k16", t): ("f32", "f16") for t in ("f16", "bf16")},
    ("m16n8k4", "tf32"): ("f32",),
    **{(s, "f64"): ("f64",) for s in ("m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16")},
    **{(s, t): ("s32",) for s in ("m8n8k16", "m16n8k16", "m16n8k32") for t in ("s8", "u8")},
    **{(s, t): ("s32",) for s in ("m8n8k32", "m16n8k32", "m16n8k64") for t in ("s4", "u4")},
    **{(s, "b1"): ("s32",) for s in ("m8n8k128", "m16n8k128", "m16n8k256")},
    **{("m16n8k32", t): ("f32", "f16") for t in ("e4m3", "e5m2")},
}


@dataclass(frozen=True)
class Mma:
    """One mma variant: shape, types and options; `ka` counts A/B storage elements along k."""

    M: int
    N: int
    K: int
    dt: str
    at: str
    bt: str
    ct: str
    satfinite: bool = False
    bitop: str = ""
    threads: int = 32
    frag: str = "mma"  # fragment layout family: "mma" (mma.sync) or "wmma" (two m16n8 halves along n)
    sparse: bool = False  # mma.sp / wgmma.sp: packed A and metadata in a second area (mma_sparse.py)

    @property
    def ka(self) -> int:
        return self.K // 32 if self.at == "b1" else self.K

    @property
    def kind(self) -> str:
        if self.at == "f64":
            return "f64"
        if self.at == "b1":
            return "b1"
        return "float" if self.at in _FLOATS else "int"

    def epr(self, t: str) -> int:
        """Elements per register of type t (b1: one 32-bit word)."""
        return 1 if t in ("f64", "b1") else 32 // _BITS[t]

    def a_sites(self) -> list[tuple[int, int, int, int]]:
        """(register, element, row offset, col offset) of A: row = g + R, col = t epr + C.  wmma's A
        is mma's A of the m16n8 half (wmma.load.a fills the remaining registers with copies)."""
        rows = 16 if self.frag == "wgmma" else self.M  # wgmma: each warp holds its 16 rows
        ep, mr = self.epr(self.at), rows // 8
        nregs = rows * self.ka // 32 // ep
        return [(j, e, 8 * (j % mr), e + 4 * ep * (j // mr)) for j in range(nregs) for e in range(ep)]

    def b_sites(self) -> list[tuple[int, int, int, int]]:
        """(register, element, k offset, n offset) of B: k = t epr + Kc, n = g + Nc; wmma: the
        registers of the n = 0..7 half, then those of n = 8..15."""
        ep = self.epr(self.bt)
        nb = 8 * self.ka // 32 // ep  # registers of an n8 slice
        return [(j, e, e + 4 * ep * (j % nb), 8 * (j // nb)) for j in range(nb * self.N // 8) for e in range(ep)]

    def c_sites(self) -> list[tuple[int, int]]:
        """(row offset, col offset) of accumulator element i: row = g + R, col = 2t + C."""
        n = self.M * self.N // self.threads
        return [(8 * ((i // 2) % 2), i % 2 + 8 * (i // 4)) for i in range(n)]

    def header(self) -> int:
        return 8 + 8 * self.threads  # done word, then one sequence number per thread

    def offsets(self) -> tuple[int, int, int, int]:
        """Byte offsets of A, B, C/D and the end, from the group's base."""
        a = self.header()
        b = a + 8 * self.M * self.ka
        c = b + 8 * self.ka * self.N
        return a, b, c, c + 8 * self.M * self.N

    def per_thread(self) -> int:
        return -(-self.offsets()[3] // (8 * self.threads)) * 8

    def areas(self) -> int:
        """Scratch areas per group: mma.sync runs share one suspension (batched_mmas), one area each."""
        return MAX_RUN if self.frag == "mma" else 2 if self.sparse else 1

    def key(self) -> str:
        return (f"{self.frag}_m{self.M}n{self.N}k{self.K}_{self.dt}_{self.at}_{self.bt}_{self.ct}_"
                f"{int(self.satfinite)}{self.bitop}")


def parse(ins: Instr) -> Mma | str:
    """The variant of an mma.sync instruction, or why ptxjit cannot run it."""
    shape = next((m for m in ins.mods if _SHAPE.fullmatch(m)), None)
    tys = [m for m in ins.mods if m in _BITS]  # ir's type list lacks s4/u4/b1/e4m3/e5m2
    if shape is None or len(tys) != 4:
        return "mma needs a shape and four types (.dtype.atype.btype.ctype)"
    if ins.has("sp") or ins.has("sp::ordered_metadata") or any(m.startswith("kind::") for m in ins.mods):
        return "sparse and .kind:: (block-scaled) mma are not supported"
    dt, at, bt, ct = tys
    ok = SUPPORTED.get((shape, at))
    if ok is None or dt not in ok or ct not in ok:
        return f"mma.{shape} with .{dt}.{at}.{bt}.{ct} is not supported"
    if at in _FLOATS and bt not in _FLOATS or at not in _FLOATS and _BITS[at] != _BITS[bt]:
        return f"mma: A type .{at} and B type .{bt} do not pair"
    if at not in ("e4m3", "e5m2", "s8", "u8", "s4", "u4") and at != bt:
        return f"mma: A type .{at} and B type .{bt} differ"
    M, N, K = (int(x) for x in _SHAPE.fullmatch(shape).groups())  # type: ignore[union-attr]
    bitop = "xor" if ins.has("xor") else "and" if ins.has("and") else ""
    return Mma(M, N, K, dt, at, bt, ct, ins.has("satfinite"), bitop)


def _check(ins: Instr) -> str | None:
    r = parse(ins)
    if isinstance(r, str):
        return r
    lay = [m for m in ins.mods if m in ("row", "col")]
    if lay != ["row", "col"]:
        return "mma.sync supports the .row.col layout (the only one for these shapes)"
    return None


def scratch_per_thread(texts: list[str]) -> int:
    """Bytes of tensor scratch per thread that a kernel with these instruction texts needs (0: none).
    The runtime sizes W_TC with it (times the thread count rounded up to a warpgroup)."""
    need = 0
    for t in texts:
        op = t.split(None, 1)[0] if t else ""
        if op.startswith("@"):
            op = t.split()[1]
        if not op.startswith(("mma.", "wmma.mma.", "wgmma.mma_async.")):
            continue
        parts = op.split(".")
        shape = next((p for p in parts if _SHAPE.fullmatch(p)), None)
        tys = [p for p in parts if p in _BITS]
        threads = 128 if op.startswith("wgmma") else 32
        if len(tys) == 2:  # wmma.mma .dtype.ctype: f16 inputs
            tys = [tys[0], "f16", "f16", tys[1]]
        elif len(tys) == 3:  # wgmma .dtype.atype.btype
            tys = [*tys, tys[0]]
        if shape is None or len(tys) < 4:
            continue
        M, N, K = (int(x) for x in _SHAPE.fullmatch(shape).groups())  # type: ignore[union-attr]
        mm = Mma(M, N, K, *tys[-4:], threads=threads, frag="mma" if op.startswith("mma.") else "wmma",
                 sparse="sp" in parts)
        need = max(need, mm.per_thread() * mm.areas())
    return need


# ---------------------------------------------------------------- lowering


def group_base(lw: FnLowering, mm: Mma, area: int = 0) -> ll.Value:
    """This thread's group (warp) area in the tensor scratch, as an i8 pointer.  mma.sync groups have
    MAX_RUN areas each, one per mma of a batched run (`area`: which)."""
    b = lw.b
    grp = b.udiv(lw.tlin, const_int(I32, mm.threads))
    size = mm.threads * mm.per_thread()
    off = b.mul(b.zext(grp, I64), const_int(I64, size * mm.areas()))
    return b.gep(lw.entry_record_ptr(abi.W_TC), [b.add(off, const_int(I64, area * size))])


def _slot(lw: FnLowering, base: ll.Value, off: int, idx: ll.Value, t: ll.Type) -> ll.Value:
    b = lw.b
    p = b.gep(base, [b.add(const_int(I64, off), b.mul(b.zext(idx, I64), const_int(I64, 8)))])
    return lw.typed_ptr(p, t)


def _regs(op) -> list:
    return list(op.items) if isinstance(op, ir.Vec) else [op]


def _element(lw: FnLowering, word: ll.Value, t: str, e: int) -> ll.Value:
    """Element e of a fragment register as the 64-bit value stored in the dense matrix (f64 for
    floats, i64 for integers and .b1 words)."""
    b = lw.b
    if t == "f64":
        return word
    if t == "b1":
        return b.zext(word, I64)
    w = _BITS[t]
    field = b.and_(b.lshr(word, const_int(I32, w * e)), const_int(I32, (1 << w) - 1)) if w < 32 else word
    # f16/bf16: the hardware conversions (exact; a NaN keeps its payload, but every float result
    # leaves through _write_acc, which writes the canonical NaN)
    if t == "f16":
        return b.fpext(b.bitcast(b.trunc(field, I16), ll.HalfType()), F64)
    if t == "bf16":
        return b.fpext(b.bitcast(b.shl(field, const_int(I32, 16)) if e == 0 else b.and_(
            word, const_int(I32, 0xFFFF0000)), F32), F64)
    if t in ("e4m3", "e5m2"):
        return decode8(lw, b.trunc(field, I16), E4M3 if t == "e4m3" else E5M2)
    if t == "tf32":  # the tensor core reads the upper 19 bits (sign, exponent, 10 mantissa bits)
        return b.fpext(b.bitcast(b.and_(field, const_int(I32, 0xFFFFE000)), F32), F64)
    if t == "f32":
        return b.fpext(b.bitcast(field, F32), F64)
    if t.startswith("s"):
        sh = const_int(I32, 32 - w)
        return b.sext(b.ashr(b.shl(field, sh), sh), I64)
    return b.zext(field, I64)


def _reg_type(t: str) -> str:
    return "f64" if t == "f64" else "f32" if t == "f32" else "b32"


def _acc_elements(lw: FnLowering, ops: list, t: str) -> list[ll.Value]:
    """The accumulator elements of C in element order."""
    b = lw.b
    out: list[ll.Value] = []
    for r in ops:
        if t == "f16":
            w = lw.read(r, "b32")
            out += [b.fpext(b.bitcast(b.trunc(b.lshr(w, const_int(I32, 16 * h)), I16), ll.HalfType()), F64)
                    for h in (0, 1)]
        elif t == "f32":
            out.append(b.fpext(lw.read(r, "f32"), F64))
        elif t == "f64":
            out.append(lw.read(r, "f64"))
        else:
            out.append(b.sext(lw.read(r, "b32"), I64))
    return out


def lane_gt(lw: FnLowering) -> tuple[ll.Value, ll.Value]:
    """(g, t) = (lane >> 2, lane & 3) of this thread."""
    lane = lw.lane()
    return (lw.per_thread("lane_g", lambda b: b.lshr(lane, const_int(I32, 2))),
            lw.per_thread("lane_t", lambda b: b.and_(lane, const_int(I32, 3))))


def _row0(lw: FnLowering, mm: Mma) -> ll.Value:
    """g, plus 16 w for warp w of a warpgroup (wgmma)."""
    b = lw.b
    g, _t = lane_gt(lw)
    if mm.frag != "wgmma":
        return g
    w = b.lshr(b.urem(lw.tlin, const_int(I32, mm.threads)), const_int(I32, 5))
    return b.add(g, b.shl(w, const_int(I32, 4)))


def acc_rc(lw: FnLowering, mm: Mma, i: int) -> tuple[ll.Value, ll.Value]:
    """(row, col) of this lane's accumulator element i."""
    b = lw.b
    _g, t = lane_gt(lw)
    r, c = mm.c_sites()[i]
    return b.add(_row0(lw, mm), const_int(I32, r)), b.add(b.shl(t, const_int(I32, 1)), const_int(I32, c))


def a_rc(lw: FnLowering, mm: Mma, r: int, c: int) -> tuple[ll.Value, ll.Value]:
    b = lw.b
    _g, t = lane_gt(lw)
    return (b.add(_row0(lw, mm), const_int(I32, r)),
            b.add(b.mul(t, const_int(I32, mm.epr(mm.at))), const_int(I32, c)))


def b_kn(lw: FnLowering, mm: Mma, kc: int, nc: int) -> tuple[ll.Value, ll.Value]:
    b = lw.b
    g, t = lane_gt(lw)
    return b.add(b.mul(t, const_int(I32, mm.epr(mm.bt))), const_int(I32, kc)), b.add(g, const_int(I32, nc))


def _acc_index(lw: FnLowering, mm: Mma, i: int) -> ll.Value:
    b = lw.b
    row, col = acc_rc(lw, mm, i)
    return b.add(b.mul(row, const_int(I32, mm.N)), col)


def _firsts(lw: FnLowering, mm: Mma) -> tuple[ll.Value, ll.Value, ll.Value]:
    """The baseline build's fragment addressing: this thread's dense-matrix indices of its A, B and C
    elements at site offset 0 (once per thread); site (r, c) of each is that index plus a constant
    (_site_deltas).  Per element, the optimized builds' row and column arithmetic (folded by LLVM there)
    was ten lines of IR at tier 0: an m64n64 wgmma's 32 accumulators, published and written back."""
    def make(_b: ll.IRBuilder) -> tuple[ll.Value, ll.Value, ll.Value]:
        b = lw.b
        g, t = lane_gt(lw)
        row0 = _row0(lw, mm)
        a0 = b.add(b.mul(row0, const_int(I32, mm.ka)), b.mul(t, const_int(I32, mm.epr(mm.at))))
        b0 = b.add(b.mul(b.mul(t, const_int(I32, mm.epr(mm.bt))), const_int(I32, mm.N)), g)
        c0 = b.add(b.mul(row0, const_int(I32, mm.N)), b.shl(t, const_int(I32, 1)))
        return a0, b0, c0
    return lw.per_thread(("mma_firsts", mm.frag, mm.threads, mm.N, mm.ka, mm.epr(mm.at), mm.epr(mm.bt)), make)


def _site_slots(lw: FnLowering, mm: Mma, base: ll.Value, off: int, first: ll.Value, t: ll.Type):
    """Baseline: delta -> the t* slot of dense-matrix index first + delta at offset `off` of `base`
    (the same address _slot gives: one gep per element from a pointer computed once)."""
    b = lw.b
    p0 = _slot(lw, base, off, first, t)
    return lambda delta: b.gep(p0, [const_int(I64, delta)]) if delta else p0


def publish(lw: FnLowering, mm: Mma, a_ops: list, b_ops: list, c_vals: list[ll.Value],
            negate_a: bool = False, area: int = 0) -> None:
    """Write this lane's A, B (none given: filled later) and C elements into its group's dense matrices
    and bump its sequence number."""
    b = lw.b
    base = group_base(lw, mm, area)
    oa, ob, oc, _ = mm.offsets()
    member = b.urem(lw.tlin, const_int(I32, mm.threads))
    store_t = F64 if mm.kind in ("float", "f64") else I64
    fast = lw.cg.baseline
    if fast:
        a0, b0, c0 = _firsts(lw, mm)
    words: dict[int, ll.Value] = {}
    slot_a = _site_slots(lw, mm, base, oa, a0, store_t) if fast and a_ops and mm.a_sites() else None
    for j, e, rr, cc in mm.a_sites() if a_ops else []:
        if j not in words:
            words[j] = lw.read(a_ops[j], _reg_type(mm.at))
        v = _element(lw, words[j], mm.at, e)
        if slot_a is not None:
            b.store(b.fneg(v) if negate_a else v, slot_a(rr * mm.ka + cc))
            continue
        row, col = a_rc(lw, mm, rr, cc)
        idx = b.add(b.mul(row, const_int(I32, mm.ka)), col)
        b.store(b.fneg(v) if negate_a else v, _slot(lw, base, oa, idx, store_t))
    words = {}
    slot_b = _site_slots(lw, mm, base, ob, b0, store_t) if fast and b_ops and mm.b_sites() else None
    for j, e, kc, nc in mm.b_sites() if b_ops else []:
        if j not in words:
            words[j] = lw.read(b_ops[j], _reg_type(mm.bt))
        if slot_b is not None:
            b.store(_element(lw, words[j], mm.bt, e), slot_b(kc * mm.N + nc))
            continue
        k, n = b_kn(lw, mm, kc, nc)
        idx = b.add(b.mul(k, const_int(I32, mm.N)), n)
        b.store(_element(lw, words[j], mm.bt, e), _slot(lw, base, ob, idx, store_t))
    slot_c = _site_slots(lw, mm, base, oc, c0, store_t) if fast and c_vals else None
    for i, v in enumerate(c_vals):
        if slot_c is not None:
            r, c = mm.c_sites()[i]
            b.store(v, slot_c(r * mm.N + c))
            continue
        b.store(v, _slot(lw, base, oc, _acc_index(lw, mm, i), store_t))
    seq = _slot(lw, base, 8, member, I64)
    b.store(b.add(b.load(seq), const_int(I64, 1)), seq)


def compute_once(lw: FnLowering, mm: Mma, fill: Callable[[ll.Value], None] | None = None,
                 area: int = 0) -> ll.Value:
    """After the release: the first lane of the group (after `fill`, which may load operands from
    memory) computes D; returns the group base."""
    b = lw.b
    base = group_base(lw, mm, area)
    member = b.urem(lw.tlin, const_int(I32, mm.threads))
    seq = b.load(_slot(lw, base, 8, member, I64))
    done = lw.typed_ptr(base, I64)
    with b.if_then(b.icmp_unsigned("!=", b.load(done), seq)):
        if fill is not None:
            fill(base)
        b.call(nm.compute_function(lw.cg, mm), [base])
        b.store(seq, done)
    return base


def _write_acc(lw: FnLowering, mm: Mma, base: ll.Value, d_ops: list) -> None:
    b = lw.b
    oc = mm.offsets()[2]
    load_t = F64 if mm.kind in ("float", "f64") else I64
    n = mm.M * mm.N // mm.threads
    if lw.cg.baseline:
        slot_c = _site_slots(lw, mm, base, oc, _firsts(lw, mm)[2], load_t)
        vals = [b.load(slot_c(r * mm.N + c)) for r, c in mm.c_sites()[:n]]
    else:
        vals = [b.load(_slot(lw, base, oc, _acc_index(lw, mm, i), load_t)) for i in range(n)]
    if mm.dt == "f16":
        for j, r in enumerate(d_ops):
            lo, hi = (b.zext(encode(lw, b.fptrunc(vals[2 * j + h], F32), F16), I32) for h in (0, 1))
            lw.write(r, b.or_(lo, b.shl(hi, const_int(I32, 16))), "b32")
    elif mm.dt == "f32":
        for r, v in zip(d_ops, vals, strict=True):  # NaN: the H100's canonical 0x7fffffff
            nan = b.bitcast(const_int(I32, 0x7FFFFFFF), F32)
            lw.write(r, b.select(b.fcmp_unordered("uno", v, v), nan, b.fptrunc(v, F32)), "f32")
    elif mm.dt == "f64":
        for r, v in zip(d_ops, vals, strict=True):
            lw.write(r, v, "f64")
    else:
        for r, v in zip(d_ops, vals, strict=True):
            lw.write(r, b.trunc(v, I32), "b32")


@rule("mma", family="warp", check=_check)
def lower_mma(lw: FnLowering, ins: Instr) -> None:
    """mma.sync.aligned.<shape>.row.col[.satfinite].dtype.atype.btype.ctype d, a, b, c
    (and .b1 with .xor/.and.popc): see the module docstring for the exchange and the layouts.  (mma.sp:
    mma_sparse.py's form rule.)"""
    mm = parse(ins)
    assert isinstance(mm, Mma)
    run_mma(lw, ins, mm)


def run_mma(lw: FnLowering, ins: Instr, mm: Mma) -> None:
    """Publish, suspend at a warp point, compute once per warp, write this lane's D (mma and wmma.mma).

    A run of mma.sync (batched_mmas: the ones after the first are no suspension points) is published
    at once before the one suspension, each into its own area of the scratch (the j-th at j areas past
    the first), and computed after it; each mma of the run then writes its own D where it stands."""
    lw.cg.location_id(ins)  # the translation's location texts size the scratch area (scratch_per_thread)
    runs = lw.__dict__.setdefault("_mma_runs", {})
    if id(ins) in lw.yield_index or ins.opcode != "mma":
        run = [ins, *_run_after(lw, ins)]
        for j, member in enumerate(run):
            if j:
                runs[id(member)] = j
                lw.cg.location_id(member)
            m2 = mm if j == 0 else parse(member)
            assert isinstance(m2, Mma)
            _d, a_ops, b_ops, c_ops = (_regs(o) for o in member.operands[:4])
            publish(lw, m2, a_ops, b_ops, _acc_elements(lw, c_ops, m2.ct), area=j)
        lw.yield_point(warp_level=True)
        for j, member in enumerate(run):
            m2 = mm if j == 0 else parse(member)
            assert isinstance(m2, Mma)
            compute_once(lw, m2, area=j)
        _write_acc(lw, mm, group_base(lw, mm, 0), _regs(ins.operands[0]))
        return
    _write_acc(lw, mm, group_base(lw, mm, runs[id(ins)]), _regs(ins.operands[0]))


MAX_RUN = 16  # mma.sync sharing one suspension at most (each needs its own scratch area)


def _reads(ins: Instr) -> set[str]:
    return {r.name for o in ins.operands[1:4] for r in _regs(o) if isinstance(r, ir.Reg)}


def batched_mmas(fn: ir.Function) -> set[int]:
    """ids of the mma.sync instructions that share the suspension of the mma.sync right before them:
    back to back in one basic block (no label between), unguarded, and reading no register that an
    earlier one of the run writes (so every operand of the run can be read before the suspension).
    Triton's tl.dot issues 8 or 16 such mma in a row: one suspension (saving and restoring every live
    register of every thread) instead of one per mma."""
    out: set[int] = set()
    run: list[Instr] = []
    written: set[str] = set()
    for st in fn.body or ():
        ok = isinstance(st, Instr) and st.opcode == "mma" and st.guard is None and isinstance(parse(st), Mma)
        if ok and run and len(run) < MAX_RUN and not (_reads(st) & written):
            out.add(id(st))
        elif ok:
            run, written = [], set()
        else:
            run, written = [], set()
            continue
        run.append(st)
        written |= {r.name for r in _regs(st.operands[0]) if isinstance(r, ir.Reg)}
    return out


def _run_after(lw: FnLowering, ins: Instr) -> list[Instr]:
    """The mma.sync that share `ins`'s suspension (batched_mmas), in order."""
    body = lw.fn.body or []
    i = next(k for k, st in enumerate(body) if st is ins)
    out = []
    for st in body[i + 1:]:
        if not isinstance(st, Instr) or st.opcode != "mma" or id(st) in lw.yield_index:
            break
        out.append(st)
    return out


__all__ = ["Mma", "PTR", "compute_once", "group_base", "parse", "publish", "scratch_per_thread"]
