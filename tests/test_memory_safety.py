"""Memory safety (`checked=True` / PTXJIT_CHECKED=1): an out-of-bounds or wild access raises
KernelFault, never touches other memory, and leaves the module usable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit

DATA = Path(__file__).parent / "data"
N = 1000


@pytest.fixture(params=["tiers", "untiered"], autouse=True)
def tiering(request, monkeypatch):
    """Each test both ways: with tiers (a few launches run tier 0's generic code) and without (the
    block-specialized code, whose fast copies rely on the corner and grid checks)."""
    monkeypatch.setenv("PTXJIT_TIERS", "1" if request.param == "tiers" else "0")
    return request.param


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
    # the reported thread's store, out[i + off] (several blocks fault; any of them may be the one reported)
    bad = e.cta[0] * 128 + e.thread[0] + off
    assert bad >= N and f"element [{bad}]" in msg, msg
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


@pytest.mark.parametrize("offset, faults", [(-2147483648, True), (-20, True), (-4, False), (60, False)])
def test_constant_offsets_from_dynamic_shared_memory(offset, faults):
    """An extern (dynamic) shared array has no size at translation time: a negative constant offset
    may reach the static shared array before it (the CTA's shared window), but not below the window
    (fuzzer: [tab+-2147483648] was a SIGSEGV); the largest offset is checked against the launch's
    dynamic shared memory (runtime/args.py)."""
    from tests.ptxsnip import snippet_kernel

    body = f"""
    ld.param.u64 %rd1, [out];
    mov.u32 %r3, 7;
    st.shared.u32 [stat+12], %r3;
    mov.u32 %r4, 9;
    st.shared.u32 [tab+60], %r4;
    ld.shared.u32 %r2, [tab+{offset}];
    st.global.u32 [%rd1], %r2;
"""
    decls = ".extern .shared .align 16 .b8 tab[];\n"
    text = snippet_kernel(body, [("u64", "out")], extra_decls=decls)
    text = text.replace("    .reg .pred %p<16>;", "    .shared .align 16 .b8 stat[16];\n    .reg .pred %p<16>;")
    k = ptxjit.Module(text, "dyn_oob.ptx").get_function("k")
    out = np.zeros(1, np.uint32)
    if faults:
        with pytest.raises(ptxjit.KernelFault, match=r"dyn_oob.ptx:\d+:\d+.*shared memory offset -?\d+"):
            k(1, 1, (out,), shared_mem=64)
    else:
        k(1, 1, (out,), shared_mem=64)
        assert out[0] == (7 if offset == -4 else 9)


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


# ---- the launch-wide precheck for addresses with run-time coefficients (lower/safety/corners.py grid_check)
JACOBI = Path(__file__).parent.parent / "bench" / "kernels" / "ptx" / "jacobi.ptx"


def _jacobi(n: int, inp: np.ndarray, out: np.ndarray) -> None:
    k = ptxjit.Module.from_file(JACOBI).get_function("jacobi")
    k(((n + 31) // 32, (n + 7) // 8), (32, 8), (inp, out, n))


def test_jacobi_pitch_from_a_parameter_matches_numpy():
    """`in[y * n + x]`, n a parameter: the interior CTAs run the fast copy (launch-wide linearity, corners
    in range), the border ones the checked copy; the result is NumPy's sweep either way."""
    n = 200
    a = np.random.default_rng(3).random((n, n), dtype=np.float32)
    out = a.copy()
    _jacobi(n, a, out)
    want = a.copy()
    want[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-7)


def test_jacobi_input_one_row_short_faults_at_the_last_interior_row():
    """`in` lacks the grid's last row: the CTAs of the last interior rows fail their corner check and fault
    reading in[(y + 1) * n + x] (PTX line 58) for y = n - 2, naming argument 0 and that element."""
    n = 200
    a = np.ones(n * (n - 1), np.float32)
    out = np.zeros(n * n, np.float32)
    with pytest.raises(ptxjit.KernelFault) as ei:
        _jacobi(n, a, out)
    e = ei.value
    assert e.allocation == "jacobi_param_0"
    gx, gy = e.cta[0] * 32 + e.thread[0], e.cta[1] * 8 + e.thread[1]
    assert gy == n - 2 and 1 <= gx < n - 1, (e.cta, e.thread)
    msg = str(e)
    assert "jacobi.ptx:58:" in msg and "past the end of argument 0 ('jacobi_param_0')" in msg, msg
    assert f"element [{(n - 1) * n + gx}]" in msg, msg


PITCHED = """
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r1, [pitch];
    mov.u32 %r2, %tid.y;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r2, %r1, %r3;
    mul.wide.s32 %rd3, %r4, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f1, [%rd4];
    mov.u32 %r5, %ntid.x;
    mad.lo.s32 %r6, %r2, %r5, %r3;
    mul.wide.u32 %rd5, %r6, 4;
    add.s64 %rd6, %rd2, %rd5;
    st.global.f32 [%rd6], %f1;
"""


def test_pitch_wrapping_inside_the_block_is_caught():
    """a[tid.y * pitch + tid.x] with pitch = 2**31 (32-bit arithmetic): rows 0 and 2 of a 3-row block read
    a[0..3], row 1 reads 8 GiB before a.  The block's corners are in bounds; the launch-wide check must
    see that the index is not linear (row 1's value) and the checked copy faults in thread (0, 1, 0).
    Launched first with a harmless pitch: the launch record's verdict of that launch is not reused."""
    from tests.ptxsnip import snippet_kernel

    m = ptxjit.Module(snippet_kernel(PITCHED, [("u64", "a"), ("u64", "out"), ("u32", "pitch")]), "pitched.ptx")
    k = m.get_function("k")
    a = np.arange(16, dtype=np.float32)
    out = np.zeros(12, np.float32)
    k(1, (4, 3), (a, out, 4))
    np.testing.assert_array_equal(out, a[:12])  # pitch 4: in bounds, a copy
    out[:] = 0
    with pytest.raises(ptxjit.KernelFault) as ei:
        k(1, (4, 3), (a, out, 1 << 31))
    e = ei.value
    assert tuple(e.thread) == (0, 1, 0), (e.cta, e.thread)
    assert f"address {(a.ctypes.data - (1 << 33)) % (1 << 64):#x}" in str(e), str(e)
    np.testing.assert_array_equal(out[4:8], 0)  # row 1 stored nothing of what it read


def test_pitch_wrapping_across_the_grid_is_caught():
    """The same index over CTAs: a[ctaid.x * pitch + tid.x], pitch = 2**31, grid 3: CTAs 0 and 2 read a[0..3]
    (the launch's corners), CTA 1 reads 8 GiB before a and faults in its thread 0."""
    from tests.ptxsnip import snippet_kernel

    body = PITCHED.replace("mov.u32 %r2, %tid.y;", "mov.u32 %r2, %ctaid.x;")
    m = ptxjit.Module(snippet_kernel(body, [("u64", "a"), ("u64", "out"), ("u32", "pitch")]), "pitched.ptx")
    a = np.arange(16, dtype=np.float32)
    out = np.zeros(12, np.float32)
    with pytest.raises(ptxjit.KernelFault) as ei:
        m.get_function("k")(3, 4, (a, out, 1 << 31))
    e = ei.value
    assert tuple(e.cta) == (1, 0, 0) and tuple(e.thread) == (0, 0, 0), (e.cta, e.thread)
    assert f"address {(a.ctypes.data - (1 << 33)) % (1 << 64):#x}" in str(e), str(e)


# ---- shared accesses decided at translation time from value ranges (passes/ranges.py)
BYTE_BINS = """
    .shared .align 4 .b8 h[BYTES];
    ld.param.u64 %rd1, [data];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    shl.b32 %r6, %r1, 2;
    mov.u32 %r3, h;
    add.s32 %r7, %r3, %r6;
    mov.u32 %r8, 0;
    st.shared.u32 [%r7], %r8;
    bar.sync 0;
    cvt.u64.u32 %rd3, %r1;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.u8 %h1, [%rd4];
    mul.wide.u16 %r2, %h1, 4;
    add.s32 %r4, %r3, %r2;
    atom.shared.add.u32 %r5, [%r4], 1;
    bar.sync 0;
    ld.shared.u32 %r9, [%r7];
    mul.wide.u32 %rd5, %r1, 4;
    add.s64 %rd6, %rd2, %rd5;
    st.global.u32 [%rd6], %r9;
"""


def _byte_bins(nbins: int):
    from tests.ptxsnip import snippet_kernel

    text = snippet_kernel(BYTE_BINS.replace("BYTES", str(4 * nbins)), [("u64", "data"), ("u64", "out")])
    return ptxjit.Module(text, "byte_bins.ptx").get_function("k")


def test_byte_indexed_shared_bins_need_no_check_and_count_right():
    """h[data[i]] with 256 bins: the index is a byte, so every address is inside h (no run-time check);
    the counts are np.bincount's."""
    data = np.random.default_rng(5).integers(0, 256, 256).astype(np.uint8)
    data[:2] = (0, 255)
    out = np.zeros(256, np.uint32)
    _byte_bins(256)(1, 256, (data, out))
    np.testing.assert_array_equal(out, np.bincount(data, minlength=256))


def test_byte_indexed_shared_bins_too_few_fault():
    """The same kernel with 64 bins: a byte may exceed them, so the check stays; thread 9's byte 200 is
    out of bounds (shared offset 800 of 256 bytes) and faults."""
    data = (np.arange(64) % 64).astype(np.uint8)
    data[9] = 200
    out = np.zeros(64, np.uint32)
    with pytest.raises(ptxjit.KernelFault) as ei:
        _byte_bins(64)(1, 64, (data, out))
    assert tuple(ei.value.thread) == (9, 0, 0), str(ei.value)
    assert "shared" in str(ei.value), str(ei.value)


def test_histogram_checked_matches_bincount():
    k = ptxjit.Module.from_file(JACOBI.parent / "histogram.ptx").get_function("histogram")
    data = np.random.default_rng(11).integers(0, 256, 100_000).astype(np.uint8)
    hist = np.zeros(256, np.uint32)
    k(16, 256, (data, hist, len(data)))
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=256))


