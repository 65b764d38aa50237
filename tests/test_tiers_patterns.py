"""Tier 0's pattern counters (ptxjit/instrument/patterns.py): per conditional branch its
uniformity per warp and per CTA, per memory access its alignment, x-stride and 32-byte sectors per warp
request, from the sampled CTAs of a counted launch.  tests/data/tiers_patterns.cu puts every access on
its own source line; the expected values follow from its index arithmetic and the inputs (hand-derived
for the fixed patterns, computed here with NumPy from the inputs and the arrays' addresses for the
data-dependent ones), and the kernel's results are checked against NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.instrument.patterns import SAMPLED_CTAS
from tests.launch_modes import CORPUS_TESTS, run_suite
from tests.tierutil import deterministic_tiers

PTX = Path(__file__).resolve().parent / "data" / "tiers_patterns.ptx"
BX, BY = 16, 8
GX, GY = 4, 3  # 12 CTAs: the first SAMPLED_CTAS (8, linear order) run the pattern code
W, H = GX * BX, GY * BY  # the image a[y * pitch + x] (pitch = W)
N = W * H


@pytest.fixture(autouse=True)
def tiered(monkeypatch):
    yield from deterministic_tiers(monkeypatch, counted_launches=1)


def _inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(W * W).astype(np.float32)
    c = rng.standard_normal(GX + 1).astype(np.float32)
    # flags: whole warps of 1s in some CTAs, random in the others; trips: per warp constant or per thread
    flags = rng.integers(0, 2, N).astype(np.int32)
    trips = rng.integers(0, 4, N).astype(np.int32)
    img_f, img_t = flags.reshape(H, W), trips.reshape(H, W)
    img_f[0:2, 0:16] = 1  # CTA 0, warp 0: uniform
    img_f[8:16, 16:32] = 1  # CTA 5: every warp uniform
    img_t[0:8, 16:32] = 2  # CTA 1: one trip count everywhere
    img_t[2:4, 0:16] = 0  # CTA 0, warp 1: never enters the loop
    return a, b, c, flags, trips


def _reference(a, b, c, flags, trips) -> np.ndarray:
    y, x = np.mgrid[0:H, 0:W]
    i = (y * W + x).ravel()
    v, w = a[i], b[(x * W + y).ravel()]
    bx = (x // BX).ravel()
    u = c[bx + 1]
    tx, ty = (x % BX).ravel(), (y % BY).ravel()
    out = np.zeros(5 * N, np.float32)
    out[N + i[tx < 8]] = w[tx < 8]
    out[2 * N + i[ty < 2]] = u[ty < 2]
    odd = (bx & 1) == 1
    out[3 * N + i[odd]] = v[odd] + u[odd]
    f = flags[i] > 0
    out[4 * N + i[f]] = w[f] * np.float32(2)
    acc = np.array([np.float32(sum(a[:k], np.float32(0))) if k else np.float32(0) for k in trips[i]], np.float32)
    out[i] = (((acc + v) + w) + u) + v
    return out


def _run(k, ins):
    a, b, c, flags, trips = ins
    out = np.zeros(5 * N, np.float32)
    k((GX, GY), (BX, BY), (a, b, c, flags, trips, out, np.int32(N), np.int32(W)))
    np.testing.assert_allclose(out, _reference(*ins), rtol=1e-5, atol=1e-5)


def _line_of(text: str) -> int:
    for i, line in enumerate(PTX.read_text().splitlines(), 1):
        if text in line and not line.lstrip().startswith("//"):
            return i
    raise AssertionError(text)


# ---------------------------------------------------------------- the sampled CTAs as NumPy sees them
def _sampled():
    """Per sampled CTA (linear 0..7) and thread (linear ty * 16 + tx): x, y, tx, ty, bx, the flat index i."""
    cta = np.arange(SAMPLED_CTAS)[:, None]
    t = np.arange(BX * BY)[None, :]
    bx, by = cta % GX, cta // GX
    tx, ty = t % BX, t // BX
    x, y = bx * BX + tx, by * BY + ty
    return tuple(np.broadcast_to(v, (SAMPLED_CTAS, BX * BY)) for v in (x, y, tx, ty, bx, y * W + x))


def _uniform(execs: np.ndarray, takens: np.ndarray) -> tuple[int, int, int, int]:
    """(warps, uniform warps, CTAs, uniform CTAs) of a branch from per-thread executions and takens."""
    out = []
    for group in (32, BX * BY):
        e = execs.reshape(-1, group)
        tk = takens.reshape(-1, group)
        n = u = 0
        for row_e, row_t in zip(e, tk, strict=True):
            on = row_e > 0
            if not on.any():
                continue
            n += 1
            u += len(set(zip(row_e[on], row_t[on], strict=True))) == 1
        out += [n, u]
    return tuple(out)


def _sectors(addr: np.ndarray, active: np.ndarray, size: int) -> float:
    """Mean distinct 32-byte sectors per warp request (first accesses)."""
    counts = []
    for a, on in zip(addr.reshape(-1, 32), active.reshape(-1, 32), strict=True):
        if on.any():
            counts.append(len(set((a[on] // 32).tolist()) | set(((a[on] + size - 1) // 32).tolist())))
    return round(sum(counts) / len(counts), 3)


def _alignment(addrs: np.ndarray) -> int:
    bits = int(np.bitwise_or.reduce(addrs.astype(np.uint64).ravel()))
    return 4096 if bits == 0 else min(bits & -bits, 4096)


def test_branch_uniformity_per_warp_and_cta():
    k = ptxjit.Module.from_file(PTX).get_function("patterns")
    ins = _inputs()
    for _ in range(3):  # tier 0 (profile), tier 1 built, then the counted launch
        _run(k, ins)
    s = ptxjit.stats()["patterns"]
    assert s["counted_launches"] == 1
    got = {br["line"]: (br["sampled_warps"], round(br["warp_uniform"] * br["sampled_warps"]), br["sampled_ctas"],
                        round(br["cta_uniform"] * br["sampled_ctas"])) for br in s["branches"]}
    warps = SAMPLED_CTAS * BX * BY // 32
    assert got[_line_of("@%p1 bra")] == (warps, 0, SAMPLED_CTAS, 0)  # tx < 8: half of every warp
    assert got[_line_of("@%p2 bra")] == (warps, warps, SAMPLED_CTAS, 0)  # ty < 2: warp 0 only, whole
    assert got[_line_of("@%p6 bra")] == (warps, warps, SAMPLED_CTAS, SAMPLED_CTAS)  # blockIdx.x & 1
    _x, _y, _tx, _ty, _bx, i = _sampled()
    flags, trips = ins[3], ins[4]
    ones = np.ones_like(i)
    assert got[_line_of("@%p7 bra")] == _uniform(ones, (flags[i] <= 0).astype(int))  # taken: skip the store
    assert got[_line_of("@%p8 bra")] == _uniform(ones, (trips[i] < 1).astype(int))  # the loop's guard
    k_ = trips[i]
    assert got[_line_of("@%p9 bra")] == _uniform(k_, np.maximum(k_ - 1, 0))  # its back edge: trip counts
    # the numbers behind it: CTA 1's trips are all 2 (uniform), CTA 5's flags all 1
    back = [br for br in s["branches"] if br["back_edge"]]
    assert len(back) == 1 and 0 < back[0]["warp_uniform"] < 1


def test_memory_alignment_strides_and_sectors():
    k = ptxjit.Module.from_file(PTX).get_function("patterns")
    ins = _inputs(1)
    a, b, c, flags, trips = ins
    for _ in range(3):
        _run(k, ins)
    mem = ptxjit.stats()["patterns"]["memory"]
    by = {(int(m["source"].split(":")[1]), m["instruction"].split(".")[0]): m for m in mem}
    x, y, tx, ty, bx, i = _sampled()
    every = np.ones_like(i, bool)

    def check(line, op, addr, active, size, stride, cls, sectored=True):
        m = by[(line, op)]
        addr = np.broadcast_to(addr, active.shape)
        assert m["accesses"] == int(active.sum()), (line, op)
        assert m["stride"] == stride and m["warps"] == cls, (line, op, m)
        assert m["alignment"] == _alignment(addr[active]), (line, op)
        want = _sectors(addr, active, size) if sectored else None
        assert m["sectors_per_request"] == want, (line, op)

    pa, pb, pc = (arr.ctypes.data for arr in (a, b, c))
    warps = SAMPLED_CTAS * BX * BY // 32
    check(12, "ld", pa + 4 * i, every, 4, 4, {"contiguous": warps})  # a[i]
    check(13, "ld", pb + 4 * (x * W + y), every, 4, 4 * W, {"strided": warps})  # b[x * pitch + y]
    check(14, "ld", pc + 4 * (bx + 1), every, 4, 0, {"uniform": warps})  # c[blockIdx.x + 1]
    check(15, "st", 4 * (ty * (BX + 1) + tx), every, 4, 4, {"contiguous": warps}, sectored=False)  # tile
    check(19, "ld", flags.ctypes.data + 4 * i, every, 4, 4, {"contiguous": warps})
    check(21, "ld", trips.ctypes.data + 4 * i, every, 4, 4, {"contiguous": warps})
    entered = trips[i] > 0
    m = by[(23, "ld")]  # a[j] in the loop: every thread's first access is a[0]
    assert m["accesses"] == int(trips[i].sum()) and m["stride"] == 0
    assert m["sectors_per_request"] == _sectors(np.full(i.shape, pa), entered, 4)
    assert m["alignment"] == _alignment(pa + 4 * np.arange(int(trips[i].max())))
    # the stores into out: contiguous where they run (out's address is the kernel's)
    st = by[(24, "st")]
    assert st["stride"] == 4 and st["accesses"] == i.size
    half = tx < 8
    m16 = by[(16, "st")]
    assert m16["accesses"] == int(half.sum()) and m16["warps"] == {"contiguous": warps} and m16["stride"] == 4
    m17 = by[(17, "st")]
    assert m17["accesses"] == int((ty < 2).sum()) and m17["warps"] == {"contiguous": SAMPLED_CTAS}
    m18 = by[(18, "st")]
    assert m18["accesses"] == int(((bx & 1) == 1).sum())
    m19 = by[(19, "st")]
    assert m19["accesses"] == int((flags[i] > 0).sum())


def test_counted_launch_runs_the_patterns_on_the_first_ctas_only():
    """The pattern code runs the first SAMPLED_CTAS CTAs; a grid smaller than that is sampled whole, and a
    launch's results are those of a plain launch either way (checked against NumPy in _run)."""
    k = ptxjit.Module.from_file(PTX).get_function("patterns")
    ins = _inputs(2)
    for _ in range(3):
        _run(k, ins)
    s = ptxjit.stats()["patterns"]
    b1 = next(br for br in s["branches"] if br["line"] == _line_of("@%p1 bra"))
    assert b1["sampled_ctas"] == SAMPLED_CTAS < GX * GY
    # block counts still cover every CTA: the store under tx < 8 runs in half the threads of the grid
    assert b1["fallthrough"] == GX * GY * BX * BY // 2


