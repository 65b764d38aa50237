"""The profile tier 0 gathers: per launch of a kernel, the values of its scalar parameters and the
launch shapes (what pays first: they become constants in tier 1, ptxjit/tiers/specialize.py), and of
the few counted launches the thread executions per basic block (tiers/counters.py: edge and trip
counts follow from them; tier 1's branch weights).

A profile is recorded by the thread that launches (one `Profile` per launching thread, so recording
takes no lock) and profiles are merged (`merge`) when the policy looks at them: several threads
launching one kernel, or several profiling windows, give one profile.  Values are kept as the raw
bytes of the parameter buffer (exact for floats, NaNs included), at most MAX_VALUES distinct ones per
parameter: a parameter with more is simply "varying".
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

MAX_VALUES = 8  # distinct values remembered per parameter; beyond: varying, never specialized
_stamp = itertools.count(1)  # a global order of recordings: which profile saw the latest value


@dataclass(frozen=True)
class Candidate:
    """A scalar kernel parameter that may be specialized: its index, name, and bytes in the buffer."""

    index: int
    name: str
    offset: int
    size: int
    type: str


def candidates(params, offsets, access) -> tuple[Candidate, ...]:
    """The parameters worth specializing: scalars of 1-8 bytes that the kernel does not use as a
    pointer (an address changes with every array; specializing it would only fail guards)."""
    out = []
    for i, (p, off) in enumerate(zip(params, offsets, strict=True)):
        size = max(p.size, p.elem_size) if p.dims else _type_size(p.type)
        if p.dims or size not in (1, 2, 4, 8) or access.params[i].pointer:
            continue
        out.append(Candidate(i, p.name, off, size, p.type))
    return tuple(out)


def _merged(a, b):
    """Two PatternCounts (or None) added."""
    return b if a is None else a if b is None else a.merge(b)


def _type_size(t: str) -> int:
    from ptxjit.frontend import ir

    return ir.type_size(t)


@dataclass
class Profile:
    """Counts of one kernel's launches: parameter values and launch shapes (see the module doc)."""

    launches: int = 0
    values: dict[int, dict[bytes, int]] = field(default_factory=dict)  # offset -> value -> launches
    overflow: dict[int, int] = field(default_factory=dict)  # offset -> launches with a value not kept
    last: dict[int, tuple[int, bytes]] = field(default_factory=dict)  # offset -> (stamp, latest value)
    shapes: dict[tuple, int] = field(default_factory=dict)  # (grid, block, dynamic shared) -> launches
    counted: int = 0  # launches run on the counting code (tiers/counters.py)
    threads: int = 0  # threads those launches started (the kernel entry's count)
    blocks: tuple[int, ...] = ()  # thread executions per block site of the counting plan, summed
    patterns: object = None  # their sampled CTAs' branch uniformity and memory patterns (instrument/patterns.py)

    def record_counts(self, blocks, threads: int, patterns=None) -> None:
        """Add one counted launch's block counts (`blocks`: per block site of the counting plan) and
        pattern counts (a PatternCounts, or None)."""
        self.counted += 1
        self.threads += threads
        got = tuple(int(c) for c in blocks)
        self.blocks = got if not self.blocks else tuple(a + c for a, c in zip(self.blocks, got, strict=True))
        self.patterns = _merged(self.patterns, patterns)

    def record(self, cands: tuple[Candidate, ...], pbytes: bytes, shape: tuple) -> None:
        self.launches += 1
        stamp = next(_stamp)
        for c in cands:
            v = bytes(pbytes[c.offset:c.offset + c.size])
            seen = self.values.get(c.offset)
            if seen is None:
                seen = self.values[c.offset] = {}
            if v in seen:
                seen[v] += 1
            elif len(seen) < MAX_VALUES:
                seen[v] = 1
            else:
                self.overflow[c.offset] = self.overflow.get(c.offset, 0) + 1
            self.last[c.offset] = (stamp, v)
        self.shapes[shape] = self.shapes.get(shape, 0) + 1

    def merge(self, other: Profile) -> Profile:
        """This profile plus `other` (a new Profile; neither is changed)."""
        out = Profile(self.launches + other.launches)
        for src in (self, other):
            for off, seen in src.values.items():
                dst = out.values.setdefault(off, {})
                for v, n in seen.items():
                    if v in dst:
                        dst[v] += n
                    elif len(dst) < MAX_VALUES:
                        dst[v] = n
                    else:
                        out.overflow[off] = out.overflow.get(off, 0) + n
            for off, n in src.overflow.items():
                out.overflow[off] = out.overflow.get(off, 0) + n
            for off, sv in src.last.items():
                if off not in out.last or out.last[off][0] < sv[0]:
                    out.last[off] = sv
            for s, n in src.shapes.items():
                out.shapes[s] = out.shapes.get(s, 0) + n
            if src.counted:  # every profile of a kernel and block shape counts the same plan's sites
                out.blocks = src.blocks if not out.blocks else tuple(
                    a + c for a, c in zip(out.blocks, src.blocks, strict=True))
                out.counted += src.counted
                out.threads += src.threads
                out.patterns = _merged(out.patterns, src.patterns)
        return out

    def invariant(self) -> dict[int, bytes]:
        """offset -> value of the parameters that had one value in every launch of this profile."""
        return {off: next(iter(seen)) for off, seen in self.values.items()
                if len(seen) == 1 and not self.overflow.get(off) and next(iter(seen.values())) == self.launches}

    def invariant_shape(self) -> tuple | None:
        """The launch shape of every launch of this profile, or None if it varied."""
        if len(self.shapes) == 1 and next(iter(self.shapes.values())) == self.launches:
            return next(iter(self.shapes))
        return None

    def dominant(self, off: int) -> tuple[bytes, float] | None:
        """The most frequent value of the parameter at `off` and its share of the launches."""
        seen = self.values.get(off)
        if not seen or not self.launches:
            return None
        v, n = max(seen.items(), key=lambda kv: kv[1])
        return v, n / self.launches