def test_histogram_data_short_faults_in_the_grid_stride_loop():
    """n = 5003 but data holds 5000 bytes: the lockstep rounds of the grid-stride loop check data[i] once per
    round at the block's corners (i restored as u + tid.x); the last round fails that check and its checked
    copy faults for i = 5000: CTA 3 (5000 mod 1024 = 3 * 256 + 136), thread 136."""
    k = ptxjit.Module.from_file(JACOBI.parent / "histogram.ptx").get_function("histogram")
    data = np.zeros(5000, np.uint8)
    hist = np.zeros(256, np.uint32)
    with pytest.raises(ptxjit.KernelFault) as ei:
        k(4, 256, (data, hist, 5003))
    e = ei.value
    assert tuple(e.cta) == (3, 0, 0) and tuple(e.thread) == (136, 0, 0), (e.cta, e.thread)
    msg = str(e)
    assert "past the end of argument 0 ('histogram_param_0')" in msg and "element [5000]" in msg, msg


def test_address_read_before_its_definition_in_a_lockstep_round_is_checked():
    """A grid-stride loop (lockstep rounds, region mode) loads through %rd5 before the loop body defines it
    (a[i - stride], skipped in the first round): in round 2 %rd5 still holds the previous round's value,
    a[i1 - stride], before a for thread 0.  The round's corner check must not treat %rd5 as the function of
    the restored index it becomes later in the body (a[i2 - stride], in bounds): the access stays checked."""
    from tests.ptxsnip import snippet_kernel

    body = """
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [out];
    ld.param.u32 %r9, [n];
    mov.u32 %r1, %tid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r13, %ctaid.x;
    mad.lo.s32 %r20, %r13, %r3, %r1;
    mov.u32 %r14, %nctaid.x;
    mul.lo.s32 %r5, %r14, %r3;
    mov.f32 %f2, 0f00000000;
    mov.u32 %r30, 0;
    setp.ge.s32 %p1, %r20, %r9;
    @%p1 bra DONE;
LOOP:
    setp.ne.s32 %p3, %r30, 0;
    mov.f32 %f1, 0f00000000;
    @%p3 ld.global.f32 %f1, [%rd5];
    add.f32 %f2, %f2, %f1;
    sub.s32 %r21, %r20, %r5;
    mul.wide.s32 %rd4, %r21, 4;
    add.s64 %rd5, %rd1, %rd4;
    mov.u32 %r30, 1;
    add.s32 %r20, %r20, %r5;
    setp.lt.s32 %p2, %r20, %r9;
    @%p2 bra LOOP;
DONE:
    bar.sync 0;
    mul.wide.u32 %rd6, %r1, 4;
    add.s64 %rd7, %rd2, %rd6;
    st.global.f32 [%rd7], %f2;
"""
    m = ptxjit.Module(snippet_kernel(body, [("u64", "a"), ("u64", "out"), ("u32", "n")]), "late_def.ptx")
    a = np.ones(4096, np.float32)
    out = np.zeros(64, np.float32)
    with pytest.raises(ptxjit.KernelFault) as ei:
        m.get_function("k")(2, 64, (a, out, 4096))
    e = ei.value
    assert e.allocation == "k_param_0" or "before" in str(e), str(e)
    assert tuple(e.thread) == (0, 0, 0) and tuple(e.cta) == (0, 0, 0), str(e)


