"""What the checking tools find: `Report` (one finding, with an example thread) and its text in
compute-sanitizer's layout, so that a CUDA user reads it as they would read compute-sanitizer's:

    ========= Invalid __global__ read of size 4 bytes
    =========     at oob_global in oob_global.cu:5 (PTX oob_global.ptx:35)
    =========     by thread (63,0,0) in block (0,0,0)
    =========     Address 0x7f3a2c000100 is 0 bytes past the end of argument 0 ('in') ...
    =========
    ========= ERROR SUMMARY: 1 error

compute-sanitizer names the SASS offset (`kernel+0x70`); ptxjit has no SASS, so it names the PTX line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxjit import config
from ptxjit.demangle import demangle

PREFIX = "========= "
TOOLS = config.CHECK_TOOLS

# compute-sanitizer's names of the state spaces in its messages
SPACE_NAMES = {"global": "__global__", "shared": "__shared__", "local": "__local__", "": "__generic__",
               "const": "__constant__"}


def parse_source(source: str) -> tuple[str, int] | None:
    """(file, line) of a "file.cu:line:col" .loc string; None when the PTX had no .loc."""
    if not source:
        return None
    parts = source.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return parts[0], int(parts[1])
    if len(parts) >= 2 and parts[-1].isdigit():
        return source.rsplit(":", 1)[0], int(parts[-1])
    return None


def unlinear(i: int, dims: tuple[int, int, int]) -> tuple[int, int, int]:
    """The (x, y, z) index of linear index i in a grid or block of shape dims (x fastest, as CUDA)."""
    return i % dims[0], (i // dims[0]) % dims[1], i // (dims[0] * dims[1])


@dataclass(frozen=True)
class Access:
    """The other access of a race: who made it and where."""
    cta: tuple[int, int, int]
    thread: tuple[int, int, int]
    warp: int
    lane: int
    ptx_line: int
    source: tuple[str, int] | None
    kind: str           # "read", "write" or "atomic"
    instruction: str = ""
    address: int = 0


@dataclass(frozen=True)
class Report:
    """One finding of a checking tool.  Findings of the same kind at the same PTX site (for races: the
    same pair of sites) are folded into one report with `count` occurrences; the thread, block and
    address are those of one example.  `source` is (file, line) from the PTX's `.loc` (nvcc -lineinfo),
    else None.  `address`: a host address (global, generic), an offset in the CTA's shared memory
    (shared) or in the thread's local memory (local)."""
    kind: str           # "out-of-bounds", "misaligned", "race RAW"/"race WAR"/"race WAW", "divergent barrier",
    #                     "barrier count mismatch", "warp collective mask",
    #                     "uninitialized read", "deadlock", "double free", "invalid free", "leak"
    tool: str           # "memcheck", "racecheck", "synccheck" or "initcheck"
    kernel: str
    cta: tuple[int, int, int]
    thread: tuple[int, int, int]
    warp: int
    lane: int
    ptx_line: int | None
    source: tuple[str, int] | None
    address: int | None = None
    size: int = 0
    space: str = ""     # "global", "shared", "local", "" (generic)
    access: str = ""    # "read", "write", "atomic" ("" for barriers)
    other: Access | None = None  # races: the access it races with
    count: int = 1      # occurrences folded into this report (accesses, or pairs of accesses for races)
    instruction: str = ""
    ptx_file: str = ""
    detail: str = ""
    extra: dict = field(default_factory=dict, compare=False, repr=False)

    # ------------------------------------------------------------------ compute-sanitizer's text
    def where(self, ptx_line: int | None = None, source: tuple[str, int] | None = None) -> str:
        line = self.ptx_line if ptx_line is None else ptx_line
        src = self.source if ptx_line is None else source
        ptx = f"PTX {self.ptx_file}:{line}" if self.ptx_file else f"PTX line {line}"
        name = demangle(self.kernel)  # as compute-sanitizer names it: `shift(Array<float, 1, C, ...>)`
        if src is not None:
            return f"{name} in {src[0]}:{src[1]} ({ptx})"
        return f"{name} ({ptx})" if line is not None else name

    def headline(self) -> str:
        space = SPACE_NAMES.get(self.space, self.space)
        if self.kind == "out-of-bounds":
            return f"Invalid {space} {self.access or 'access'} of size {self.size} bytes"
        if self.kind == "misaligned":
            return f"Invalid {space} {self.access} of size {self.size} bytes (misaligned address)"
        if self.kind.startswith("race"):
            o = self.other
            first, second = (o, self) if o is not None else (None, self)
            what = {"read": "Read", "write": "Write", "atomic": "Atomic"}
            a = what.get(first.kind if first else "", "?")
            b = what.get(self.access, "?")
            at = self.where(first.ptx_line, first.source) if first else "?"
            return (f"Error: Race reported between {a} access at {at}\n{PREFIX}    and {b} access at "
                    f"{self.where()} [{self.count} hazards] ({self.kind[5:]}, {space} memory)")
        if self.kind == "divergent barrier":
            return "Barrier error detected. Divergent thread(s) in block"
        if self.kind == "barrier count mismatch":
            return "Barrier error detected. Invalid arguments (thread count)"
        if self.kind == "warp collective mask":
            return "Barrier error detected. Invalid arguments (warp collective member mask)"
        if self.kind == "deadlock":
            return "Barrier error detected. The block deadlocked"
        if self.kind == "double free":
            return "Malloc/Free error encountered : Double free"
        if self.kind == "invalid free":
            return "Malloc/Free error encountered : Invalid pointer to free"
        if self.kind == "leak":
            return f"Leaked {self.size} bytes at {self.address:#x} allocated by device malloc"
        if self.kind == "uninitialized read":
            return f"Uninitialized {space} memory read of size {self.size} bytes"
        return self.kind

    def format(self) -> str:
        """The report as compute-sanitizer lays it out (each line starts with `=========`)."""
        lines = [self.headline()]
        if not self.kind.startswith("race"):
            lines.append(f"    at {self.where()}")
            lines.append(f"    by thread {_t(self.thread)} in block {_t(self.cta)}" +
                         (" (the device malloc call)" if self.kind == "leak" else ""))
        else:
            o = self.other
            if o is not None:
                lines.append(f"    by thread {_t(o.thread)} in block {_t(o.cta)} and thread {_t(self.thread)} "
                             f"in block {_t(self.cta)}")
        if self.address is not None and not self.kind.startswith("race") and self.access:
            where = {"shared": "shared memory offset", "local": "local memory offset"}.get(self.space, "Address")
            if self.address >= 1 << 32:  # a host address (a local fault names the address it computed)
                where = "Address"
            lines.append(f"    {where} {self.address:#x}" + (f" {self.detail}" if self.detail else ""))
        elif self.detail:
            lines.append(f"    {self.detail}")
        if self.count > 1 and not self.kind.startswith("race"):
            lines.append(f"    ({self.count} occurrences at this site)")
        return "\n".join(PREFIX + ln if not ln.startswith(PREFIX) else ln
                         for block in lines for ln in block.split("\n")) + "\n" + PREFIX.rstrip()


def _t(v: tuple[int, int, int]) -> str:
    return f"({v[0]},{v[1]},{v[2]})"


def summary_line(n: int) -> str:
    return f"{PREFIX}ERROR SUMMARY: {n} error{'s' if n != 1 else ''}"


def format_reports(reports: list[Report], print_limit: int | None = None) -> str:
    """The reports (at most print_limit; None or 0: all) then the ERROR SUMMARY line, as compute-sanitizer
    prints them (the summary counts every report, printed or not)."""
    shown = reports if not print_limit else reports[:print_limit]
    out = [r.format() for r in shown]
    if print_limit and len(reports) > print_limit:
        out.append(f"{PREFIX}Printing limit reached: {len(reports) - print_limit} more reports not printed")
    out.append(summary_line(len(reports)))
    return "\n".join(out)
