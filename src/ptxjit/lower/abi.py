"""Memory layouts shared by the generated code and the Python runtime.

A launch is described by one int64 array (`LAUNCH_*` slots) shared by all workers; each worker
owns another int64 array (`WORKER_*` slots) pointing at its private CTA memory.  Keeping both as
flat int64 arrays lets NumPy build them and lets generated code reach each slot with one GEP.
"""

from __future__ import annotations

# ---- launch record (shared by all workers)
L_PARAMS = 0          # kernel parameter buffer (PTX param layout)
L_GLOBALS = 1         # module globals / constants buffer
L_GRID = 2            # 2, 3, 4: nctaid.x/y/z
L_BLOCK = 5           # 5, 6, 7: ntid.x/y/z
L_NCTAS = 8
L_NEXT = 9            # atomic cursor: next CTA index to hand out
L_BATCH = 10          # CTAs per batch
L_ERROR = 11          # 0 = ok; else error code (set once, by compare-and-swap)
L_ERR_CTA = 12        # linear CTA index of the failing thread
L_ERR_TID = 13        # linear thread index of the failing thread
L_ERR_WHERE = 14      # instruction id (index into the kernel's location table)
L_ERR_ARG = 15        # extra datum (e.g. assert message pointer)
L_DYN_SMEM = 16       # dynamic shared memory bytes
L_PRINTF = 17         # address of the printf callback
L_DONE = 18           # CTAs completed (aggregated by workers per batch)
L_GRIDID = 19
L_NTHREADS = 20
L_ERR_FILE = 21       # assert: file name pointer
L_ERR_LINE = 22       # assert: line
L_NWORKERS = 23
L_ERR_LIVE = 24       # deadlock: live (not exited) threads of the CTA
L_ERR_FUNC = 24       # assert: function name pointer (the slot deadlocks use for L_ERR_LIVE)
L_RANGES = 25         # checked code: int64 [lo, len) pairs of the legal address ranges (lower/safety/bounds.py)
L_PROBE = 26          # instrumented code: the probe table (ptxjit/instrument/buffers.py)
L_RANGED = 27         # nonzero: a native call runs the CTAs [W_BSTART, W_BEND) once and returns (the
                      # stream scheduler hands out batches itself: ptxjit/streams/scheduler.py)
L_COOP = 28           # cooperative launch: address of the zeroed grid workspace that nvcc's grid.sync()
                      # reads as %envreg1:%envreg2 (0: not cooperative; runtime/cooperative.py)
L_CLUSTER = 29        # cluster launch: address of its cluster workspace (0: none; lower/rules/cluster.py)
L_SIZE = 32

# ---- error codes
ERR_TRAP = 1
ERR_ASSERT = 2
ERR_SELF_LOOP = 3
ERR_BAD_WARP_SYNC = 4
# set by the runtime (launch.py) while workers run: every worker stops at its next poll
ERR_CANCEL = 5        # KeyboardInterrupt or another exception in the launching thread
ERR_TIMEOUT = 6       # the launch's timeout expired
# set by the region scheduler: no thread of a CTA can make progress; L_ERR_WHERE names a barrier
# instruction, L_ERR_ARG its barrier id, L_ERR_FILE the arrivals, L_ERR_LINE the threads it needs
# (-1: every live thread), L_ERR_TID a waiting thread, L_ERR_LIVE the CTA's live threads
ERR_DEADLOCK = 7
# set by the worker loop after a CTA in which a checked access was out of bounds (lower/safety/bounds.py):
# L_ERR_WHERE the instruction, L_ERR_ARG the packed fault word (bounds.unpack_fault)
ERR_FAULT = 8
STACK_TRAP = 0x7D     # L_ERR_ARG >> 56 of the ERR_TRAP of a too deep recursion (passes/recursion.py)
ERR_ILLEGAL_ADDRESS = 9  # an address offset no memory can be reached with (beyond +-2**47)

