"""128-bit data (PTX 8.3, sm_90): ld/st.b128 and atom.{exch,cas}.b128.

A .b128 register is an LLVM i128 (mov.b128 packs/unpacks it with memory.py's vector mov).

- ld/st.b128 move 16 bytes; the default bounds checks cover all 16.  The accesses are emitted with
  8-byte alignment: PTX requires 16, but an x86 aligned vector move of a misaligned address would
  kill the process instead of giving the kernel's result (the GPU reports a misaligned address).
- atom.exch/cas.b128 are lock-free 16-byte compare-and-swaps (LLVM `cmpxchg i128`: x86-64's
  cmpxchg16b, AArch64's casp/ldxp-stxp).  Where the host CPU has none (x86-64 without the cx16
  feature, i.e. only the very first AMD64 CPUs) LLVM would call libatomic, which the JIT cannot
  link: such forms are refused at load with that reason instead.  cmpxchg16b faults on an address
  that is not 16-byte aligned, so a misaligned 128-bit atomic traps (a KernelTrap naming the line)
  before it reaches the instruction, as the GPU stops on one.
- Shared memory is never accessed concurrently (a CTA runs on one worker, one thread at a time):
  there the atomics are a plain load and store.
"""

from __future__ import annotations

from functools import lru_cache

from llvmlite import binding as llvm
from llvmlite import ir as ll

from ptxjit.frontend.ir import Instr
from ptxjit.isa.effects import space_of
from ptxjit.lower import abi
from ptxjit.lower.function import FnLowering
from ptxjit.lower.types import I64, I128, const_int

SIZE = 16
_ALIGN = 8  # see the module doc: never an aligned-only vector move


@lru_cache(maxsize=1)
def host_has_cas16() -> bool:
    """Can LLVM lower `cmpxchg i128` to one instruction on this host (no libatomic call)?"""
    triple = llvm.get_process_triple()
    if triple.startswith(("aarch64", "arm64")):
        return True
    if triple.startswith("x86_64"):
        return "+cx16" in llvm.get_host_cpu_features().flatten().split(",")
    return False


def check_ldst(ins: Instr) -> str | None:
    """Refusal reason for an ld/st.b128 form, or None."""
    if any(m in ("acquire", "release", "relaxed") for m in ins.mods):
        return "ordered (.relaxed/.acquire/.release) .b128 loads/stores are not supported"
    return None


def check_atom(ins: Instr) -> str | None:
    """Refusal reason for an atom.b128 form (the ISA table allows only .exch and .cas), or None."""
    if not host_has_cas16():
        return ("128-bit atomics need a 16-byte compare-and-swap instruction, which this host CPU "
                "lacks (x86-64: the cx16 feature)")
    return None


def _space(ins: Instr) -> str:
    return space_of(ins)


def lower_ld(lw: FnLowering, ins: Instr) -> None:
    """ld[.space].b128 d, [a]."""
    b = lw.b
    space = _space(ins)
    addr = ins.operands[1]
    base = lw.address(addr, space)
    lw.probe_memory(base)
    safe = lw.bounds.redirected(addr, space, base, SIZE, store=False)
    if safe is not None:
        v = lw.user_access(b.load(lw.typed_ptr(safe, I128), align=_ALIGN), space)
    else:
        v = lw.bounds.guarded(addr, space, base, SIZE, lambda: lw.user_access(
            b.load(lw.typed_ptr(base, I128), align=_ALIGN), space))
    lw.write(ins.operands[0], v, "b128")


def lower_st(lw: FnLowering, ins: Instr) -> None:
    """st[.space].b128 [a], b."""
    b = lw.b
    space = _space(ins)
    addr = ins.operands[0]
    base = lw.address(addr, space)
    lw.probe_memory(base)
    v = lw.read(ins.operands[1], "b128")
    safe = lw.bounds.redirected(addr, space, base, SIZE, store=True)
    if safe is not None:
        lw.user_access(b.store(v, lw.typed_ptr(safe, I128), align=_ALIGN), space)
        return
    lw.bounds.guarded(addr, space, base, SIZE, lambda: (lw.user_access(
        b.store(v, lw.typed_ptr(base, I128), align=_ALIGN), space), None)[1])


def lower_atom(lw: FnLowering, ins: Instr) -> None:
    """atom[.space].exch.b128 d, [a], b  /  atom[.space].cas.b128 d, [a], b, c: the old 16 bytes."""
    b = lw.b
    space = _space(ins)
    addr = ins.operands[1]
    cas = ins.has("cas")
    base = lw.address(addr, space)
    lw.probe_memory(base)
    new = lw.read(ins.operands[3] if cas else ins.operands[2], "b128")
    cmp = lw.read(ins.operands[2], "b128") if cas else None

    def run(p8: ll.Value = base) -> ll.Value:
        p = lw.typed_ptr(p8, I128)
        if space == "shared":  # one thread at a time per CTA: no atomic instruction needed
            old = lw.user_access(b.load(p, align=_ALIGN), space)
            val = b.select(b.icmp_unsigned("==", old, cmp), new, old) if cas else new
            lw.user_access(b.store(val, p, align=_ALIGN), space)
            return old
        misaligned = b.icmp_unsigned("!=", b.and_(b.ptrtoint(p8, I64), const_int(I64, SIZE - 1)),
                                     const_int(I64, 0))
        with b.if_then(misaligned, likely=False):
            lw.trap(abi.ERR_TRAP)
        if cas:
            return b.extract_value(b.cmpxchg(p, cmp, new, "seq_cst", "seq_cst"), 0)
        return b.atomic_rmw("xchg", p, new, "seq_cst")

    safe = lw.bounds.redirected(addr, space, base, SIZE, store=True)
    old = run(safe) if safe is not None else lw.bounds.guarded(addr, space, base, SIZE, run)
    lw.write(ins.operands[0], old, "b128")
