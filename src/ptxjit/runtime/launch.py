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
import select
import signal
import threading
import time
import warnings
from concurrent.futures import Future, ThreadPoolExecutor, wait

import numpy as np

from ptxjit.errors import KernelDeadlock, KernelFault, KernelTimeout, KernelTrap
from ptxjit.jit.translate import Translation
from ptxjit.lower import abi
from ptxjit.runtime.memory import DeviceArray, Pointer
from ptxjit.runtime.printf import PRINTF_ADDRESS

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_workers_override: int | None = None
_grid_counter = 0


_env_workers: tuple[str | None, int] | None = None
# os.environ.get costs ~0.7 us (key encoding, value decoding); a launch reads two variables.  On
# POSIX, os.environ keeps its bytes in `_data` (updated by every assignment through os.environ)
_ENV_DATA = getattr(os.environ, "_data", None) if os.name == "posix" else None


def _getenv(name: str, key: bytes) -> str | None:
    if _ENV_DATA is None:
        return os.environ.get(name)
    v = _ENV_DATA.get(key)
    return None if v is None else os.fsdecode(v)


def worker_count() -> int:
    global _env_workers
    if _workers_override:
        return _workers_override
    env = _getenv("PTXJIT_WORKERS", b"PTXJIT_WORKERS")
    if _env_workers is not None and _env_workers[0] == env:  # cached: this runs at every launch
        return _env_workers[1]
    n = _parse_workers(env)
    _env_workers = (env, n)
    return n


def _parse_workers(env: str | None) -> int:
    if env:
        try:
            n = int(env)
        except ValueError as e:
            raise ValueError(f"PTXJIT_WORKERS must be a positive integer, got {env!r}") from e
        if n < 1:
            raise ValueError(f"PTXJIT_WORKERS must be a positive integer, got {env!r}")
        return n
    return os.cpu_count() or 1


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


class _WorkerMemory:
    """One worker's private CTA memory: shared, local, register save area, status, warp state."""

    def __init__(self, tr: Translation, nthreads: int, shared_bytes: int, index: int) -> None:
        self.shared = np.zeros(max(shared_bytes, 16) + 16, dtype=np.uint8)
        self.local = np.zeros(max(tr.local_stride * nthreads, 16), dtype=np.uint8)
        self.save = np.zeros(max(tr.save_stride * nthreads, 16), dtype=np.uint8) if tr.has_yields else \
            np.zeros(16, np.uint8)
        self.status = np.zeros(nthreads, dtype=np.int32)
        nwarps = (nthreads + 31) // 32
        self.warps = np.zeros(nwarps * abi.WARP_STRIDE, dtype=np.uint8)
        # region-mode warp exchange: [yield index][parity][thread] i64, masks per warp, counts per point
        self.xbuf = np.zeros(max(2 * (tr.nyields + 1) * nthreads, 2), dtype=np.int64)
        self.wmask = np.zeros(nwarps + 1, dtype=np.uint32)
        self.cnt = np.zeros(tr.nyields + 2, dtype=np.uint32)
        self.pcount = np.zeros(abi.pcount_slots(tr.nyields), dtype=np.int32)
        self.barinfo = np.zeros(nthreads if tr.has_yields else 1, dtype=np.int32)
        self.fault = np.zeros(nthreads, dtype=np.int64)  # checked code: per thread, a bad access (bounds.py)
        rec = np.zeros(abi.W_SIZE, dtype=np.int64)
        rec[abi.W_SHARED] = _aligned_addr(self.shared, 16)
        rec[abi.W_LOCAL] = self.local.ctypes.data
        rec[abi.W_SAVE] = self.save.ctypes.data
        rec[abi.W_STATUS] = self.status.ctypes.data
        rec[abi.W_WARP] = self.warps.ctypes.data
        rec[abi.W_ID] = index
        rec[abi.W_XBUF] = self.xbuf.ctypes.data
        rec[abi.W_WMASK] = self.wmask.ctypes.data
        rec[abi.W_CNT] = self.cnt.ctypes.data
        rec[abi.W_PCOUNT] = self.pcount.ctypes.data
        rec[abi.W_BARINFO] = self.barinfo.ctypes.data
        rec[abi.W_SHARED_SIZE] = shared_bytes
        rec[abi.W_FAULT] = self.fault.ctypes.data
        rec[abi.W_LOCAL_SIZE] = tr.local_stride * nthreads
        self.record = rec
        self.address = int(rec.ctypes.data)