def test_a_register_read_before_its_definition_faults_cleanly():
    """grids.ptx with a load moved above its address's definition: the address register is read before its
    one definition, so it is 0 there.  A hoisted bounds check that computed the address from that
    definition would pass while the load went to address 0; such registers are not recomputed from their
    definition (passes/remat.py), and the launch raises KernelFault at the load, naming address 0."""
    from tests.ptxsnip import snippet_kernel

    body = """
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    ld.global.f32 %f1, [%rd3];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd3, %rd2, %rd4;
    st.global.f32 [%rd3], %f1;
"""
    k = ptxjit.Module(snippet_kernel(body, [("u64", "out")]), "early.ptx").get_function("k")
    out = np.zeros(256, np.float32)
    with pytest.raises(ptxjit.KernelFault, match=r"early\.ptx:\d+:\d+.*ld\.global\.f32.*address 0x0 "):
        k(2, 128, (out,))


TWO_REGIONS = """
    ld.param.u64 %rd1, [a];
    ld.param.u32 %r1, [k1];
    ld.param.u32 %r8, [k2];
    mov.u32 %r2, %tid.x;
    mul.lo.s32 %r5, %r2, %r1;
    mul.wide.s32 %rd2, %r5, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    bar.sync 0;
    mul.lo.s32 %r6, %r2, %r8;
    mul.wide.s32 %rd4, %r6, 4;
    add.s64 %rd5, %rd1, %rd4;
    st.global.f32 [%rd5], %f1;
"""

