"""cp.async.bulk.tensor (TMA) tile loads and stores with ptxjit's tensor maps (lower/rules/tma.py), against NumPy:
a box at (c0, c1, ...) innermost first, elementStrides, zeros outside the tensor, stores that skip what lies
outside, and the 32/64/128-byte swizzles (the 16-byte units of each 128-byte line XORed with the line index
bits, CUTLASS's Swizzle<B, 4, 3>)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.lower.rules.tma import encode_tensor_map

DATA = Path(__file__).parent / "data" / "async" / "tma_ops.ptx"
MODES = [pytest.param({"checked": True}, id="checked"), pytest.param({"unchecked": True}, id="unchecked")]


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA)


def box_of(t: np.ndarray, coords, box, estr=None) -> np.ndarray:
    """The box of tensor t (NumPy order) at `coords` (innermost first), zeros outside t, as TMA lays it out."""
    rank = t.ndim
    estr = estr or [1] * rank
    counts = [-(-b // e) for b, e in zip(box, estr, strict=True)]
    out = np.zeros(counts[::-1], t.dtype)
    for idx in np.ndindex(*counts[::-1]):  # NumPy order: outermost first
        g = [coords[d] + idx[rank - 1 - d] * estr[d] for d in range(rank)]  # innermost first
        if all(0 <= g[d] < t.shape[rank - 1 - d] for d in range(rank)):
            out[idx] = t[tuple(g[::-1])]
    return out


def swizzled(raw: np.ndarray, swizzle: int) -> np.ndarray:
    """The dense box bytes `raw` placed at swizzled shared offsets (box at a 1024-byte aligned address)."""
    if not swizzle:
        return raw
    bits = {32: 1, 64: 2, 128: 3}[swizzle]
    off = np.arange(len(raw))
    dst = off ^ ((off >> 3) & (((1 << bits) - 1) << 4))
    out = np.zeros_like(raw)
    out[dst] = raw
    return out


def _load(mod, name, tmap, coords, nbytes, mode) -> np.ndarray:
    out = np.zeros(nbytes // 4, np.uint32)
    args = [tmap, *[np.int32(c) for c in coords], np.uint32(nbytes), out]
    mod.get_function(name)(1, 128, args, **mode)
    return out.view(np.uint8)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("coords", [(8, 4), (-5, -3), (40, 35), (-16, 0)])
def test_tma_load_2d(mod, mode, coords):
    rng = np.random.default_rng(1)
    t = rng.standard_normal((40, 52)).astype(np.float32)  # rows of 208 bytes: a multiple of 16
    box = (16, 8)
    tmap = encode_tensor_map(t, box)
    got = _load(mod, "tma_load_2d", tmap, coords, 16 * 8 * 4, mode)
    assert np.array_equal(got, box_of(t, coords, box).view(np.uint8).ravel())


@pytest.mark.parametrize("mode", MODES)
def test_tma_load_1d_3d_5d_and_element_strides(mod, mode):
    rng = np.random.default_rng(2)
    t1 = rng.integers(0, 2**16, 100, dtype=np.uint16)
    got = _load(mod, "tma_load_1d", encode_tensor_map(t1, (24,)), (90,), 48, mode)
    assert np.array_equal(got, box_of(t1, (90,), (24,)).view(np.uint8))
    t3 = rng.integers(0, 2**32, (5, 6, 12), dtype=np.uint32)
    box, estr = (8, 4, 3), (1, 2, 3)  # outer dimensions traversed with strides 2 and 3
    got = _load(mod, "tma_load_3d", encode_tensor_map(t3, box, element_strides=estr), (6, 1, -1), 8 * 2 * 1 * 4,
                mode)
    assert np.array_equal(got, box_of(t3, (6, 1, -1), box, estr).view(np.uint8).ravel())
    t5 = rng.integers(0, 2**8, (3, 2, 4, 5, 16), dtype=np.uint8)
    box5 = (16, 3, 2, 2, 2)
    got = _load(mod, "tma_load_5d", encode_tensor_map(t5, box5), (0, 3, 3, 1, 2), 16 * 3 * 2 * 2 * 2, mode)
    assert np.array_equal(got, box_of(t5, (0, 3, 3, 1, 2), box5).view(np.uint8).ravel())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("swizzle", [32, 64, 128])
def test_tma_load_swizzled(mod, mode, swizzle):
    rng = np.random.default_rng(swizzle)
    t = rng.integers(0, 2**16, (32, 80), dtype=np.uint16)
    box = (swizzle // 2, 16)  # inner box = the swizzle span
    nbytes = box[0] * box[1] * 2
    got = _load(mod, "tma_load_2d", encode_tensor_map(t, box, swizzle=swizzle), (3, 5), nbytes, mode)
    assert np.array_equal(got, swizzled(box_of(t, (3, 5), box).view(np.uint8).ravel(), swizzle))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("coords", [(4, 2), (36, 30), (-8, -5)])
def test_tma_store_2d(mod, mode, coords):
    rng = np.random.default_rng(4)
    t = np.full((36, 44), -1, np.int32)
    box = (16, 8)
    src = rng.integers(0, 2**31, (8, 16), dtype=np.int32)
    mod.get_function("tma_store_2d")(1, 128, (encode_tensor_map(t, box), np.int32(coords[0]), np.int32(coords[1]),
                                              np.uint32(src.nbytes), src), **mode)
    want = np.full_like(t, -1)
    for r in range(8):
        for c in range(16):
            y, x = coords[1] + r, coords[0] + c
            if 0 <= y < t.shape[0] and 0 <= x < t.shape[1]:
                want[y, x] = src[r, c]
    assert np.array_equal(t, want)


def test_tensor_map_validation():
    a = np.zeros((8, 10), np.float32)  # rows of 40 bytes: not a multiple of 16
    with pytest.raises(ValueError, match="multiples of 16"):
        encode_tensor_map(a, (4, 4))
    b = np.zeros((8, 64), np.float32)
    with pytest.raises(ValueError, match="swizzle span"):
        encode_tensor_map(b, (64, 4), swizzle=128)
    with pytest.raises(ValueError, match="box_dim"):
        encode_tensor_map(b, (4, 300))
    with pytest.raises(ValueError, match="2 entries"):
        encode_tensor_map(b, (4,))


def test_foreign_tensor_map_traps(mod):
    """128 bytes that are no ptxjit tensor map (a CUtensorMap from the driver, garbage) stop the kernel with an
    error naming the instruction, rather than copying from wherever they point."""
    with pytest.raises(ptxjit.KernelTrap) as ei:
        _load(mod, "tma_load_2d", bytes(128), (0, 0), 64, {})
    assert "tma_ops.cu" in str(ei.value)


def test_wild_tensor_map_pointer_faults():
    """A tensor-map address outside the parameters and the arrays is a memory fault (checked launches)."""
    from tests.ptxsnip import snippet_kernel

    body = """    ld.param.u64 %rd1, [out];
    mov.u32 %r1, 0;
    cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r1}], [%r1];"""
    ptx = snippet_kernel(body, [("u64", "out")]).replace(".target sm_80", ".target sm_90a")
    k = ptxjit.Module(ptx).get_function("k")
    with pytest.raises(ptxjit.KernelFault):
        k(1, 1, (0x1000,), checked=True)


def test_prefetches_are_hints():
    """cp.async.bulk.prefetch(.tensor).L2 only warm the GPU's L2: they run and change nothing."""
    from tests.ptxsnip import snippet_kernel

    body = """    ld.param.u64 %rd1, [out];
    mov.u32 %r1, 0;
    cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%rd1, {%r1, %r1}];
    cp.async.bulk.prefetch.L2.global [%rd1], 64;"""
    ptx = snippet_kernel(body, [("u64", "out")]).replace(".target sm_80", ".target sm_90a")
    a = np.arange(16, dtype=np.uint32)
    ptxjit.Module(ptx).get_function("k")(1, 1, (a,))
    assert np.array_equal(a, np.arange(16, dtype=np.uint32))


