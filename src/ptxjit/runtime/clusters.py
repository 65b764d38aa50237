"""Cluster launches (sm_90 thread-block clusters): `kernel(grid, block, args, cluster=(x, y, z))`, or any
launch of a kernel that declares its cluster (`__cluster_dims__`: `.reqnctapercluster`).

The blocks of a cluster must run at the same time (barrier.cluster, distributed shared memory).  ptxjit
runs a cluster launch on groups of worker threads, one thread per block of a cluster: each group takes
clusters one after another (group g: clusters g, g + G, ...), each of its threads running block `rank` of
the group's current cluster (ranged native calls: abi.L_RANGED, W_BSTART/W_BEND).  G is how many
clusters can be co-resident: the cooperative limit (runtime/cooperative.py: blocks per multiprocessor
x worker threads) divided by the cluster size, at least 1, at most the number of clusters.

The launch's cluster workspace (abi.L_CLUSTER; layout in lower/rules/cluster.py) holds the cluster
dims, the shared-memory base of every block (written by its thread before the block starts; CUDA
requires a cluster.sync() before a block touches another's shared memory, so it is there when read)
and a barrier counter per cluster.  The blocks' shared memory lives inside the launch's parameter
buffer, so that bounds-checked code may reach another block's shared memory through a mapa address.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable
from concurrent.futures import wait
from typing import TYPE_CHECKING

from ptxjit.errors import KernelDeadlock
from ptxjit.lower import abi
from ptxjit.lower.abi import WS_COUNTERS, WS_DIMS, WS_EXPLICIT, WS_SHARED_TABLE
from ptxjit.runtime import launch, watchdog
from ptxjit.runtime.args import dims
from ptxjit.runtime.cooperative import (
    Kernel,
    block_threads,
    grid_barrier_arrivals,
    occupancy,
    pack_record,
    prepare,
    printf_scope,
)
from ptxjit.runtime.launch import RecordPlan
from ptxjit.runtime.supervise import supervised

if TYPE_CHECKING:
    from ptxjit.jit.translate import Translation

MAX_CLUSTER_SIZE = 8  # CUDA's portable cluster size (16 needs cudaFuncAttributeNonPortableClusterSizeAllowed)
_HEADER = 64
_POLL_SECONDS = 0.02


class ClusterLaunchError(ValueError):
    """A cluster launch CUDA would refuse (cluster shape, grid not a multiple of it, too large)."""


def declared_cluster(kernel: Kernel) -> tuple[int, int, int] | None:
    """The kernel's compile-time cluster dims (.reqnctapercluster, `__cluster_dims__`), if any."""
    req = kernel.fn.perf.get("reqnctapercluster")
    if not req:
        return None
    k = tuple(int(v) for v in req) + (1,) * (3 - len(req))
    return k[0], k[1], k[2]


def cluster_shape(kernel: Kernel, grid, block, cluster, shared_mem: int) -> tuple[int, int, int]:
    """The launch's cluster dims, checked as CUDA checks them."""
    declared = declared_cluster(kernel)
    k = dims(cluster, "cluster") if cluster is not None else declared
    assert k is not None
    name = kernel.name
    if declared is not None and k != declared:
        raise ClusterLaunchError(f"kernel '{name}' declares cluster dims {declared} (.reqnctapercluster, "
                                 f"__cluster_dims__); the launch asks for cluster={k}")
    size = k[0] * k[1] * k[2]
    if size > MAX_CLUSTER_SIZE:
        raise ClusterLaunchError(f"kernel '{name}': a cluster of {k} has {size} blocks; CUDA's portable limit is "
                                 f"{MAX_CLUSTER_SIZE} blocks per cluster")
    if any(g % c for g, c in zip(grid, k, strict=True)):
        raise ClusterLaunchError(f"kernel '{name}': grid {tuple(grid)} is not a multiple of the cluster dims {k} "
                                 f"(cudaErrorInvalidClusterSize)")
    fit = occupancy(kernel, block, shared_mem).max_cooperative_blocks
    if size > fit:
        raise ClusterLaunchError(f"kernel '{name}': the {size} blocks of a cluster cannot be co-resident (at most "
                                 f"{fit} blocks of this shape are; see Kernel.max_cooperative_grid_blocks)")
    return k


