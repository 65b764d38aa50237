"""Legacy warp-synchronous code (tests/data/legacy_warp_reduce.cu, nvcc's PTX): volatile shared or
global steps with no barrier, which a GPU runs in lockstep within each warp (passes/warpsync.py).
Every launch is checked against NumPy, at several block sizes and grids."""

from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.frontend import ir
from ptxjit.frontend.parser import parse
from ptxjit.lower.module import ModuleCodegen
from ptxjit.passes.warpsync import WARPSTEP, warp_sync_points

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "legacy_warp_reduce.ptx"
BLOCKS = (64, 128, 256, 512)


@pytest.fixture(scope="module")
def mod() -> ptxjit.Module:
    return ptxjit.Module.from_file(DATA)


@pytest.fixture(autouse=True)
def _untiered(monkeypatch) -> None:
    # one translation per block shape (tiers would build counting and tier-1 versions too);
    # test_default_launch_path launches through the tiers
    monkeypatch.setenv("PTXJIT_TIERS", "0")


def _yields(ins) -> bool:
    return ModuleCodegen.yields(None, ins)


def _points(path: Path | str, name: str) -> int:
    fn = parse(Path(path).read_text(), str(path)).functions[name]
    return sum(i.opcode == WARPSTEP for i in warp_sync_points(fn, _yields).instructions)


def _values(rng: np.random.Generator, n: int, dtype) -> np.ndarray:
    # small integers: float sums are exact in any order
    return rng.integers(-8, 9, max(n, 1)).astype(dtype)


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("grid,per_block", [(1, 2), (3, 5), (8, 1)])
@pytest.mark.parametrize("dtype,kind", [(np.float32, "f32"), (np.int32, "i32")])
def test_shoc_reduce(mod, block: int, grid: int, per_block: int, dtype, kind: str) -> None:
    n = grid * block * 2 * per_block + 37  # a partial last stretch: some threads load once, some not at all
    x = _values(np.random.default_rng(block + grid), n, dtype)
    out = np.zeros(grid, dtype)
    mod.get_function(f"reduce_{kind}_{block}")(grid, block, (x, out, n), shared_mem=block * 4)
    # block b sums the stretches of 2 * block elements at b, b + grid, b + 2 * grid, ...
    pad = np.zeros(-n % (2 * block), dtype)
    chunks = np.concatenate([x, pad]).astype(np.int64).reshape(-1, 2 * block).sum(1)
    want = np.array([chunks[b::grid].sum() for b in range(grid)])
    np.testing.assert_array_equal(out.astype(np.int64), want)


@pytest.mark.parametrize("name,block", [("reduce_f32_256", 256), ("warp_scan_i32", 128)])
def test_default_launch_path(mod, monkeypatch, name: str, block: int) -> None:
    """Through the tiers, as a plain launch runs: tier 0 is block-specialized for such kernels (the
    generic code's scheduler runs each thread to its next barrier), and tier 1 after it."""
    monkeypatch.setenv("PTXJIT_TIERS", "1")
    rng = np.random.default_rng(5)
    for grid in (2, 3, 2, 5):
        n = grid * block * 2
        x = _values(rng, n, np.int32 if "scan" in name else np.float32)
        if "scan" in name:
            out = np.zeros(n, np.int32)
            mod.get_function(name)(2 * grid, block, (x, out, n), shared_mem=block * 4)
            np.testing.assert_array_equal(out, np.cumsum(x.reshape(-1, 32), axis=1).ravel())
        else:
            out = np.zeros(grid, np.float32)
            mod.get_function(name)(grid, block, (x, out, n), shared_mem=block * 4)
            np.testing.assert_array_equal(out, x.reshape(grid, 2 * block).sum(1))


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("grid", [1, 4, 7])
def test_samples_warp_reduce(mod, block: int, grid: int) -> None:
    n = grid * block * 2 - 3  # the last block's last threads add nothing
    x = _values(np.random.default_rng(block * grid), n, np.float32)
    out = np.zeros(grid, np.float32)
    mod.get_function(f"samples_reduce_{block}")(grid, block, (x, out, n), shared_mem=block * 4)
    want = np.concatenate([x, np.zeros(3, np.float32)]).reshape(grid, 2 * block).sum(1)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("grid", [1, 3])
