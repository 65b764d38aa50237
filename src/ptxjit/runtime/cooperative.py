"""Cooperative launches: `kernel(grid, block, args, cooperative=True)` and grid-wide barriers
(`cooperative_groups::this_grid().sync()`).

What nvcc emits (CUDA 13, sm_90; no `-rdc` needed): grid.sync() is inline code.  It builds the grid
workspace's address from two special registers, `%envreg1 << 32 | %envreg2`, traps where it is 0
(the launch was not cooperative: `this_grid().is_valid()` is false), and then, after a bar.sync,
thread 0 of each block adds to the u32 counter at workspace + 4 (`atom.add.release.gpu`): block
(0,0,0) adds 0x80000001 - nblocks, every other block 1, so that the counter's top bit flips when
the last block arrives; thread 0 spins (`ld.acquire.gpu`) until it sees the flip, and a second
bar.sync releases the rest of its block.

ptxjit runs that code as it is.  A cooperative launch gives the launch a zeroed workspace
(abi.L_COOP, read by %envreg1/%envreg2: lower/special.py), placed right after the kernel
parameters inside the launch's parameter buffer so that bounds-checked code may touch it, and
runs every block of the grid at the same time, each on its own worker thread: a block waiting at
the grid barrier is one whose thread 0 spins, which the region scheduler suspends and which yields
its core (lower/scheduler.py), so the other blocks make progress even with more blocks than cores.

How many blocks may be co-resident is ptxjit's counterpart of CUDA's
cudaOccupancyMaxActiveBlocksPerMultiprocessor x multiprocessors: each worker thread
(`ptxjit.set_workers`, PTXJIT_WORKERS, default: all cores) counts as one H100-like multiprocessor
with 2048 threads, 32 blocks and 228 KB of shared memory (1 KB of it reserved per block), as
CUDA computes it for sm_90 (registers are not limited).  A larger cooperative grid is refused with
CUDA's cudaErrorCooperativeLaunchTooLarge.

While a cooperative launch runs, the launching thread watches it: Ctrl-C, `timeout=` and traps or
faults in any block stop every block (they poll the launch's error word while they spin), and a
grid barrier that can never complete -- some blocks exited without calling grid.sync() while all
others wait there -- raises KernelDeadlock instead of hanging.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ptxjit.errors import KernelDeadlock, KernelTrap
from ptxjit.lower import abi
from ptxjit.runtime import launch, printf, watchdog
from ptxjit.runtime.args import dims
from ptxjit.runtime.launch import RecordPlan
from ptxjit.runtime.supervise import supervised
from ptxjit.util import PerObject

if TYPE_CHECKING:
    import numpy as np

    from ptxjit.frontend import ir
    from ptxjit.jit.translate import Translation
    from ptxjit.runtime.access import KernelAccess
    from ptxjit.runtime.args import ArgPacker

# one "multiprocessor" (a worker thread), as CUDA's occupancy calculator sees an H100 SM (sm_90)
SM_MAX_THREADS = 2048
SM_MAX_BLOCKS = 32
SM_SHARED_BYTES = 228 * 1024
SHARED_RESERVED_PER_BLOCK = 1024  # CUDA reserves 1 KB of shared memory per block on sm_8x/sm_90

WORKSPACE_BYTES = 64  # nvcc's grid.sync() uses the u32 at +4; the rest is spare
_COUNTER = 1  # u32 index of that counter in the workspace
_POLL_SECONDS = 0.02


class KernelModule(Protocol):
    """What a cooperative or cluster launch uses of a kernel's module (api.Module is one)."""

    globals: np.ndarray

    def translation(self, f: ir.Function, block: tuple[int, int, int] | None = None,
                    checked: bool = False) -> Translation: ...


class Kernel(Protocol):
    """What a cooperative or cluster launch uses of a kernel (api.Kernel is one): its name, PTX function
    and module, the argument packer and range parameters planned once, the translations it has used, its
    static shared memory and what its code accesses."""

    name: str
    fn: ir.Function
    module: KernelModule
    _packer: ArgPacker
    _tcache: dict
    _range_params: list[int]
    _range_names: list[tuple[str, int]]
    _static_shared: int
    _access: KernelAccess


class CooperativeLaunchTooLarge(ValueError):
    """cudaErrorCooperativeLaunchTooLarge: the grid has more blocks than can be co-resident."""


@dataclass(frozen=True)
class Occupancy:
    """Co-residency of a kernel's blocks (ptxjit's cudaOccupancyMaxActiveBlocksPerMultiprocessor)."""

    blocks_per_multiprocessor: int
    multiprocessors: int
    limited_by: str  # "threads", "blocks", "shared memory"

    @property
    def max_cooperative_blocks(self) -> int:
        return self.blocks_per_multiprocessor * self.multiprocessors


