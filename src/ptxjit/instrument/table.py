"""The probe table a launch gets (abi.L_PROBE) and the per-worker probe state (abi.W_PROBE): their slots,
shared by the buffers (instrument/buffers.py), the probes' code (instrument/emit.py) and the access
patterns (instrument/patterns.py).

Probe table (int64, TB_*): per-worker state base, per-CTA arrays, cursors and capacities per type.
Per-worker state (int64, WS_*, WS_STRIDE slots each; abi.W_PROBE points at the worker's): the CTA's
sequence counter and linear index, the counting run's counters and this worker's thread epochs, then per
type the claim (position, end, start), the running total (counting), the buffer and its scratch index.
"""

from __future__ import annotations

from ptxjit.instrument.probes import NTYPES

# probe table
TB_WS, TB_CTA, TB_CTA_START, TB_CTA_USED = 0, 1, 2, 3
TB_CURSOR = 4               # + type: atomic cursor of the type's buffer
TB_CAP = TB_CURSOR + NTYPES  # + type: capacity
TB_CTA_TIME = TB_CAP + NTYPES  # per CTA (trace): worker, cycle counter at its start and at its end
TB_PATTERNS = TB_CTA_TIME + 1  # counting with patterns: the control array (instrument/patterns.py)
TB_SIZE = TB_PATTERNS + 1

# per-worker state
WS_SEQ, WS_CTA, WS_COUNTERS, WS_EPOCH = 0, 1, 2, 3
WS_TYPE = 4                  # + 8 * type: the slots below
WS_POS, WS_END, WS_START, WS_TOT, WS_BUF, WS_SCRATCH = range(6)
WS_STRIDE = 40               # 320 bytes: workers never share a cache line


def ws_slot(t: int, what: int) -> int:
    return WS_TYPE + 8 * t + what


# counting with patterns (instrument/patterns.py): the CTA's slot, threads per slot row
WS_PAT_CUR, WS_PAT_THREADS = 36, 37
assert ws_slot(NTYPES - 1, WS_SCRATCH) < WS_PAT_CUR and WS_PAT_THREADS < WS_STRIDE
