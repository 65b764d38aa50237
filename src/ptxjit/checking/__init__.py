"""`ptxjit check`: compute-sanitizer's tools (memcheck, racecheck, synccheck, initcheck) on the CPU, built on
the launch's bounds checks (lower/bounds.py) and the instrumentation's records (ptxjit/instrument).

core.py (`check`), report.py (`Report`, compute-sanitizer's text), records.py (the records as columns,
grouping helpers), one module per tool, env.py (PTXJIT_CHECK: every launch of a program checked).
"""

from ptxjit.checking.core import check, tool_list
from ptxjit.checking.initcheck import empty, mark_initialized, track_uninitialized
from ptxjit.checking.report import TOOLS, Access, Report, format_reports, summary_line

__all__ = ["TOOLS", "Access", "Report", "check", "empty", "format_reports", "mark_initialized", "summary_line",
           "tool_list", "track_uninitialized"]
