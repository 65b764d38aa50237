"""st.async and red.async (sm_90, PTX ISA §9.7.9.12 and §9.7.13.6): a store / atomic reduction into
shared::cluster memory that completes its bytes on an mbarrier (`.mbarrier::complete_tx::bytes`).

They run at issue, like ptxjit's other asynchronous copies (async_copy.py): the store or reduction is
done, then the mbarrier's transaction count drops by the bytes written (the size of the type, times the
vector length), which may complete its phase, as async_copy.py's complete_tx does.  A shared::cluster
address in ptxjit is always the issuing block's own shared memory (mapa.shared::cluster, the only way
to another block's 32-bit shared::cluster address, is refused; see cluster.py), as async_copy.py
takes it too; the [mbar] operand may be left out (ptxas accepts that): then nothing is completed.
"""

from __future__ import annotations

import dataclasses

from ptxjit.frontend.ir import Instr, type_size
from ptxjit.lower.function import FnLowering
from ptxjit.lower.registry import form_rule
from ptxjit.lower.rules.atomic import ATOM_OPS, atomic
from ptxjit.lower.rules.mbarrier import mbar_modify
from ptxjit.lower.rules.memory import lower_st
from ptxjit.lower.types import I64, const_int

_KEEP = ("shared::cluster", "shared::cta", "shared", "v2", "v4")


def _plain(ins: Instr, nops: int) -> Instr:
    """The instruction as a plain st/red: its space, vector and type modifiers (and operation), no
    async/completion/ordering ones; the first `nops` operands."""
    t = ins.types()[-1]
    mods = tuple(m for m in ins.mods if m in _KEEP or m in ATOM_OPS or m == t)
    return dataclasses.replace(ins, mods=mods, operands=list(ins.operands[:nops]))


def _complete(lw: FnLowering, ins: Instr, nbytes: int) -> None:
    if len(ins.operands) > 2:
        mbar_modify(lw, ins, ins.operands[2], tx=const_int(I64, -nbytes), space="shared")


@form_rule("st", when="async", check=None)
def lower_st_async(lw: FnLowering, ins: Instr) -> None:
    """st.async[.vec].type [a], b, [mbar]: the store, then complete_tx(bytes stored) on mbar."""
    t = ins.types()[-1]
    n = next((int(m[1:]) for m in ins.mods if m in ("v2", "v4")), 1)
    lower_st(lw, _plain(ins, 2))
    _complete(lw, ins, type_size(t) * n)


@form_rule("red", when="async", check=None)  # (the ISA table allows its types and operations)
def lower_red_async(lw: FnLowering, ins: Instr) -> None:
    """red.async.op.type [a], b, [mbar]: the atomic reduction, then complete_tx(size of type) on mbar."""
    plain = _plain(ins, 2)
    atomic(lw, plain, plain.operands[0], plain.operands[1:])
    _complete(lw, ins, type_size(ins.types()[-1]))
