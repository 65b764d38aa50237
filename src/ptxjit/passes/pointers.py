"""Pointer inference: which 64-bit registers always hold addresses.

PTX computes addresses with integer arithmetic; lowered literally (`inttoptr` of an i64) they are
opaque to LLVM's scalar evolution, so loops over them cannot be vectorized.  A register qualifies as a
pointer when every one of its definitions produces an address: a load of a 64-bit kernel parameter,
`cvta`/`mov` of a pointer register or of a variable's address, `add`/`sub` of a pointer and a
non-pointer, or `mad.wide`/`mad.lo.64` adding a product of non-pointers to a pointer (Triton's
`mad.wide.s32 %rd1, %r8, 4, %rd10`: a row's address).  Lowering keeps such registers as LLVM
pointers and turns the additions into `getelementptr`.  Flow-insensitive, iterated to a fixed point
(linear in practice).
"""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.passes.dataflow import defs_uses

_ADDRESS_OPS = frozenset({"ld", "mov", "cvta", "add", "sub", "mad"})


def pointer_registers(fn: ir.Function, kernel_params: set[str]) -> set[str]:
    wide = {r for r, t in fn.regs.items() if t in ("b64", "u64", "s64")}
    defs: dict[str, list[ir.Instr]] = {}
    for ins in fn.instructions:
        d, _ = defs_uses(ins)
        for r in d:
            if r in wide:
                defs.setdefault(r, []).append(ins)

    def is_param_load(ins: ir.Instr) -> bool:
        src = ins.operands[1:]
        return (ins.opcode == "ld" and ins.has("param") and len(src) == 1 and isinstance(src[0], ir.Addr)
                and isinstance(src[0].base, ir.Sym) and src[0].base.name in kernel_params
                and ins.types()[-1] in ("u64", "b64", "s64"))

    def reg(op, names: set[str]) -> bool:
        return isinstance(op, ir.Reg) and op.name in names

    # 1. registers that certainly hold integers (grows monotonically to a fixed point)
    ints = {r for r, ds in defs.items()
            if any(i.opcode not in _ADDRESS_OPS or (i.opcode == "ld" and not is_param_load(i)) for i in ds)}
    ints |= {r for r in wide if r not in defs}
    changed = True
    while changed:
        changed = False
        for r, ds in defs.items():
            if r in ints:
                continue
            for i in ds:
                src = i.operands[1:]
                if i.opcode in ("add", "sub", "mov", "cvta", "mad") and src and all(
                        isinstance(s, ir.Imm) or reg(s, ints) for s in src):
                    ints.add(r)
                    changed = True
                    break

    def int_or_imm(op) -> bool:
        return isinstance(op, ir.Imm) or reg(op, ints)

    def produces_pointer(ins: ir.Instr, ptrs: set[str]) -> bool:
        ops = ins.operands
        if not isinstance(ops[0], ir.Reg) or ins.guard is not None:
            return False
        src = ops[1:]
        if is_param_load(ins):
            return True
        if ins.opcode in ("mov", "cvta") and len(src) == 1:
            s = src[0]
            if isinstance(s, ir.Reg):
                return s.name in ptrs
            return ins.opcode == "mov" and isinstance(s, ir.Sym) and not ins.has("u32", "b32")
        if ins.opcode == "mad":
            # (the factors of a .wide are 32-bit registers: never addresses)
            factor = (lambda op: isinstance(op, ir.Imm | ir.Reg)) if ins.has("wide") else int_or_imm
            return is_pointer_mad(ins) and reg(src[2], ptrs) and factor(src[0]) and factor(src[1])
        if ins.opcode in ("add", "sub") and len(src) == 2 and ins.types()[-1] in ("s64", "u64", "b64") \
                and not ins.has("cc", "sat"):
            a, b = src
            if ins.opcode == "sub":
                return reg(a, ptrs) and int_or_imm(b)
            return (reg(a, ptrs) and int_or_imm(b)) or (reg(b, ptrs) and int_or_imm(a))
        return False

    # 2. pointer candidates shrink to a fixed point
    cand = set(defs) - ints
    changed = True
    while changed:
        changed = False
        for r in list(cand):
            if not all(produces_pointer(i, cand) for i in defs[r]):
                cand.discard(r)
                changed = True
    return cand


def is_pointer_mad(ins: ir.Instr) -> bool:
    """mad whose 64-bit result is the product plus the addend exactly: .wide of 32-bit operands or
    .lo of 64-bit ones, no carry (.cc, madc), no saturation."""
    if ins.opcode != "mad" or len(ins.operands) != 4 or ins.has("cc", "sat", "hi"):
        return False
    t = ins.types()[-1] if ins.types() else ""
    return (ins.has("wide") and t in ("s32", "u32")) or (ins.has("lo") and t in ("s64", "u64", "b64"))


def provenance(fn: ir.Function, kparams: set[str], pointer_regs: set[str],
               local_vars: frozenset[str] = frozenset()) -> dict[str, str]:
    """Pointer register -> the kernel parameter, or the `.local` variable of `local_vars` (nvcc's
    `mov.u64 %SPL, __local_depot0`, then `cvta.local`, `add`), its value always derives from (where
    one does)."""
    defs: dict[str, list[ir.Instr]] = {}
    for ins in fn.instructions:
        d, _ = defs_uses(ins)
        for r in d:
            if r in pointer_regs:
                defs.setdefault(r, []).append(ins)
    top, bottom = "", None
    prov: dict[str, str | None] = {r: top for r in defs}

    def source(ins: ir.Instr):
        src = ins.operands[1:]
        if ins.opcode == "ld":
            a = src[0] if src else None
            if isinstance(a, ir.Addr) and isinstance(a.base, ir.Sym) and a.base.name in kparams:
                return a.base.name
            return bottom
        if ins.opcode == "cvta" and any(m.startswith("shared") for m in ins.mods):
            return bottom
        if ins.opcode in ("mov", "cvta") and len(src) == 1 and isinstance(src[0], ir.Sym):
            return src[0].name if src[0].name in local_vars else bottom
        for s in src:
            if isinstance(s, ir.Reg) and s.name in pointer_regs:
                return prov.get(s.name, bottom)
        return bottom

    changed = True
    while changed:
        changed = False
        for r, ds in defs.items():
            cur = prov[r]
            if cur is bottom:
                continue
            for ins in ds:
                s = source(ins)
                if s == top:
                    continue
                if s is bottom or (cur != top and s != cur):
                    cur = bottom
                    break
                cur = s
            if cur != prov[r]:
                prov[r] = cur
                changed = True
    return {r: p for r, p in prov.items() if p}
