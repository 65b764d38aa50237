"""Kernel launch: build the launch record, give each worker its CTA memory, run batches of CTAs on
the launching thread and a pool of threads (native code runs without the GIL), and turn a recorded
trap, deadlock or timeout into an exception.

A launch must never take the process down or hang it:

* the workers' native code polls the launch's error word (L_ERROR) between CTAs, at scheduler
  rounds and at loop back-edges; setting it (ERR_CANCEL, ERR_TIMEOUT) stops every worker within
  microseconds to milliseconds;
* Ctrl-C: while the main thread runs native code, Python cannot run its SIGINT handler, so the
  launch installs a wakeup fd (signal.set_wakeup_fd) read by a watchdog thread, which sets
  ERR_CANCEL; KeyboardInterrupt is then raised as the native call returns.  Any exception in the
  launching thread (also while it waits for the pool) cancels the launch, waits for every worker,
  and only then gives the launch's memory back;
* timeouts (`timeout=`, PTXJIT_TIMEOUT) are enforced by the same watchdog.
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading
import time
import warnings
from concurrent.futures import Future, ThreadPoolExecutor, wait

import numpy as np

from ptxjit import accounting, config
from ptxjit.jit.translate import Translation
from ptxjit.lower import abi
from ptxjit.passes.recursion import explain_stack_trap
from ptxjit.runtime import watchdog
from ptxjit.runtime.launch_errors import fault_error, launch_error
from ptxjit.runtime.memory import Pointer, memory_of
from ptxjit.runtime.printf import PRINTF_ADDRESS
from ptxjit.texture import TEXTURE_TRAP, explain_texture_trap
from ptxjit.util import ENV_DATA

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_workers_override: int | None = None
_grid_counter = 0


# the launch path's test that a variable is unset: a bytes-dict lookup, without a call
_TIMEOUT_KEY = config.TIMEOUT.key
_WORKERS_KEY = config.WORKERS.key


def worker_count() -> int:
    """The number of worker threads launches use (set_workers, else PTXJIT_WORKERS, else all cores)."""
    if _workers_override:
        return _workers_override
    return config.workers()  # cached by the value: this runs at every launch


def set_workers(n: int | None) -> None:
    """Set the number of worker threads (None: PTXJIT_WORKERS or all cores)."""
    global _workers_override
    if n is not None and n < 1:
        raise ValueError("worker count must be >= 1")
    _workers_override = n


def _get_pool(n: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < n:
            # never shut the old pool down: other threads may hold it and be about to submit to it
            # (set_workers() while launches run).  Dropping the reference is enough: its threads
            # finish the queued work and exit once the executor is garbage-collected.
            _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="ptxjit-worker")
            _pool_size = n
        return _pool


BASE_ALIGN = 4096  # where a worker's shared window and local slices start (PTX variables align to at most this)


class _WorkerMemory:
    """One worker's private CTA memory: shared, local, register save area, status, warp state."""

    def __init__(self, tr: Translation, nthreads: int, shared_bytes: int, index: int) -> None:
        # the CTA's shared window and the first thread's local slice start at BASE_ALIGN: a variable's
        # `.align` (numba's alignment=256 arrays) holds at its offset from there (lower/layout.py)
        self.shared = np.zeros(max(shared_bytes, 16) + BASE_ALIGN, dtype=np.uint8)
        self.local = np.zeros(max(tr.local_stride * nthreads, 16) + BASE_ALIGN, dtype=np.uint8)
        self.save = np.zeros(max(tr.save_stride * nthreads, 16), dtype=np.uint8) if tr.has_yields else \
            np.zeros(16, np.uint8)
        self.status = np.zeros(nthreads, dtype=np.int32)
        nwarps = (nthreads + 31) // 32
        self.warps = np.zeros(nwarps * abi.WARP_STRIDE, dtype=np.uint8)
        # region-mode warp exchange: [yield index][parity][thread] i64, masks per warp, counts per point
        # (32 more each side: a butterfly shuffle reads threads t - k and t + k, k < 32, and keeps the one
        # that lane & k names: lower/rules/sync.py)
        self.xbuf = np.zeros(2 * max(tr.nyields + 1, tr.xbuf_points) * nthreads + 64, dtype=np.int64)
        self.wmask = np.zeros(nwarps + 1, dtype=np.uint32)
        self.cnt = np.zeros(tr.nyields + 2, dtype=np.uint32)
        self.pcount = np.zeros(abi.pcount_slots(tr.nyields), dtype=np.int32)
        self.barinfo = np.zeros(nthreads if tr.has_yields else 1, dtype=np.int32)
        self.fault = np.zeros(nthreads, dtype=np.int64)  # checked code: per thread, a bad access (bounds.py)
        # tensor-core scratch (lower/rules/mma.py): per thread, for threads rounded up to a warpgroup
        self.tc = np.zeros(tc_scratch(tr) * -(-nthreads // 128) * 128 + 16, dtype=np.uint8)
        rec = np.zeros(abi.W_SIZE, dtype=np.int64)
        rec[abi.W_SHARED] = _aligned_addr(self.shared, BASE_ALIGN)
        rec[abi.W_LOCAL] = _aligned_addr(self.local, BASE_ALIGN)
        rec[abi.W_SAVE] = self.save.ctypes.data
        rec[abi.W_STATUS] = self.status.ctypes.data
        rec[abi.W_WARP] = self.warps.ctypes.data
        rec[abi.W_ID] = index
        rec[abi.W_XBUF] = self.xbuf.ctypes.data + 32 * 8
        rec[abi.W_WMASK] = self.wmask.ctypes.data
        rec[abi.W_CNT] = self.cnt.ctypes.data
        rec[abi.W_PCOUNT] = self.pcount.ctypes.data
        rec[abi.W_BARINFO] = self.barinfo.ctypes.data
        rec[abi.W_SHARED_SIZE] = shared_bytes
        rec[abi.W_FAULT] = self.fault.ctypes.data
        rec[abi.W_LOCAL_SIZE] = tr.local_stride * nthreads
        rec[abi.W_TC] = _aligned_addr(self.tc, 16)
        self.record = rec
        self.address = int(rec.ctypes.data)


def tc_scratch(tr: Translation) -> int:
    """Tensor-core scratch bytes per thread of translation tr (0: no mma), computed once per translation."""
    v = tr.__dict__.get("_tc_scratch")
    if v is None:
        from ptxjit.lower.rules.mma import scratch_per_thread

        v = tr.__dict__["_tc_scratch"] = scratch_per_thread([t for _, t in tr.locations])
    return v


class _MemoryPool:
    """Worker memory is reused across launches (allocating it costs more than an empty kernel);
    concurrent launches each take their own sets (lock-free: dict and list operations are atomic)."""

    def __init__(self) -> None:
        self.free: dict[tuple, list[list[_WorkerMemory]]] = {}

    @staticmethod
    def key(tr: Translation, nthreads: int, shared_bytes: int, nworkers: int) -> tuple:
        return (tr.save_stride, tr.local_stride, tr.has_yields, tr.nyields, tr.xbuf_points, nthreads, shared_bytes,
                nworkers, tc_scratch(tr))

    def take(self, tr: Translation, nthreads: int, shared_bytes: int, nworkers: int,
             key: tuple | None = None) -> list[_WorkerMemory]:
        if key is None:
            key = self.key(tr, nthreads, shared_bytes, nworkers)
        # no lock: list.pop and dict.get are atomic (the list may empty between the test and the pop)
        sets = self.free.get(key)
        if sets:
            try:
                return sets.pop()
            except IndexError:
                pass
        return [_WorkerMemory(tr, nthreads, shared_bytes, i) for i in range(nworkers)]

    def give(self, tr: Translation, nthreads: int, shared_bytes: int, mems: list[_WorkerMemory],
             key: tuple | None = None) -> None:
        if key is None:
            key = self.key(tr, nthreads, shared_bytes, len(mems))
        sets = self.free.get(key)
        if sets is None:
            self.free.setdefault(key, []).append(mems)  # atomic: racing givers share one list
        elif len(sets) < 4:  # racing givers may keep a set or two more: harmless
            sets.append(mems)


_pool_memory = _MemoryPool()


def _aligned_addr(a: np.ndarray, align: int) -> int:
    addr = a.ctypes.data
    return (addr + align - 1) // align * align


# launches whose workers did not stop after a cancel: their memory stays alive (never reused)
_abandoned: list[tuple] = []
_DRAIN_SECONDS = 5.0


def _after_fork_in_child() -> None:
    """Threads do not survive fork: the child starts its own pool when it launches (the watchdog:
    runtime/watchdog.py)."""
    global _pool, _pool_size, _pool_lock, _pool_memory
    _pool, _pool_size = None, 0
    _pool_lock = threading.Lock()
    _pool_memory = _MemoryPool()


os.register_at_fork(after_in_child=_after_fork_in_child)


def range_table(idx: list[int], args, params: np.ndarray, globals_buf: np.ndarray) -> np.ndarray:
    """The legal address ranges of a checked launch (lower/safety/bounds.py): [lo, len) per 64-bit
    parameter `idx` (its array, or the memory its Pointer points into; len 0 for a number; everything for
    a raw non-null Pointer without its memory), then the globals buffer and the parameter buffer."""
    vals: list[int] = []
    for i in idx:
        v = args[i]
        m = memory_of(v)
        if m is not None:
            vals += (m.__array_interface__["data"][0], m.nbytes)
        elif isinstance(v, Pointer) and v.address:
            vals += (0, -1)  # the caller vouches for a raw address: no range is known
        else:
            vals += (0, 0)
    vals += (globals_buf.__array_interface__["data"][0], globals_buf.nbytes,
             params.__array_interface__["data"][0], params.nbytes)
    return np.array(vals, dtype=np.int64)


def run(tr: Translation, kernel_name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
        params: np.ndarray, globals_buf: np.ndarray, dyn_smem: int, timeout: float | None = None,
        ranges: np.ndarray | None = None, range_names: list[tuple[str, int, object]] | None = None,
        probe_table: np.ndarray | None = None) -> None:
    """`ranges` (range_table) is required by checked translations; `range_names` names its entries
    (parameter name, index, argument) for a KernelFault's message.  (Kernel.__call__ takes the
    faster run_packed, which builds the record, range table and parameters in one buffer.)
    `probe_table` is required by instrumented translations (ptxjit/instrument/buffers.py: it holds
    per-worker state for worker_count() workers); they launch through here."""
    global _grid_counter
    limit = watchdog.timeout_seconds(timeout)
    nthreads = block[0] * block[1] * block[2]
    nctas = grid[0] * grid[1] * grid[2]
    nworkers = max(1, min(worker_count(), nctas))
    batch = max(1, min(64, nctas // (nworkers * 4) or 1))
    _grid_counter += 1
    rec = [0] * abi.L_SIZE
    rec[abi.L_PARAMS] = params.__array_interface__["data"][0]
    rec[abi.L_GLOBALS] = globals_buf.__array_interface__["data"][0]
    rec[abi.L_GRID:abi.L_GRID + 3] = grid
    rec[abi.L_BLOCK:abi.L_BLOCK + 3] = block
    rec[abi.L_NCTAS] = nctas
    rec[abi.L_BATCH] = batch
    rec[abi.L_DYN_SMEM] = dyn_smem
    rec[abi.L_PRINTF] = PRINTF_ADDRESS
    rec[abi.L_GRIDID] = _grid_counter
    rec[abi.L_NTHREADS] = nthreads
    rec[abi.L_NWORKERS] = nworkers
    if tr.checked:
        if ranges is None:
            raise ValueError(f"kernel '{kernel_name}': a bounds-checked translation needs a range table")
        rec[abi.L_RANGES] = ranges.__array_interface__["data"][0]
    if tr.probes:
        if probe_table is None:
            raise ValueError(f"kernel '{kernel_name}': an instrumented translation needs a probe table")
        rec[abi.L_PROBE] = probe_table.__array_interface__["data"][0]
    L = np.array(rec, dtype=np.int64)  # one allocation for the whole launch record
    _execute(tr, kernel_name, grid, block, nctas, nthreads, nworkers, dyn_smem, limit, L,
             L.__array_interface__["data"][0], (params, globals_buf, probe_table),
             (_given_fault_info, ranges, range_names))


# the launch record fields a launch sets, in record order (run_packed passes them in this order)
_L_ORDER = (abi.L_PARAMS, abi.L_GLOBALS, abi.L_GRID, abi.L_GRID + 1, abi.L_GRID + 2, abi.L_BLOCK,
            abi.L_BLOCK + 1, abi.L_BLOCK + 2, abi.L_NCTAS, abi.L_BATCH, abi.L_DYN_SMEM, abi.L_PRINTF,
            abi.L_GRIDID, abi.L_NTHREADS, abi.L_NWORKERS, abi.L_RANGES)
assert list(_L_ORDER) == sorted(set(_L_ORDER)) and _L_ORDER[-1] < abi.L_SIZE, "launch record layout changed"


def _gaps(fields: tuple[int, ...]) -> str:
    out, pos = [], 0
    for f in fields:
        if f > pos:
            out.append(_pad(8 * (f - pos)))
        out.append("q")
        pos = f + 1
    return "".join(out)


class RecordPlan:
    """One kernel's launch memory, laid out once: a single zeroed int64 ctypes array per launch
    holding the launch record (abi.L_*), the range table of a checked launch ([lo, len) per 64-bit
    parameter, then the globals and the parameter buffer) and the parameter buffer (16-byte aligned),
    filled by one struct.pack_into.  Allocating it costs less than a NumPy array's address lookup;
    every launch has its own, so concurrent launches share nothing."""

    def __init__(self, param_format: str, param_size: int, nranges: int, checked: bool) -> None:
        self.checked = checked
        self.nranges = nranges
        self.param_size = param_size
        rwords = 2 * (nranges + 2) if checked else 0
        self.ranges_off = 8 * abi.L_SIZE
        poff = self.ranges_off + 8 * rwords
        poff = (poff + 15) // 16 * 16
        self.params_off = poff
        words = poff // 8 + (param_size + 7) // 8 + 2  # a spare word: the params may move by 8 to align
        self.type = ctypes.c_int64 * words
        head = "<" + _gaps(_L_ORDER)
        if checked:
            head += _pad(8 * (abi.L_SIZE - _L_ORDER[-1] - 1)) + "q" * rwords
        pos = self.ranges_off + 8 * rwords if checked else 8 * (_L_ORDER[-1] + 1)
        # two formats: the parameters at params_off, or 8 bytes later where the allocation is only
        # 8-byte aligned (Python's allocators give 16; this is insurance)
        self.structs = [struct.Struct(head + _pad(poff + shift - pos) + param_format) for shift in (0, 8)]


def _pad(n: int) -> str:
    assert n >= 0
    return f"{n}x" if n else ""


_addressof = ctypes.addressof
_memmove = ctypes.memmove


def run_packed(tr: Translation, kernel_name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
               plan: RecordPlan, values: list, ranges: list | None, patches: list | None,
               globals_addr: int, globals_size: int, dyn_smem: int, timeout: float | None,
               range_names: list[tuple[str, int]], args, keep) -> None:
    """Launch with the parameters as ArgPacker.pack gives them (values for the plan's format, the
    range table's entries of the 64-bit parameters, byte patches).  `range_names`: the (parameter
    name, index) of the range entries, `args` the launch's arguments, for a KernelFault's message;
    `keep`: what must stay alive while the workers may run."""
    global _grid_counter
    env = ENV_DATA
    if timeout is None and env is not None and _TIMEOUT_KEY not in env:
        limit = None  # the common case without a call (watchdog.timeout_seconds reads the same)
    else:
        limit = watchdog.timeout_seconds(timeout)
    nthreads = block[0] * block[1] * block[2]
    nctas = grid[0] * grid[1] * grid[2]
    if nctas == 1 and (_workers_override or (env is not None and _WORKERS_KEY not in env)):
        nworkers = batch = 1  # what worker_count() would make of it, with nothing to validate
    else:
        nworkers = max(1, min(worker_count(), nctas))
        batch = max(1, min(64, nctas // (nworkers * 4) or 1))
    _grid_counter += 1
    L = plan.type()
    base = _addressof(L)
    shift = (base + plan.params_off) & 15
    params_addr = base + plan.params_off + (8 if shift else 0)
    if plan.checked:
        plan.structs[1 if shift else 0].pack_into(
            L, 0, params_addr, globals_addr, *grid, *block, nctas, batch, dyn_smem, PRINTF_ADDRESS,
            _grid_counter, nthreads, nworkers, base + plan.ranges_off, *ranges, globals_addr, globals_size,
            params_addr, plan.param_size, *values)
    else:
        if tr.checked:
            raise ValueError(f"kernel '{kernel_name}': a bounds-checked translation needs a range table")
        plan.structs[1 if shift else 0].pack_into(
            L, 0, params_addr, globals_addr, *grid, *block, nctas, batch, dyn_smem, PRINTF_ADDRESS,
            _grid_counter, nthreads, nworkers, 0, *values)
    if patches:
        for off, data in patches:
            _memmove(params_addr + off, data, len(data))
    _execute(tr, kernel_name, grid, block, nctas, nthreads, nworkers, dyn_smem, limit, L, base, keep,
             (_packed_fault_info, L, plan, range_names, args))


def _packed_fault_info(L, plan: RecordPlan, names: list[tuple[str, int]], args) -> tuple[list, list]:
    return L[abi.L_SIZE:abi.L_SIZE + 2 * (plan.nranges + 2)], [(n, i, args[i]) for n, i in names]


def _given_fault_info(ranges, range_names) -> tuple:
    return ranges, range_names or []


def _execute(tr: Translation, kernel_name: str, grid, block, nctas: int, nthreads: int, nworkers: int,
             dyn_smem: int, limit: float | None, L, lp: int, keep, fault_info) -> None:
    """Run launch record L (at address lp; a NumPy or ctypes int64 array) to its end, and raise
    what it recorded.  `keep`: what the workers use besides L (kept alive should they not stop);
    `fault_info`: (function, *arguments) giving the range table and its entries' (name, index,
    argument), for a KernelFault."""
    shared_bytes = tr.shared.dynamic_offset + dyn_smem if dyn_smem else tr.shared.static_size
    pool_memory = _pool_memory
    key = (tr.save_stride, tr.local_stride, tr.has_yields, tr.nyields, tr.xbuf_points, nthreads, shared_bytes, nworkers,
           tc_scratch(tr))
    mems = pool_memory.take(tr, nthreads, shared_bytes, nworkers, key)
    fn = tr.native.worker
    # runtime/supervise.py's protocol, inline here: this is every launch's path (the context manager
    # costs about half a microsecond per launch)
    t0 = time.monotonic()
    wd = watchdog.current or watchdog.get()
    token = wd.add_deadline(t0 + limit, L) if limit is not None else None
    main = threading.get_ident() == watchdog.MAIN_IDENT
    old_fd = wd.enter_main(L) if main else None
    futures: list[Future] = []
    settled = False  # every worker has returned
    try:
        if nworkers > 1:
            pool = _get_pool(nworkers - 1)
            futures = [pool.submit(fn, lp, m.address) for m in mems[1:]]
        fn(lp, mems[0].address)  # this thread is worker 0; Ctrl-C raises as it returns
        if futures:
            _wait_workers(futures)
        settled = True
    except BaseException:
        watchdog.cancel(L, abi.ERR_CANCEL)
        settled = _drain(futures)
        raise
    finally:
        accounting.ran(time.monotonic() - t0)
        if main:
            wd.leave_main(old_fd)
        if token is not None:
            wd.remove_deadline(token)
        if settled or all(f.done() for f in futures):
            if L[abi.L_ERROR] and tr.checked:  # faults recorded by CTAs that were stopped or faulted
                for m in mems:
                    m.fault[:] = 0
            pool_memory.give(tr, nthreads, shared_bytes, mems, key)
        else:
            _abandon(L, keep, mems, kernel_name)
    if L[abi.L_ERROR]:
        raise launch_exception(tr, kernel_name, L, grid, block, time.monotonic() - t0, limit, fault_info,
                               shared_bytes)


def launch_exception(tr: Translation, kernel_name: str, L, grid, block, elapsed: float, limit: float | None,
                     fault_info, shared_bytes: int) -> BaseException:
    """The exception for launch record L, which recorded an error (L_ERROR)."""
    if L[abi.L_ERROR] == abi.ERR_FAULT:
        ranges, names = fault_info[0](*fault_info[1:])
        return fault_error(tr, kernel_name, L, grid, block, ranges, names or [], shared_bytes)
    err = launch_error(tr, kernel_name, L, grid, block, elapsed, limit)
    if L[abi.L_ERROR] == abi.ERR_TRAP and tr.locations:  # grid.sync() outside a cooperative launch?
        from ptxjit.runtime.cooperative import explain_trap

        err = explain_trap(tr, L, err)
    if L[abi.L_ERROR] == abi.ERR_TRAP and int(L[abi.L_ERR_ARG]) >> 56 == TEXTURE_TRAP:  # ptxjit/texture.py
        err = explain_texture_trap(int(L[abi.L_ERR_ARG]), err)
    if L[abi.L_ERROR] == abi.ERR_TRAP and int(L[abi.L_ERR_ARG]) >> 56 == abi.STACK_TRAP:  # passes/recursion.py
        err = explain_stack_trap(err)
    return err


def _wait_workers(futures: list[Future]) -> None:
    """Wait for the pool's workers in short slices, so that Ctrl-C gets through."""
    pending = [f for f in futures if not f.done()]
    while pending:
        _done, not_done = wait(pending, timeout=0.05)
        pending = list(not_done)


def _drain(futures: list[Future]) -> bool:
    """After a cancel: wait until every worker has returned (they poll L_ERROR; a second Ctrl-C
    does not stop the wait).  False if some did not return within _DRAIN_SECONDS."""
    for f in futures:
        f.cancel()  # not started yet: it never will
    end = time.monotonic() + _DRAIN_SECONDS
    while True:
        try:
            pending = [f for f in futures if not f.done()]
            if not pending:
                return True
            if time.monotonic() > end:
                return False
            wait(pending, timeout=0.05)
        except BaseException:  # noqa: S112 - the launch's memory must outlive its workers
            continue


def _abandon(L, keep, mems: list, kernel: str) -> None:
    """Workers that did not stop keep using this launch's memory: keep it alive for good, and give
    later launches a fresh pool (the old one's threads are busy)."""
    global _pool, _pool_size
    _abandoned.append((L, keep, mems))
    with _pool_lock:
        _pool, _pool_size = None, 0
    warnings.warn(f"ptxjit: workers of kernel '{kernel}' did not stop after the launch was cancelled; "
                  "they keep running in the background", RuntimeWarning, stacklevel=4)

