"""ptxjit.distributed: one launch's CTAs over Ray actors (a local cluster of 2 CPUs and 3 actors).

Every result is checked against NumPy, and byte for byte against the same launch in one process
where the kernel is deterministic (integer atomics included: their deltas merge exactly)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from tests.ptxsnip import snippet_kernel

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "kernels" / "ptx"
CORPUS = ROOT / "corpus" / "ptx"
ACTORS = 3


def test_import_without_ray_names_the_extra():
    code = ("import sys; sys.modules['ray'] = None\n"
            "try:\n import ptxjit.distributed\nexcept ImportError as e:\n print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert "pip install 'ptxjit[ray]'" in out.stdout, out.stderr


@pytest.fixture(scope="module")
def pd():
    pytest.importorskip("ray")
    import ptxjit.distributed as pd

    infos = pd.init(actors=ACTORS, num_cpus=2, threads=1)
    assert len(infos) == ACTORS and len({i["pid"] for i in infos}) == ACTORS
    yield pd
    pd.shutdown()


def _mod(path: Path) -> ptxjit.Module:
    return ptxjit.Module.from_file(path)


def _last(pd, grid_ctas: int, actors: int = ACTORS):
    """The launch's completion counts: per actor the sum of its threads', and the sum is the grid."""
    st = pd.stats()[-1]
    assert st.actors == actors
    assert [sum(t) for t in st.per_thread] == st.completed
    assert st.completed == st.ctas
    assert st.total_completed == grid_ctas
    return st


def test_vadd_and_saxpy_equal_one_process_and_numpy(pd):
    rng = np.random.default_rng(1)
    n = 50_001
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    m = _mod(BENCH / "vadd.ptx")
    pd.kernel(m, "vadd")(-(-n // 256), 256, (a, b, c, np.int32(n)))
    np.testing.assert_array_equal(c, a + b)
    st = _last(pd, -(-n // 256))
    assert st.bytes_in == ACTORS * (a.nbytes + b.nbytes + c.nbytes + m.globals.nbytes)

    x, y0 = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    y, y1 = y0.copy(), y0.copy()
    m = _mod(BENCH / "saxpy.ptx")
    pd.kernel(m, "saxpy")(-(-n // 256), 256, (np.int32(n), np.float32(2.5), x, y))
    m.get_function("saxpy")(-(-n // 256), 256, (np.int32(n), np.float32(2.5), x, y1))
    assert y.tobytes() == y1.tobytes()
    ref = (np.float64(2.5) * x + y0).astype(np.float32)  # one rounding: the fused multiply-add
    np.testing.assert_array_equal(y, ref)


def test_demo_kernels_saxpy_matmul(pd):
    rng = np.random.default_rng(2)
    m = _mod(ROOT / "examples" / "demo_kernels.ptx")
    n = 20_000
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    y1 = y.copy()
    pd.kernel(m, "saxpy")(-(-n // 256), 256, (n, 2.5, x, y))
    m.get_function("saxpy")(-(-n // 256), 256, (n, 2.5, x, y1))
    assert y.tobytes() == y1.tobytes()
    s = 64
    A, B = rng.random((s, s), dtype=np.float32), rng.random((s, s), dtype=np.float32)
    C, C1 = np.zeros((s, s), np.float32), np.zeros((s, s), np.float32)
    pd.kernel(m, "matmul")((s // 16, s // 16), (16, 16), (A, B, C, s))
    m.get_function("matmul")((s // 16, s // 16), (16, 16), (A, B, C1, s))
    assert C.tobytes() == C1.tobytes()
    np.testing.assert_allclose(C, A @ B, rtol=1e-4)
    _last(pd, (s // 16) ** 2)


def test_sgemm_and_nbody(pd):
    rng = np.random.default_rng(3)
    n = 96
    A, B = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    C, C1 = np.zeros((n, n), np.float32), np.zeros((n, n), np.float32)
    m = _mod(BENCH / "sgemm.ptx")
    pd.kernel(m, "sgemm")((n // 16, n // 16), (16, 16), (A, B, C, np.int32(n)))
    m.get_function("sgemm")((n // 16, n // 16), (16, 16), (A, B, C1, np.int32(n)))
    assert C.tobytes() == C1.tobytes()
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-5)
    _last(pd, (n // 16) ** 2)

    nb = 1024
    pos = rng.random((nb, 4), dtype=np.float32)
    acc, acc1 = np.zeros((nb, 4), np.float32), np.zeros((nb, 4), np.float32)
    m = _mod(BENCH / "nbody.ptx")
    pd.kernel(m, "nbody")(nb // 256, 256, (pos, acc, np.int32(nb), np.float32(0.01)))
    m.get_function("nbody")(nb // 256, 256, (pos, acc1, np.int32(nb), np.float32(0.01)))
    assert acc.tobytes() == acc1.tobytes()
    p = pos.astype(np.float64)
    d = p[None, :, :3] - p[:, None, :3]
    r2 = (d * d).sum(-1) + 0.01
    ref = (d * (p[None, :, 3] / (r2 * np.sqrt(r2)))[..., None]).sum(1)
    np.testing.assert_allclose(acc[:, :3], ref, rtol=1e-3, atol=1e-3)
    _last(pd, nb // 256, actors=nb // 256 if nb // 256 < ACTORS else ACTORS)


@pytest.mark.parametrize("path,name,order", [(BENCH / "histogram.ptx", "histogram", (0, 1, 2)),
                                             (CORPUS / "histogram.ptx", "hist256", (0, 2, 1))])
def test_histogram_integer_deltas_exact(pd, path, name, order):
    rng = np.random.default_rng(4)
    n = 200_003
    data = rng.integers(0, 256, n).astype(np.uint8)
    data[:5000] = 17  # a heavy bin
    hist = np.arange(256, dtype=np.uint32) * 1000 + 4_294_000_000  # adds wrap around 2**32, as on a GPU
    hist1 = hist.copy()
    m = _mod(path)
    k = pd.kernel(m, name)
    assert set(k.plan.delta) == {order[1]}
    vals = [data, hist, np.int32(n)]
    k(37, 256, tuple(vals[i] for i in order))
    vals1 = [data, hist1, np.int32(n)]
    m.get_function(name)(37, 256, tuple(vals1[i] for i in order))
    expect = ((np.arange(256, dtype=np.int64) * 1000 + 4_294_000_000 + np.bincount(data, minlength=256))
              % 2**32).astype(np.uint32)
    np.testing.assert_array_equal(hist, expect)
    assert hist.tobytes() == hist1.tobytes()
    st = _last(pd, 37)
    # the histogram itself is not shipped: each node starts from zeros
    assert st.bytes_in == ACTORS * (data.nbytes + m.globals.nbytes)


def test_reductions(pd):
    rng = np.random.default_rng(5)
    m = _mod(CORPUS / "reduce.ptx")
    # float atomics into one cell: the nodes' sums are added in another order than in one process
    n = 100_000
    x = rng.uniform(0, 1, n).astype(np.float32)
    out = np.zeros(1, np.float32)
    pd.kernel(m, "reduce_tree_f32")(-(-n // 512), 256, (x, out, n))
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=2e-6)
    # integer-valued floats: every order gives the same sum
    xi = rng.integers(0, 10, n).astype(np.float32)
    out = np.full(1, 5.0, np.float32)
    pd.kernel(m, "reduce_tree_f32")(-(-n // 512), 256, (xi, out, n))
    assert out[0] == 5 + int(xi.astype(np.int64).sum())
    # one partial per block: deterministic, byte for byte
    xd = rng.standard_normal(30_000)
    parts, parts1 = np.zeros(-(-xd.size // 128)), np.zeros(-(-xd.size // 128))
    pd.kernel(m, "reduce_tree_f64_partials")(parts.size, 128, (xd, parts, xd.size))
    m.get_function("reduce_tree_f64_partials")(parts.size, 128, (xd, parts1, xd.size))
    assert parts.tobytes() == parts1.tobytes()
    np.testing.assert_allclose(parts, [c.sum() for c in np.array_split(xd, np.arange(128, xd.size, 128))],
                               rtol=1e-13, atol=1e-13)
    _last(pd, parts.size)
    # dynamic shared memory sized at launch; integer-valued data: exact partial sums
    block = 128
    xs = rng.integers(-50, 50, 5000).astype(np.float32)
    parts = np.zeros(-(-xs.size // block), np.float32)
    pd.kernel(m, "reduce_dyn_smem_f32")(parts.size, block, (xs, parts, xs.size), shared_mem=block * 4)
    np.testing.assert_array_equal(parts, [c.astype(np.int64).sum() for c in
                                          np.array_split(xs, np.arange(block, xs.size, block))])
    # the demo's atomicAdd reduction
    dm = _mod(ROOT / "examples" / "demo_kernels.ptx")
    out = np.zeros(1, np.float32)
    pd.kernel(dm, "sum_reduce")(128, 256, (x, out, n))
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5)


def test_neighbouring_bytes_of_different_nodes(pd):
    """uint8 outputs of CTAs on different nodes share words: the merge is per byte."""
    body = """
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    cvt.u64.u32 %rd2, %r4;
    add.s64 %rd3, %rd1, %rd2;
    mul.lo.s32 %r5, %r4, 7;
    st.global.u8 [%rd3], %r5;
    """
    m = ptxjit.Module(snippet_kernel(body, [("u64", "out")], name="bytes"))
    out = np.full(3 * 5, 255, np.uint8)
    pd.kernel(m, "bytes")(5, 3, (out,))
    np.testing.assert_array_equal(out, (np.arange(15) * 7).astype(np.uint8))


def test_module_globals_travel(pd):
    m = _mod(CORPUS / "atomics.ptx")
    m.get_global("g_counter")[...] = 4321
    g = np.zeros(5, np.uint32)
    pd.kernel(m, "read_globals")(4, 32, (g,))
    assert g.tolist() == [4321, 10, 20, 30, 40]


def test_refuses_ticket_and_last_block_patterns(pd):
    m = _mod(CORPUS / "atomics.ptx")
    with pytest.raises(pd.DistributionRefused,
                       match=r"kernel 'global_counter' cannot be distributed: 'atom\.global\.add\.u32' at "
                             r".*atomics\.ptx:\d+ on variable 'g_counter' is an atomic whose result is used"):
        pd.kernel(m, "global_counter")
    with pytest.raises(pd.DistributionRefused, match=r"kernel 'last_block_sum'.*'membar\.gl'.*orders memory "
                                                     r"between CTAs.*'atom\.global\.inc\.u32'"):
        pd.kernel(_mod(CORPUS / "compact.ptx"), "last_block_sum")
    with pytest.raises(pd.DistributionRefused, match=r"'atom\.global\.cas\.b32'.*parameter 1"):
        pd.kernel(m, "atomic_cas_fmax")


def test_refuses_memory_other_ctas_write():
    pytest.importorskip("ray")
    from ptxjit.distributed import DistributionRefused, plan_kernel

    body = """
    ld.param.u64 %rd1, [a];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd2, %r4, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3+4];
    st.global.f32 [%rd3], %f1;
    """  # a[i] = a[i + 1]: CTA b reads the first element CTA b + 1 writes
    m = ptxjit.Module(snippet_kernel(body, [("u64", "a")], name="shift"))
    k = m.get_function("shift")
    plan = plan_kernel(m.ir, k.fn, k._access)
    with pytest.raises(DistributionRefused, match=r"kernel 'shift'.*parameter 0 \('a'\) is read and written"):
        plan.check()

    body = """
    ld.param.u64 %rd1, [ptrs];
    ld.global.u64 %rd2, [%rd1];
    mov.f32 %f1, 0f3F800000;
    st.global.f32 [%rd2], %f1;
    """  # *ptrs[0] = 1: an address of the driver's process
    m = ptxjit.Module(snippet_kernel(body, [("u64", "ptrs")], name="indirect"), name="indirect.ptx")
    k = m.get_function("indirect")
    with pytest.raises(DistributionRefused, match=r"kernel 'indirect'.*'st\.global\.f32' at indirect\.ptx:\d+ "
                                                  r"writes through an address the analysis cannot attribute"):
        plan_kernel(m.ir, k.fn, k._access).check()


def test_errors_come_back_with_their_class(pd):
    m = _mod(BENCH / "vadd.ptx")
    a = np.zeros(1000, np.float32)
    c = np.zeros(1000, np.float32)
    with pytest.raises(ptxjit.KernelFault, match=r"kernel 'vadd' made an out-of-bounds.*actor \d on ") as ei:
        pd.kernel(m, "vadd")(8, 256, (a, a.copy(), c, np.int32(2048)))
    assert ei.value.kernel == "vadd" and ei.value.cta[0] >= 1000 // 256
    before = len(pd.stats())
    with pytest.raises(TypeError, match=r"vadd"):  # checked before anything travels, as a local launch does
        pd.kernel(m, "vadd")(8, 256, (a, c, np.int32(2048)))
    with pytest.raises(ValueError, match=r"shared"):
        pd.kernel(m, "vadd")(8, 256, (a, a.copy(), c, np.int32(1000)), shared_mem=1 << 30)
    assert len(pd.stats()) == before


def test_backend_env_makes_kernel_call_distribute(pd):
    from ptxjit import env_launchers

    remove = env_launchers.install(backend="ray")  # what `import ptxjit` does under PTXJIT_BACKEND=ray
    try:
        _backend_launches_distribute(pd)
    finally:
        remove()


def _backend_launches_distribute(pd):
    before = len(pd.stats())
    rng = np.random.default_rng(6)
    n = 4096
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    _mod(BENCH / "vadd.ptx").get_function("vadd")(n // 256, 256, (a, b, c, np.int32(n)))
    np.testing.assert_array_equal(c, a + b)
    assert len(pd.stats()) == before + 1
    _last(pd, n // 256)
    c[:] = 0
    _mod(BENCH / "vadd.ptx").get_function("vadd")(1, 64, (a, b, c, np.int32(64)))  # fewer CTAs than actors
    np.testing.assert_array_equal(c[:64], (a + b)[:64])
    assert not c[64:].any()
    _last(pd, 1, actors=1)


@pytest.mark.parametrize("density", [0.0, 0.001, 0.3, 1.0])
def test_changes_roundtrip(density):
    pytest.importorskip("ray")
    from ptxjit.distributed import changes

    rng = np.random.default_rng(int(density * 1000))
    before = rng.integers(0, 256, 10_007).astype(np.uint8)
    after = before.copy()
    idx = rng.random(before.size) < density
    after[idx] ^= rng.integers(1, 256, int(idx.sum())).astype(np.uint8)  # every picked byte changes
    ch = changes.diff(before, after)
    assert ch.changed == int(idx.sum())
    assert ch.size <= ch.changed + before.size // 8 + 32  # never much more than a bitmask and the bytes
    target = np.full(before.size, 7, np.uint8)
    changes.apply(target, ch)
    np.testing.assert_array_equal(target, np.where(idx, after, 7))


def test_node_threads_split_their_range(pd):
    """One actor's share on 2 threads (in this process): CTAs [5, 17) only, counted per thread."""
    import ray

    from ptxjit.distributed import changes
    from ptxjit.distributed.node import Job, Node

    m = _mod(BENCH / "vadd.ptx")
    n = 20 * 256
    rng = np.random.default_rng(7)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    job = Job(m.ptx_digest, [ray.put(m.source_text)], m.fmad, m.name, "vadd", (20, 1, 1), (256, 1, 1), 5, 17,
              [("in", [a]), ("in", [b]), ("out", [c.copy()]), ("val", np.int32(n))], [m.globals.copy()], 0, None,
              True)
    node = Node(threads=2)
    for _ in range(2):  # the second run reuses the node's module, translation and worker memory
        r = node.run(job)
        assert r.error is None and r.ctas == 12 and len(r.per_thread) == 2 and sum(r.per_thread) == 12
    changes.apply(c, r.changes[2])
    expect = np.zeros(n, np.float32)
    expect[5 * 256:17 * 256] = (a + b)[5 * 256:17 * 256]
    np.testing.assert_array_equal(c, expect)
