"""`ptxjit check`: compute-sanitizer's tools (memcheck, racecheck, synccheck, initcheck) on the CPU, built on
the launch's bounds checks (lower/safety/bounds.py) and the instrumentation's records (ptxjit/instrument).

    reports = ptxjit.check(kernel, grid, block, args, shared_mem=0, tools=("memcheck", "racecheck"))
    ptxjit check --tool racecheck --tool synccheck k.cu KERNEL --grid 4 --block 256 --arg ...
    PTXJIT_CHECK=memcheck,racecheck python app.py

What each tool reports (one Report per kind and PTX site, or per pair of sites for races, with an
example thread and the number of occurrences):

* memcheck: out-of-bounds accesses to global, shared and local memory (the launch's KernelFault: ptxjit
  stops at the first), misaligned accesses (compute-sanitizer's "Invalid __global__ read ... misaligned").
  A static proof (align.py) spares most launches the trace: memcheck then costs one bounds-checked launch.
* racecheck: RAW/WAR/WAW hazards in shared memory and global memory, within a CTA (same barrier epoch)
  and between CTAs (compute-sanitizer checks shared memory only); lanes of one warp race unless a
  __syncwarp() separates them (racecheck.py's docstring has the rules).
* synccheck: divergent __syncthreads() (including threads that exit while others wait: an H100 lets such
  a barrier complete and compute-sanitizer says nothing), bar.sync thread counts that do not match,
  warp collectives whose constant member mask names lanes that do not execute them, deadlocks.
* initcheck: reads of shared memory no thread of the CTA wrote before, of local memory the thread never
  wrote, and of global buffers created uninitialized (`ptxjit.checking.empty`, or a DeviceArray whose
  `uninitialized` attribute is true) that no checked launch wrote.

Modules: core.py (`check`), report.py (`Report`, compute-sanitizer's text), records.py (the records as
columns, grouping helpers), memcheck.py, align.py, racecheck.py, synccheck.py, initcheck.py, env.py
(PTXJIT_CHECK).  Every analysis is vectorized NumPy over the records: no Python loop per record.
"""

from ptxjit.checking.core import check, tool_list
from ptxjit.checking.initcheck import empty, mark_initialized, track_uninitialized
from ptxjit.checking.report import TOOLS, Access, Report, format_reports, summary_line

__all__ = ["TOOLS", "Access", "Report", "check", "empty", "format_reports", "mark_initialized", "summary_line",
           "tool_list", "track_uninitialized"]