_TWO_REGIONS_CHILD = """
import sys, numpy as np, ptxjit
from tests.ptxsnip import snippet_kernel
from tests.test_memory_safety import TWO_REGIONS
ptx = snippet_kernel(TWO_REGIONS, [("u64", "a"), ("u32", "k1"), ("u32", "k2")])
k = ptxjit.Module(ptx, "two.ptx").get_function("k")
a = np.zeros(64, np.float32)
try:
    k(1, 64, (a, np.int32(1), np.int32(68174085)))
except ptxjit.KernelFault as e:
    print("fault", tuple(e.thread), "st.global" in str(e))
    sys.exit(0)
print("no fault")
"""


def test_each_grid_check_has_its_own_verdict():
    """Two regions (a barrier between them) each with an index whose coefficient is a parameter: the first,
    tid * 1, is linear; the second, tid * k with 63 k = 2**32 + 59, wraps in 32 bits so that threads 0 and
    63 (the corners) store in bounds and every other thread 8 GiB away.  The launch record once kept one
    verdict for all grid checks: the second region ran unchecked on the first's and the process crashed.
    (In a child process: a regression is a crash.)"""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-c", _TWO_REGIONS_CHILD], cwd=root, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PTXJIT_TIERS": "0"})
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.split() == ["fault", "(1,", "0,", "0)", "True"], r.stdout


