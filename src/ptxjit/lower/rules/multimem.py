"""multimem.ld_reduce / multimem.st / multimem.red (PTX ISA §9.7.9.x, sm_90): memory operations on a
multimem address, which names one location replicated on every GPU of a multicast object.

ptxjit runs one device, so a multicast object has exactly one copy and a multimem address is plain global
memory:
- multimem.ld_reduce reduces the copies' values with its operation: over one copy that is the value itself,
  so it is a load (`.acc::f32` and `.noftz` change how several values are added: nothing to add here);
- multimem.st stores to every copy: a store;
- multimem.red reduces into every copy: red (an atomic read-modify-write) on the one copy.
Each is lowered by the ld / st / red rule on the same instruction with the multimem words taken out, so
memory semantics, scopes, vectors, bounds checks and the atomics' numerics are theirs.  Packed and
narrow float types (f16x2, e4m3x4, ...) of a load or store move as bits of the same width.
"""

from __future__ import annotations

import dataclasses

from ptxjit.frontend.ir import Instr
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import RULES, diagnose, rule

_KIND = ("ld_reduce", "st", "red")
_REDOPS = ("min", "max", "add", "and", "or", "xor")
_BITS = {"b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32, "e5m2x4": 32, "e4m3x4": 32,
         "b64": 64, "u64": 64, "s64": 64, "f64": 64, "f16": 16, "bf16": 16, "e5m2x2": 16, "e4m3x2": 16}


def plain(ins: Instr) -> Instr | str:
    """The ld / st / red instruction a multimem instruction is on one device, or why there is none."""
    kind = next((m for m in ins.mods if m in _KIND), None)
    if kind is None:
        return "multimem: only ld_reduce, st and red are supported (multimem.cp.async.bulk is not)"
    mods = [m for m in ins.mods if m != kind and m not in ("acc::f32", "noftz")]
    if kind == "red":
        return dataclasses.replace(ins, opcode="red", mods=tuple(mods))
    # a load or store: no reduction; packed / narrow float types as bits of their width
    mods = [m for m in mods if m not in _REDOPS]
    mods = [f"b{_BITS[m]}" if m in _BITS and not m.startswith(("u", "s", "b")) and m != "f32" and m != "f64"
            else m for m in mods]
    return dataclasses.replace(ins, opcode="ld" if kind == "ld_reduce" else "st", mods=tuple(mods))


def _check(ins: Instr) -> str | None:
    p = plain(ins)
    if isinstance(p, str):
        return p
    dg = diagnose(p)
    if dg is not None:
        return f"multimem on one device is {p.text}, which ptxjit cannot run: {dg.reason}"
    return None


@rule("multimem", family="memory", check=_check)
def lower_multimem(lw: FnLowering, ins: Instr) -> None:
    """multimem.ld_reduce / st / red: ld / st / red of the one copy (module docstring)."""
    p = plain(ins)
    assert isinstance(p, Instr)
    RULES[p.opcode].lower(lw, p)


__all__ = ["plain"]