_plans: dict[tuple, RecordPlan] = {}


def _plan(kernel: Kernel, checked: bool, extra: int) -> tuple[RecordPlan, int]:
    """A launch memory plan with `extra` bytes after the parameters (inside the parameter range)."""
    packer = kernel._packer
    ws_off = (packer.size + 63) // 64 * 64
    key = (packer.format, packer.size, len(kernel._range_params), checked, extra)
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) > 256:
            _plans.clear()
        plan = _plans[key] = RecordPlan(packer.format, ws_off + extra, len(kernel._range_params), checked)
    return plan, ws_off


def _stuck_cluster(lock: threading.Lock, partial: set[int], exited: list[int], counters,
                   csize: int) -> tuple[int, int, int] | None:
    """A cluster whose barrier can never complete: some of its blocks wait there, the others exited
    (as runtime/cooperative.py's grid barrier check).  (cluster, arrived, exited) or None."""
    with lock:
        for j in partial:
            gone = exited[j]
            arrived = grid_barrier_arrivals(int(counters[j]), csize)
            if arrived > 0 and arrived + gone == csize:
                return j, arrived, gone
    return None


def launch_clusters(kernel: Kernel, grid: tuple[int, int, int], block: tuple[int, int, int], args, shared_mem: int,
                    timeout: float | None, checked: bool, cluster,
                    wait_streams: Callable[[], object] | None = None) -> None:
    """A validated launch (Kernel.__call__ did the shape and shared-memory checks) run cluster by cluster;
    `wait_streams`: see cooperative.prepare()."""
    k = cluster_shape(kernel, grid, block, cluster, shared_mem)
    t, values, ranges, patches, gb = prepare(kernel, block, args, checked, wait_streams)
    gaddr, gsize = gb.__array_interface__["data"][0], gb.nbytes
    with printf_scope(kernel, args, gb):
        _run(kernel, t, grid, block, k, checked, values, ranges, patches, gaddr, gsize, shared_mem, timeout, args,
             (args, gb))


