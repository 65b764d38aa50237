"""memcheck: out-of-bounds accesses (the launch's own bounds checks, lower/safety/bounds.py, stop the kernel at the
first one with a KernelFault: it becomes one report) and misaligned accesses (from the memory records:
an address not a multiple of the access's natural alignment; a GPU faults on them, x86 does not, so
ptxjit runs them as they are and only this tool notices)."""

from __future__ import annotations

import re

import numpy as np

from ptxjit.checking.records import ACCESS_NAMES, SP_CONST, SP_OTHER, SPACES, Launch, space_code, user_source
from ptxjit.checking.report import Report, parse_source, unlinear
from ptxjit.errors import KernelFault

_PTX_POS = re.compile(r"PTX (?P<file>.+):(?P<line>\d+):\d+\)")
_BARE_POS = re.compile(r"^(?P<file>.+?):(?P<line>\d+):\d+ \('")  # the file may be "<cuLibraryLoadData image>"
_SOURCE = re.compile(r"^(?P<src>[^ ]+:\d+:\d+) \(PTX ")
_TEXT = re.compile(r"\('(?P<text>[^']*)'\)$")


def fault_report(kernel, fault: KernelFault, block) -> Report:
    """The report of a KernelFault (an out-of-bounds access the launch stopped at).  The fault names its
    place as text ("file.cu:5:9 (PTX file.ptx:35:2) ('ld.global.f32')"); the memory site at that PTX line
    gives the access's size, space and direction."""
    where = fault.where or ""
    m = _PTX_POS.search(where) or _BARE_POS.search(where)
    line = int(m.group("line")) if m else None
    ptx_file = m.group("file") if m else kernel.module.name
    s = _SOURCE.search(where)
    source = parse_source(s.group("src")) if s else None
    t = _TEXT.search(where)
    text = t.group("text") if t else ""
    size, space, access = 0, "", ""
    from ptxjit.instrument.trace import kernel_plan

    try:
        plan = kernel_plan(kernel, None, ("memory",))
        site = next((x for x in plan.memory if x.line == line and x.function == kernel.name), None) or \
            next((x for x in plan.memory if x.line == line), None)
    except Exception:  # the plan is a nicety here: the fault itself is the report
        site = None
    if site is not None:
        size, space, access, text = site.size, site.space, ACCESS_NAMES[site.kind], site.text
        if source is None:
            source = parse_source(site.source)
    if line is not None:  # an atomic inlined from a CUDA header: the user's line it was inlined at
        source = user_source(kernel.module, line) or source
    if fault.allocation in ("shared", "local"):
        space = fault.allocation
    if fault.allocation == "device free":  # a refused device free (runtime/heap.py): no access, a call
        why = str(fault).rsplit("): free of address ", 1)[-1].split(": ", 1)[-1]
        tid = fault.thread[0] + block[0] * (fault.thread[1] + block[1] * fault.thread[2])
        kind = "double free" if why.startswith("a double free") else "invalid free"
        return Report(kind, "memcheck", kernel.name, tuple(fault.cta), tuple(fault.thread), tid // 32, tid % 32,
                      line, source, int(fault.address), 0, "global", "free", None, 1, text, ptx_file, f"is {why}")
    detail = str(fault).split(": ", 1)[-1] if ": " in str(fault) else ""
    detail = detail.rsplit("): ", 1)[-1] if "): " in detail else detail
    # the fault's text names the address first; the report prints it itself
    detail = re.sub(r"^(address 0x[0-9a-f]+ |shared memory offset -?\d+: )", "", detail)
    if not detail.startswith("is "):
        detail = "is " + detail
    tid = fault.thread[0] + block[0] * (fault.thread[1] + block[1] * fault.thread[2])
    return Report("out-of-bounds", "memcheck", kernel.name, tuple(fault.cta), tuple(fault.thread), tid // 32,
                  tid % 32, line, source, int(fault.address), size, space or "global", access, None, 1, text,
                  ptx_file, detail)


def misaligned(L: Launch) -> list[Report]:
    """Accesses whose address is not a multiple of their natural alignment (the largest power of two
    dividing the size, at most 16), one report per PTX site with its first occurrence as the example."""
    r = L.trace.records("memory")  # only site and address: no column of the other fields is built
    if not len(r) or not L.plan.memory:
        return []
    sites = L.plan.memory
    ssize = np.array([s.size for s in sites], np.int64)
    salign = np.minimum(np.maximum(ssize & -ssize, 1), 16)  # lowest set bit: 4 for f32, 16 for v4.f32
    checked = np.array([space_code(s.space) not in (SP_CONST, SP_OTHER) for s in sites], bool)
    mask = np.where(checked, salign - 1, 0).astype(np.uint64)
    site = r["site"]
    rows = np.flatnonzero(r["addr"] & mask[site])
    if not len(rows):
        return []
    a = L.accesses()
    align = salign[a.site]
    sites, first, counts = np.unique(a.site[rows], return_index=True, return_counts=True)
    out = []
    for s, i, n in zip(sites.tolist(), rows[first].tolist(), counts.tolist(), strict=True):
        site = L.mem_site(s)
        w = L.who(a.cta[i], a.tid[i])
        addr = int(a.addr[i])
        detail = f"is misaligned: not a multiple of {int(align[i])} bytes"
        out.append(Report("misaligned", "memcheck", L.name, w["cta"], w["thread"], w["warp"], w["lane"], site.line,
                          L.source(site), addr, int(a.size[i]), SPACES[int(a.space[i])],
                          ACCESS_NAMES[site.kind], None, int(n), site.text, L.ptx_file, detail))
    return out


def leak_reports() -> list[Report]:
    """One report per live block of the device heap (runtime/heap.py): device malloc'd memory no device
    free released, compute-sanitizer's --leak-check full.  The report's place is the malloc call's."""
    from ptxjit.runtime.heap import live_blocks

    out = []
    for blk in live_blocks():
        m = re.search(r"PTX (?P<file>.+):(?P<line>\d+):\d+\)$", blk.where)
        head = blk.where.split(" (PTX ")[0] if m else ""
        tid = blk.linear_thread
        out.append(Report("leak", "memcheck", blk.kernel, blk.cta, blk.thread, tid // 32, tid % 32,
                          int(m.group("line")) if m else None, parse_source(head), blk.address, blk.size,
                          "global", "", None, 1, "call.uni malloc", m.group("file") if m else "", ""))
    return out


__all__ = ["fault_report", "leak_reports", "misaligned", "unlinear"]
