"""A tier-1 version's assumptions: parameter values and launch shape read as constants by the code
(lower/function.py entry_param / launch_slot, as LLNL's Proteus JIT folds runtime constants into the
IR), and the guard that checks a launch against them before the version may run it.

Only what the profile saw invariant is assumed; a launch that breaks an assumption runs a generic
version (tiers/state.py) and counts as a guard failure: the specialized code never runs a launch
whose values differ, so it can never give a wrong result."""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

from ptxjit.lower import abi
from ptxjit.tiers.profile import Candidate, Profile


@dataclass(frozen=True)
class Specialization:
    """Constants of one tier-1 version: `params` (offset, bytes) of scalar parameters; `grid` the
    launch grid (%nctaid) or None; `names` for display (parameter name -> value as the PTX type reads);
    `weights` branch weights from tier 0's block counters (function, statement index in the lowered
    body, taken, fall-through: lower/function.py puts them on the branch as `!prof` metadata).  The
    weights are hints, not assumptions: a launch whose branches go otherwise runs the same results, so
    they need no guard."""

    params: tuple[tuple[int, bytes], ...]
    grid: tuple[int, int, int] | None
    names: tuple[tuple[str, object], ...] = ()
    weights: tuple[tuple[str, int, int, int], ...] = ()
    # lockstep loops to unroll (header label, factor) by the trip counts tier 0's counters saw:
    # a transformation that keeps every thread's instruction sequence, so it needs no guard either
    unroll: tuple[tuple[str, int], ...] = ()

    @property
    def launch(self) -> tuple[tuple[int, int], ...]:
        """Launch-record slots read as constants (ModuleCodegen.launch_consts)."""
        if self.grid is None:
            return ()
        return tuple((abi.L_GRID + i, g) for i, g in enumerate(self.grid))

    @property
    def key(self) -> str:
        """Part of the translation cache key (in memory and on disk)."""
        h = hashlib.sha256()
        for off, v in self.params:
            h.update(f"{off}:{v.hex()};".encode())
        h.update(repr(self.grid).encode())
        if self.weights:
            h.update(repr(self.weights).encode())
        if self.unroll:
            h.update(b"unroll" + repr(self.unroll).encode())
        return h.hexdigest()[:24]

    def guard(self, pbytes: bytes, grid: tuple[int, int, int]) -> bool:
        """Does a launch with parameter buffer `pbytes` and this grid meet every assumption?"""
        if self.grid is not None and grid != self.grid:
            return False
        for off, v in self.params:
            if pbytes[off:off + len(v)] != v:
                return False
        return True

    def describe(self) -> dict[str, object]:
        d: dict[str, object] = dict(self.names)
        if self.grid is not None:
            d["%nctaid"] = self.grid
        if self.weights:
            d["branch_weights"] = len(self.weights)
        if self.unroll:
            d["unrolled_loops"] = {label: f for label, f in self.unroll}
        return d


_DECODE = {"f32": "<f", "f64": "<d", "s8": "<b", "s16": "<h", "s32": "<i", "s64": "<q", "u8": "<B",
           "u16": "<H", "u32": "<I", "u64": "<Q", "b8": "<B", "b16": "<H", "b32": "<I", "b64": "<Q"}


def _readable(c: Candidate, v: bytes) -> object:
    fmt = _DECODE.get(c.type)
    return struct.unpack(fmt, v)[0] if fmt is not None and struct.calcsize(fmt) == len(v) else v.hex()


def from_profile(prof: Profile, cands: tuple[Candidate, ...], exclude: frozenset[int] = frozenset(),
                 shape: bool = True, weights: tuple[tuple[str, int, int, int], ...] = (),
                 unroll: tuple[tuple[str, int], ...] = ()) -> Specialization:
    """The specialization a profile supports: every candidate parameter it saw with one value (but
    those in `exclude`: offsets whose guards kept failing) and, when `shape`, the grid if it never
    changed; `weights`, `unroll`: branch weights and unrolled loops (counters.py) to carry along."""
    inv = prof.invariant()
    params = []
    names = []
    for c in cands:
        v = inv.get(c.offset)
        if v is not None and c.offset not in exclude:
            params.append((c.offset, v))
            names.append((c.name, _readable(c, v)))
    grid = None
    s = prof.invariant_shape()
    if shape and s is not None:
        grid = s[0]
    return Specialization(tuple(params), grid, tuple(names), weights, unroll)
