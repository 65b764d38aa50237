"""Warp-level matrix fragments through memory: wmma.load.{a,b,c}, wmma.mma, wmma.store.d (PTX ISA §9.7.14.4).

The ISA leaves the fragment layout unspecified; the H100's (reverse-engineered from the raw registers it
left in shared/gpu-golden/tc wmma_*) is mma.sync's, twice along n: an m16n16kK fragment is the m16n8kK
fragments of the columns n = 0..7 and n = 8..15 side by side.  A: mma's A registers (for 16-bit types
the second half of the registers repeats the first); B: the registers of the n = 0..7 slice, then those
of n = 8..15 (again repeated for 16-bit types); C/D element i: row g + 8 ((i / 2) % 2), col 2t + i % 2 +
8 (i / 4) (f16: register j holds elements 2j, 2j + 1).  mma.py's Mma (frag="wmma") gives these sites.

wmma.load/store move each lane's own elements (row layout: element (r, c) at r * ldm + c, col layout:
c * ldm + r, in elements), so they need no exchange; wmma.mma runs through mma.py's warp exchange and
numerics.  Without a stride operand the matrix is dense (ldm = its row or column length).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxjit.frontend import ir
from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import rule
from ptxjit.lower.rules import mma as M
from ptxjit.lower.types import I8, I16, I32, I64, const_int

_SHAPES = {"m16n16k16": (16, 16, 16), "m16n16k8": (16, 16, 8)}
_IN_TYPES = ("f16", "bf16", "tf32", "s8", "u8")
_ACC_TYPES = ("f16", "f32", "s32")
_ESIZE = {"f16": 2, "bf16": 2, "tf32": 4, "f32": 4, "s8": 1, "u8": 1, "s32": 4}


def _shape(ins: Instr) -> tuple[int, int, int] | None:
    return next((_SHAPES[m] for m in ins.mods if m in _SHAPES), None)


def _op(ins: Instr) -> str:
    return next((m for m in ins.mods if m in ("load", "store", "mma")), "")


def _mma_variant(ins: Instr) -> M.Mma | str:
    """The variant of wmma.mma: .dtype.ctype (f16 inputs) or .dtype.atype.btype.ctype."""
    shape = _shape(ins)
    tys = [m for m in ins.mods if m in M._BITS]
    if shape is None:
        return "wmma: only the m16n16k16 and m16n16k8 shapes are supported"
    if len(tys) == 2:
        tys = [tys[0], "f16", "f16", tys[1]]
    if len(tys) != 4:
        return "wmma.mma needs .dtype.ctype or .dtype.atype.btype.ctype"
    dt, at, bt, ct = tys
    ok = {"f16": ("f16", "f32"), "bf16": ("f32",), "tf32": ("f32",), "s8": ("s32",), "u8": ("s32",)}.get(at)
    if ok is None or at != bt or dt not in ok or ct not in ok:
        return f"wmma.mma .{dt}.{at}.{bt}.{ct} is not supported"
    if (shape[2] == 8) != (at == "tf32"):
        return f"wmma.mma: .{at} does not come in m16n16k{shape[2]}"
    if any(m in ins.mods for m in ("rn", "rz", "rm", "rp")):
        return "wmma.mma rounding modifiers (.f64 only) are not supported"
    return M.Mma(*shape, dt, at, bt, ct, ins.has("satfinite"), frag="wmma")


def _check(ins: Instr) -> str | None:
    op = _op(ins)
    if op == "mma":
        r = _mma_variant(ins)
        return r if isinstance(r, str) else None
    if _shape(ins) is None:
        return "wmma: only the m16n16k16 and m16n16k8 shapes are supported"
    t = ins.types()[-1] if ins.types() else ""
    frag = next((m for m in ins.mods if m in ("a", "b", "c", "d")), "")
    allowed = _IN_TYPES if frag in ("a", "b") else _ACC_TYPES
    if t not in allowed:
        return f"wmma.{op}.{frag} of .{t} is not supported"
    return None


def _variant_for(ins: Instr, frag: str, t: str) -> M.Mma:
    """An Mma whose sites describe fragment `frag` of element type t."""
    mm, nn, kk = _shape(ins)  # type: ignore[misc]
    if frag in ("a", "b"):
        acc = "s32" if t in ("s8", "u8") else "f32"
        return M.Mma(mm, nn, kk, acc, t, t, acc, frag="wmma")
    return M.Mma(mm, nn, kk, t, "f16", "f16", t, frag="wmma")


def _sites(mm: M.Mma, frag: str, lw: FnLowering) -> list[tuple[int, int, ll.Value, ll.Value]]:
    """(register, element, matrix row, matrix col) of this lane's fragment: A (m, k), B (k, n), C/D (m, n)."""
    if frag == "a":
        return [(j, e, *M.a_rc(lw, mm, r, c)) for j, e, r, c in mm.a_sites()]
    if frag == "b":
        return [(j, e, *M.b_kn(lw, mm, kc, nc)) for j, e, kc, nc in mm.b_sites()]
    per = 2 if mm.dt == "f16" else 1
    return [(i // per, i % per, *M.acc_rc(lw, mm, i)) for i in range(mm.M * mm.N // 32)]


def _dims(mm: M.Mma, frag: str) -> tuple[int, int]:
    return {"a": (mm.M, mm.K), "b": (mm.K, mm.N)}.get(frag, (mm.M, mm.N))


def _element_ptr(lw: FnLowering, ins: Instr, addr: ir.Addr, space: str, row: ll.Value, col: ll.Value,
                 ldm: ll.Value, esize: int, store: bool) -> ll.Value:
    """Host pointer to element (row, col); bounds-checked launches check it (a bad one faults and is
    redirected to the scratch area)."""
    b = lw.b
    col_major = ins.has("col")
    major, minor = (col, row) if col_major else (row, col)
    idx = b.add(b.mul(b.zext(major, I64), b.zext(ldm, I64)), b.zext(minor, I64))
    p = b.gep(lw.address(addr, space), [b.mul(idx, const_int(I64, esize))])
    chk = lw.bounds.ok(addr, space, p, esize)
    if chk is not None:
        ok, where, kind = chk
        lw.bounds._record_fault(ok, where, kind)
        p = b.select(ok, p, lw.cg.scratch_area(store, esize))
    return p


def _space(ins: Instr) -> str:
    return "shared" if ins.has("shared") or ins.has("shared::cta") else "global" if ins.has("global") else ""


def _ldm(lw: FnLowering, ins: Instr, ops: list, frag: str, mm: M.Mma) -> ll.Value:
    if len(ops) > 2:
        return lw.read(ops[2], "u32")
    rows, cols = _dims(mm, frag)
    return const_int(I32, rows if ins.has("col") else cols)


_ETYPE = {1: I8, 2: I16, 4: I32}


def _lower_load(lw: FnLowering, ins: Instr) -> None:
    b = lw.b
    frag = next(m for m in ins.mods if m in ("a", "b", "c"))
    t = ins.types()[-1]
    mm = _variant_for(ins, frag, t)
    dst = M._regs(ins.operands[0])
    es = _ESIZE[t]
    ldm = _ldm(lw, ins, ins.operands, frag, mm)
    space = _space(ins)
    words: dict[int, ll.Value] = {}
    for k, (j, e, row, col) in enumerate(_sites(mm, frag, lw)):
        p = _element_ptr(lw, ins, ins.operands[1], space, row, col, ldm, es, store=False)
        lw.probe_memory(p, k)  # ptxjit check's probes: one per element (wmma_elements)
        v = lw.user_access(b.load(lw.typed_ptr(p, _ETYPE[es]), align=es), space)
        v = b.shl(b.zext(v, I32), const_int(I32, 8 * es * e)) if es < 4 else v
        words[j] = b.or_(words[j], v) if j in words else v
    n = len(words)
    for j, r in enumerate(dst):  # 16-bit A and B fragments repeat their registers
        lw.write(r, words[j % n], "b32")


def _lower_store(lw: FnLowering, ins: Instr) -> None:
    b = lw.b
    t = ins.types()[-1]
    mm = _variant_for(ins, "d", t)
    src = M._regs(ins.operands[1])
    es = _ESIZE[t]
    ldm = _ldm(lw, ins, ins.operands, "d", mm)
    space = _space(ins)
    for k, (j, e, row, col) in enumerate(_sites(mm, "d", lw)):
        w = lw.read(src[j], "b32")
        v = b.trunc(b.lshr(w, const_int(I32, 8 * es * e)), _ETYPE[es]) if es < 4 else w
        p = _element_ptr(lw, ins, ins.operands[0], space, row, col, ldm, es, store=True)
        lw.probe_memory(p, k)
        lw.user_access(b.store(v, lw.typed_ptr(p, _ETYPE[es]), align=es), space)


def wmma_elements(ins: Instr) -> tuple[str, int, int] | None:
    """(space, element bytes, elements per lane) of a wmma.load/store, whose elements the lowering
    probes one by one (ptxjit check, instrument/probes.py tensor_accesses); None for other forms."""
    try:
        if _check(ins) is not None or _shape(ins) is None or ins.types()[-1] not in _ESIZE:
            return None
        t = ins.types()[-1]
        frag = next((m for m in ins.mods if m in ("a", "b", "c")), None) if ins.has("load") else "d"
        if frag is None:
            return None
        mm = _variant_for(ins, frag, t)
        n = len(mm.a_sites()) if frag == "a" else len(mm.b_sites()) if frag == "b" else mm.M * mm.N // 32
        return _space(ins), _ESIZE[t], n
    except (KeyError, ValueError, IndexError, TypeError):
        return None


@rule("wmma", family="warp", check=_check)
def lower_wmma(lw: FnLowering, ins: Instr) -> None:
    """wmma.load.{a,b,c} / wmma.store.d / wmma.mma .sync.aligned m16n16k16 (f16, bf16, s8, u8) and
    m16n16k8 (tf32), row or col layouts, optional stride (see the module docstring)."""
    op = _op(ins)
    if op == "load":
        _lower_load(lw, ins)
        lw.yield_point(warp_level=True)  # the rule is a warp point (for mma); loads and stores just pass it
    elif op == "store":
        _lower_store(lw, ins)
        lw.yield_point(warp_level=True)
    else:
        mm = _mma_variant(ins)
        assert isinstance(mm, M.Mma)
        M.run_mma(lw, ins, mm)

