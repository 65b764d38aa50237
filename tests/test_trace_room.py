"""The room check (src/ptxjit/instrument/room.py): static per-thread record bounds, and the thread loop's
unchecked record stores that run when a CTA's claim has room for every thread's most records.

Expected bounds are counted by hand from the PTX; expected records come from NumPy or the PTX's
semantics (which thread runs which access), never from the instrumentation itself.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.instrument import trace as tr
from ptxjit.instrument.probes import RECORD_TYPES
from ptxjit.instrument.room import record_bounds

pa = pytest.importorskip("pyarrow")

BENCH = Path(__file__).parent.parent / "bench" / "kernels" / "ptx"
ALL = ("blocks", "memory", "branches", "barriers")


def bench_kernel(name: str) -> ptxjit.Kernel:
    return ptxjit.Module.from_file(BENCH / f"{name}.ptx").get_function(name)


def col(table, name) -> np.ndarray:
    c = table.column(name)
    if pa.types.is_dictionary(c.type):
        return np.array(c.to_pylist(), dtype=object)
    return c.to_numpy()


def bounds(k: ptxjit.Kernel, block=(64, 1, 1)) -> tuple[int, ...] | None:
    fn = tr.lowered_kernel(k, block)
    plan = tr.kernel_plan(k, block, ALL)
    return record_bounds(fn, plan, tuple(range(len(RECORD_TYPES))), lambda i: i.opcode in ("bar", "barrier"))


HEAD = ".version 7.0\n.target sm_80\n.address_size 64\n"

LOOP_PTX = HEAD + r"""
.visible .entry spin(.param .u64 p)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    ld.global.u32 %r1, [%rd1];
    mov.u32 %r3, 0;
