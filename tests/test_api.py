"""The public API: Module, introspection, launch shapes, device-style buffers, workers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit

EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.fixture(scope="module")
def demo() -> ptxjit.Module:
    return ptxjit.Module.from_file(EXAMPLES / "demo_kernels.ptx")


def test_introspection(demo):
    ks = demo.kernels
    assert set(ks) == {"saxpy", "sum_reduce", "matmul", "hello"}
    sax = ks["saxpy"]
    assert [p.type for p in sax.params] == ["u32", "f32", "u64", "u64"]
    assert [p.offset for p in sax.params] == [0, 4, 8, 16]
    assert ks["matmul"].shared_size == 2 * 16 * 16 * 4
    assert ks["sum_reduce"].shared_size == 256 * 4
    assert ks["sum_reduce"].instructions["bar"] >= 1
    assert ks["saxpy"].local_size == 0


def test_text_and_bytes_and_path(demo):
    text = (EXAMPLES / "demo_kernels.ptx").read_text()
    assert set(ptxjit.Module(text).kernels) == set(ptxjit.Module(text.encode()).kernels)
    with pytest.raises(TypeError):
        ptxjit.Module(123)


def test_zero_copy_and_device_arrays(demo):
    n = 1000
    x = ptxjit.to_device(np.arange(n, dtype=np.float32))
    y = ptxjit.zeros(n, np.float32)
    demo.get_function("saxpy")((n + 127) // 128, 128, (n, 2.0, x, y))
    np.testing.assert_array_equal(y.copy_to_host(), 2.0 * np.arange(n, dtype=np.float32))
    e = ptxjit.empty((4, 4), np.float64)
    assert e.shape == (4, 4) and e.dtype == np.float64


def test_grid_tuple_and_numpy_scalars(demo):
    n = 64
    A = np.random.default_rng(0).random((n, n), dtype=np.float32)
    B = np.eye(n, dtype=np.float32) * 2
    C = np.zeros((n, n), np.float32)
    demo.get_function("matmul")((n // 16, n // 16, 1), [16, 16], (A, B, C, np.int32(n)))
    np.testing.assert_array_equal(C, A * 2)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_worker_counts_give_same_result(demo, workers):
    ptxjit.set_workers(workers)
    try:
        x = np.random.default_rng(workers).random(100_000, dtype=np.float32)
        out = np.zeros(1, np.float32)
        demo.get_function("sum_reduce")(40, 256, (x, out, x.size))
        np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5)
    finally:
        ptxjit.set_workers(None)


def test_translation_is_cached(demo, monkeypatch):
    monkeypatch.setenv("PTXJIT_TIERS", "0")  # one untiered translation (tiers build tier 1 in the background)
    k = demo.get_function("saxpy")
    x = np.ones(10, np.float32)
    y = np.zeros(10, np.float32)
    k(1, 32, (10, 1.0, x, y))
    before = ptxjit.cache_stats()
    k(3, 32, (10, 1.0, x, y))
    after = ptxjit.cache_stats()
    assert after["translations"] == before["translations"]
    assert after["memory_hits"] == before["memory_hits"] + 1


def test_printf_goes_to_stdout(demo, capfd):
    demo.get_function("hello")(3, 64, (7,))
    lines = sorted(capfd.readouterr().out.strip().splitlines())
    assert lines == [f"hello from block {b}: the answer is 7" for b in range(3)]


def test_plain_name_lookup_of_mangled_kernel():
    src = Path(__file__).parent / "data" / "mangled.ptx"
    mod = ptxjit.Module.from_file(src)
    k = mod.get_function("scale")
    assert k.name.startswith("_Z")
    v = np.arange(8, dtype=np.int32)
    k(1, 8, (v, 3))
    np.testing.assert_array_equal(v, np.arange(8) * 3)


def test_template_kernels_by_their_cuda_names():
    mod = ptxjit.Module.from_file(Path(__file__).parent / "data" / "mangled.ptx")
    k = mod.get_function("tiled<float, 16>")
    assert k.name == "_Z5tiledIfLi16EEvPT_S0_"
    assert mod.get_function("tiled<float,16>") is not None  # spacing does not matter
    assert mod.get_function("void tiled<int, 8>(int*, int)").name == "_Z5tiledIiLi8EEvPT_S0_"
    v = np.ones(16, np.float32)
    k(1, 16, (v, np.float32(2.5)))
    np.testing.assert_array_equal(v, np.full(16, 2.5, np.float32))
    with pytest.raises(KeyError) as ei:
        mod.get_function("tiled<double, 4>")
    # the listing names both forms
    assert "_Z5tiledIfLi16EEvPT_S0_ (tiled<float, 16>)" in str(ei.value)


def test_concurrent_launches_while_set_workers_flips(demo, monkeypatch):
    """The worker pool is never shut down under a launch: 8 threads launch while another thread keeps
    changing the worker count (the pool grows by replacement; the old one drains)."""
    import threading
    import time

    from ptxjit.runtime import launch

    monkeypatch.setattr(launch, "_pool", None)  # start small, so that the pool really grows here
    monkeypatch.setattr(launch, "_pool_size", 0)

    k = demo.get_function("saxpy")
    errors: list[BaseException] = []
    stop = threading.Event()

    def launcher(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(60):
                n = int(rng.integers(256, 4096))
                x = rng.random(n, dtype=np.float32)
                y = np.ones(n, np.float32)
                k((n + 63) // 64, 64, (n, 3.0, x, y))
                np.testing.assert_array_equal(y, np.float32(3.0) * x + np.float32(1.0))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def flipper() -> None:  # growing counts replace the pool again and again; 1 takes the inline path
        i = 0
        while not stop.is_set():
            ptxjit.set_workers(1 if i % 3 == 0 else 2 + i % 63)
            i += 1
            time.sleep(0.0005)

    f = threading.Thread(target=flipper)
    ts = [threading.Thread(target=launcher, args=(s,)) for s in range(8)]
    f.start()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    stop.set()
    f.join()
    ptxjit.set_workers(None)
    assert not errors, errors[:3]


def test_device_array_cupy_style_get_set_indexing(demo):
    """DeviceArray as CuPy users expect: .get(), .set(), views by indexing, NumPy interop (NumPy reference)."""
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = ptxjit.to_device(host)
    assert (a.shape, a.dtype, a.size, a.ndim, a.nbytes, len(a)) == ((3, 4), np.float32, 12, 2, 48, 3)
    got = a.get()
    np.testing.assert_array_equal(got, host)
    got[0, 0] = 99  # .get() is a copy
    assert float(a[0, 0]) == 0.0
    row = a[1]  # a view sharing the buffer, as CuPy's
    assert isinstance(row, ptxjit.DeviceArray) and row.shape == (4,)
    row[2] = -5.0
    assert a.get()[1, 2] == -5.0
    elem = a[2, 3]
    assert elem.shape == () and float(elem) == 11.0 and int(elem) == 11
    a[0] = np.ones(4, np.float32)
    np.testing.assert_array_equal(np.asarray(a)[0], np.ones(4))
    assert np.asarray(a).ctypes.data == a.ptr  # np.asarray: no copy
    assert np.array(a, copy=True).ctypes.data != a.ptr
    np.testing.assert_array_equal(np.asarray(a, dtype=np.float64), host.astype(np.float64) * 0 + a.get())
    a.set(host)
    np.testing.assert_array_equal(a.get(), host)
    with pytest.raises(ValueError, match="shape"):
        a.set(np.zeros(5, np.float32))
    out = np.empty((3, 4), np.float32)
    assert a.get(out=out) is out
    # a view is a kernel argument like any array: saxpy into the middle row of a 3x4 buffer
    y = ptxjit.zeros((3, 4), np.float32)
    demo.get_function("saxpy")(1, 32, (4, 2.0, a[1], y[1]))
    ref = np.zeros((3, 4), np.float32)
    ref[1] = 2.0 * host[1]
    np.testing.assert_array_equal(y.get(), ref)


def test_public_api_has_docstrings():
    """help() says something for every public method of the API classes and the buffer functions."""
    import inspect

    for cls in (ptxjit.Module, ptxjit.Kernel, ptxjit.DeviceArray, ptxjit.RawModule, ptxjit.RawKernel, ptxjit.Stream,
                ptxjit.Event, ptxjit.Graph):
        for name, v in vars(cls).items():
            if name.startswith("_") and name not in ("__init__", "__call__", "__getitem__", "__array__"):
                continue
            f = v.fget if isinstance(v, property) else getattr(v, "__func__", v)
            if callable(f):
                assert inspect.getdoc(f), f"{cls.__name__}.{name} has no docstring"
    for fn in (ptxjit.to_device, ptxjit.zeros, ptxjit.empty, ptxjit.worker_count, ptxjit.set_workers):
        assert inspect.getdoc(fn), fn.__name__


_AXPY_CU = r'''
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''


def test_rawkernel_takes_cupys_keywords():
    """CuPy's RawKernel/RawModule keywords are accepted (backend, enable_cooperative_groups, options,
    name_expressions) or refused naming the keyword (jitify, translate_cucomplex with cuComplex.h)."""
    x = np.arange(40, dtype=np.float32)
    y = np.ones(40, dtype=np.float32)
    for backend in ("nvrtc", "nvcc"):
        k = ptxjit.RawKernel(_AXPY_CU, "axpy", ("-std=c++17",), backend, False, enable_cooperative_groups=False,
                             jitify=False)
        assert k.backend == backend and not k.enable_cooperative_groups
    k(1, 64, (np.float32(2.0), x, y, np.int32(40)))
    np.testing.assert_array_equal(y, 2.0 * np.arange(40, dtype=np.float32) + 1)
    mod = ptxjit.RawModule(code=_AXPY_CU, options=(), backend="nvrtc", translate_cucomplex=True,
                           enable_cooperative_groups=True, name_expressions=None, jitify=False)
    assert mod.get_function("axpy").enable_cooperative_groups  # the module's choice reaches its kernels
    with pytest.raises(ValueError, match="backend='hip'"):
        ptxjit.RawKernel(_AXPY_CU, "axpy", backend="hip")
    with pytest.raises(NotImplementedError, match="jitify=True is not supported"):
        ptxjit.RawModule(code=_AXPY_CU, jitify=True)
    with pytest.raises(NotImplementedError, match="translate_cucomplex=True"):
        ptxjit.RawKernel("#include <cuComplex.h>\n" + _AXPY_CU, "axpy", translate_cucomplex=True)


def test_readme_numba_snippet_runs_as_written():
    """The README's Numba example is executed verbatim (its own assert checks the result against NumPy)."""
    pytest.importorskip("numba.cuda")
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    start = readme.index("**Numba**")
    code = readme[readme.index("```python\n", start) + len("```python\n"):]
    code = code[:code.index("```")]
    assert "x2d" in code and "assert" in code
    exec(compile(code, "README.md (Numba snippet)", "exec"), {})