def multiprocessor_count() -> int:
    """ptxjit's multiprocessors: its worker threads (cudaDevAttrMultiProcessorCount)."""
    return launch.worker_count()


def occupancy(kernel: Kernel, block, shared_mem: int = 0) -> Occupancy:
    """How many blocks of shape `block` with `shared_mem` bytes of dynamic shared memory can be
    co-resident per multiprocessor, and on how many multiprocessors."""
    kernel = getattr(kernel, "kernel", kernel)  # a RawKernel: its ptxjit Kernel
    b = dims(block, "block")
    nthreads = b[0] * b[1] * b[2]
    warps_threads = -(-nthreads // 32) * 32  # threads are allocated per warp
    by_threads = SM_MAX_THREADS // warps_threads
    smem = kernel._static_shared + int(shared_mem) + SHARED_RESERVED_PER_BLOCK
    by_shared = SM_SHARED_BYTES // smem
    n, why = min((by_threads, "threads"), (SM_MAX_BLOCKS, "blocks"), (by_shared, "shared memory"))
    return Occupancy(max(0, n), multiprocessor_count(), why)


def max_active_blocks_per_multiprocessor(kernel: Kernel, block, shared_mem: int = 0) -> int:
    """cudaOccupancyMaxActiveBlocksPerMultiprocessor for ptxjit (see the module docstring)."""
    return occupancy(kernel, block, shared_mem).blocks_per_multiprocessor


def max_cooperative_grid_blocks(kernel: Kernel, block, shared_mem: int = 0) -> int:
    """The largest grid (in blocks) a cooperative launch of `kernel` with this block accepts
    (Numba's `max_cooperative_grid_blocks`): blocks per multiprocessor x multiprocessors."""
    return occupancy(kernel, block, shared_mem).max_cooperative_blocks


def _check_size(kernel: Kernel, grid, block, shared_mem: int) -> None:
    occ = occupancy(kernel, block, shared_mem)
    nctas = grid[0] * grid[1] * grid[2]
    if nctas > occ.max_cooperative_blocks:
        nthreads = block[0] * block[1] * block[2]
        raise CooperativeLaunchTooLarge(
            f"kernel '{kernel.name}': cudaErrorCooperativeLaunchTooLarge: too many blocks in cooperative "
            f"launch: grid {tuple(grid)} has {nctas} blocks, but at most {occ.max_cooperative_blocks} blocks "
            f"of {nthreads} threads can be co-resident ({occ.blocks_per_multiprocessor} per multiprocessor, "
            f"limited by {occ.limited_by}, x {occ.multiprocessors} multiprocessors = ptxjit worker threads; "
            f"see Kernel.max_cooperative_grid_blocks, ptxjit.set_workers, PTXJIT_WORKERS)")


# ---------------------------------------------------------------- the launch

_plans_lock = threading.Lock()
_PLANS = PerObject()  # kernel -> {"plans": its cooperative launch memory plans, unchecked and checked}


def _plan(kernel: Kernel, checked: bool) -> tuple[RecordPlan, int]:
    """The kernel's launch memory plan with room for the grid workspace after its parameters (inside
    the parameter buffer's checked range), and the workspace's offset from the parameters."""
    mine = _PLANS.of(kernel)
    plans = mine.get("plans")
    if plans is None:
        with _plans_lock:
            packer = kernel._packer
            ws_off = (packer.size + 15) // 16 * 16
            plans = mine.setdefault("plans", tuple(
                (RecordPlan(packer.format, ws_off + WORKSPACE_BYTES, len(kernel._range_params), c), ws_off)
                for c in (False, True)))
    return plans[checked]


class _BlockThreads:
    """Cooperative blocks run on threads of their own, apart from the shared worker pool.  Every
    block of a cooperative launch must get a thread at once (a queued block would leave the others
    waiting at grid.sync() forever), also while other cooperative launches run: a pool takes a launch
    only while its active blocks fit its threads, else a larger pool is started."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pool: ThreadPoolExecutor | None = None
        self.size = 0
        self.load: dict[int, int] = {}  # id(pool) -> blocks running on it

    def acquire(self, n: int) -> ThreadPoolExecutor:
        with self.lock:
            pool = self.pool
            if pool is None or self.load.get(id(pool), 0) + n > self.size:
                # the old pool's threads finish their blocks and exit once it is garbage-collected
                self.size = max(self.size, n)
                pool = self.pool = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="ptxjit-coop")
            self.load[id(pool)] = self.load.get(id(pool), 0) + n
            return pool

    def release(self, pool: ThreadPoolExecutor, n: int) -> None:
        with self.lock:
            left = self.load.get(id(pool), 0) - n
            if left > 0 or pool is self.pool:
                self.load[id(pool)] = max(left, 0)
            else:
                self.load.pop(id(pool), None)

    def forget(self) -> None:
        """After an abandoned launch: its threads stay busy; later launches get a fresh pool."""
        with self.lock:
            self.pool, self.size = None, 0


block_threads = _BlockThreads()


def launch_cooperative(kernel: Kernel, grid: tuple[int, int, int], block: tuple[int, int, int], args,
                       shared_mem: int, timeout: float | None, checked: bool,
                       wait_streams: Callable[[], object] | None = None) -> None:
    """A checked-and-validated launch (Kernel.__call__ did the shape and shared-memory checks) whose
    blocks all run at once, with a grid workspace for grid.sync().  `wait_streams`: see prepare()."""
    _check_size(kernel, grid, block, shared_mem)
    t, values, ranges, patches, gb = prepare(kernel, block, args, checked, wait_streams)
    gaddr, gsize = gb.__array_interface__["data"][0], gb.nbytes
    with printf_scope(kernel, args, gb):
        _run(kernel, t, grid, block, checked, values, ranges, patches, gaddr, gsize, shared_mem, timeout, args,
             (args, gb))


def prepare(kernel: Kernel, block, args, checked: bool, wait_streams: Callable[[], object] | None):
    """What a cooperative or cluster launch needs before it runs, once its shape is accepted: the earlier
    work of its stream done (`wait_streams`, given by the caller: the stream's synchronization, or the
    wait of the legacy default stream for the blocking streams; the launch then runs now, in the stream's
    order), the packed arguments and the translation: (translation, values, ranges, patches, the module's
    globals)."""
    if wait_streams is not None:
        wait_streams()
    values, ranges, patches = kernel._packer.pack(args, checked)
    t = kernel._tcache.get((block, checked))
    if t is None:
        t = kernel._tcache[(block, checked)] = kernel.module.translation(kernel.fn, block, checked)
    return t, values, ranges, patches, kernel.module.globals


def printf_scope(kernel: Kernel, args, gb):
    """printf's view of the memory its %s arguments may point into, for kernels that print."""
    if kernel._access.uses_printf:
        return printf.known_memory([args[i] for i in kernel._range_params], gb)
    return contextlib.nullcontext()


def pack_record(plan: RecordPlan, grid, block, checked: bool, values, ranges, patches, gaddr: int, gsize: int,
                dyn_smem: int, nworkers: int, batch: int):
    """A launch record laid out by `plan` (launch.run_packed's layout): (L, its address, the
    parameters' address)."""
    nthreads = block[0] * block[1] * block[2]
    nctas = grid[0] * grid[1] * grid[2]
    launch._grid_counter += 1
    L = plan.type()
    base = ctypes.addressof(L)
    shift = (base + plan.params_off) & 15
    params_addr = base + plan.params_off + (8 if shift else 0)
    head = (params_addr, gaddr, *grid, *block, nctas, batch, dyn_smem, printf.PRINTF_ADDRESS, launch._grid_counter,
            nthreads, nworkers)
    if checked:
        plan.structs[1 if shift else 0].pack_into(L, 0, *head, base + plan.ranges_off, *ranges, gaddr, gsize,
                                                  params_addr, plan.param_size, *values)
    else:
        plan.structs[1 if shift else 0].pack_into(L, 0, *head, 0, *values)
    for off, data in patches or ():
        ctypes.memmove(params_addr + off, data, len(data))
    return L, base, params_addr


def _run(kernel: Kernel, tr: Translation, grid, block, checked: bool, values, ranges, patches, gaddr: int,
         gsize: int, dyn_smem: int, timeout: float | None, args, keep) -> None:
    plan, ws_off = _plan(kernel, checked)
    limit = watchdog.timeout_seconds(timeout)
    nthreads = block[0] * block[1] * block[2]
    nctas = grid[0] * grid[1] * grid[2]
    # one worker per block, one block each (batch 1): no worker can finish its block before every
    # block has reached the first grid.sync(), so every block gets a worker of its own
    L, base, params_addr = pack_record(plan, grid, block, checked, values, ranges, patches, gaddr, gsize, dyn_smem,
                                       nctas, 1)
    ws = params_addr + ws_off
    L[abi.L_COOP] = ws
    counter = (ctypes.c_uint32 * (WORKSPACE_BYTES // 4)).from_address(ws)
    _execute(kernel, tr, grid, block, nctas, nthreads, dyn_smem, limit, L, base, counter, keep,
             (launch._packed_fault_info, L, plan, kernel._range_names, args))


@dataclass
class _GridDeadlock:
    arrived: int
    exited: int


def grid_barrier_arrivals(value: int, nctas: int) -> int:
    """Blocks that have arrived at the current grid barrier, from nvcc's counter (see the docstring):
    its low 31 bits count the other blocks' arrivals until block 0 adds 1 - nblocks (mod 2**31)."""
    low = value & 0x7FFFFFFF
    return low if low < 1 << 30 else nctas - ((1 << 31) - low)


def _watch(L, counter, nctas: int) -> _GridDeadlock | None:
    """A grid barrier that can never complete: some blocks wait there, all others have exited (a
    block that exits never arrives; one that has arrived cannot exit before the barrier completes)."""
    done = int(L[abi.L_DONE])
    if not done:
        return None
    arrived = grid_barrier_arrivals(int(counter[_COUNTER]), nctas)
    if arrived > 0 and arrived + done == nctas and int(L[abi.L_DONE]) == done:
        return _GridDeadlock(arrived, done)
    return None


def _execute(kernel: Kernel, tr: Translation, grid, block, nctas: int, nthreads: int, dyn_smem: int,
             limit: float | None, L, lp: int, counter, keep, fault_info) -> None:
    """Run every block on a thread of its own while this thread watches the grid barrier; then
    raise what the launch recorded (launch._execute's contract, with the launching thread free)."""
    shared_bytes = tr.shared.dynamic_offset + dyn_smem if dyn_smem else tr.shared.static_size
    pool_memory = launch._pool_memory
    key = pool_memory.key(tr, nthreads, shared_bytes, nctas)
    mems = pool_memory.take(tr, nthreads, shared_bytes, nctas, key)
    fn = tr.native.worker
    dead: _GridDeadlock | None = None
    pool = block_threads.acquire(nctas)

    def give_back() -> None:
        pool_memory.give(tr, nthreads, shared_bytes, mems, key)
        block_threads.release(pool, nctas)

    with supervised(L, limit, mems, keep, kernel.name, tr.checked, give_back, block_threads.forget) as run:
        run.futures += [pool.submit(fn, lp, m.address) for m in mems]
        pending = run.futures
        while pending:
            _done, not_done = wait(pending, timeout=_POLL_SECONDS)
            pending = list(not_done)
            if pending and dead is None and not L[abi.L_ERROR]:
                dead = _watch(L, counter, nctas)
                if dead is not None:
                    watchdog.cancel(L, abi.ERR_DEADLOCK)
        run.settled = True
    t0 = run.started
    if dead is not None and L[abi.L_ERROR] == abi.ERR_DEADLOCK:
        err = KernelDeadlock(
            f"kernel '{kernel.name}' deadlocked at grid.sync() (cooperative launch, grid {tuple(grid)}): "
            f"{dead.arrived} of {nctas} blocks wait at the grid barrier and the other {dead.exited} exited "
            f"without reaching it; CUDA requires every block of the grid to call grid.sync()")
        err.kernel = kernel.name  # type: ignore[attr-defined]
        raise err
    if L[abi.L_ERROR]:
        raise launch.launch_exception(tr, kernel.name, L, grid, block, time.monotonic() - t0, limit, fault_info,
                                      shared_bytes)


# ---------------------------------------------------------------- grid.sync() without cooperative=True

def uses_grid_workspace(tr: Translation) -> bool:
    """Does the kernel read the grid workspace (%envreg1/%envreg2: grid.sync(), this_grid().is_valid())?
    lower/special.py lists a marker in the translation's location table where they are read."""
    from ptxjit.lower.special import GRID_WORKSPACE_MARK

    v = tr.__dict__.get("_grid_workspace")
    if v is None:
        v = tr.__dict__["_grid_workspace"] = any(text == GRID_WORKSPACE_MARK for _pos, text in tr.locations)
    return v


def explain_trap(tr: Translation, L, err: BaseException) -> BaseException:
    """A trap in a non-cooperative launch of a kernel that uses grid.sync(): on a GPU grid.sync()
    traps there too (its workspace pointer is null); say why and what to do."""
    if not isinstance(err, KernelTrap) or L[abi.L_COOP] or L[abi.L_ERROR] != abi.ERR_TRAP \
            or not uses_grid_workspace(tr):
        return err
    where = int(L[abi.L_ERR_WHERE])
    pos = tr.locations[where][0] if 0 <= where < len(tr.locations) else ""
    if "cooperative_groups" not in pos and pos.split(":")[0].endswith((".cu", ".cuh", ".h", ".hpp")):
        return err  # a trap in the user's own CUDA source (line info names it), not grid.sync()'s
    hint = KernelTrap(err.kernel, err.cta, err.thread, err.where,
                      "executed trap: cooperative_groups grid.sync() needs a cooperative launch "
                      "(kernel(grid, block, args, cooperative=True), cudaLaunchCooperativeKernel); "
                      "without one the grid workspace is null and grid.sync() traps, as on a GPU;")
    return hint