def _run(kernel: Kernel, tr: Translation, grid, block, k, checked: bool, values, ranges, patches, gaddr: int,
         gsize: int, dyn_smem: int, timeout: float | None, args, keep) -> None:
    limit = watchdog.timeout_seconds(timeout)
    csize = k[0] * k[1] * k[2]
    nctas = grid[0] * grid[1] * grid[2]
    nclusters = nctas // csize
    groups = max(1, min(nclusters, occupancy(kernel, block, dyn_smem).max_cooperative_blocks // csize))
    nworkers = groups * csize
    nthreads = block[0] * block[1] * block[2]
    shared_bytes = tr.shared.dynamic_offset + dyn_smem if dyn_smem else tr.shared.static_size
    stride = (max(shared_bytes, 16) + 63) // 64 * 64
    table_off = _HEADER
    counters_off = table_off + 8 * nctas
    shared_off = (counters_off + 4 * nclusters + 63) // 64 * 64
    plan, ws_off = _plan(kernel, checked, shared_off + stride * nworkers)
    L, base, params_addr = pack_record(plan, grid, block, checked, values, ranges, patches, gaddr, gsize, dyn_smem,
                                       nworkers, 1)
    ws = params_addr + ws_off
    L[abi.L_CLUSTER] = ws
    L[abi.L_RANGED] = 1
    head = (ctypes.c_uint32 * 8).from_address(ws + WS_DIMS)
    head[0], head[1], head[2] = k
    head[(WS_EXPLICIT - WS_DIMS) // 4] = 1  # %is_explicit_cluster: cluster dims given (compile or launch time)
    ctypes.c_int64.from_address(ws + WS_SHARED_TABLE).value = ws + table_off
    ctypes.c_int64.from_address(ws + WS_COUNTERS).value = ws + counters_off
    table = (ctypes.c_int64 * nctas).from_address(ws + table_off)
    shared = [ws + shared_off + stride * i for i in range(nworkers)]

    pool_memory = launch._pool_memory
    key = pool_memory.key(tr, nthreads, shared_bytes, nworkers)
    mems = pool_memory.take(tr, nthreads, shared_bytes, nworkers, key)
    saved = [int(m.record[abi.W_SHARED]) for m in mems]
    fn = tr.native.worker
    ncl = (grid[0] // k[0], grid[1] // k[1])

    exited = [0] * nclusters  # blocks of each cluster that have finished (for deadlock reports)
    partial: set[int] = set()  # clusters some of whose blocks finished, not all
    counters = (ctypes.c_uint32 * nclusters).from_address(ws + counters_off)

    def member(m, g: int, r: int, shared_addr: int) -> None:
        rec = m.record
        rec[abi.W_SHARED] = shared_addr
        rx, ry, rz = r % k[0], (r // k[0]) % k[1], r // (k[0] * k[1])
        for j in range(g, nclusters, groups):
            if L[abi.L_ERROR]:
                return
            jx, jy, jz = j % ncl[0], (j // ncl[0]) % ncl[1], j // (ncl[0] * ncl[1])
            c = jx * k[0] + rx + grid[0] * (jy * k[1] + ry + grid[1] * (jz * k[2] + rz))
            table[c] = shared_addr
            rec[abi.W_BSTART] = c
            rec[abi.W_BEND] = c + 1
            fn(base, m.address)
            with lock:
                exited[j] += 1
                (partial.discard if exited[j] == csize else partial.add)(j)

    lock = threading.Lock()
    dead: tuple[int, int, int] | None = None
    pool = block_threads.acquire(nworkers)

    def give_back() -> None:
        for m, s in zip(mems, saved, strict=True):
            m.record[abi.W_SHARED] = s
            m.record[abi.W_BSTART] = m.record[abi.W_BEND] = 0
        pool_memory.give(tr, nthreads, shared_bytes, mems, key)
        block_threads.release(pool, nworkers)

    with supervised(L, limit, mems, keep, kernel.name, tr.checked, give_back, block_threads.forget) as run:
        run.futures += [pool.submit(member, mems[i], i // csize, i % csize, shared[i]) for i in range(nworkers)]
        pending = run.futures
        while pending:
            _done, not_done = wait(pending, timeout=_POLL_SECONDS)
            pending = list(not_done)
            if pending and dead is None and not L[abi.L_ERROR]:
                dead = _stuck_cluster(lock, partial, exited, counters, csize)
                if dead is not None:
                    watchdog.cancel(L, abi.ERR_DEADLOCK)
        run.settled = True
        for f in run.futures:
            f.result()  # a Python error in a member thread (none expected) is the launch's error
    t0 = run.started
    if dead is not None and L[abi.L_ERROR] == abi.ERR_DEADLOCK:
        j, arrived, gone = dead
        where = (j % ncl[0], (j // ncl[0]) % ncl[1], j // (ncl[0] * ncl[1]))
        err = KernelDeadlock(
            f"kernel '{kernel.name}' deadlocked at cluster.sync() (barrier.cluster) in cluster {where} of "
            f"{k} blocks: {arrived} of its {csize} blocks wait at the cluster barrier and the other {gone} "
            f"exited without reaching it")
        err.kernel = kernel.name  # type: ignore[attr-defined]
        raise err
    if L[abi.L_ERROR]:
        raise launch.launch_exception(tr, kernel.name, L, grid, block, time.monotonic() - t0, limit,
                                      (launch._packed_fault_info, L, plan, kernel._range_names, args), shared_bytes)