class _MemoryPool:
    """Worker memory is reused across launches (allocating it costs more than an empty kernel);
    concurrent launches each take their own sets."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.free: dict[tuple, list[list[_WorkerMemory]]] = {}

    def take(self, tr: Translation, nthreads: int, shared_bytes: int, nworkers: int) -> list[_WorkerMemory]:
        key = (tr.save_stride, tr.local_stride, tr.has_yields, tr.nyields, nthreads, shared_bytes, nworkers)
        with self.lock:
            sets = self.free.get(key)
            if sets:
                return sets.pop()
        return [_WorkerMemory(tr, nthreads, shared_bytes, i) for i in range(nworkers)]

    def give(self, tr: Translation, nthreads: int, shared_bytes: int, mems: list[_WorkerMemory]) -> None:
        key = (tr.save_stride, tr.local_stride, tr.has_yields, tr.nyields, nthreads, shared_bytes, len(mems))
        with self.lock:
            sets = self.free.setdefault(key, [])
            if len(sets) < 4:
                sets.append(mems)


_pool_memory = _MemoryPool()


def _aligned_addr(a: np.ndarray, align: int) -> int:
    addr = a.ctypes.data
    return (addr + align - 1) // align * align


_env_timeout: tuple[str | None, float | None] | None = None


def _timeout_seconds(timeout: float | None) -> float | None:
    """The launch's time limit in seconds: `timeout`, else PTXJIT_TIMEOUT, else None (no limit)."""
    global _env_timeout
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float | np.integer | np.floating) \
                or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        return float(timeout)
    env = _getenv("PTXJIT_TIMEOUT", b"PTXJIT_TIMEOUT")
    if _env_timeout is not None and _env_timeout[0] == env:  # cached: this runs at every launch
        return _env_timeout[1]
    limit = None
    if env:
        try:
            limit = float(env)
        except ValueError:
            limit = -1.0
        if not limit > 0:
            raise ValueError(f"PTXJIT_TIMEOUT must be a positive number of seconds, got {env!r}")
    _env_timeout = (env, limit)
    return limit


def _cancel(L: np.ndarray, code: int) -> None:
    """Ask every worker of launch L to stop (the first error recorded wins)."""
    if not L[abi.L_ERROR]:
        L[abi.L_ERROR] = code


