"""The launch fast path (api.Kernel.__call__, runtime/args.ArgPacker, runtime/launch.run_packed): what
is planned once per kernel (argument packing, the launch memory's layout, the translations used, the
dtypes a parameter has accepted) must never stand in for a check of this launch's values: a new dtype,
shape, read-only flag or environment variable counts at the next launch.  Functional tests only (no
timings)."""

from __future__ import annotations

import struct
import threading
import warnings

import numpy as np
import pytest

import ptxjit
from ptxjit.runtime import args as argsmod

PTX = r"""
.version 7.0
.target sm_80
.address_size 64

.visible .entry store_all(
    .param .u64 out,
    .param .u8 a,
    .param .s16 b,
    .param .u32 c,
    .param .s64 d,
    .param .f32 e,
    .param .f64 f,
    .param .f16 h,
    .param .align 8 .b8 agg[16]
)
{
    .reg .b16 %rs<4>;
    .reg .b32 %r<2>;
    .reg .f32 %f<2>;
    .reg .f64 %fd<2>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    ld.param.u8 %rs1, [a];
    st.global.u8 [%rd2], %rs1;
    ld.param.s16 %rs2, [b];
    st.global.u16 [%rd2+2], %rs2;
    ld.param.u32 %r1, [c];
    st.global.u32 [%rd2+4], %r1;
    ld.param.s64 %rd3, [d];
    st.global.u64 [%rd2+8], %rd3;
    ld.param.f32 %f1, [e];
    st.global.f32 [%rd2+16], %f1;
    ld.param.f64 %fd1, [f];
    st.global.f64 [%rd2+24], %fd1;
    ld.param.b16 %rs3, [h];
    st.global.b16 [%rd2+32], %rs3;
    ld.param.u64 %rd4, [agg];
    ld.param.u64 %rd5, [agg+8];
    st.global.u64 [%rd2+40], %rd4;
    st.global.u64 [%rd2+48], %rd5;
    ret;
}

.visible .entry put(
    .param .u64 out,
    .param .u32 i,
    .param .f32 v
)
{
    .reg .b32 %r<2>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [i];
    ld.param.f32 %f1, [v];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.f32 [%rd4], %f1;
    ret;
}

.visible .entry add_to(
    .param .u64 x,
    .param .u32 n,
    .param .f32 v
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [x];
    ld.param.u32 %r1, [n];
    ld.param.f32 %f1, [v];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    add.f32 %f2, %f2, %f1;
    st.global.f32 [%rd4], %f2;
DONE:
    ret;
}
"""


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module(PTX, "latency.ptx")


def _agg(a: int, b: int) -> bytes:
    return np.array([a, b], np.uint64).tobytes()


def _unpack(out: np.ndarray) -> tuple:
    return (int(out[0]), int(out[2:4].view(np.int16)[0]), int(out[4:8].view(np.uint32)[0]),
            int(out[8:16].view(np.int64)[0]), float(out[16:20].view(np.float32)[0]),
            float(out[24:32].view(np.float64)[0]), float(out[32:34].view(np.float16)[0]),
            out[40:56].view(np.uint64).tolist())


# ------------------------------------------------------------------ packing: fast and slow cases agree
ARGS = [
    (200, -3, 0xDEADBEEF, -5, 1.5, 2.25, 0.5, _agg(1, 2)),  # Python ints and floats: the fast cases
    (np.uint8(7), np.int16(-300), np.uint32(9), np.int64(-(2 ** 63)), np.float32(0.25), np.float64(-1.0),
     np.float16(2.0), _agg(3, 4)),  # NumPy scalars: the full checks
    (True, False, -1, 2 ** 64 - 1, 3, 4, -0.0, np.array([5, 6], np.uint64)),  # bools, ints for floats
]


@pytest.mark.parametrize("vals", ARGS)
def test_every_parameter_type_reaches_the_kernel(mod, vals):
    out = np.zeros(56, np.uint8)
    mod.get_function("store_all")(1, 1, (out, *vals))
    a, b, c, d, e, f, h, agg = vals
    assert _unpack(out) == (int(a), int(b), int(c) & 0xFFFFFFFF, int(np.uint64(int(d) & (2 ** 64 - 1)).view(np.int64)),
                            float(np.float32(e)), float(f), float(np.float16(h)),
                            np.frombuffer(bytes(agg), np.uint64).tolist())