# kernel code polls L_ERROR (atomically) every POLL_MASK + 1 iterations of a loop; a spin loop
# (passes over a volatile/atomic load) then also yields to the CTA scheduler (forward progress)
POLL_MASK = 1023

# ---- worker record (one per worker thread)
W_SHARED = 0          # shared memory (static + dynamic) of the current CTA
W_LOCAL = 1           # per-thread local memory, nthreads * local_stride
W_SAVE = 2            # per-thread register save area, nthreads * save_stride
W_STATUS = 3          # int32 status per thread (resume code, -1 exited)
W_WARP = 4            # per-warp collective state, WARP_STRIDE bytes each
W_CTA = 5             # 5, 6, 7: ctaid.x/y/z of the current CTA
W_RED_ACC = 8         # 8: popc accumulator, 9: and, 10: or (bar.red)
W_RED_RES = 11        # 11: popc result, 12: and, 13: or
W_ID = 14             # worker index (reported as %smid)
W_SHARED_SIZE = 15
W_EXITED = 16         # set by `exit` in a device function; the kernel body then ends the thread
W_XBUF = 17           # region mode: i64 exchange buffer [yield index][parity][thread]
W_WMASK = 18          # region mode: u32 per warp: lanes released together at the current warp point
W_CNT = 19            # region mode: u32 per yield index: how often that point was released
W_PCOUNT = 20         # region mode: i32 per yield index (0 = start): threads waiting there now, then
                      # NBARRIERS arrival counts of bar.arrive (index arrive_base(nyields) + barrier id)
W_BARINFO = 21        # region mode: i32 per thread: barrier id | count << 8 of a waiting thread (register operands)
W_FAULT = 22          # checked code: i64 per thread: its last out-of-bounds access (0: none; lower/safety/bounds.py)
W_LOCAL_SIZE = 23     # bytes of W_LOCAL
W_PROBE = 24          # instrumented code: this worker's probe state (set by the worker loop; instrument/buffers.py)
W_BSTART = 25         # with L_RANGED: the first CTA (linear index) of the batch this call runs
W_BEND = 26           # with L_RANGED: one past its last CTA
W_FAULTED = 27        # checked code: nonzero once a loop over the threads flushed a fault word to W_FAULT
                      # (bounds.flush_sites): the region scheduler then ends the CTA, and the worker loop
                      # scans W_FAULT after a CTA only then; reset when a CTA starts
W_STACK = 28          # the native stack pointer where the worker began (recursion guard: passes/recursion.py)
W_TC = 30             # tensor-core scratch: per warp / warpgroup dense matrices (lower/rules/mma.py)
W_SIZE = 32

NBARRIERS = 16        # named barriers per CTA


def pcount_slots(nyields: int) -> int:
    """Entries of the W_PCOUNT array: start, each yield point, then bar.arrive counts per barrier."""
    return nyields + 2 + NBARRIERS


def arrive_base(nyields: int) -> int:
    return nyields + 2

# ---- per-warp collective state
WARP_MASK = 0         # u32: lanes released together at the warp point (the "active mask")
WARP_XBUF = 8         # i64 xbuf[32]: each lane's published operand
WARP_SNAP = 8 + 256   # i64 snap[32]: operands of the released lanes, copied at release
WARP_STRIDE = 8 + 512

# ---- thread status / resume codes
STATUS_START = 0
STATUS_EXITED = -1
RESUME_TRAP = -2
RELEASED = 0x40000000  # set on a waiting thread's code when its barrier is released
WARP_POINT = 1         # low bit of a yield code: warp-level point (else CTA barrier)
REGION_DENSE = 0x20000000  # region mode: every thread waits at the resumed point (no per-thread check)

# the cluster launch's workspace (abi.L_CLUSTER; runtime/clusters.py fills it, lower/clusters.py reads it)
WS_DIMS = 16        # u32 x3: cluster dims (0: no cluster launch)
WS_EXPLICIT = 28    # u32: the kernel declares its cluster (%is_explicit_cluster)
WS_SHARED_TABLE = 32
WS_COUNTERS = 40
