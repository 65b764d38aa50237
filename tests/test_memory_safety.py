"""Memory safety (`checked=True` / PTXJIT_CHECKED=1): an out-of-bounds or wild access raises
KernelFault, never touches other memory, and leaves the module usable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit

DATA = Path(__file__).parent / "data"
N = 1000


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA / "memory_safety.ptx")


def _neighbours(n: int = N):
    """`out` inside a bigger buffer: the memory just before and after it belongs to other arrays."""
    backing = np.full(n + 8192, -7.0, dtype=np.float32)
    out = backing[4096:4096 + n]
    out[:] = 0
    return backing, out


def _launch(k, args, **kw):
    k((N + 127) // 128, 128, args, checked=True, **kw)


@pytest.mark.parametrize("off", [1, 1000])
def test_write_past_the_end(mod, off):
    k = mod.get_function("shifted_copy")
    a = np.arange(N, dtype=np.float32)
    backing, out = _neighbours()
    before = backing.copy()
    with pytest.raises(ptxjit.KernelFault) as ei:
        _launch(k, (a, out, N, off))
    e = ei.value
    assert e.allocation == "shifted_copy_param_1"  # out
    msg = str(e)
    assert "past the end of argument 1 ('shifted_copy_param_1')" in msg
    assert f"element [{N}]" in msg  # the first bad element: out[n]
    assert "memory_safety.cu:7" in msg  # the CUDA line of the store
    # the neighbouring memory was never touched
    assert np.array_equal(backing[:4096], before[:4096])
    assert np.array_equal(backing[4096 + N:], before[4096 + N:])


def test_write_before_the_start(mod):
    k = mod.get_function("shifted_copy")
    a = np.arange(N, dtype=np.float32)
    backing, out = _neighbours()
    before = backing.copy()
    with pytest.raises(ptxjit.KernelFault) as ei:
        _launch(k, (a, out, N, -1))
    assert ei.value.allocation == "shifted_copy_param_1"
    assert "4 bytes before the start of argument 1" in str(ei.value)
    assert "element [-1]" in str(ei.value)
    assert np.array_equal(backing[:4096], before[:4096])


def test_read_past_the_end(mod):
    k = mod.get_function("shifted_read")
    a = np.arange(N, dtype=np.float32)
    out = np.zeros(N, np.float32)
    with pytest.raises(ptxjit.KernelFault) as ei:
        _launch(k, (a, out, N, 5))
    assert ei.value.allocation == "shifted_read_param_0"
    assert "past the end of argument 0 ('shifted_read_param_0')" in str(ei.value)


def test_wild_pointer(mod):
    k = mod.get_function("wild_store")
    with pytest.raises(ptxjit.KernelFault) as ei:
        k(1, 1, (0x10, 0x1000, 1.0), checked=True)
    assert ei.value.address == 0x10_0000_1000
    assert "in no memory the kernel was given" in str(ei.value)


def test_shared_index_past_the_array(mod):
    k = mod.get_function("shared_index")
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    k(1, 64, (a, out, 0), checked=True)  # in bounds
    np.testing.assert_array_equal(out, np.ones(64, np.float32))
    with pytest.raises(ptxjit.KernelFault) as ei:
        k(1, 64, (a, out, 100), checked=True)
    assert ei.value.allocation == "shared"
    assert "bytes of shared memory" in str(ei.value)


def test_module_usable_after_fault(mod):
    k = mod.get_function("shifted_copy")
    a = np.arange(N, dtype=np.float32)
    out = np.zeros(N, np.float32)
    for _ in range(2):
        with pytest.raises(ptxjit.KernelFault):
            _launch(k, (a, out, N, 3))
        out[:] = 0
        _launch(k, (a, out, N, 0))
        np.testing.assert_array_equal(out, a)


def test_checked_and_unchecked_agree_on_valid_kernel(mod, monkeypatch):
    k = mod.get_function("shifted_copy")
    a = np.arange(N, dtype=np.float32)
    out = np.zeros(N, np.float32)
    k((N + 127) // 128, 128, (a, out, N, 0), unchecked=True)
    np.testing.assert_array_equal(out, a)
    out[:] = 0
    monkeypatch.setenv("PTXJIT_CHECKED", "1")
    k((N + 127) // 128, 128, (a, out, N, 0))
    np.testing.assert_array_equal(out, a)
    # PTXJIT_CHECKED=1 turns checks on: an out-of-bounds store faults without checked=True
    with pytest.raises(ptxjit.KernelFault):
        k((N + 127) // 128, 128, (a, out, N, 2))


def test_checked_by_default(mod):
    """No option: the launch is bounds-checked (the opt-outs are unchecked=True / checked=False)."""
    k = mod.get_function("shifted_copy")
    a = np.arange(N, dtype=np.float32)
    backing, out = _neighbours()
    before = backing.copy()
    with pytest.raises(ptxjit.KernelFault):
        k((N + 127) // 128, 128, (a, out, N, 1))
    np.testing.assert_array_equal(backing[:4096], before[:4096])
    np.testing.assert_array_equal(backing[4096 + N:], before[4096 + N:])


def test_unchecked_env_opt_out(mod, monkeypatch):
    k = mod.get_function("shifted_copy")
    a = np.arange(N, dtype=np.float32)
    out = np.zeros(N, np.float32)
    monkeypatch.setenv("PTXJIT_UNCHECKED", "1")
    k((N + 127) // 128, 128, (a, out, N, 0))  # in bounds: runs unchecked, same result
    np.testing.assert_array_equal(out, a)


def test_index_wrapping_inside_the_block_is_caught(mod):
    """i = t * 0x08000001 (mod 2**32): the corners t=0 and t=32 of a 33-thread block are in bounds, t=1..31
    are not.  The per-block precheck must not accept the corners alone (the index is not exactly affine),
    and the access of thread 1 -- the lowest faulting thread -- is reported."""
    k = mod.get_function("wrapping_index")
    a = np.arange(64, dtype=np.float32)
    backing, out = _neighbours(33)
    before = backing.copy()
    with pytest.raises(ptxjit.KernelFault) as ei:
        k(1, 33, (a, out))
    msg = str(ei.value)
    assert "thread (1, 0, 0)" in msg, msg
    assert f"address {a.ctypes.data + 4 * 0x08000001:#x}" in msg, msg
    np.testing.assert_array_equal(backing[:4096], before[:4096])
    np.testing.assert_array_equal(backing[4096 + 33:], before[4096 + 33:])
    np.testing.assert_array_equal(out[1:32], 0)  # the faulting threads stored nothing of what they read


@pytest.mark.parametrize("n", [1000, 1024, 1])
def test_guarded_accesses_in_a_partial_block(mod, n):
    """The last block's threads past n skip their accesses: no fault, and the NumPy result."""
    k = mod.get_function("guarded_tile")
    a = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    nb = (n + 127) // 128
    k(nb, 128, (a, out, n))
    pad = np.zeros(nb * 128, np.float32)
    pad[:n] = a
    tiles = pad.reshape(nb, 128)
    want = (tiles + np.roll(tiles, -1, axis=1)).ravel()[:n]
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("operand,space", [("[g+-2147483648]", "global"), ("[g+64]", "global"),
                                           ("[sh+-4]", "shared"), ("[n+8]", "param")])
