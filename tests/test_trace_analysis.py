"""Profile analyses of traces (src/ptxjit/instrument/analysis.py): memory efficiency (global sectors per
request, shared wavefronts and bank conflicts), branch efficiency, barrier waits.

Expected values come from an H100's Nsight Compute counters (tests/data/ncu), from hand computation on
the kernels' source and PTX, or from plain-Python reference computations on the kernels' inputs, never
from the analyses themselves.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.instrument import analysis
from ptxjit.instrument.analysis import ncu_metrics, totals

pa = pytest.importorskip("pyarrow")
pc = pytest.importorskip("pyarrow.compute")

DATA = Path(__file__).parent / "data"
NCU = DATA / "ncu"
BENCH = Path(__file__).parent.parent / "bench" / "kernels" / "ptx"


def aligned(n: int, dtype=np.float32, align: int = 256) -> np.ndarray:
    """A zeroed array whose data starts at a multiple of `align` bytes.  Sector counts depend on where an
    array starts (a warp reading 128 contiguous bytes touches 4 sectors from a 32-byte boundary, 5 from
    anywhere else); cudaMalloc returns 256-byte aligned memory, NumPy only 16- or 64-byte aligned, so
    arrays compared with the GPU's counts are placed in a larger buffer at a 256-byte boundary."""
    nbytes = n * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + nbytes].view(dtype)


def rows(table, **where) -> list[dict]:
    return [r for r in table.to_pylist() if all(r[k] == v for k, v in where.items())]


