"""Bounds checks from value ranges (passes/ranges.py): the register ranges of the function being lowered,
with a tier-1 version's constants (ptxjit/tiers), and what they decide for lower/safety/bounds.py: an address
`u + v` whose v is bounded is checked at its two ends once per CTA (corners.py _ranged_in_range), and
an address computed with a division by a value not known now is not hoisted into the precheck."""

from __future__ import annotations

from ptxjit.frontend import ir
from ptxjit.lower import abi
from ptxjit.lower.operands import spec_param_int
from ptxjit.passes.ranges import value_ranges
from ptxjit.passes.remat import INT_DIVISION, recompute_order


class RangeQueries:
    """BoundsChecks' questions to the register ranges (a base of lower/safety/bounds.py BoundsChecks)."""

    def register_ranges(self) -> dict:
        """The function's register ranges (passes/ranges.py), with a tier-1 version's constants (its grid
        and specialized parameters: true whenever that code runs)."""
        rs = getattr(self, "_ranges", None)
        if rs is None:
            lw, cg = self.lw, self.lw.cg
            own = {v.name for v in [*lw.fn.vars, *lw.fn.params, *lw.fn.rets] if v.space != "shared"}

            def shared_offset(name: str) -> int | None:  # (as FnLowering.symbol_value reads a symbol)
                if name in own or (lw.is_kernel and name in cg.kparams):
                    return None
                return cg.shared.offsets.get(name)

            def param_value(name: str, offset: int, size: int) -> int | None:
                start = cg.kparams.get(name) if lw.is_kernel else None
                return None if start is None else spec_param_int(cg.spec_params, start + offset, size)
            grid = tuple(cg.launch_consts.get(abi.L_GRID + i, 0) for i in range(3))
            rs = self._ranges = value_ranges(lw.fn, shared_offset, cg.block,
                                             grid if lw.is_kernel and all(grid) else None, param_value)
        return rs

    def divides_by_unknown(self, name: str) -> bool:
        """Is register `name` computed with a division by a value not known now?  (By a constant, a tier-1
        version's specialized size among them, LLVM divides by multiplying: as cheap as the rest.)"""

        memo = self.__dict__.setdefault("_divides", {})
        if name in memo:
            return memo[name]
        order = self.__dict__.get("_order")
        if order is None:
            order = self._order = {id(i): k for k, i in enumerate(self.lw.fn.instructions)}
        ranges = self.register_ranges()

        def known(op) -> bool:
            r = ranges.get(op.name) if isinstance(op, ir.Reg) else None
            return isinstance(op, ir.Imm) or (r is not None and r[0] == r[1])
        memo[name] = any(i.opcode in INT_DIVISION and not known(i.operands[2])
                         for i in recompute_order({name}, self.lw.remat, order))
        return memo[name]

    def offset_range(self, name: str) -> tuple[str, int, int] | None:
        """Address register `name` = `u + v` (64-bit add) of a launch-uniform register u (passes/affine.py grid_linear)
        and a register v whose every value lies in [lo, hi] (value_ranges): (u, lo, hi), else None.
        The accesses of every thread then lie in [u + lo, u + hi]: two compares per CTA instead of a
        loop over its threads (a framework kernel's `scale[(i / plane) % channels]`)."""
        d = self.lw.remat.get(name)
        if d is None or d.opcode != "add" or len(d.operands) != 3 or d.guard is not None \
                or d.has("sat", "cc") or d.types()[-1:] not in (["u64"], ["s64"], ["b64"]):
            return None
        self._affine_regs()
        ranges = self.register_ranges()
        for u, v in ((d.operands[1], d.operands[2]), (d.operands[2], d.operands[1])):
            if isinstance(u, ir.Reg) and isinstance(v, ir.Reg) and u.name in self._uniform \
                    and not (u.neg or u.sel or u.minus or v.neg or v.sel or v.minus) and v.name in ranges:
                return (u.name, *ranges[v.name])
        return None