def test_variable_plus_constant_outside_the_variable(operand, space):
    """A constant offset outside its variable (fuzzer: [g_table+-2147483648] read host memory): the access
    faults when it runs -- and only then."""
    from tests.ptxsnip import snippet_kernel

    body = f"""
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra DONE;
    ld.{space}.u32 %r2, {operand};
    st.global.u32 [%rd1], %r2;
DONE:
"""
    decls = ".global .align 4 .b8 g[64];\n"
    text = snippet_kernel(body, [("u64", "out"), ("u32", "n")], extra_decls=decls)
    if space == "shared":
        text = text.replace("    .reg .pred %p<16>;", "    .shared .align 4 .b8 sh[64];\n    .reg .pred %p<16>;")
    m = ptxjit.Module(text, "static_oob.ptx")
    out = np.full(1, 5, np.uint32)
    m.get_function("k")(1, 1, (out, 0))  # not executed: no fault
    with pytest.raises(ptxjit.KernelFault, match="out-of-bounds"):
        m.get_function("k")(1, 1, (out, 1))


def test_register_read_before_written_is_zero_not_undefined():
    """A register used as an address offset before any write (fuzzer: a deleted mul.wide) is 0: the bounds
    check cannot be folded away on an undefined value and the access reads a[0]."""
    from tests.ptxsnip import snippet_kernel

    body = """
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [out];
    add.s64 %rd3, %rd1, %rd9;
    ld.global.u32 %r1, [%rd3];
    st.global.u32 [%rd2], %r1;
"""
    m = ptxjit.Module(snippet_kernel(body, [("u64", "a"), ("u64", "out")]), "undef_reg.ptx")
    a = np.array([41, 42], np.uint32)
    out = np.zeros(1, np.uint32)
    m.get_function("k")(1, 1, (a, out))
    assert out[0] == 41


def test_local_variable_beyond_cuda_limit_is_refused():
    from tests.ptxsnip import snippet_kernel

    body = """
    .local .align 8 .b8 big[1000000000];
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, big;
    st.global.u64 [%rd1], %rd2;
"""
    m = ptxjit.Module(snippet_kernel(body, [("u64", "out")]), "biglocal.ptx")
    with pytest.raises(ptxjit.PTXError, match="local memory per thread"):
        m.get_function("k")(1, 1, (np.zeros(1, np.uint64),))


def test_read_past_the_end_in_a_barrier_kernel():
    """Region mode (the kernel has __syncthreads): bench dot's grid-stride loop reads y[i] for i < n, but
    y is 37 elements short.  The fault names y (argument 1) and an element past its end."""
    k = ptxjit.Module.from_file(Path(__file__).parent.parent / "bench" / "kernels" / "ptx" / "dot.ptx") \
        .get_function("dot")
    n = 5000
    x = np.ones(n, np.float32)
    y = np.ones(n - 37, np.float32)
    partial = np.zeros(8, np.float32)
    with pytest.raises(ptxjit.KernelFault) as ei:
        k(8, 256, (x, y, partial, n))
    e = ei.value
    assert e.allocation == "dot_param_1"
    msg = str(e)
    assert "past the end of argument 1 ('dot_param_1')" in msg
    element = int(msg.split("element [")[1].split("]")[0])
    assert n - 37 <= element < n
    k(8, 256, (x, np.ones(n, np.float32), partial, n))  # the module is still usable
    assert partial.sum() == n