LOOP:
    add.s32 %r3, %r3, 1;
    setp.lt.s32 %p1, %r3, %r1;
    @%p1 bra LOOP;
    ret;
}
"""

# a loop whose every iteration passes a barrier: each stretch between barriers is acyclic
BARRIER_LOOP_PTX = HEAD + r"""
.visible .entry steps(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    .shared .align 4 .b8 buf[256];
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mul.wide.u32 %rd2, %r2, 4;
    add.s64 %rd3, %rd1, %rd2;
    mov.u32 %r3, 0;
LOOP:
    ld.global.u32 %r4, [%rd3];
    st.shared.u32 [buf], %r4;
    bar.sync 0;
    ld.shared.u32 %r5, [buf];
    add.s32 %r3, %r3, 1;
    setp.lt.s32 %p1, %r3, %r1;
    @%p1 bra LOOP;
    st.global.u32 [%rd3], %r5;
    ret;
}
"""

# every thread bumps a counter behind a raw pointer (not restored after the counting run); a thread whose
# old value is at least `limit` also loads p[1]: the traced run takes the other path than the counting run
FLIP_PTX = HEAD + r"""
.visible .entry flip(.param .u64 p, .param .u32 limit, .param .u32 more)
{
    .reg .pred %p<3>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [limit];
    ld.param.u32 %r5, [more];
    atom.global.add.u32 %r2, [%rd1], 1;
    setp.lt.u32 %p1, %r2, %r1;
    setp.ne.u32 %p2, %r5, 0;
    xor.pred %p1, %p1, %p2;
    @%p1 bra DONE;
    ld.global.u32 %r3, [%rd1+4];
DONE:
    ret;
}
"""


def test_bounds_straight_line_vadd():
    """vadd: entry block (setp, @%p1 bra), body (ld b, ld a, add, st c), return block: at most 3 blocks,
    3 memory accesses, 1 branch, no barrier per thread."""
    assert bounds(bench_kernel("vadd"), (256, 1, 1)) == (3, 3, 1, 0)


def test_bounds_loop_without_barrier_is_unbounded():
    assert bounds(ptxjit.Module(LOOP_PTX).get_function("spin")) is None


def test_bounds_loop_through_barrier():
    """Stretches: start -> bar (entry, LOOP block: ld.global, st.shared, bar: 2 blocks, 2 accesses, 1
    barrier); bar -> bar (ld.shared, @%p1 bra LOOP, then ld.global, st.shared, bar: 1 + 1 blocks, 3
    accesses, 1 branch, 1 barrier); bar -> exit (ld.shared, bra not taken, st.global, ret: 2 blocks,
    2 accesses, 1 branch).  The bound per type is the largest: (2, 3, 1, 1)."""
    assert bounds(ptxjit.Module(BARRIER_LOOP_PTX).get_function("steps")) == (2, 3, 1, 1)


def test_barrier_loop_traced_exactly():
    k = ptxjit.Module(BARRIER_LOOP_PTX).get_function("steps")
    a = np.arange(64, dtype=np.uint32)
    t = ptxjit.trace(k, 1, 64, (a, 3), records=ALL)  # (every thread stores what some thread put in buf)
    # per thread: 3 x (ld.global, st.shared, ld.shared) + st.global
    assert t.counts() == t.capacity() and t.counts()["memory"] == 64 * 10
    m = t.table("memory")
    tid, addr, space = col(m, "tid").astype(np.int64), col(m, "addr").astype(np.int64), col(m, "space")
    g = space == "global"
    np.testing.assert_array_equal(addr[g] - a.ctypes.data, 4 * tid[g])


@pytest.mark.parametrize("nthreads", [64, 96])
def test_vadd_all_types_both_versions(nthreads):
    """vadd traced with all four record types: with n a multiple of the block every CTA runs the
    unchecked copy (each thread writes its most records); with a partial last CTA that CTA's claim is
    short of the worst case and it runs the checked copy.  Records against NumPy either way."""
    k = bench_kernel("vadd")
    n = 4 * nthreads - (0 if nthreads == 64 else 37)
    rng = np.random.default_rng(3)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    grid = -(-n // nthreads)
    t = ptxjit.trace(k, grid, nthreads, (a, b, c, n), records=ALL)
    np.testing.assert_array_equal(c, a + b)
    total = grid * nthreads
    assert t.counts() == t.capacity() == {"blocks": 2 * total + n, "memory": 3 * n, "branches": total,
                                          "barriers": 0}
    m = t.table("memory")
    i = col(m, "cta").astype(np.int64) * nthreads + col(m, "tid").astype(np.int64)
    np.testing.assert_array_equal(i, np.repeat(np.arange(n), 3))
    base = np.tile([b.ctypes.data, a.ctypes.data, c.ctypes.data], n).astype(np.uint64)
    np.testing.assert_array_equal(col(m, "addr"), base + 4 * i.astype(np.uint64))
    seq = col(m, "seq").astype(np.int64).reshape(n, 3)
    assert (np.diff(seq, axis=1) > 0).all()  # program order within each thread


def test_more_records_than_counted_stay_in_their_claims():
    """The traced run takes the longer path everywhere (counter already past `limit`): the claims have no
    room for the worst case, so the checked stores run; each CTA keeps its first records (its claim's
    worth, in thread order: atom, ld of thread 0, 1, ...) and drops the rest, never touching the other
    CTA's claim."""
    k = ptxjit.Module(FLIP_PTX).get_function("flip")
    mem = np.zeros(2, np.uint32)
    p = ptxjit.Pointer(mem.ctypes.data)
    with pytest.raises(ptxjit.TraceOverflow, match="dropped 64"):
        ptxjit.trace(k, 2, 32, (p, 64, 0), records=("memory",))
    mem[0] = 0
    t = ptxjit.trace(k, 2, 32, (p, 64, 0), records=("memory",), strict=False)
    assert mem[0] == 128
    assert t.capacity() == t.counts() == {"memory": 64} and t.dropped() == {"memory": 64}
    m = t.table("memory")
    np.testing.assert_array_equal(col(m, "cta"), np.repeat([0, 1], 32))
    np.testing.assert_array_equal(col(m, "tid"), np.tile(np.repeat(np.arange(16), 2), 2))
    np.testing.assert_array_equal(col(m, "kind"), np.tile(["atomic", "load"], 32))
    np.testing.assert_array_equal(col(m, "addr").astype(np.int64) - mem.ctypes.data, np.tile([0, 4], 32))


