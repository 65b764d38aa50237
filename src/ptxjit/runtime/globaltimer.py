"""%globaltimer: nanoseconds since the Unix epoch, as on the GPU (whose driver sets the timer from the
host's clock), read by the generated code without ever going back: CLOCK_MONOTONIC plus the epoch's
distance from it, measured once per process.  The code reads that distance through the symbol
`__ptxjit_globaltimer_epoch` (llvm.add_symbol, when the runtime is imported), so that cached object code
stays valid; the code that reads it is lower/special.py's."""

from __future__ import annotations

import time

import llvmlite.binding as llvm
import numpy as np

from ptxjit.lower.special import EPOCH_SYMBOL

_epoch = np.array([time.time_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC)], dtype=np.int64)
llvm.add_symbol(EPOCH_SYMBOL, _epoch.ctypes.data)


def epoch_offset() -> int:
    """What the generated code adds to CLOCK_MONOTONIC (nanoseconds)."""
    return int(_epoch[0])