def test_cli_prints_the_counters(monkeypatch):
    """`ptxjit run` prints tier 0's counters once a counted launch ran (cli/app.py _print_counters)."""
    from rich.console import Console

    from ptxjit.cli import app

    monkeypatch.setattr(app, "console", Console(width=200, record=True))
    k = ptxjit.Module.from_file(PTX).get_function("patterns")
    ins = _inputs(3)
    for _ in range(3):
        _run(k, ins)
    app._print_counters(ptxjit.stats()["patterns"])
    text = app.console.export_text()
    assert "branches" in text and "memory accesses (sampled CTAs)" in text
    row = next(line for line in text.splitlines() if "tiers_patterns.cu:13" in line)  # b[x * pitch + y]
    assert "ld.global" in row and str(4 * W) in row and "strided 32" in row
    row = next(line for line in text.splitlines() if line.strip("│┃ ").startswith(str(_line_of("@%p6 bra")) + " "))
    assert row.count("100%") == 2  # blockIdx.x & 1: uniform per warp and per CTA


@pytest.mark.parametrize("slots", [2, 0])
def test_budget_limits_the_sampled_ctas(monkeypatch, slots):
    """Kernels with many accesses sample fewer CTAs (patterns.BUDGET), none where one slot would pass it:
    then the counted launch gives block counts alone."""
    from ptxjit.instrument import patterns
    from ptxjit.runtime.launch import worker_count
    from ptxjit.tiers import counters

    k = ptxjit.Module.from_file(PTX).get_function("patterns")
    slot = patterns.layout(counters.plan_of(k, (BX, BY, 1)), BX * BY).size  # one CTA's slot, this kernel
    monkeypatch.setattr(patterns, "BUDGET", (slots + worker_count()) * slot)
    ins = _inputs(4)
    for _ in range(3):
        _run(k, ins)
    s = ptxjit.stats()["patterns"]
    b1 = next(br for br in s["branches"] if br["line"] == _line_of("@%p1 bra"))
    assert b1["fallthrough"] == GX * GY * BX * BY // 2  # the block counts, whole grid, either way
    if slots:
        assert b1["sampled_ctas"] == slots and b1["sampled_warps"] == slots * BX * BY // 32
        assert {m["accesses"] for m in s["memory"] if m["line"] == _line_of("ld.global.f32 \t%f1")} == {
            slots * BX * BY}
    else:
        assert "sampled_ctas" not in b1 and s["memory"] == []


@pytest.mark.mode_matrix
def test_corpus_tests_pass_with_every_launch_on_the_pattern_code():
    """The real-kernel corpus with every launch on the counting code with pattern accumulators in every CTA
    (the `patterns` launch mode, tests/launch_modes.py): the corpus tests' NumPy checks show that it
    computes what plain code does, for every kernel the corpus has (device functions, atomics, barriers,
    shuffles)."""
    run_suite("patterns", CORPUS_TESTS)