@pytest.mark.parametrize("vals", ARGS)
@pytest.mark.parametrize("checked", [False, True])
def test_packer_matches_pack_arguments(mod, vals, checked):
    """The planned packing gives the bytes runtime/args.pack_arguments gives (the reference)."""
    k = mod.get_function("store_all")
    out = np.zeros(56, np.uint8)
    args = (out, *vals)
    ref, _keep = argsmod.pack_arguments(k.name, k.fn.params, args, k._layout, k._access)
    for _ in range(2):  # the second time with what the first one learnt
        values, ranges, patches = k._packer.pack(args, checked)
        buf = bytearray(k._packer.size)
        struct.pack_into("<" + k._packer.format, buf, 0, *values)
        for off, data in patches or []:
            buf[off:off + len(data)] = data
        assert bytes(buf) == ref.tobytes()
        if checked:  # [lo, len) of the 64-bit parameters: out, d, f
            assert ranges == [out.ctypes.data, out.nbytes, 0, 0, 0, 0]
        else:
            assert ranges is None


@pytest.mark.parametrize("bad, err", [
    ((np.zeros(56, np.uint8), 256, 0, 0, 0, 0.0, 0.0, 0.0, _agg(0, 0)), r"argument 1 .*value 256 is out of range"),
    ((np.zeros(56, np.uint8), 0, 2 ** 16, 0, 0, 0.0, 0.0, 0.0, _agg(0, 0)), r"argument 2 .*out of range"),
    ((np.zeros(56, np.uint8), 0, 0, 2 ** 32, 0, 0.0, 0.0, 0.0, _agg(0, 0)), r"argument 3 .*out of range"),
    ((np.zeros(56, np.uint8), 0, 0, 0, 2 ** 64, 0.0, 0.0, 0.0, _agg(0, 0)), r"argument 4 .*out of range"),
    ((np.zeros(56, np.uint8), 1.0, 0, 0, 0, 0.0, 0.0, 0.0, _agg(0, 0)), r"argument 1 .*expected an integer"),
    ((np.zeros(56, np.uint8), None, 0, 0, 0, 0.0, 0.0, 0.0, _agg(0, 0)), r"argument 1 .*got None"),
    ((np.zeros(56, np.uint8), 0, 0, 0, 0, "1", 0.0, 0.0, _agg(0, 0)), r"argument 5 .*expected a float"),
    ((np.zeros(56, np.uint8), 0, 0, 0, 0, 0.0, 0.0, 0.0, b"short"), r"argument 8 .*expected 16 bytes"),
    ((3, 0, 0, 0, 0, 0.0, 0.0, 0.0, _agg(0, 0)), r"argument 0 .*pointer the kernel dereferences"),
    ((np.zeros(56, np.uint8), np.zeros(2), 0, 0, 0, 0.0, 0.0, 0.0, _agg(0, 0)), r"argument 1 .*64-bit pointer"),
])
def test_bad_values_are_refused_after_good_launches(mod, bad, err):
    k = mod.get_function("store_all")
    k(1, 1, (np.zeros(56, np.uint8), *ARGS[0]))
    with pytest.raises(TypeError, match=err):
        k(1, 1, bad)


def test_argument_count_and_container(mod):
    k = mod.get_function("put")
    with pytest.raises(TypeError, match=r"takes 3 arguments"):
        k(1, 1, (np.zeros(4, np.float32), 1))
    with pytest.raises(TypeError, match=r"args must be a tuple or list"):
        k(1, 1, np.zeros(3))
    x = np.zeros(4, np.float32)
    k(1, 1, [x, 2, 5.0])  # a list is fine
    assert x[2] == 5.0


def test_float_too_large_for_f32(mod):
    with pytest.raises(OverflowError):
        mod.get_function("put")(1, 1, (np.zeros(4, np.float32), 0, 1e300))
    with pytest.raises(OverflowError):
        mod.get_function("put")(1, 1, (np.zeros(4, np.float32), 0, 10 ** 400))


# ------------------------------------------------------------------ arrays: checked at every launch
def test_new_shape_gets_its_own_range(mod):
    k = mod.get_function("put")
    x = np.zeros(4, np.float32)
    k(1, 1, (x, 3, 1.0))
    assert x[3] == 1.0
    big = np.zeros(8, np.float32)
    small = big[:2]  # same dtype, a smaller array: index 3 is past its end
    with pytest.raises(ptxjit.KernelFault,
                       match=r"past the end of argument 0 \('out'\) \(float32 array of 2 elements\)"):
        k(1, 1, (small, 3, 1.0))
    assert not big.any()
    k(1, 1, (big, 3, 2.0))
    assert big[3] == 2.0


def test_read_only_after_writable_is_refused(mod):
    k = mod.get_function("put")
    x = np.zeros(4, np.float32)
    k(1, 1, (x, 0, 1.0))
    x.flags.writeable = False
    with pytest.raises(TypeError, match="read-only"):
        k(1, 1, (x, 1, 1.0))
    assert x[1] == 0


def test_non_contiguous_after_contiguous_is_refused(mod):
    k = mod.get_function("put")
    x = np.zeros(8, np.float32)
    k(1, 1, (x, 0, 1.0))
    with pytest.raises(TypeError, match="contiguous"):
        k(1, 1, (x[::2], 1, 1.0))
    f = np.zeros((2, 2), np.float32, order="F")
    k(1, 1, (f, 1, 3.0))  # Fortran order is contiguous: accepted
    assert f.ravel(order="K")[1] == 3.0