class _Watchdog:
    """A daemon thread that turns Ctrl-C and expired deadlines into L_ERROR codes while launches run.

    It reads a pipe that is the interpreter's signal wakeup fd while the main thread runs a launch
    (Python's C-level handler writes the signal number there even while the main thread is busy in
    native code); bytes for signals are passed on to the wakeup fd that was installed before.  A zero
    byte only wakes it up to look at a new deadline."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        os.set_blocking(self.w, False)
        self.lock = threading.Lock()
        self.deadlines: dict[int, tuple[float, np.ndarray]] = {}
        self.main_launch: np.ndarray | None = None
        self.forward = -1
        self.thread = threading.Thread(target=self._loop, name="ptxjit-watchdog", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            with self.lock:
                first = min((d for d, _L in self.deadlines.values()), default=None)
            timeout = None if first is None else max(0.0, first - time.monotonic())
            try:
                ready, _, _ = select.select([self.r], [], [], timeout)
                data = os.read(self.r, 512) if ready else b""
            except BlockingIOError:
                data = b""
            except (OSError, ValueError):  # the pipe is gone (interpreter shutdown)
                return
            sigs = bytes(x for x in data if x)
            if sigs:
                fwd = self.forward
                if fwd >= 0:
                    try:
                        os.write(fwd, sigs)
                    except OSError:
                        pass
                L = self.main_launch
                # only when Ctrl-C will raise KeyboardInterrupt (a custom handler might not stop anything)
                if L is not None and signal.SIGINT in sigs and \
                        signal.getsignal(signal.SIGINT) is signal.default_int_handler:
                    _cancel(L, abi.ERR_CANCEL)
            now = time.monotonic()
            with self.lock:
                for token, (d, L) in list(self.deadlines.items()):
                    if now >= d:
                        _cancel(L, abi.ERR_TIMEOUT)
                        del self.deadlines[token]

    def add_deadline(self, deadline: float, L: np.ndarray) -> int:
        token = id(L)
        with self.lock:
            self.deadlines[token] = (deadline, L)
        try:
            os.write(self.w, b"\0")
        except OSError:  # the pipe is full: the watchdog is awake anyway
            pass
        return token

    def remove_deadline(self, token: int) -> None:
        with self.lock:
            self.deadlines.pop(token, None)

    def enter_main(self, L: np.ndarray) -> int | None:
        """The main thread starts running launch L: Ctrl-C must reach the watchdog.  Returns the
        wakeup fd to restore afterwards (None: nothing to restore, or ours could not be installed).

        Where no wakeup fd was installed, ours stays installed between launches (the watchdog
        drains it), so that a launch costs one set_wakeup_fd call; another one (asyncio's) is put
        back after the launch and gets the signal bytes meanwhile."""
        try:
            old = signal.set_wakeup_fd(self.w, warn_on_full_buffer=False)
        except (ValueError, OSError):  # not the main interpreter, or signals unavailable
            return None
        if old != self.w:
            self.forward = old
        self.main_launch = L
        return old if old not in (-1, self.w) else None

    def leave_main(self, old: int | None) -> None:
        self.main_launch = None
        if old is None:
            return
        try:
            signal.set_wakeup_fd(old)
        except (ValueError, OSError):
            signal.set_wakeup_fd(-1)
        self.forward = -1


_watchdog_lock = threading.Lock()
_watchdog: _Watchdog | None = None
_MAIN_IDENT = threading.main_thread().ident
# launches whose workers did not stop after a cancel: their memory stays alive (never reused)
_abandoned: list[tuple] = []
_DRAIN_SECONDS = 5.0


def _get_watchdog() -> _Watchdog:
    global _watchdog
    wd = _watchdog
    if wd is None:
        with _watchdog_lock:
            if _watchdog is None:
                _watchdog = _Watchdog()
            wd = _watchdog
    return wd


def _after_fork_in_child() -> None:
    """Threads do not survive fork: the child starts its own pool and watchdog when it launches.
    The parent's watchdog pipe must not stay the child's wakeup fd (the child's signals would
    reach the parent's watchdog)."""
    global _pool, _pool_size, _watchdog, _pool_lock, _watchdog_lock, _pool_memory
    wd = _watchdog
    if wd is not None:
        try:
            old = signal.set_wakeup_fd(-1)
            if old != wd.w:
                signal.set_wakeup_fd(old)
        except (ValueError, OSError):
            pass
        for fd in (wd.r, wd.w):
            try:
                os.close(fd)
            except OSError:
                pass
    _pool, _pool_size, _watchdog = None, 0, None
    _pool_lock, _watchdog_lock = threading.Lock(), threading.Lock()
    _pool_memory = _MemoryPool()


os.register_at_fork(after_in_child=_after_fork_in_child)


def range_table(idx: list[int], args, params: np.ndarray, globals_buf: np.ndarray) -> np.ndarray:
    """The legal address ranges of a checked launch (lower/bounds.py): [lo, len) per 64-bit
    parameter `idx` (its array; len 0 for a number; everything for a raw non-null Pointer), then the
    globals buffer and the parameter buffer."""
    vals: list[int] = []
    for i in idx:
        v = args[i]
        if isinstance(v, DeviceArray):
            v = v.array
        if isinstance(v, np.ndarray):
            vals += (v.__array_interface__["data"][0], v.nbytes)
        elif isinstance(v, Pointer) and v.address:
            vals += (0, -1)  # the caller vouches for a raw address: no range is known
        else:
            vals += (0, 0)
    vals += (globals_buf.__array_interface__["data"][0], globals_buf.nbytes,
             params.__array_interface__["data"][0], params.nbytes)
    return np.array(vals, dtype=np.int64)


def run(tr: Translation, kernel_name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
        params: np.ndarray, globals_buf: np.ndarray, dyn_smem: int, timeout: float | None = None,
        ranges: np.ndarray | None = None, range_names: list[tuple[str, int, object]] | None = None) -> None:
    """`ranges` (range_table) is required by checked translations; `range_names` names its entries
    (parameter name, index, argument) for a KernelFault's message."""
    global _grid_counter
    limit = _timeout_seconds(timeout)
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
    L = np.array(rec, dtype=np.int64)  # one allocation for the whole launch record
    shared_bytes = tr.shared.dynamic_offset + dyn_smem if dyn_smem else tr.shared.static_size
    mems = _pool_memory.take(tr, nthreads, shared_bytes, nworkers)
    fn = tr.native.worker
    lp = L.__array_interface__["data"][0]
    t0 = time.monotonic()
    wd = _get_watchdog()
    token = wd.add_deadline(t0 + limit, L) if limit is not None else None
    main = threading.get_ident() == _MAIN_IDENT
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
        _cancel(L, abi.ERR_CANCEL)
        settled = _drain(futures)
        raise
    finally:
        if main:
            wd.leave_main(old_fd)
        if token is not None:
            wd.remove_deadline(token)
        if settled or all(f.done() for f in futures):
            if L[abi.L_ERROR] and tr.checked:  # faults recorded by CTAs that were stopped or faulted
                for m in mems:
                    m.fault[:] = 0
            _pool_memory.give(tr, nthreads, shared_bytes, mems)
        else:
            _abandon(L, params, globals_buf, mems, kernel_name)
    if L[abi.L_ERROR]:
        if L[abi.L_ERROR] == abi.ERR_FAULT:
            raise _fault_error(tr, kernel_name, L, grid, block, ranges, range_names or [], shared_bytes)
        raise _launch_error(tr, kernel_name, L, grid, block, time.monotonic() - t0, limit)


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


def _abandon(L: np.ndarray, params: np.ndarray, globals_buf: np.ndarray, mems: list, kernel: str) -> None:
    """Workers that did not stop keep using this launch's memory: keep it alive for good, and give
    later launches a fresh pool (the old one's threads are busy)."""
    global _pool, _pool_size
    _abandoned.append((L, params, globals_buf, mems))
    with _pool_lock:
        _pool, _pool_size = None, 0
    warnings.warn(f"ptxjit: workers of kernel '{kernel}' did not stop after the launch was cancelled; "
                  "they keep running in the background", RuntimeWarning, stacklevel=3)


def _launch_error(tr: Translation, kernel: str, L: np.ndarray, grid, block, elapsed: float,
                  limit: float | None) -> BaseException:
    code = int(L[abi.L_ERROR])
    if code == abi.ERR_TIMEOUT:
        nctas = grid[0] * grid[1] * grid[2]
        done = int(L[abi.L_DONE])
        return KernelTimeout(kernel, elapsed, limit or 0.0, f"{done} of {nctas} blocks had completed")
    if code == abi.ERR_CANCEL:  # Ctrl-C stopped it, but no KeyboardInterrupt came (it may later)
        return KeyboardInterrupt(f"kernel '{kernel}' was interrupted")
    if code == abi.ERR_DEADLOCK:
        return _deadlock_error(tr, kernel, L, grid, block)
    return _trap_error(tr, kernel, L, grid, block)


def _where(tr: Translation, L: np.ndarray) -> str:
    where_id = int(L[abi.L_ERR_WHERE])
    if 0 <= where_id < len(tr.locations):
        pos, text = tr.locations[where_id]
        return f"{pos} ('{text}')"
    return ""


def _unlinear(i: int, dims) -> tuple[int, int, int]:
    return i % dims[0], (i // dims[0]) % dims[1], i // (dims[0] * dims[1])


def _deadlock_error(tr: Translation, kernel: str, L: np.ndarray, grid, block) -> KernelDeadlock:
    n = block[0] * block[1] * block[2]
    cta = _unlinear(int(L[abi.L_ERR_CTA]), grid)
    tid = int(L[abi.L_ERR_TID])
    bid, arrived, need, live = (int(L[s]) for s in (abi.L_ERR_ARG, abi.L_ERR_FILE, abi.L_ERR_LINE, abi.L_ERR_LIVE))
    where = _where(tr, L)
    bar = f"barrier {bid}" + (f" at {where}" if where else "")
    if need > n:
        why = f"it waits for {need} threads but the block has only {n}"
    elif need < 0:
        why = (f"it waits for every live thread of the block ({live} of {n}; exited threads count as "
               f"arrived) but only {arrived} arrived")
    else:
        why = f"it waits for {need} threads but only {arrived} arrived"
    who = f"thread {_unlinear(tid, block)} is waiting there" if tid >= 0 else ""
    msg = (f"kernel '{kernel}' deadlocked in block {cta}: {bar} can never complete: {why}; "
           f"{who}{'; ' if who else ''}all {live} live threads of the block wait at barriers, so no "
           f"other thread can arrive ({n - live} threads exited)")
    err = KernelDeadlock(msg)
    err.kernel, err.cta, err.barrier, err.where = kernel, cta, bid, where  # type: ignore[attr-defined]
    return err


def _trap_error(tr: Translation, kernel: str, L: np.ndarray, grid, block) -> KernelTrap:
    code = int(L[abi.L_ERROR])
    cta = _unlinear(int(L[abi.L_ERR_CTA]), grid)
    tid = _unlinear(int(L[abi.L_ERR_TID]), block)
    where = _where(tr, L)
    reason = "executed trap"
    if code == abi.ERR_ASSERT:
        msg = _cstr(int(L[abi.L_ERR_ARG]))
        file = _cstr(int(L[abi.L_ERR_FILE]))
        reason = f"failed assertion '{msg}' ({file}:{int(L[abi.L_ERR_LINE])})"
    elif code == abi.ERR_SELF_LOOP:
        reason = "entered a branch that loops to itself forever"
    elif code == abi.ERR_BAD_WARP_SYNC:
        reason = "executed a warp synchronization that cannot complete"
    elif code == abi.ERR_ILLEGAL_ADDRESS:
        reason = "accessed an illegal address (an offset beyond +-2**47 from its base)"
    return KernelTrap(kernel, cta, tid, where, reason)


def _fault_error(tr: Translation, kernel: str, L: np.ndarray, grid, block, ranges, names,
                 shared_bytes: int) -> KernelFault:
    from ptxjit.lower.bounds import KIND_LOCAL, KIND_SHARED, unpack_fault

    cta = _unlinear(int(L[abi.L_ERR_CTA]), grid)
    tid = _unlinear(int(L[abi.L_ERR_TID]), block)
    ins_id, kind, addr = unpack_fault(int(L[abi.L_ERR_ARG]))
    where = ""
    if 0 <= ins_id < len(tr.locations):
        pos, text = tr.locations[ins_id]
        where = f"{pos} ('{text}')"
    if kind == KIND_SHARED:
        off = addr if addr < 1 << 47 else addr - (1 << 48)
        alloc = "shared"
        detail = (f"shared memory offset {off}: {off - shared_bytes} bytes past the end of the block's "
                  f"{shared_bytes} bytes of shared memory" if off >= 0 else
                  f"shared memory offset {off}: {-off} bytes before its start")
        return KernelFault(kernel, cta, tid, where, off, alloc, detail)
    if kind == KIND_LOCAL:
        return KernelFault(kernel, cta, tid, where, addr, "local",
                           f"address {addr:#x} outside the thread's local memory")
    alloc, detail, best = "", f"address {addr:#x} is in no memory the kernel was given", None
    if ranges is not None:
        labels = [*names, ("globals", -1, None), ("parameter buffer", -1, None)]
        for j, (label, index, arg) in enumerate(labels):
            lo, n = int(ranges[2 * j]), int(ranges[2 * j + 1])
            if n <= 0:
                continue
            lo &= (1 << 48) - 1
            dist = lo - addr if addr < lo else addr - (lo + n) if addr >= lo + n else 0
            if best is None or dist < best:
                best, alloc = dist, label
                arr = arg.array if isinstance(arg, DeviceArray) else arg
                what = f"argument {index} ('{label}')" if index >= 0 else label
                desc = f" ({arr.dtype} array of {arr.size} elements)" if isinstance(arr, np.ndarray) else ""
                idx = (addr - lo) // arr.itemsize if isinstance(arr, np.ndarray) and arr.itemsize else None
                elem = f"; element [{idx}]" if idx is not None else ""
                if addr < lo:
                    detail = f"address {addr:#x} is {dist} bytes before the start of {what}{desc}{elem}"
                elif addr >= lo + n:
                    detail = f"address {addr:#x} is {dist} bytes past the end of {what}{desc}{elem}"
                else:
                    detail = (f"address {addr:#x} is at byte {addr - lo} of {what}{desc}{elem}, "
                              f"and the access runs past its end")
        if best is not None and best > 1 << 20:  # a wild pointer: nowhere near anything
            detail = (f"address {addr:#x} is in no memory the kernel was given (the nearest, {alloc}, "
                      f"is {best} bytes away)")
    return KernelFault(kernel, cta, tid, where, addr, alloc, detail)


def _cstr(addr: int) -> str:
    if not addr:
        return "?"
    try:
        return ctypes.string_at(addr).decode("utf-8", errors="replace")
    except Exception:
        return "?"
