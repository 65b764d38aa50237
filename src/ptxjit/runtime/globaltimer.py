"""%globaltimer: nanoseconds since the Unix epoch, as on the GPU (whose driver sets the timer from the
host's clock), read by the generated code without ever going back: CLOCK_MONOTONIC plus the epoch's
distance from it, measured once per process.  The code reads that distance through the symbol
`__ptxjit_globaltimer_epoch` (llvm.add_symbol), so that cached object code stays valid; lower/module.py
imports this module before any cached code is loaded, as runtime/heap.py."""

from __future__ import annotations

import time

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as ll

from ptxjit.lower.types import I32, I64, const_int

FUNCTION = "__ptxjit_globaltimer"
EPOCH_SYMBOL = "__ptxjit_globaltimer_epoch"

_epoch = np.array([time.time_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC)], dtype=np.int64)
llvm.add_symbol(EPOCH_SYMBOL, _epoch.ctypes.data)


def epoch_offset() -> int:
    """What the generated code adds to CLOCK_MONOTONIC (nanoseconds)."""
    return int(_epoch[0])


def globaltimer_function(mod: ll.Module) -> ll.Function:
    """`i64 __ptxjit_globaltimer()`, the %globaltimer value (emitted once per module; inlined)."""
    fn = mod.globals.get(FUNCTION)
    if fn is not None:
        return fn
    timespec = ll.LiteralStructType([I64, I64])  # struct timespec on 64-bit Linux: tv_sec, tv_nsec
    gettime = mod.globals.get("clock_gettime") or ll.Function(
        mod, ll.FunctionType(I32, [I32, timespec.as_pointer()]), name="clock_gettime")
    epoch = mod.globals.get(EPOCH_SYMBOL)
    if epoch is None:
        epoch = ll.GlobalVariable(mod, I64, name=EPOCH_SYMBOL)  # external: add_symbol
    fn = ll.Function(mod, ll.FunctionType(I64, []), name=FUNCTION)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    b = ll.IRBuilder(fn.append_basic_block())
    ts = b.alloca(timespec)
    b.call(gettime, [const_int(I32, time.CLOCK_MONOTONIC), ts])
    sec = b.load(b.gep(ts, [const_int(I32, 0), const_int(I32, 0)]))
    nsec = b.load(b.gep(ts, [const_int(I32, 0), const_int(I32, 1)]))
    b.ret(b.add(b.add(b.mul(sec, const_int(I64, 1_000_000_000)), nsec), b.load(epoch)))
    return fn