def test_object_array_after_numeric_is_refused(mod):
    k = mod.get_function("put")
    k(1, 1, (np.zeros(4, np.float32), 0, 1.0))
    with pytest.raises(TypeError, match="Python objects"):
        k(1, 1, (np.zeros(4, object), 0, 1.0))


def test_dtype_change_warns_every_time_it_is_new(mod):
    """A dtype that earned a width warning is never taken for a silent one: clearing the
    warned-once set makes the next launch warn again."""
    k = mod.get_function("put")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k(1, 1, (np.zeros(4, np.float32), 0, 1.0))
        k(1, 1, (np.zeros(4, np.float32), 0, 1.0))
    for _ in range(2):
        argsmod._warned.clear()
        with pytest.warns(ptxjit.PtxjitWarning, match="float64 array"):
            k(1, 1, (np.zeros(4, np.float64), 0, 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k(1, 1, (np.zeros(4, np.float64), 0, 1.0))  # once per dtype, as before
        k(1, 1, (np.zeros(4, np.int32), 0, 1.0))  # same width: no verdict on the kind


def test_device_array_and_pointer(mod):
    k = mod.get_function("put")
    d = ptxjit.zeros(4, np.float32)
    k(1, 1, (d, 1, 4.0))
    assert d.copy_to_host()[1] == 4.0
    x = np.zeros(4, np.float32)
    k(1, 1, (ptxjit.Pointer(x.ctypes.data), 2, 5.0))  # the caller vouches: no range check
    assert x[2] == 5.0
    k(1, 1, (x, 3, 6.0))  # and back to an array
    assert x.tolist() == [0, 0, 5, 6]


def test_array_address_matches_numpy():
    base = np.arange(100, dtype=np.float32)
    for a in (base, base[7:], base[::-1], base.reshape(10, 10).T, base.reshape(10, 10)[3], np.zeros(0),
              np.zeros((), np.int8), np.asfortranarray(base.reshape(10, 10)), ptxjit.zeros(3).array):
        assert argsmod.array_address(a) == a.ctypes.data


# ------------------------------------------------------------------ launch shape, shared memory
def test_shape_checks_stay(mod):
    k = mod.get_function("put")
    x = np.zeros(4, np.float32)
    for grid, block, exc in ((0, 1, ValueError), (1, 0, ValueError), (1, 1025, ValueError),
                             (2 ** 31, 1, ValueError), (1, (1, 2, 3, 4), TypeError), (1.0, 1, TypeError)):
        with pytest.raises(exc):
            k(grid, block, (x, 0, 1.0))
    k(np.int64(1), (1, 1), (x, 0, 1.0))
    k((1, 1, 1), [1], (x, 1, 1.0))
    assert x[:2].tolist() == [1, 1]


def test_shared_mem_argument_checks_stay(mod):
    k = mod.get_function("put")
    x = np.zeros(4, np.float32)
    k(1, 1, (x, 0, 1.0), shared_mem=np.int64(0))
    k(1, 1, (x, 0, 1.0), shared_mem=16)
    for bad in (-1, "1", 1.5):
        with pytest.raises(ValueError, match="shared_mem"):
            k(1, 1, (x, 0, 1.0), shared_mem=bad)
    with pytest.raises(ValueError, match="exceed the limit"):
        k(1, 1, (x, 0, 1.0), shared_mem=argsmod.MAX_SHARED_PER_BLOCK + 1)


# ------------------------------------------------------------------ environment read at every launch
def _oob(mod, **kw) -> tuple[bool, np.ndarray]:
    """Store one element past the end of a view: faults when checked, lands in the parent otherwise."""
    big = np.zeros(8, np.float32)
    try:
        mod.get_function("put")(1, 1, (big[:4], 4, 7.0), **kw)
    except ptxjit.KernelFault:
        return True, big
    return False, big


def test_unchecked_environment_set_after_first_launch(mod, monkeypatch):
    monkeypatch.delenv("PTXJIT_UNCHECKED", raising=False)
    monkeypatch.delenv("PTXJIT_CHECKED", raising=False)
    assert _oob(mod)[0]
    monkeypatch.setenv("PTXJIT_UNCHECKED", "1")
    faulted, big = _oob(mod)
    assert not faulted and big[4] == 7.0
    assert _oob(mod, checked=True)[0]  # the argument wins
    monkeypatch.setenv("PTXJIT_UNCHECKED", "0")
    assert _oob(mod)[0]
    monkeypatch.delenv("PTXJIT_UNCHECKED")
    assert _oob(mod)[0]
    monkeypatch.setenv("PTXJIT_CHECKED", "0")
    assert not _oob(mod)[0]
    monkeypatch.setenv("PTXJIT_CHECKED", "1")
    assert _oob(mod)[0]
    assert not _oob(mod, unchecked=True)[0]
    assert not _oob(mod, checked=False)[0]


def test_timeout_environment_set_after_first_launch(mod, monkeypatch):
    monkeypatch.delenv("PTXJIT_TIMEOUT", raising=False)
    x = np.zeros(4, np.float32)
    mod.get_function("put")(1, 1, (x, 0, 1.0))
    monkeypatch.setenv("PTXJIT_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="PTXJIT_TIMEOUT"):
        mod.get_function("put")(1, 1, (x, 0, 1.0))
    monkeypatch.setenv("PTXJIT_TIMEOUT", "30")
    mod.get_function("put")(1, 1, (x, 1, 1.0))
    assert x[:2].tolist() == [1, 1]


def test_each_launch_counts_as_a_translation_cache_hit(mod):
    k = mod.get_function("put")
    x = np.zeros(4, np.float32)
    k(1, 1, (x, 0, 1.0))
    before = ptxjit.cache_stats()["memory_hits"]
    for _ in range(3):
        k(1, 1, (x, 0, 1.0))
    assert ptxjit.cache_stats()["memory_hits"] == before + 3


def test_globals_buffer_follows_the_module():
    ptx = PTX.replace(".address_size 64\n", ".address_size 64\n.global .align 4 .f32 gval;\n", 1)
    ptx = ptx.replace("    ld.param.f32 %f1, [v];\n    cvta", "    ld.global.f32 %f1, [gval];\n    cvta", 1)
    m = ptxjit.Module(ptx)
    k = m.get_function("put")
    x = np.zeros(4, np.float32)
    m.get_global("gval")[...] = 2.5
    k(1, 1, (x, 0, 0.0))
    m.get_global("gval")[...] = 3.5
    k(1, 1, (x, 1, 0.0))
    assert x[:2].tolist() == [2.5, 3.5]


# ------------------------------------------------------------------ concurrency
def test_concurrent_launches_from_eight_threads(mod):
    """12,800 launches from 8 threads, 1-block and multi-block, checked and unchecked, fast and slow
    argument cases: every launch packs its own record and sees its own arguments."""
    k = mod.get_function("add_to")
    errors: list[BaseException] = []
    results: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def launcher(t: int) -> None:
        try:
            n = 64 + t
            x = np.zeros(n, np.float32)
            expect = np.zeros(n, np.float32)
            for j in range(1600):
                v = float(t + 1) if j % 3 else np.float32(t + 1)  # Python float (fast) or NumPy (slow)
                if j % 50 == 0:  # several blocks: the worker pool
                    k((n + 31) // 32, 32, (x, n, v), checked=j % 100 == 0)
                    expect += np.float32(v)
                else:  # one block of n threads, inline
                    m = j % n + 1
                    k(1, n, (x, m, v), unchecked=j % 2 == 0)
                    expect[:m] += np.float32(v)
            results[t] = (x, expect)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=launcher, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors[0]
    assert len(results) == 8
    for x, expect in results.values():
        np.testing.assert_array_equal(x, expect)


BITS_PTX = r"""
.version 7.8
.target sm_90
.address_size 64
.visible .entry bits(.param .u64 out, .param .bf16 x, .param .b16 y, .param .pred p)
{
    .reg .b16 %rs<3>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    ld.param.b16 %rs1, [x];
    st.global.b16 [%rd2], %rs1;
    ld.param.b16 %rs2, [y];
    st.global.b16 [%rd2+2], %rs2;
    ld.param.u8 %rs2, [p];
    st.global.u8 [%rd2+4], %rs2;
    ret;
}
"""


def test_bf16_bits_and_pred_parameters():
    """.bf16 is a float (the full conversion), .b16 and .pred integers (.pred only 0 or 1)."""
    k = ptxjit.Module(BITS_PTX).get_function("bits")
    out = np.zeros(8, np.uint8)
    for _ in range(2):
        k(1, 1, (out, 1.5, 0xABCD, 1))
        assert out[:2].view(np.uint16)[0] == 0x3FC0 and out[2:4].view(np.uint16)[0] == 0xABCD and out[4] == 1
        k(1, 1, (out, -2, -1, False))
        assert out[:2].view(np.uint16)[0] == 0xC000 and out[2:4].view(np.uint16)[0] == 0xFFFF and out[4] == 0
    with pytest.raises(TypeError, match=r"argument 3 .*value 2 is out of range \[0, 1\]"):
        k(1, 1, (out, 1.5, 0, 2))
    with pytest.raises(TypeError, match=r"argument 2 .*out of range"):
        k(1, 1, (out, 1.5, 1 << 16, 0))
