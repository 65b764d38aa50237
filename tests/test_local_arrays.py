"""Per-thread local arrays under memory safety (checked launches, the default): a correct kernel that keeps
an array in local memory runs and matches NumPy, and an index past the end of one is a KernelFault.

Real input: nvcc's PTX for tests/data/median_filter.cu (regen.sh) at -O3 (ld.local/st.local through
`%SPL + offset`; a `__noinline__` callee reaching its caller's array through `cvta.to.local` of a generic
pointer) and with -G (generic ld/st through `%SP = cvta.local %SPL`).  The references are NumPy's: medians
of edge-clamped sliding windows, bincount, a stable argsort; and CUDA's meaning of __isLocal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from tests.markers import slow

DATA = Path(__file__).parent / "data"
W, H = 37, 21  # an image that leaves the last blocks partly idle
BLOCK = (16, 8)
GRID = ((W + BLOCK[0] - 1) // BLOCK[0], (H + BLOCK[1] - 1) // BLOCK[1])
N = 100  # threads of the 1-D kernels (one block of 128, 28 idle)

# the 5x5 median: nvcc unrolls its insertion sort into 24 inner loops; its checked translation takes
# LLVM tens of seconds, so it runs only with PTXJIT_TEST_SLOW=1


@pytest.fixture(scope="module")
def mod_o3() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA / "median_filter.ptx")


@pytest.fixture(scope="module")
def mod_g() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA / "median_filter_G.ptx")


@pytest.fixture(params=["O3", "G"])
def mod(request, mod_o3, mod_g) -> ptxjit.Module:
    """Both address forms: -O3's ld.local/st.local and -G's generic accesses through cvta.local."""
    return mod_o3 if request.param == "O3" else mod_g


def _image(seed: int = 0) -> np.ndarray:
    img = np.random.default_rng(seed).standard_normal((H, W)).astype(np.float32)
    img[3, :] = img[3, 0]  # equal values: the sorts' comparisons tie
    return img


def _median_ref(img: np.ndarray, k: int) -> np.ndarray:
    """The k x k median with edge clamping (the kernels' `at`)."""
    pad = np.pad(img, k // 2, mode="edge")
    return np.median(np.lib.stride_tricks.sliding_window_view(pad, (k, k)), axis=(-2, -1)).astype(np.float32)


def _median(mod: ptxjit.Module, name: str, img: np.ndarray) -> np.ndarray:
    out = np.full_like(img, np.nan)
    mod.get_function(name)(GRID, BLOCK, (img, out, np.int32(W), np.int32(H)), checked=True)
    return out


@pytest.mark.parametrize("name", ["median3", "median3_call", "median3_nested"])
def test_median3(mod, name):
    """The window sorted in place by loop counters: in the kernel, in a `__noinline__` callee given a
    pointer to the kernel's array, and in one given a pointer to its caller's (a device function's)."""
    img = _image()
    assert np.array_equal(_median(mod, name, img), _median_ref(img, 3))


@slow
def test_median5(mod):
    img = _image(1)
    assert np.array_equal(_median(mod, "median5", img), _median_ref(img, 5))


def test_histogram_data_dependent_index(mod_o3):
    """bins[in[i] & 15] += 1: the index is the data; the bins are read back rotated by the data too."""
    per = 40
    d = np.random.default_rng(2).integers(-500, 500, (N, per)).astype(np.int32)
    out = np.zeros((N, 16), np.int32)
    mod_o3.get_function("local_histogram")(1, 128, (d, out, np.int32(N), np.int32(per)), checked=True)
    counts = np.stack([np.bincount(r & 15, minlength=16) for r in d])
    want = np.stack([np.roll(c, -(r & 15)) for c, r in zip(counts, d[:, 0], strict=True)])
    assert np.array_equal(out, want)


def test_array_of_structs(mod_o3):
    """An insertion sort of {key, index} pairs: the indices in key order (a stable argsort)."""
    keys = np.random.default_rng(3).standard_normal((N, 8)).astype(np.float32)
    keys[::7, 2] = keys[::7, 5]  # ties keep their order
    out = np.full((N, 8), -1, np.int32)
    mod_o3.get_function("local_struct_sort")(1, 128, (keys, out, np.int32(N)), checked=True)
    assert np.array_equal(out, np.argsort(keys, axis=1, kind="stable"))


@pytest.mark.parametrize("checked", [True, False])
def test_callee_sees_local_space(mod, checked):
    """__isLocal/__isGlobal (isspacep) in a `__noinline__` callee: its caller's window is local, the input
    global, with the checks on and off."""
    x = np.zeros(N * 4, np.float32)
    out = np.full(2 * N, -1, np.int32)
    mod.get_function("local_spaces")(1, 128, (x, out, np.int32(N)), checked=checked)
    assert np.array_equal(out, np.tile(np.int32([1, 2]), N))


def _line(text: str) -> int:
    lines = (DATA / "median_filter.cu").read_text().splitlines()
    return next(k for k, s in enumerate(lines, 1) if text in s)


def _oob_ref(x: np.ndarray, pos: int) -> np.ndarray:
    win = x.astype(np.float32).copy()
    win[:, pos] = -1
    return np.stack([win[:, (i * 5 + pos) % 9] for i in range(9)], axis=1).sum(axis=1, dtype=np.float32)


def test_local_index_in_bounds(mod):
    x = np.random.default_rng(4).standard_normal((N, 9)).astype(np.float32)
    out = np.zeros(N, np.float32)
    mod.get_function("local_oob")(1, 128, (x, out, np.int32(N), np.int32(3)), checked=True)
    assert np.allclose(out, _oob_ref(x, 3), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("pos", "line"), [(9, "win[pos] = -1.0f;"), (12, "win[pos] = -1.0f;"),
                                           (40, "win[pos] = -1.0f;"), (-1, "win[pos] = -1.0f;")])
def test_local_index_past_the_end(mod, pos, line):
    """win[pos] = -1 with pos from a parameter: just past the array (into the padding of the thread's
    local memory), into the next thread's local memory, and before it (where the reads' (i * 5 + pos) % 9
    go negative too, after the store) all fault, thread 0 first, each thread's first faulting access
    reported (as the GPU stops at it)."""
    x = np.random.default_rng(5).standard_normal((N, 9)).astype(np.float32)
    out = np.zeros(N, np.float32)
    k = mod.get_function("local_oob")
    with pytest.raises(ptxjit.KernelFault) as ei:
        k(1, 128, (x, out, np.int32(N), np.int32(pos)), checked=True)
    e = ei.value
    assert e.allocation == "local"
    assert e.thread == (0, 0, 0) and e.cta == (0, 0, 0)
    assert "outside the thread's local memory" in str(e)
    assert f"median_filter.cu:{_line(line)}:" in str(e)  # the CUDA line of the access
    # the module stays usable
    k(1, 128, (x, out, np.int32(N), np.int32(0)), checked=True)
    assert np.allclose(out, _oob_ref(x, 0), rtol=1e-5, atol=1e-5)


def test_untiered(mod_o3, monkeypatch):
    """With PTXJIT_TIERS=0 (the other tests run with tiers): the block-specialized code, whose thread loops
    hoist checks to the block's corners, agrees with NumPy and catches the bad index too."""
    img = _image(6)
    x = np.random.default_rng(7).standard_normal((N, 9)).astype(np.float32)
    monkeypatch.setenv("PTXJIT_TIERS", "0")
    assert np.array_equal(_median(mod_o3, "median3", img), _median_ref(img, 3))
    assert np.array_equal(_median(mod_o3, "median3_call", img), _median_ref(img, 3))
    with pytest.raises(ptxjit.KernelFault):
        mod_o3.get_function("local_oob")(1, 128, (x, np.zeros(N, np.float32), np.int32(N), np.int32(9)),
                                         checked=True)