def test_pointer_with_its_memory_allows_all_of_it(mod):
    """Pointer(address, memory=array): the bounds are the array's, whichever byte the address names (CUDA's
    memcheck allows the whole allocation behind an interior pointer)."""
    k = mod.get_function("shifted_read")
    backing = np.arange(2 * N, dtype=np.float32)
    middle = ptxjit.Pointer(backing.ctypes.data + 4 * N, memory=backing)
    out = np.zeros(N, np.float32)
    _launch(k, (middle, out, N, -N))  # reads backing[0:N] behind the pointer
    np.testing.assert_array_equal(out, backing[:N])
    _launch(k, (middle, out, N, 0))
    np.testing.assert_array_equal(out, backing[N:])
    with pytest.raises(ptxjit.KernelFault) as ei:
        _launch(k, (middle, out, N, 1))  # the last thread reads backing[2N]
    assert "0 bytes past the end of the memory argument 0 ('shifted_read_param_0') points into (8000 bytes)" \
        in str(ei.value)
    with pytest.raises(ptxjit.KernelFault):
        _launch(k, (middle, out, N, -N - 1))  # the first thread reads backing[-1]


def test_pointer_into_no_memory_faults(mod):
    k = mod.get_function("shifted_read")
    a = np.arange(N, dtype=np.float32)
    out = np.zeros(N, np.float32)
    with pytest.raises(ptxjit.KernelFault):
        _launch(k, (ptxjit.Pointer(a.ctypes.data, memory=np.empty(0, np.uint8)), out, N, 0))
    assert not out.any()


def test_pointer_memory_must_hold_the_address():
    a = np.zeros(16, np.float32)
    with pytest.raises(ValueError, match="outside its memory"):
        ptxjit.Pointer(a.ctypes.data + 65, memory=a)
    with pytest.raises(TypeError, match="NumPy array or DeviceArray"):
        ptxjit.Pointer(a.ctypes.data, memory=b"x" * 64)
    assert ptxjit.Pointer(a.ctypes.data + 64, memory=ptxjit.DeviceArray(a)).memory.nbytes == 64  # one past the end


def test_checking_tools_watch_a_pointers_memory(mod):
    """ptxjit.check treats a Pointer's memory as an array argument: memcheck's report names it, and the
    trace's snapshot restores it (the arrays end as one launch leaves them)."""
    k = mod.get_function("shifted_copy")
    a = np.arange(N, dtype=np.float32)
    backing = np.full(2 * N, -1.0, np.float32)
    middle = ptxjit.Pointer(backing.ctypes.data + 4 * N, memory=backing)
    reports = ptxjit.check(k, (N + 127) // 128, 128, (a, middle, N, -N), tools=("memcheck", "racecheck"))
    assert reports == []
    np.testing.assert_array_equal(backing[:N], a)  # written behind the pointer, once
    assert (backing[N:] == -1).all()
    (r,) = ptxjit.check(k, (N + 127) // 128, 128, (a, middle, N, 1), tools=("memcheck",))
    assert r.kind == "out-of-bounds" and r.access == "write" and r.size == 4
    assert "past the end of the memory argument 1" in r.format()
