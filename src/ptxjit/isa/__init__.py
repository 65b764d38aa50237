"""The PTX instruction table: one declarative InstrSpec per opcode (PTX ISA 8.x, sm_90).

Each family module lists its specs; an opcode described by several families (add is integer and
float) gets one InstrSpec with the forms of all of them.  `lookup(opcode)` returns the spec or None;
`check(ins, ctx)` (isa.match) matches an instruction against it.

    from ptxjit.isa import SPECS, lookup
    lookup("fma").describe()   # '5 forms; types .bf16 .bf16x2 .f16 ...; rounding rn|rz|rm|rp; ...'
"""

from __future__ import annotations

from ptxjit.isa import (
    compare,
    control,
    convert,
    copy,
    floating,
    integer,
    memory,
    misc,
    sync,
    tensor,
    texture,
    video,
)
from ptxjit.isa.match import Context, Verdict, check, fmt_instr
from ptxjit.isa.spec import InstrSpec

_MODULES = (integer, floating, compare, convert, memory, copy, sync, control, video, tensor, texture, misc)


def _build() -> dict[str, InstrSpec]:
    out: dict[str, InstrSpec] = {}
    for mod in _MODULES:
        for sp in mod.SPECS:
            prev = out.get(sp.opcode)
            if prev is None:
                out[sp.opcode] = InstrSpec(sp.opcode, sp.family, tuple(sp.forms), sp.summary, sp.variadic,
                                           sp.loose_types)
            else:
                prev.forms = prev.forms + tuple(sp.forms)
                if sp.family not in prev.family.split("+"):
                    prev.family += "+" + sp.family
    return out


SPECS: dict[str, InstrSpec] = _build()


def lookup(opcode: str) -> InstrSpec | None:
    return SPECS.get(opcode)


__all__ = ["SPECS", "Context", "InstrSpec", "Verdict", "check", "fmt_instr", "lookup"]