def test_warp_prefix_scan(mod, block: int, grid: int) -> None:
    n = grid * block - 5
    x = _values(np.random.default_rng(block + 7 * grid), n, np.int32)[:n]
    out = np.full(n, -1, np.int32)
    mod.get_function("warp_scan_i32")(grid, block, (x, out, n), shared_mem=block * 4)
    padded = np.concatenate([x, np.zeros(5, np.int32)])
    want = np.cumsum(padded.reshape(-1, 32), axis=1).ravel()[:n]  # inclusive scan per warp of 32
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("grid,rows", [(1, 3), (4, 9), (5, 5)])
def test_warp_sync_step_in_loop(mod, block: int, grid: int, rows: int) -> None:
    x = _values(np.random.default_rng(rows * block), rows * block, np.float32)
    out = np.zeros(rows, np.float32)
    mod.get_function("row_sums")(grid, block, (x, out, rows), shared_mem=block * 4)
    np.testing.assert_array_equal(out, x.reshape(rows, block).sum(1))


@pytest.mark.parametrize("grid,block", [(1, 64), (3, 64), (2, 256), (1, 512)])
def test_warp_sync_volatile_global_without_barrier(mod, grid: int, block: int) -> None:
    n = grid * block
    x = _values(np.random.default_rng(n), n, np.float32)
    scratch = np.zeros(n + 32, np.float32)  # the last warp's partners stay inside its own 32 slots
    out = np.zeros(n // 32, np.float32)
    mod.get_function("warp_sums_global")(grid, block, (x, scratch, out))
    np.testing.assert_array_equal(out, x.reshape(-1, 32).sum(1))


@pytest.mark.parametrize("block", [32, 256])
def test_spin_wait_after_volatile_stores_terminates(mod, block: int) -> None:
    buf = np.zeros(block + 1, np.int32)
    out = np.zeros(block, np.int32)
    mod.get_function("flag_wait")(1, block, (buf, out), timeout=30)
    np.testing.assert_array_equal(out, 3 * (block - 1) + 3 * np.arange(block))


def test_points_only_at_volatile_hazards() -> None:
    # SHOC's last warp: six steps of load, load, store, a round before each store and before the
    # next step's loads (the first step's loads follow a barrier)
    assert _points(DATA, "reduce_f32_256") == 11
    # the spin-wait loop itself holds no point; only the loads after it (they follow the stores)
    fn = parse(DATA.read_text(), str(DATA)).functions["flag_wait"]
    body = warp_sync_points(fn, _yields).body
    labels = {st.name: i for i, st in enumerate(body) if isinstance(st, ir.Label)}
    loops = [(labels[st.operands[0].name], k) for k, st in enumerate(body)
             if isinstance(st, ir.Instr) and st.opcode == "bra" and labels.get(st.operands[0].name, k + 1) <= k]
    assert len(loops) == 1
    h, k = loops[0]
    assert not any(isinstance(st, ir.Instr) and st.opcode == WARPSTEP for st in body[h:k + 1])
    assert _points(DATA, "flag_wait") == 3  # the setter's load and store, the loads after both paths


@pytest.mark.parametrize("block", [64, 256])
def test_warp_sync_steps_in_noinline_function(mod, block: int) -> None:
    grid = 3
    x = _values(np.random.default_rng(block), grid * block, np.float32)
    out = np.zeros(grid, np.float32)
    mod.get_function("reduce_noinline")(grid, block, (x, out), shared_mem=block * 4)
    np.testing.assert_array_equal(out, x.reshape(grid, block).sum(1))


@pytest.mark.parametrize("path", sorted(glob.glob(str(ROOT / "bench" / "kernels" / "ptx" / "*.ptx"))))
def test_code_without_volatile_accesses_unchanged(path: str) -> None:
    module = parse(Path(path).read_text(), path)
    for fn in module.functions.values():
        assert warp_sync_points(fn, _yields) is fn, fn.name