def test_fewer_records_than_counted_unchecked():
    """The other way round (`more`: the counting run takes the longer path, the traced run the shorter):
    the claims have room for the worst case, the unchecked copy runs and writes each thread's one record;
    nothing is dropped, the trace lacks the loads."""
    k = ptxjit.Module(FLIP_PTX).get_function("flip")
    mem = np.zeros(2, np.uint32)
    t = ptxjit.trace(k, 2, 32, (ptxjit.Pointer(mem.ctypes.data), 64, 1), records=("memory",))
    assert t.capacity() == {"memory": 128} and t.counts() == {"memory": 64}
    assert t.dropped() == {"memory": 0}
    m = t.table("memory")
    np.testing.assert_array_equal(col(m, "cta"), np.repeat([0, 1], 32))
    np.testing.assert_array_equal(col(m, "tid"), np.tile(np.arange(32), 2))
    assert set(col(m, "kind")) == {"atomic"}


@pytest.mark.parametrize("name", ["saxpy", "jacobi"])
def test_same_records_with_and_without_room_check(name, monkeypatch):
    """The unchecked copy fills the claims in the same order as the checked stores: the same tables (and
    the kernel's results against NumPy)."""
    k = bench_kernel(name)
    rng = np.random.default_rng(4)
    tables = []
    for room in (False, True):
        monkeypatch.setattr(tr, "ROOM_CHECK", room)
        if name == "jacobi":  # one 5-point sweep of a 60 x 60 grid (partial 32 x 8 CTAs at the edges)
            nx = 60
            u = np.random.default_rng(5).random((nx, nx), dtype=np.float32)
            out = u.copy()
            t = ptxjit.trace(k, (2, 8), (32, 8), (u, out, nx), records=ALL)
            ref = u.copy()
            ref[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
            np.testing.assert_allclose(out, ref, rtol=1e-6)
        else:  # y = a x + y over 1,000 elements (4 CTAs of 256, the last partial)
            x, y = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
            y0 = y.copy()
            t = ptxjit.trace(k, 4, 256, (1000, np.float32(1.5), x, y), records=ALL)
            np.testing.assert_allclose(y, np.float32(1.5) * x + y0, rtol=1e-6)
            x, y = x.copy(), y0  # keep the first arrays alive: the second trace's addresses differ anyway
        assert t.counts() == t.capacity()
        tables.append({r: t.table(r) for r in ALL})
    for r in ALL:
        a, b = tables
        cols = [c for c in a[r].column_names if c != "addr"]
        assert a[r].select(cols).equals(b[r].select(cols)), r


def _traced_ir(k: ptxjit.Kernel, block, room: bool = True) -> str:
    from ptxjit.instrument.emit import ProbeSpec
    from ptxjit.lower.module import ModuleCodegen

    plan = tr.kernel_plan(k, block, ("memory",))
    spec = ProbeSpec(plan, "trace", ("memory",), room=room)
    return str(ModuleCodegen(k.module.ir, k.fn, k.module._glay, block, probes=spec).build())


def test_thread_loop_gets_an_unchecked_copy():
    """The bounded thread-loop kernel is lowered with the room check and a copy of the loop whose record
    stores take no select; the unbounded one, or with the check off, without."""
    vadd = bench_kernel("vadd")
    assert "room_check" in _traced_ir(vadd, (256, 1, 1))
    assert "room_check" not in _traced_ir(vadd, (256, 1, 1), room=False)
    assert "room_check" not in _traced_ir(ptxjit.Module(LOOP_PTX).get_function("spin"), (64, 1, 1))
