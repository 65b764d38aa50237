"""The clock of the trace's time stamps: a cycle counter read in the generated code, and its rate.

Barrier records and the per-CTA spans carry a raw counter value: reading it costs a few cycles (x86's
`rdtsc` through `llvm.readcyclecounter`; on AArch64 the generic timer through `llvm.readsteadycounter`,
since the cycle counter there is not readable from user space), where a clock_gettime call would cost
tens of nanoseconds per record.  `Clock` reads the same counter from Python (a tiny JIT-compiled
function) around a launch and converts raw values to nanoseconds since the launch began.
"""

from __future__ import annotations

import ctypes
import functools
import platform
import time
from dataclasses import dataclass

from llvmlite import ir as ll

from ptxjit.lower.types import I64


def counter_intrinsic() -> str:
    return "llvm.readsteadycounter" if platform.machine().lower() in ("aarch64", "arm64") else \
        "llvm.readcyclecounter"


def read_counter(b: ll.IRBuilder) -> ll.Value:
    """Emit a read of the trace clock (an i64)."""
    name = counter_intrinsic()
    fn = b.module.globals.get(name) or ll.Function(b.module, ll.FunctionType(I64, []), name=name)
    return b.call(fn, [])


@functools.cache
def _reader():
    from ptxjit.jit.engine import load_object, optimize_to_object

    mod = ll.Module(name="ptxjit_clock")
    fn = ll.Function(mod, ll.FunctionType(I64, []), name="ptxjit_clock")
    b = ll.IRBuilder(fn.append_basic_block())
    b.ret(read_counter(b))
    code = optimize_to_object(str(mod), name="ptxjit_clock")
    native = load_object(code, "ptxjit_clock")
    return native, ctypes.CFUNCTYPE(ctypes.c_uint64)(native.address)


def now() -> int:
    """The trace clock's value."""
    return int(_reader()[1]())


@functools.cache
def ns_per_tick() -> float:
    """The counter's rate, measured once per process over 20 ms (the TSC and the AArch64 generic timer
    run at a constant rate)."""
    r0, n0 = now(), time.perf_counter_ns()
    time.sleep(0.02)
    r1, n1 = now(), time.perf_counter_ns()
    return (n1 - n0) / (r1 - r0) if r1 > r0 else 1.0


@dataclass
class Clock:
    """The counter's value when a launch began: raw values -> ns since then."""
    raw0: int

    @classmethod
    def start(cls) -> Clock:
        ns_per_tick()
        return cls(now())

    def ns(self, raw):
        """Raw counter values (int or NumPy array) -> ns since start()."""
        import numpy as np

        r = np.asarray(raw, np.int64) - np.int64(self.raw0)
        return np.rint(r * ns_per_tick()).astype(np.int64)