# ------------------------------------------------------------------------------------ H100 reference
def ncu_reference() -> dict[int, tuple[str, dict[str, int]]]:
    """Launch ID -> (kernel, {metric: value}) from Nsight Compute's CSV (values like "1,024")."""
    out: dict[int, tuple[str, dict[str, int]]] = {}
    with open(NCU / "h100_metrics.csv", newline="") as f:
        for row in csv.DictReader(f):
            name, metrics = out.setdefault(int(row["ID"]), (row["Kernel Name"], {}))
            metrics[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
    return out


# run_ncu.cu's launches, in order (one warp each: grid 1, block 32): kernel, last argument
NCU_LAUNCHES = [("strided_load", s) for s in (0, 1, 2, 4, 8, 16, 32)] + [("gather_broadcast", 0)] + \
    [("shared_columns", p) for p in (32, 33)] + [("divergent", m) for m in (1, 2, 32)]
MODELLED = [f"{pre}_op_{op}.sum" for op in ("ld", "st") for pre in (
    "l1tex__t_requests_pipe_lsu_mem_global", "l1tex__t_sectors_pipe_lsu_mem_global",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared")]


@pytest.fixture(scope="module")
def ncu_module():
    return ptxjit.Module.from_file(NCU / "access_patterns.ptx")


@pytest.mark.parametrize("launch", range(len(NCU_LAUNCHES)),
                         ids=[f"{k}-{a}" for k, a in NCU_LAUNCHES])
def test_memory_counters_match_h100(ncu_module, launch):
    """Every launch of run_ncu.cu traced on the CPU: global load/store requests and sectors, shared
    load/store wavefronts and bank conflicts equal what Nsight Compute measured on the H100 (e.g.
    strided_load stride 0..32: 1, 4, 8, 16, 32, 32, 32 sectors per request; shared_columns pitch 32:
    1,024 wavefronts, 992 conflicts; pitch 33: 32 and 0)."""
    name, arg = NCU_LAUNCHES[launch]
    ref_name, ref = ncu_reference()[launch]
    assert ref_name == name
    inp, out = aligned(32 * 32 * 33), aligned(4096)  # run_ncu.cu's cudaMalloc'd buffers
    if name == "divergent":
        inp, out = inp.view(np.int32), out.view(np.int32)
    t = ptxjit.trace(ncu_module.get_function(name), 1, 32, (inp, out, arg), records=("memory",))
    got = ncu_metrics(t.memory_efficiency())
    assert set(MODELLED) <= set(ref)
    assert {m: got[m] for m in MODELLED} == {m: ref[m] for m in MODELLED}


def test_strided_sectors_per_request_column(ncu_module):
    """The per-site column for the README's table: strided_load's load, 1, 4, 8, 16, 32, 32, 32."""
    ref = ncu_reference()
    inp, out = aligned(32 * 32 * 33), aligned(4096)
    for launch, (name, stride) in enumerate(NCU_LAUNCHES[:7]):
        t = ptxjit.trace(ncu_module.get_function(name), 1, 32, (inp, out, stride), records=("memory",))
        (load,) = rows(t.memory_efficiency(), kind="load")
        metrics = ref[launch][1]
        assert load["sectors_per_request"] == metrics["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"] / \
            metrics["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]
        assert load["requests"] == 1 and load["accesses"] == 32 and load["wavefronts"] is None


# ------------------------------------------------------------------------------- hand-computed cases
LOAD = {4: ("u32", "%r9"), 8: ("u64", "%rd9"), 16: ("v4.u32", "{%r9, %r10, %r11, %r12}")}


def access_ptx(space: str, width: int) -> str:
    """One load of `width` bytes per thread at base + off + tid * stride (bytes): base is a shared array
    (aligned to 16) or the global pointer p."""
    ty, dst = LOAD[width]
    if space == "shared":
        addr = "mov.u32 %r5, buf;\n    add.s32 %r6, %r5, %r4;\n    cvt.u64.u32 %rd3, %r6;"
        ld = f"ld.shared.{ty} {dst}, [%r6];"
    else:
        addr = "cvt.u64.u32 %rd2, %r4;\n    add.s64 %rd3, %rd1, %rd2;"
        ld = f"ld.global.{ty} {dst}, [%rd3];"
    return f"""
.version 7.0
.target sm_80
.address_size 64
.visible .entry acc(.param .u64 p, .param .u32 stride, .param .u32 off)
{{
    .reg .b32 %r<16>;
    .reg .b64 %rd<12>;
    .shared .align 16 .b8 buf[16384];
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [stride];
    ld.param.u32 %r2, [off];
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r3, %r1, %r2;
    {addr}
    {ld}
    ret;
}}
"""


def one_site(space: str, width: int, stride: int, off: int = 0, threads: int = 32) -> dict:
    k = ptxjit.Module(access_ptx(space, width)).get_function("acc")
    g = aligned(8192, np.uint8)
    t = ptxjit.trace(k, 1, threads, (g, stride, off), records=("memory",))
    (row,) = t.memory_efficiency().to_pylist()
    assert row["space"] == space and row["size"] == width and row["kind"] == "load"
    return row


# (width, stride, threads) -> (requests, wavefronts, bank conflicts), by hand: a request is split into
# phases of 128 bytes (4-byte: the warp; 8-byte: half-warps; 16-byte: quarter-warps); a phase takes as
# many wavefronts as its busiest bank has distinct words (word w in bank w % 32)
SHARED_CASES = {
    (4, 4, 32): (1, 1, 0),      # lane l -> word l: 32 banks once
    (4, 0, 32): (1, 1, 0),      # one word for all: broadcast
    (4, 8, 32): (1, 2, 1),      # word 2l: lanes l and l + 16 share bank 2l % 32
    (4, 128, 32): (1, 32, 31),  # word 32l: all in bank 0
    (4, 132, 32): (1, 1, 0),    # word 33l: bank l (the padded tile's column read)
    (8, 8, 32): (1, 2, 0),      # half-warp of 16 x 8 bytes = 128 bytes, words 2l, 2l+1: no conflict
    (8, 0, 32): (1, 2, 0),      # both halves read words 0, 1: broadcast, still 2 phases
    (8, 16, 32): (1, 4, 2),     # words 4l, 4l+1 (l < 16): lanes l and l + 8 share banks: 2 per half
    (16, 16, 32): (1, 4, 0),    # quarter-warps of 8 x 16 bytes: 4 conflict-free wavefronts (LDS.128)
    (16, 32, 32): (1, 8, 4),    # words 8l..8l+3 (l < 8): lanes l and l + 4 share banks: 2 per quarter
    (16, 128, 32): (1, 32, 28),  # words 32l..32l+3: 8 lanes on banks 0-3 per quarter: 8 each
    (16, 0, 32): (1, 4, 0),     # everyone reads words 0-3: 1 per quarter
    (4, 4, 40): (2, 2, 0),      # a second warp of 8 lanes: its own request
    (16, 16, 40): (2, 5, 0),    # the second warp's 8 lanes: one quarter, one wavefront
    (8, 16, 40): (2, 5, 2),     # warp 1: lanes 0-7 at words 4l, 4l+1 + 128: 8 distinct banks, 1
}


@pytest.mark.parametrize("case", list(SHARED_CASES), ids=[f"w{w}-s{s}-t{n}" for w, s, n in SHARED_CASES])
def test_shared_wavefronts_by_hand(case):
    width, stride, threads = case
    requests, wavefronts, conflicts = SHARED_CASES[case]
    row = one_site("shared", width, stride, threads=threads)
    assert (row["requests"], row["wavefronts"], row["bank_conflicts"]) == (requests, wavefronts, conflicts)
    assert row["accesses"] == threads and row["sectors"] is None
    assert row["wavefronts_per_request"] == wavefronts / requests


# (width, stride, offset) -> sectors of one warp request, by hand (the array starts at a 32-byte boundary)
GLOBAL_CASES = {
    (4, 4, 0): 4,      # bytes 0..127
    (4, 4, 4): 5,      # bytes 4..131: misaligned by one word, one more sector
    (4, 12, 0): 12,    # float3-like stride: bytes 0..375, every sector hit (gaps of 8 bytes)
    (4, 12, 20): 13,   # bytes 20..395: sectors 0..12
    (4, 64, 0): 32,    # every other sector
    (8, 8, 0): 8,      # bytes 0..255
    (8, 8, 8): 9,      # bytes 8..263
    (8, 0, 24): 1,     # one 8-byte word for all
    (16, 16, 0): 16,   # bytes 0..511
    (16, 16, 16): 17,  # bytes 16..527
    (16, 32, 0): 32,   # one 16-byte half of each sector
}


@pytest.mark.parametrize("case", list(GLOBAL_CASES), ids=[f"w{w}-s{s}-o{o}" for w, s, o in GLOBAL_CASES])
def test_global_sectors_by_hand(case):
    width, stride, off = case
    row = one_site("global", width, stride, off)
    assert (row["requests"], row["sectors"]) == (1, GLOBAL_CASES[case])
    assert row["bytes"] == 32 * width and row["wavefronts"] is None and row["bank_conflicts"] is None


LOCAL_PTX = r"""
.version 7.0
.target sm_80
.address_size 64
.visible .entry loc(.param .u32 mask)
{
    .local .align 16 .b8 arr[256];
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u32 %r1, [mask];
    mov.u32 %r2, %tid.x;
    and.b32 %r3, %r2, %r1;
    shl.b32 %r4, %r3, 2;
    mov.u64 %rd1, arr;
    cvt.u64.u32 %rd2, %r4;
    add.s64 %rd3, %rd1, %rd2;
    st.local.u32 [%rd3], %r2;
    ret;
}
"""


@pytest.mark.parametrize("mask, sectors", [(0, 4), (1, 8), (3, 16), (31, 32)])
def test_local_sectors_interleaved(mask, sectors):
    """Local memory is interleaved across the warp (word w of lane l at 128 w + 4 l): all lanes at one
    offset is one 128-byte line (4 sectors); lanes at word tid & mask touch (mask + 1) lines."""
    k = ptxjit.Module(LOCAL_PTX).get_function("loc")
    t = ptxjit.trace(k, 1, 32, (mask,), records=("memory",))
    (row,) = t.memory_efficiency().to_pylist()
    assert row["space"] == "local" and row["kind"] == "store"
    assert (row["requests"], row["sectors"]) == (1, sectors)


# ------------------------------------------------------------ randomized: reference in plain Python
def gather_ptx(width: int) -> str:
    """Thread t (global index) runs cnt[t] iterations j; iteration j loads `width` bytes from the shared
    array and from g, both at byte offset idx[t * J + j]."""
    ty, dst = LOAD[width]
    return f"""
.version 7.0
.target sm_80
.address_size 64
.visible .entry gather(.param .u64 idx, .param .u64 cnt, .param .u64 g, .param .u32 J)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<12>;
    .shared .align 16 .b8 buf[8192];
    ld.param.u64 %rd1, [idx];
    ld.param.u64 %rd2, [cnt];
    ld.param.u64 %rd3, [g];
    ld.param.u32 %r1, [J];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mad.lo.s32 %r5, %r3, %r4, %r2;
    mul.wide.s32 %rd4, %r5, 4;
    add.s64 %rd5, %rd2, %rd4;
    ld.global.nc.u32 %r6, [%rd5];
    mov.u32 %r7, 0;
    setp.eq.s32 %p1, %r6, 0;
    @%p1 bra DONE;
LOOP:
    mad.lo.s32 %r8, %r5, %r1, %r7;
    mul.wide.s32 %rd6, %r8, 4;
    add.s64 %rd7, %rd1, %rd6;
    ld.global.nc.u32 %r13, [%rd7];
    mov.u32 %r14, buf;
    add.s32 %r15, %r14, %r13;
    ld.shared.{ty} {dst}, [%r15];
    cvt.u64.u32 %rd8, %r13;
    add.s64 %rd10, %rd3, %rd8;
    ld.global.{ty} {dst}, [%rd10];
    add.s32 %r7, %r7, 1;
    setp.lt.s32 %p1, %r7, %r6;
    @%p1 bra LOOP;
DONE:
    ret;
}}
"""


def reference_requests(idx, cnt, nctas, nthreads, J):
    """Warp requests straight from the inputs: (cta, warp, j) -> [(lane, byte offset)] for the lanes
    whose thread runs iteration j."""
    reqs = defaultdict(list)
    for c in range(nctas):
        for tid in range(nthreads):
            t = c * nthreads + tid
            for j in range(cnt[t]):
                reqs[(c, tid // 32, j)].append((tid % 32, int(idx[t * J + j])))
    return list(reqs.values())


def reference_shared(reqs, width):
    wave = conflicts = 0
    per_phase = 128 // max(width, 4)
    for accs in reqs:
        phases = defaultdict(lambda: defaultdict(set))
        for lane, a in accs:
            for w in range(a // 4, (a + width - 1) // 4 + 1):
                phases[lane // per_phase][w % 32].add(w)
        wave += sum(max(len(ws) for ws in banks.values()) for banks in phases.values())
        conflicts += sum(max(len(ws) for ws in banks.values()) - 1 for banks in phases.values())
    return wave, conflicts


def reference_sectors(reqs, width, base):
    return sum(len({s for _, a in accs for s in range((base + a) // 32, (base + a + width - 1) // 32 + 1)})
               for accs in reqs)


def run_gather(width: int, seed: int):
    rng = np.random.default_rng(seed)
    nctas, nthreads, J = 3, 80, 4  # warps of 32, 32 and 16 lanes; 0-4 iterations per thread
    n = nctas * nthreads
    cnt = rng.integers(0, J + 1, n).astype(np.int32)
    # offsets from a small range (repeats: broadcasts and conflicts) and a wide one (spread sectors)
    narrow = rng.integers(0, 64, n * J) * width
    wide = rng.integers(0, 8192 // width, n * J) * width
    idx = np.where(rng.random(n * J) < 0.5, narrow, wide).astype(np.int32)
    g = np.zeros(8192 + 64, np.uint8)
    k = ptxjit.Module(gather_ptx(width)).get_function("gather")
    t = ptxjit.trace(k, nctas, nthreads, (idx, cnt, g, J), records=("memory",))
    reqs = reference_requests(idx, cnt, nctas, nthreads, J)
    return t, reqs, g


@pytest.mark.parametrize("width", [4, 8, 16])
def test_gather_matches_reference(width):
    t, reqs, g = run_gather(width, seed=width)
    ty = LOAD[width][0]
    me = t.memory_efficiency()
    (sh,) = rows(me, instruction=f"ld.shared.{ty}")
    (gl,) = rows(me, instruction=f"ld.global.{ty}")
    assert sh["requests"] == gl["requests"] == len(reqs)
    assert sh["accesses"] == gl["accesses"] == sum(len(a) for a in reqs)
    assert (sh["wavefronts"], sh["bank_conflicts"]) == reference_shared(reqs, width)
    assert gl["sectors"] == reference_sectors(reqs, width, g.ctypes.data)


def test_gather_chunking_and_wide_keys(monkeypatch):
    """The same table when records are analysed a few CTAs at a time, and when keys do not pack into
    64 bits (the lexsort path)."""
    t, *_ = run_gather(8, seed=11)
    whole = t.memory_efficiency()
    monkeypatch.setattr(analysis, "CHUNK", 50)
    assert t.memory_efficiency().equals(whole)
    monkeypatch.setattr(analysis, "KEY_BITS", 0)
    assert t.memory_efficiency().equals(whole)


@pytest.fixture(scope="module")
def transpose_trace():
    """bench transpose (32x33 padded tile, block (32, 8)), n = 64, 256-byte aligned arrays, traced once
    for the memory and the barrier analyses."""
    k = ptxjit.Module.from_file(BENCH / "transpose.ptx").get_function("transpose")
    n = 64
    inp = aligned(n * n)
    inp[:] = np.arange(n * n, dtype=np.float32)
    out = aligned(n * n)
    t = ptxjit.trace(k, (2, 2), (32, 8), (inp, out, n), records=("blocks", "memory", "barriers"))
    np.testing.assert_array_equal(out.reshape(n, n), inp.reshape(n, n).T)
    return t, n


def test_transpose_is_coalesced_and_conflict_free(transpose_trace):
    """Each of the 4 CTAs' 8 warps makes 4 requests per access; every global one reads or writes one
    128-byte row segment (4 sectors), every shared one is one wavefront (rows: words 33y + x; columns:
    33x + y, banks (x + y) % 32 all distinct)."""
    t, n = transpose_trace
    me = t.memory_efficiency()
    for space in ("global", "shared"):
        for kind in ("load", "store"):
            tot = totals(me.filter(pc.and_(pc.equal(me["space"], space), pc.equal(me["kind"], kind))))
            assert tot["requests"] == 4 * 8 * 4 and tot["accesses"] == n * n
            if space == "global":
                assert tot["sectors"] == 4 * tot["requests"] and tot["sectors_per_request"] == 4
            else:
                assert tot["wavefronts"] == tot["requests"] and tot["bank_conflicts"] == 0


def test_barrier_waits_balanced_kernel_is_zero(transpose_trace):
    """Every warp of transpose runs the same instructions up to its one __syncthreads."""
    t, _ = transpose_trace
    (r,) = t.barrier_waits().to_pylist()
    assert (r["instruction"], r["barriers"], r["warps"], r["waits"], r["share"]) == ("bar.sync", 4, 32, 0, 0.0)


# ------------------------------------------------------------------------------------------ branches
ANALYSIS = DATA / "analysis" / "analysis.ptx"  # from analysis.cu (regen.sh)


def expected_trip_count_branches(n: np.ndarray, m: int) -> dict[int, tuple[int, int, int, int]]:
    """The three conditional branches of trip_counts' PTX, per warp of 32 threads with trip counts n:
    line 41 `@%p1 bra` (n < 1) once per thread; line 53 `@%p2 bra` (loop back edge) n times by a thread
    with n >= 1, its j-th execution taken iff j + 1 < n; line 59 `@%p3 bra` (t % m != 0) once per
    thread.  -> line: (executions, uniform, threads, taken)."""
    out = {}
    t = np.arange(len(n))
    warps = [slice(w, w + 32) for w in range(0, len(n), 32)]
    execs = []  # per line: list of (active lanes mask, taken mask) per warp-level execution
    execs.append((41, [(np.ones(32, bool), n[w] < 1) for w in warps]))
    execs.append((53, [(n[w] > j, n[w] > j + 1) for w in warps for j in range(n[w].max())]))
    execs.append((59, [(np.ones(32, bool), t[w] % m != 0) for w in warps]))
    for line, ex in execs:
        uniform = sum(1 for act, tk in ex if len(set(tk[act])) == 1)
        out[line] = (len(ex), uniform, sum(int(a.sum()) for a, _ in ex), sum(int((a & tk).sum()) for a, tk in ex))
    return out


@pytest.mark.parametrize("m", [1, 2, 64])
def test_branch_efficiency_by_hand(m):
    # grid 2 x block 64: four warps.  warp 0: n = 3 for every lane (uniform loop); warp 1: n = lane % 4
    # (lanes leave at different iterations); warp 2: n = 0 (skips the loop); warp 3: n = 5 but lane 7 n = 1
    n = np.zeros(128, np.int32)
    n[:32], n[32:64], n[64:96], n[96:] = 3, np.arange(32) % 4, 0, 5
    n[96 + 7] = 1
    out = np.zeros(128, np.int32)
    k = ptxjit.Module.from_file(ANALYSIS).get_function("trip_counts")
    t = ptxjit.trace(k, 2, 64, (n, out, m), records=("branches",))
    be = t.branch_efficiency()
    got = {r["ptx_line"]: (r["executions"], r["uniform"], r["threads"], r["taken"]) for r in be.to_pylist()}
    assert got == expected_trip_count_branches(n, m)
    # worked by hand for the loop (line 53): warp 0 three uniform; warp 1 iterations 0, 1 divergent
    # (lanes with n = 1, 2 leave), 2 uniform; warp 3 iteration 0 divergent (lane 7), then 4 uniform
    loop = rows(be, ptx_line=53)[0]
    assert (loop["executions"], loop["uniform"], loop["divergent"]) == (3 + 3 + 5, 3 + 1 + 4, 0 + 2 + 1)
    assert loop["efficiency"] == 8 / 11 and loop["average_active_threads"] == (96 + 48 + 156) / 11
    entry = rows(be, ptx_line=41)[0]
    assert (entry["executions"], entry["uniform"], entry["taken"]) == (4, 3, 8 + 32)
    store = rows(be, ptx_line=59)[0]
    # t % m != 0: never taken for m = 1; divergent in every warp for m = 2; for m = 64 divergent in the
    # warps holding t = 0 and t = 64 (the first warp of each CTA), uniformly taken in the others
    assert store["uniform"] == {1: 4, 2: 0, 64: 2}[m]
    tot = totals(be)
    assert tot["executions"] == sum(r["executions"] for r in be.to_pylist())
    assert tot["efficiency"] == tot["uniform"] / tot["executions"]


def test_branch_efficiency_generic_translation_agrees():
    """The per-thread scheduler (generic translation) runs threads in another order: the same table."""
    n = (np.arange(96, dtype=np.int32) * 7) % 5
    k = ptxjit.Module.from_file(ANALYSIS).get_function("trip_counts")
    tabs = [ptxjit.trace(k, 1, 96, (n, np.zeros(96, np.int32), 3), records=("branches",), _generic=g)
            .branch_efficiency() for g in (False, True)]
    assert tabs[0].equals(tabs[1])
    got = {r["ptx_line"]: (r["executions"], r["uniform"], r["threads"], r["taken"]) for r in tabs[0].to_pylist()}
    assert got == expected_trip_count_branches(n, 3)


# ------------------------------------------------------------------------------------------ barriers
def expected_slow_warps(a: np.ndarray, b: np.ndarray, nctas: int) -> dict[int, tuple[int, int, int]]:
    """slow_warps' PTX blocks (instructions): B0 entry 15, B1 2, B2 loop 5, B3 2, B4 16 = 5 up to and
    including the first bar.sync (line 117) + 11 after, B5 1, B6 loop 5, B7 2, B8 14 = 2 up to the second
    bar.sync (line 145) + 12.  A warp with a iterations of the first loop runs 15 + 2 + 5a + 2 + 5 = 24 + 5a
    instructions before the first barrier (15 + 5 = 20 with a = 0: B1-B3 skipped); with b iterations of
    the second, 11 + 1 + 5b + 2 + 2 = 16 + 5b between the barriers (11 + 2 = 13 with b = 0).
    -> line: (waits, span, max wait) over the CTAs."""
    out = {}
    for line, count in ((117, np.where(a > 0, 24 + 5 * a, 20)), (145, np.where(b > 0, 16 + 5 * b, 13))):
        slowest = count.max()
        out[line] = (nctas * int((slowest - count).sum()), nctas * int(slowest) * len(count),
                     int((slowest - count).max()))
    return out


@pytest.mark.parametrize("records", [("blocks",), ("blocks", "barriers")], ids=["blocks", "blocks+barriers"])
def test_barrier_waits_by_hand(records):
    """Four warps per CTA: before the first barrier warp 0 loops 100 times, warp 2 three times, warp 3
    once; before the second warp 1 loops 7 times, warp 3 twice.  Without barrier records the barriers
    are found in the blocks' instructions; with them, from the arrivals: the same table."""
    a, b = np.array([100, 0, 3, 1]), np.array([0, 7, 0, 2])
    iters = np.concatenate([a, b]).astype(np.int32)
    nctas = 2
    out = np.zeros(nctas * 128, np.int32)
    k = ptxjit.Module.from_file(ANALYSIS).get_function("slow_warps")
    t = ptxjit.trace(k, nctas, 128, (iters, out), records=records)
    bw = t.barrier_waits()
    got = {r["ptx_line"]: (r["waits"], r["span"], r["max_wait"]) for r in bw.to_pylist()}
    exp = expected_slow_warps(a, b, nctas)
    assert got == exp
    # by hand: first barrier counts 524, 20, 39, 29 -> waits 0 + 504 + 485 + 495 = 1484 of 4 x 524 per CTA
    assert exp[117] == (2 * 1484, 2 * 2096, 504)
    for r in bw.to_pylist():
        assert r["instruction"] == "bar.sync" and r["barriers"] == nctas and r["warps"] == 4 * nctas
        assert r["share"] == r["waits"] / r["span"] and r["instructions"] == r["span"] - r["waits"]
    tot = totals(bw)
    assert tot["share"] == (exp[117][0] + exp[145][0]) / (exp[117][1] + exp[145][1])
    assert tot["max_wait"] == 504


TWO_BARRIERS_PTX = r"""
.version 7.0
.target sm_80
.address_size 64
.visible .entry two(.param .u64 p)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    mov.u32 %r1, %tid.x;
    shr.u32 %r2, %r1, 5;
    setp.ne.u32 %p1, %r2, 0;
    @%p1 bra SKIP;
    add.s32 %r3, %r1, 1;
    add.s32 %r3, %r3, 1;
    add.s32 %r3, %r3, 1;
SKIP:
    bar.sync 0;
    add.s32 %r4, %r1, 2;
    bar.sync 0;
    ret;
}
"""


@pytest.mark.parametrize("records", [("blocks",), ("blocks", "barriers")], ids=["blocks", "blocks+barriers"])
def test_two_barriers_in_one_block(records):
    """Blocks: entry (mov, shr, setp, bra: 4), warp 0's three adds (3), then one block holding both
    barriers (bar.sync | add, bar.sync | ret).  Before the first barrier warp 0 runs 4 + 3 + 1 = 8, the
    others 4 + 1 = 5: two warps wait 3 each; before the second every warp runs add + bar.sync = 2."""
    k = ptxjit.Module(TWO_BARRIERS_PTX).get_function("two")
    t = ptxjit.trace(k, 1, 96, (np.zeros(1, np.int32),), records=records)
    got = [(r["ptx_line"], r["barriers"], r["warps"], r["waits"], r["span"], r["max_wait"])
           for r in t.barrier_waits().to_pylist()]
    assert got == [(17, 1, 3, 6, 24, 3), (19, 1, 3, 0, 6, 0)]


def test_scan_barrier_sites_agree_with_and_without_barrier_records():
    """bench scan (16 warps, two __syncthreads, warp 0 alone scans the warp sums in between): the
    blocks-only and the records-based barrier attribution give the same table; the first barrier
    follows identical work (no wait), the second waits for warp 0."""
    k = ptxjit.Module.from_file(BENCH / "scan.ptx").get_function("scan")
    inp = np.arange(2 * 512, dtype=np.int32) % 7
    tabs = [ptxjit.trace(k, 2, 512, (inp, np.zeros_like(inp)), records=r).barrier_waits()
            for r in (("blocks",), ("blocks", "barriers"))]
    assert tabs[0].equals(tabs[1])
    first, second = sorted(tabs[0].to_pylist(), key=lambda r: r["ptx_line"])
    assert first["instruction"] == second["instruction"] == "bar.sync"  # the shfl.sync are not reported
    assert first["waits"] == 0 and first["warps"] == second["warps"] == 2 * 16
    # between the barriers warp 0 runs 4 + 5 + 22 + 5 = 36 instructions more than the others (scan.ptx:
    # the blocks after `@%p12 bra`: setp/mov/mov/bra, the warp_sum load, the 6 movs + 5 x shfl/selp/add +
    # bra, the store): 15 warps of 2 CTAs wait 36 each
    assert second["max_wait"] == 36 and second["waits"] == 36 * 15 * 2


# -------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("method, needs", [("memory_efficiency", "memory"), ("branch_efficiency", "branches"),
                                           ("barrier_waits", "blocks")])
def test_missing_records_named(method, needs):
    k = ptxjit.Module.from_file(ANALYSIS).get_function("trip_counts")
    n = np.zeros(32, np.int32)
    other = "barriers" if needs != "barriers" else "memory"
    t = ptxjit.trace(k, 1, 32, (n, np.zeros(32, np.int32), 1), records=(other,))
    with pytest.raises(ValueError, match=f"'{needs}' records"):
        getattr(t, method)()
