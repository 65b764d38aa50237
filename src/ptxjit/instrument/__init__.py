"""Instrumentation: probes that emit typed records while a kernel runs, sized exactly by a counting run.

probes.py (probe sites and the counting pass), emit.py (the probes as LLVM IR, called by the lowering's
hooks), buffers.py (record layouts, probe table, sizing), merge.py (trace order), trace.py (`trace` and
the `Trace` object).  This package imports the lowering, never the other way round: the lowering only
calls the hooks of the object a translation is given (`ModuleCodegen(probes=...)`).
"""

from ptxjit.instrument.probes import RECORD_TYPES
from ptxjit.instrument.trace import Trace, TraceOverflow

# (the function ptxjit.trace is ptxjit.instrument.trace.trace: this package's `trace` stays the module)
__all__ = ["RECORD_TYPES", "Trace", "TraceOverflow"]
