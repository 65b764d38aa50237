"""Cooperative launches and grid.sync() (runtime/cooperative.py).  Kernels: tests/data/coop/coop.cu,
nvcc 13's PTX next to it (regen.sh); results checked against NumPy, occupancy limits against the
H100's published per-SM limits (2048 threads, 32 blocks, 228 KB shared memory, 1 KB reserved per block)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.errors import KernelDeadlock, KernelTimeout, KernelTrap
from tests.subproc_util import sigint_default

DATA = Path(__file__).parent / "data" / "coop" / "coop.ptx"


@pytest.fixture(scope="module")
def mod():
    return ptxjit.Module.from_file(DATA)


@pytest.fixture
def workers():
    """Set the worker count (ptxjit's multiprocessors) for one test, restoring the default after it."""
    yield ptxjit.set_workers
    ptxjit.set_workers(None)


@pytest.mark.parametrize("grid,block,checked", [((8, 1), (64, 1), True), ((3, 2), (16, 4), True),
                                                ((8, 1), (64, 1), False)])
def test_two_phase_reads_other_blocks_data(mod, workers, grid, block, checked):
    workers(2)
    k = mod.get_function("two_phase")
    nthreads = block[0] * block[1]
    n = grid[0] * grid[1] * nthreads - 5  # a partial last block
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    tmp = np.zeros(n, np.float32)
    out = np.zeros(n, np.float32)
    k(grid, block, (x, tmp, out, np.int32(n)), cooperative=True, checked=checked)
    want = (x * np.float32(2))[(np.arange(n) + nthreads) % n] + np.float32(1)
    np.testing.assert_array_equal(out, want)


def test_persistent_reduction_with_many_grid_syncs(mod, workers):
    workers(2)
    k = mod.get_function("persistent_sum")
    g = k.max_cooperative_grid_blocks(256)  # the persistent-kernel idiom: blocks per SM x SMs
    assert g == 2 * 8  # 2048 threads per SM / 256
    n = 100_003
    x = (np.arange(n, dtype=np.int64) * 7919 % 1000 - 500).astype(np.int32)
    partial = np.zeros(g, np.int64)
    trace = np.zeros(8, np.int64)
    total = np.zeros(1, np.int64)
    k(g, 256, (x, partial, trace, total, np.int32(n)), cooperative=True)
    assert total[0] == x.astype(np.int64).sum()
    # the schedule: after round r, partial[0] sums the first 2**(r+1) blocks' grid-stride shares
    idx = np.arange(n)
    want = [x[(idx // 256) % g < min(2 ** (r + 1), g)].astype(np.int64).sum() for r in range(4)]
    np.testing.assert_array_equal(trace[:4], want)


def test_stencil_steps_one_grid_sync_each(mod, workers):
    workers(1)  # more blocks than workers' cores: blocks waiting at grid.sync() must yield
    k = mod.get_function("stencil_steps")
    n, steps = 2000, 9
    a = (np.arange(n, dtype=np.int32) * 31) % 1000
    ref = a.astype(np.int64)
    b = np.zeros_like(a)
    k((n + 255) // 256, 256, (a, b, np.int32(n), np.int32(steps)), cooperative=True)
    for _ in range(steps):
        ref = (np.roll(ref, 1) + 2 * ref + np.roll(ref, -1)) % 1000003
    np.testing.assert_array_equal(b if steps % 2 else a, ref)


def _grid_info_expect(grid, block, valid: int) -> np.ndarray:
    nb, nt = grid[0] * grid[1], block
    rank = np.arange(nb * nt)
    return np.stack([np.full_like(rank, valid), np.full_like(rank, nb), rank // nt, rank,
                     np.full_like(rank, nb * nt)], axis=1).astype(np.uint64)


def test_grid_group_queries(mod, workers):
    workers(2)
    k = mod.get_function("grid_info")
    out = np.zeros((6 * 64, 5), np.uint64)
    k((3, 2), 64, (out,), cooperative=True)
    np.testing.assert_array_equal(out, _grid_info_expect((3, 2), 64, 1))
    # outside a cooperative launch only sync() traps: is_valid() is false, as on a GPU
    out[:] = 7
    k((3, 2), 64, (out,))
    np.testing.assert_array_equal(out, _grid_info_expect((3, 2), 64, 0))


def test_too_large_grid_is_refused(mod, workers):
    workers(2)
    k = mod.get_function("two_phase")
    x = np.zeros(4, np.float32)
    limit = k.max_cooperative_grid_blocks(128)
    assert limit == 2 * 16
    k(limit, 128, (x, x.copy(), x.copy(), np.int32(4)), cooperative=True)  # the limit itself runs
    with pytest.raises(ptxjit.CooperativeLaunchTooLarge, match=r"cudaErrorCooperativeLaunchTooLarge: too many "
                       r"blocks in cooperative launch: grid \(33, 1, 1\) has 33 blocks, but at most 32"):
        k(limit + 1, 128, (x, x.copy(), x.copy(), np.int32(4)), cooperative=True)


def test_occupancy_follows_h100_limits(mod, workers):
    workers(3)
    k = mod.get_function("persistent_sum")  # 2 KB of static shared memory
    assert [ptxjit.max_active_blocks_per_multiprocessor(k, b) for b in (32, 100, 256, 1024)] == [32, 16, 8, 2]
    # shared memory: 228 KB per SM, each block 2 KB static + dynamic + 1 KB reserved
    assert ptxjit.max_active_blocks_per_multiprocessor(k, 32, 60 * 1024) == 228 // 63
    assert k.max_cooperative_grid_blocks(256) == 3 * 8
    assert ptxjit.multiprocessor_count() == 3  # the worker threads


def test_grid_sync_without_cooperative_launch_traps_with_hint(mod):
    k = mod.get_function("two_phase")
    x = np.zeros(256, np.float32)
    with pytest.raises(KernelTrap, match=r"grid.sync\(\) needs a cooperative launch .*cooperative=True.*coop.ptx:"):
        k(4, 64, (x, x.copy(), x.copy(), np.int32(256)))
    # the kernel's own __trap() (its CUDA line is known) gets no such hint
    out = np.zeros(64, np.int32)
    with pytest.raises(KernelTrap) as e:
        mod.get_function("trap_before_sync")(1, 64, (out, np.int32(0)))
    assert "cooperative" not in str(e.value) and "coop.cu:" in str(e.value)


def test_block_exiting_before_grid_sync_is_a_deadlock(mod, workers):
    workers(2)
    k = mod.get_function("early_exit")
    out = np.zeros(8 * 64, np.int32)
    t0 = time.monotonic()
    with pytest.raises(KernelDeadlock, match=r"grid.sync\(\).* 7 of 8 blocks wait at the grid barrier and the "
                       r"other 1 exited"):
        k(8, 64, (out, np.int32(3)), cooperative=True, timeout=60)
    assert time.monotonic() - t0 < 30
    out[:] = 0
    k(8, 64, (out, np.int32(99)), cooperative=True)  # nobody quits: the module still works
    assert (out == 2).all()


def test_trap_in_one_block_stops_the_waiting_ones(mod, workers):
    workers(2)
    k = mod.get_function("trap_before_sync")
    out = np.zeros(8 * 64, np.int32)
    with pytest.raises(KernelTrap, match=r"block \(5, 0, 0\) thread \(0, 0, 0\) at .*coop.cu:"):
        k(8, 64, (out, np.int32(5)), cooperative=True, timeout=60)
    assert not out.any()


def test_timeout_stops_a_cooperative_launch(mod, workers):
    workers(2)
    k = mod.get_function("wait_flag")
    flag = np.ones(1, np.int32)
    out = np.zeros(8 * 64, np.int32)
    with pytest.raises(KernelTimeout, match="0 of 8 blocks had completed"):
        k(8, 64, (flag, out), cooperative=True, timeout=0.5)
    flag[0] = 0
    k(8, 64, (flag, out), cooperative=True)
    assert (out == 1).all()


def test_cooperative_launch_on_a_stream_runs_in_order(mod, workers):
    workers(2)
    k = mod.get_function("two_phase")
    n = 4 * 64
    x = np.arange(n, dtype=np.float32)
    tmp, out = np.zeros(n, np.float32), np.zeros(n, np.float32)
    s = ptxjit.Stream()
    k(4, 64, (x, tmp, out, np.int32(n)), cooperative=True, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(out, (2 * x)[(np.arange(n) + 64) % n] + 1)


_CHILD = r"""
import sys, time
import numpy as np
import ptxjit

ptxjit.set_workers(2)
m = ptxjit.Module.from_file(sys.argv[1])
k = m.get_function("wait_flag")
flag = np.zeros(1, np.int32)
out = np.zeros(8 * 64, np.int32)
k(8, 64, (flag, out), cooperative=True)  # compiles; the flag is clear, so it returns at once
flag[0] = 1
print("READY", flush=True)
try:
    k(8, 64, (flag, out), cooperative=True)
    print("RETURNED", flush=True)
except KeyboardInterrupt:
    print("INTERRUPTED", time.monotonic(), flush=True)
flag[0] = 0
out[:] = 0
k(8, 64, (flag, out), cooperative=True)
assert (out == 1).all()
print("OK", flush=True)
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery to a child process")
def test_ctrl_c_stops_a_cooperative_launch():
    p = subprocess.Popen([sys.executable, "-c", _CHILD, str(DATA)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    try:
        ready, _, _ = select.select([p.stdout], [], [], 180)
        assert ready, "child produced no output"
        line = p.stdout.readline()
        assert line.strip() == "READY", (line, p.stderr.read() if p.poll() is not None else "")
        time.sleep(0.3)
        sent = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, f"child failed ({p.returncode}):\n{out}\n{err}"
    got = [ln for ln in out.split("\n") if ln.startswith("INTERRUPTED")]
    assert got, f"no KeyboardInterrupt:\n{out}\n{err}"
    assert float(got[0].split()[1]) - sent < 1.0
    assert "OK" in out.split("\n")


def test_rawkernel_enable_cooperative_groups():
    from ptxjit.cuda import _nvrtc

    if not _nvrtc.nvrtc_available():
        pytest.skip("no NVRTC")
    src = r"""
    #include <cooperative_groups.h>
    extern "C" __global__ void shift(const int* a, int* b, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        b[i] = a[i] * 3;
        cooperative_groups::this_grid().sync();
        b[n + i] = b[(i + blockDim.x) % n];
    }"""
    try:
        # the wheel's headers lack some of cooperative_groups' includes: a local CUDA toolkit has them
        inc = Path("/usr/local/cuda/include")
        opts = (f"-I{inc}", f"-I{inc / 'cccl'}") if (inc / "nv" / "target").exists() else ()
        k = ptxjit.RawKernel(src, "shift", options=opts)
    except ptxjit.CudaCompileError as e:
        if "cannot open source file" in str(e):  # the wheel's headers lack cooperative_groups' includes
            pytest.skip(f"NVRTC lacks the cooperative_groups headers: {str(e).splitlines()[1][:120]}")
        raise
    n = 4 * 32
    a = np.arange(n, dtype=np.int32)
    b = np.zeros(2 * n, np.int32)
    k((4,), (32,), (a, b, np.int32(n)), enable_cooperative_groups=True)
    np.testing.assert_array_equal(b[n:], (3 * a)[(np.arange(n) + 32) % n])


# ---------------------------------------------------------------- thread-block clusters (sm_90)

CLUSTER = Path(__file__).parent / "data" / "coop" / "cluster.ptx"


@pytest.fixture(scope="module")
def cmod():
    return ptxjit.Module.from_file(CLUSTER)


def test_cluster_dims_kernel_reads_neighbour_shared_memory(cmod, workers):
    workers(2)
    k = cmod.get_function("rotate_tiles")  # __cluster_dims__(2, 1, 1): every launch is a cluster launch
    a = (np.arange(6 * 128, dtype=np.int32) * 3) ^ 0x55
    out = np.zeros_like(a)
    k(6, 128, (a, out))
    np.testing.assert_array_equal(out, a.reshape(3, 2, 128)[:, ::-1].reshape(-1))


@pytest.mark.parametrize("nworkers,grid", [(2, 8), (1, 64)])
def test_distributed_shared_memory_histogram(cmod, workers, nworkers, grid):
    """(1, 64): 16 clusters of 4 on one worker (4 co-resident clusters): groups of threads take
    clusters one after another."""
    workers(nworkers)
    k = cmod.get_function("cluster_histogram")
    nbins, cs = 1000, 4
    per_block = nbins // cs
    x = np.random.default_rng(2).integers(-10, 1010, 30_000).astype(np.int32)
    bins = np.zeros(nbins, np.int32)
    k(grid, 128, (bins, np.int32(nbins), np.int32(per_block), x, np.int32(len(x))), shared_mem=per_block * 4,
      cluster=cs)
    np.testing.assert_array_equal(bins, np.bincount(np.clip(x, 0, nbins - 1), minlength=nbins))


def _cluster_info_expect(grid, k, explicit: int) -> np.ndarray:
    y, x = np.divmod(np.arange(grid[0] * grid[1]), grid[0])
    bx, by = x % k[0], y % k[1]
    return np.stack([bx + k[0] * by, np.full_like(x, k[0] * k[1]), bx, by, np.full_like(x, k[0]),
                     np.full_like(x, k[1]), x // k[0], y // k[1], np.full_like(x, explicit)],
                    axis=1).astype(np.uint32)


def test_cluster_special_registers(cmod, workers):
    workers(2)
    k = cmod.get_function("cluster_info")
    out = np.zeros((4 * 6, 9), np.uint32)
    k((4, 6), 32, (out,), cluster=(2, 3))
    np.testing.assert_array_equal(out, _cluster_info_expect((4, 6), (2, 3), 1))
    k((4, 6), 32, (out,))  # no cluster launch: every block is a cluster of one, as on a GPU
    np.testing.assert_array_equal(out, _cluster_info_expect((4, 6), (1, 1), 0))


def test_cluster_launches_cuda_refuses(cmod):
    k = cmod.get_function("cluster_info")
    out = np.zeros((32, 9), np.uint32)
    with pytest.raises(ptxjit.ClusterLaunchError,
                       match=r"grid \(4, 8, 1\) is not a multiple of the cluster dims \(3, 1, 1\)"):
        k((4, 8), 32, (out,), cluster=3)
    with pytest.raises(ptxjit.ClusterLaunchError, match="16 blocks; CUDA's portable limit is 8"):
        k((16, 2), 32, (out,), cluster=16)
    a = np.zeros(6 * 128, np.int32)
    with pytest.raises(ptxjit.ClusterLaunchError, match=r"declares cluster dims \(2, 1, 1\).*cluster=\(3, 1, 1\)"):
        cmod.get_function("rotate_tiles")(6, 128, (a, a.copy()), cluster=3)
    with pytest.raises(ValueError, match="cooperative cluster launches are not supported"):
        cmod.get_function("rotate_tiles")(6, 128, (a, a.copy()), cooperative=True)


def test_timeout_stops_a_cluster_launch(cmod, workers):
    workers(2)
    k = cmod.get_function("cluster_wait_flag")
    flag = np.ones(1, np.int32)
    out = np.zeros(4 * 32, np.int32)
    with pytest.raises(KernelTimeout):
        k(4, 32, (flag, out), timeout=0.5)
    flag[0] = 0
    k(4, 32, (flag, out))
    assert (out == 1).all()


def test_block_exiting_before_cluster_sync_is_a_deadlock(cmod, workers):
    workers(2)
    k = cmod.get_function("cluster_early_exit")
    out = np.zeros(8 * 32, np.int32)
    with pytest.raises(KernelDeadlock, match=r"cluster.sync\(\).* in cluster \(\d, 0, 0\) of \(4, 1, 1\) blocks: "
                       r"3 of its 4 blocks wait at the cluster barrier and the other 1 exited"):
        k(8, 32, (out, np.int32(2)), timeout=60)
    k(8, 32, (out, np.int32(7)))  # nobody quits
    assert (out == 1).all()


def test_concurrent_cooperative_launches_each_get_all_their_threads(mod, workers):
    """Two launching threads at once: every block of both launches must run at the same time as the
    rest of its grid (a block queued behind the other launch's would deadlock its grid.sync())."""
    import threading

    workers(2)
    k = mod.get_function("stencil_steps")
    n, steps = 8 * 256, 6
    k(8, 256, (np.zeros(n, np.int32), np.zeros(n, np.int32), np.int32(n), np.int32(1)), cooperative=True)
    ref = (np.arange(n, dtype=np.int64) * 7) % 1000
    for _ in range(steps):
        ref = (np.roll(ref, 1) + 2 * ref + np.roll(ref, -1)) % 1000003
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for _ in range(3):
                a = ((np.arange(n) * 7) % 1000).astype(np.int32)
                b = np.zeros_like(a)
                k(8, 256, (a, b, np.int32(n), np.int32(steps)), cooperative=True, timeout=60)
                np.testing.assert_array_equal(a, ref)
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_fault_in_a_cooperative_launch(mod, workers):
    workers(2)
    k = mod.get_function("two_phase")
    n = 8 * 64
    x, out = np.zeros(n, np.float32), np.zeros(n, np.float32)
    tmp = np.zeros(n - 10, np.float32)  # phase 1 writes past its end (block 7), phase 2 reads there (block 6)
    # both are faults on element [502]; block 7's write comes first: it ends block 7 before it arrives at
    # the grid barrier, so no block gets past it (a loaded CI run once reported block 6's read, when a
    # CTA's faults were looked at only when it ended)
    with pytest.raises(ptxjit.KernelFault, match=r"block \(7, 0, 0\) thread \(54, 0, 0\).*0 bytes past the end "
                       r"of argument 1 .*element \[502\]"):
        k(8, 64, (x, tmp, out, np.int32(n)), cooperative=True, timeout=60)


def test_the_fault_before_a_grid_barrier_is_reported(mod, workers):
    """The last block faults before grid.sync() and works on long after it; the others fault after it and
    end at once.  The launch reports the last block's fault, which came first (the others' faults need
    the barrier, which the faulting block never reaches), not that of whichever block ended first."""
    workers(2)
    k = mod.get_function("fault_before_sync")
    n = 64
    buf = np.zeros(n, np.float32)
    with pytest.raises(ptxjit.KernelFault, match=r"block \(3, 0, 0\) thread \(0, 0, 0\).*0 bytes past the end "
                       r"of argument 0 .*element \[64\]"):
        k(4, 32, (buf, np.int32(n), np.int32(2_000_000)), cooperative=True, timeout=60)


def test_query_shared_rank(cmod, workers):
    workers(2)
    k = cmod.get_function("query_ranks")
    out = np.zeros((8, 5), np.uint32)
    k((4, 2), 32, (out,), cluster=(2, 2))
    y, x = np.divmod(np.arange(8), 4)
    want = np.concatenate([np.tile(np.arange(4), (8, 1)), (x % 2 + 2 * (y % 2))[:, None]], axis=1)
    np.testing.assert_array_equal(out, want)


# ---------------------------------------------------------------- Numba: cudadevrt's cudaCGSynchronize

def test_numba_grid_sync_launches_cooperatively(workers):
    """Numba calls cudaCGGetIntrinsicHandle / cudaCGSynchronize for `cuda.cg.this_grid().sync()` and
    launches such kernels cooperatively by itself; so does ptxjit."""
    pytest.importorskip("numba")
    from numba import cuda

    import ptxjit.numba as pn

    workers(2)

    @pn.jit
    def rotate_twice(a, out):
        g = cuda.cg.this_grid()
        i = cuda.grid(1)
        a[i] = i * 3
        g.sync()
        v = a[(i + 32) % a.size]
        g.sync()
        a[i] = v
        g.sync()
        out[i] = a[(i + 64) % a.size] + 1

    n = 8 * 32
    a, out = np.zeros(n, np.int32), np.zeros(n, np.int32)
    rotate_twice[8, 32](a, out)
    i = np.arange(n)
    np.testing.assert_array_equal(out, 3 * ((i + 96) % n) + 1)
    with pytest.raises(ptxjit.CooperativeLaunchTooLarge, match="too many blocks in cooperative launch"):
        rotate_twice[2 * 32 + 1, 32](np.zeros(65 * 32, np.int32), np.zeros(65 * 32, np.int32))
