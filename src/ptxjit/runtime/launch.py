"""Kernel launch: build the launch record, give each worker its CTA memory, run batches of CTAs on
a pool of threads (native code runs without the GIL), and turn a recorded trap into an exception."""

from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ptxjit.errors import KernelTrap
from ptxjit.jit.translate import Translation
from ptxjit.lower import abi
from ptxjit.runtime.printf import PRINTF_ADDRESS

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_workers_override: int | None = None
_grid_counter = 0


_env_workers: tuple[str | None, int] | None = None


def worker_count() -> int:
    global _env_workers
    if _workers_override:
        return _workers_override
    env = os.environ.get("PTXJIT_WORKERS")
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
            if _pool is not None:
                _pool.shutdown(wait=False)
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
        self.pcount = np.zeros(tr.nyields + 2, dtype=np.int32)
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
        rec[abi.W_SHARED_SIZE] = shared_bytes
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


def run(tr: Translation, kernel_name: str, grid: tuple[int, int, int], block: tuple[int, int, int],
        params: np.ndarray, globals_buf: np.ndarray, dyn_smem: int) -> None:
    global _grid_counter
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
    L = np.array(rec, dtype=np.int64)  # one allocation for the whole launch record
    shared_bytes = tr.shared.dynamic_offset + dyn_smem if dyn_smem else tr.shared.static_size
    mems = _pool_memory.take(tr, nthreads, shared_bytes, nworkers)
    fn = tr.native.worker
    lp = L.__array_interface__["data"][0]
    try:
        if nworkers == 1:
            fn(lp, mems[0].address)
        else:
            pool = _get_pool(nworkers)
            futures = [pool.submit(fn, lp, m.address) for m in mems]
            for f in futures:
                f.result()
    finally:
        _pool_memory.give(tr, nthreads, shared_bytes, mems)
    if L[abi.L_ERROR]:
        raise _trap_error(tr, kernel_name, L, grid, block)


def _trap_error(tr: Translation, kernel: str, L: np.ndarray, grid, block) -> KernelTrap:
    code = int(L[abi.L_ERROR])
    c = int(L[abi.L_ERR_CTA])
    t = int(L[abi.L_ERR_TID])
    cta = (c % grid[0], (c // grid[0]) % grid[1], c // (grid[0] * grid[1]))
    tid = (t % block[0], (t // block[0]) % block[1], t // (block[0] * block[1]))
    where_id = int(L[abi.L_ERR_WHERE])
    where = ""
    if 0 <= where_id < len(tr.locations):
        pos, text = tr.locations[where_id]
        where = f"{pos} ('{text}')"
    reason = "executed trap"
    if code == abi.ERR_ASSERT:
        msg = _cstr(int(L[abi.L_ERR_ARG]))
        file = _cstr(int(L[abi.L_ERR_FILE]))
        reason = f"failed assertion '{msg}' ({file}:{int(L[abi.L_ERR_LINE])})"
    elif code == abi.ERR_SELF_LOOP:
        reason = "entered a branch that loops to itself forever"
    return KernelTrap(kernel, cta, tid, where, reason)


def _cstr(addr: int) -> str:
    if not addr:
        return "?"
    try:
        return ctypes.string_at(addr).decode("utf-8", errors="replace")
    except Exception:
        return "?"