def _reduced(t: np.ndarray, src: np.ndarray, coords, fn) -> np.ndarray:
    """t with the box at `coords` (innermost first) replaced by fn(t, src) where it lies inside t."""
    want = t.copy()
    rows, cols = src.shape
    for r in range(rows):
        for c in range(cols):
            y, x = coords[1] + r, coords[0] + c
            if 0 <= y < t.shape[0] and 0 <= x < t.shape[1]:
                want[y, x] = fn(t[y, x], src[r, c])
    return want


def _f32(x):
    return np.float32(x)


REDUCTIONS = [  # (which, dtype, op on NumPy scalars)
    (0, np.int32, lambda a, v: np.int32(a + v)),  # |a|, |v| < 2**30: no wrap
    (1, np.int32, min),
    (2, np.float16, lambda a, v: v if _f32(v) > _f32(a) else a),
    (3, np.uint64, lambda a, v: a ^ v),
    (4, np.uint32, lambda a, v: np.uint32(0) if a >= v else np.uint32(a + 1)),
    (0, np.float32, lambda a, v: np.float32(a + v)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("which,dtype,fn", REDUCTIONS, ids=["add_s32", "min_s32", "max_f16", "xor_u64", "inc_u32",
                                                             "add_f32"])
@pytest.mark.parametrize("coords", [(4, 2), (-5, 30)])
def test_tma_reduce_2d(mod, mode, which, dtype, fn, coords):
    """cp.reduce.async.bulk.tensor: each in-bounds box element reduced into the tensor (normal floats only)."""
    rng = np.random.default_rng(which)
    esize = np.dtype(dtype).itemsize
    shape = (36, 64 // esize * 2)  # rows of 128 bytes
    if np.dtype(dtype).kind == "f":
        t = rng.uniform(-100, 100, shape).astype(dtype)
        src = rng.uniform(-100, 100, (8, 32 // esize)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        lo, hi = (0, 40) if which == 4 else (max(info.min, -2**30), min(info.max, 2**30))
        t = rng.integers(lo, hi, shape, dtype=dtype)
        src = rng.integers(lo, hi, (8, 32 // esize), dtype=dtype)
    box = (src.shape[1], src.shape[0])
    want = _reduced(t, src, coords, fn)
    mod.get_function("tma_reduce_2d")(1, 128, (encode_tensor_map(t, box), np.int32(coords[0]), np.int32(coords[1]),
                                               np.uint32(src.nbytes), src.view(np.uint32), np.int32(which)), **mode)
    assert np.array_equal(t.view(np.uint8), want.view(np.uint8))


def test_tma_reduce_type_mismatch_traps(mod):
    """A reduction the map's element type does not take (inc on f32) stops the kernel at the instruction."""
    t = np.zeros((8, 32), np.float32)
    src = np.zeros((8, 16), np.float32)
    with pytest.raises(ptxjit.KernelTrap) as ei:
        mod.get_function("tma_reduce_2d")(1, 32, (encode_tensor_map(t, (16, 8)), np.int32(0), np.int32(0),
                                                  np.uint32(src.nbytes), src.view(np.uint32), np.int32(4)))
    assert "tma_ops.cu" in str(ei.value)
    assert not t.any()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ntiles", [1, 2, 7])
def test_tma_pipeline(mod, mode, ntiles):
    """A producer thread streams tiles through a 2-stage ring (full/empty mbarriers, parity flipping each
    reuse) to 96 consumer threads that spin on try_wait: every tile arrives, none is overwritten early."""
    rng = np.random.default_rng(ntiles)
    t = rng.integers(-50, 50, (8 * ntiles, 32)).astype(np.float32)  # small integers: exact float sums
    out = np.zeros(96, np.float32)
    mod.get_function("tma_pipeline")(1, 128, (encode_tensor_map(t, (32, 8)), np.int32(ntiles), out), **mode)
    tiles = t.reshape(ntiles, 8, 32)
    want = np.array([tiles[:, j // 32::3, j % 32].sum() for j in range(96)], np.float32)
    assert np.array_equal(out, want)
