"""Trace exports: Accel-Sim traces (instrument/accelsim.py) and the Perfetto/Chrome JSON timeline
(instrument/perfetto.py).

The Accel-Sim files are read back by `read_accelsim`, a strict reader written from the format's
documentation (the NVBit tracer's README and Accel-Sim's trace parser: header keys, the TB/warp structure,
the instruction line, the three address modes); it rejects anything the simulator would misread.  Expected
values are derived by hand from the PTX or with NumPy, never from the exporter.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import ptxjit
from ptxjit.instrument import accelsim
from tests import test_trace as tt
from tests.corpus_util import kernel

pytest.importorskip("pyarrow")

BENCH = Path(__file__).parent.parent / "bench" / "kernels" / "ptx"


def bench_kernel(name: str) -> ptxjit.Kernel:
    return ptxjit.Module.from_file(BENCH / f"{name}.ptx").get_function(name)


# ------------------------------------------------------------------------------------ strict reader
HEADER = {  # "-key = value" lines of a kernel trace, as the tracer writes them
    "kernel name": r"\S.*", "kernel id": r"\d+", "grid dim": r"\(\d+,\d+,\d+\)", "block dim": r"\(\d+,\d+,\d+\)",
    "shmem": r"\d+", "nregs": r"\d+", "binary version": r"\d+", "cuda stream id": r"\d+",
    "shmem base_addr": r"0x[0-9a-f]{16}", "local mem base_addr": r"0x[0-9a-f]{16}", "nvbit version": r"\S.*",
    "accelsim tracer version": r"\d+", "enable lineinfo": r"[01]",
}
# Accel-Sim's Ampere opcode table (ISA_Def/ampere_opcode.h): the first token of every opcode must be one
AMPERE = set("""FADD FADD32I FCHK FFMA32I FFMA FMNMX FMUL FMUL32I FSEL FSET FSETP FSWZADD MUFU HADD2 HADD2_32I HFMA2
HFMA2_32I HMUL2 HMUL2_32I HSET2 HSETP2 HMNMX2 HMMA DMMA BMMA IMMA DADD DFMA DMUL DSETP BMSK BREV FLO IABS IADD IADD3
IADD32I IDP IDP4A IMAD IMNMX IMUL IMUL32I ISCADD ISCADD32I ISETP LEA LOP LOP3 LOP32I POPC SHF SHL SHR VABSDIFF
VABSDIFF4 F2F F2FP F2I I2F I2I I2IP I2FP F2IP FRND MOV MOV32I MOVM PRMT SEL SGXT SHFL PLOP3 PSETP P2R R2P LD LDC LDG
LDL LDS LDSM ST STG STL STS MATCH QSPC ATOM ATOMS ATOMG RED CCTL CCTLL ERRBAR MEMBAR CCTLT LDGDEPBAR LDGSTS R2UR
REDUX S2UR TEX TLD TLD4 TMML TXD TXQ SUATOM SULD SUQUERY SURED SUST BMOV BPT BRA BREAK BRX BRXU BSSY BSYNC CALL EXIT
JMP JMX JMXU KILL NANOSLEEP RET RPCMOV RTT WARPSYNC YIELD B2R BAR CS2R CSMTEST DEPBAR GETLMEMBASE LEPC NOP PMTRIG R2B
S2R SETCTAID SETLMEMBASE VOTE VOTE_VTG""".split())
# opcodes the simulator treats as memory accesses (it asserts a data width for them)
MEMORY = {"LD", "LDG", "LDL", "LDS", "ST", "STG", "STL", "STS", "ATOM", "ATOMS", "ATOMG", "RED", "LDGSTS"}
HEX = re.compile(r"0x[0-9a-f]+$")
REG = re.compile(r"R(\d+)$")


@dataclass
class Inst:
    pc: int
    mask: int
    dst: list[int]
    opcode: str
    src: list[int]
    width: int
    mode: int | None
    addrs: dict[int, int]  # lane -> address
    line: int | None = None


def _width_of(opcode: str) -> int:
    """The width the trace parser derives from an opcode: its first number (bits) or U<bits>, else 4."""
    for tok in opcode.split("."):
        if tok.isdigit():
            return int(tok) // 8
        if tok[:1] == "U" and tok[1:].isdigit():
            return int(tok[1:]) // 8
    return 4


def _lanes(mask: int) -> list[int]:
    return [i for i in range(32) if mask >> i & 1]


def parse_inst(line: str, lineinfo: bool) -> Inst:
    tok = line.split()
    pos = 0

    def take() -> str:
        nonlocal pos
        assert pos < len(tok), f"line ends early: {line!r}"
        pos += 1
        return tok[pos - 1]

    num = int(take()) if lineinfo else None
    pc_s, mask_s = take(), take()
    assert re.fullmatch(r"[0-9a-f]{4,}", pc_s) and int(pc_s, 16) % 16 == 0, line
    assert re.fullmatch(r"[0-9a-f]{8}", mask_s), line
    pc, mask = int(pc_s, 16), int(mask_s, 16)

    def regs(limit: int) -> list[int]:
        n = int(take())
        assert 0 <= n <= limit, line
        out = []
        for _ in range(n):
            m = REG.fullmatch(take())
            assert m and int(m.group(1)) != 255, line  # R255 is the zero register
            out.append(int(m.group(1)))
        return out

    dst = regs(1)
    opcode = take()
    assert re.fullmatch(r"[A-Z][A-Z0-9_]*(\.[A-Z0-9_]+)*", opcode), line
    assert opcode.split(".")[0] in AMPERE, f"unknown opcode {opcode}"
    src = regs(4)
    width = int(take())
    mem = opcode.split(".")[0] in MEMORY
    assert (width > 0) == mem, line
    mode, addrs = None, {}
    lanes = _lanes(mask)
    if width:
        assert width == _width_of(opcode), line
        mode = int(take())
        if mode == 0:
            for lane in lanes:
                a = take()
                assert HEX.fullmatch(a), line
                addrs[lane] = int(a, 16)
        elif mode == 1:  # base + stride: only a contiguous run of lanes decompresses right
            assert len(lanes) >= 2 and lanes[-1] - lanes[0] == len(lanes) - 1, line
            base, stride = take(), int(take())
            assert HEX.fullmatch(base) and -(1 << 31) <= stride < (1 << 31), line
            addrs = {lane: int(base, 16) + i * stride for i, lane in enumerate(lanes)}
        elif mode == 2:  # base + one delta per further active lane
            assert lanes, line
            base = take()
            assert HEX.fullmatch(base), line
            a = int(base, 16)
            addrs[lanes[0]] = a
            for lane in lanes[1:]:
                a += int(take())
                addrs[lane] = a
        else:
            raise AssertionError(f"address mode {mode}: {line}")
    assert pos == len(tok), f"trailing tokens: {line!r}"
    return Inst(pc, mask, dst, opcode, src, width, mode, addrs, num)


def read_accelsim(directory: Path) -> tuple[dict[str, str], dict[tuple[int, int, int], list[list[Inst]]]]:
    """(header, {thread block: [warp's instructions]}) of kernelslist.g's one kernel; asserts the format."""
    listing = [ln for ln in (directory / "kernelslist.g").read_text().splitlines() if ln.strip()]
    assert listing == ["kernel-1.traceg"]
    lines = (directory / listing[0]).read_text().split("\n")
    assert lines[-1] == "", "the file ends with a newline"
    header: dict[str, str] = {}
    i = 0
    while lines[i].startswith("-"):
        m = re.fullmatch(r"-([a-z_ ]+?) = (.*)", lines[i])
        assert m and m.group(1) in HEADER and m.group(1) not in header, lines[i]
        assert re.fullmatch(HEADER[m.group(1)], m.group(2)), lines[i]
        header[m.group(1)] = m.group(2)
        i += 1
    assert set(header) == set(HEADER), set(HEADER) - set(header)
    assert lines[i] == "" and lines[i + 1].startswith("#traces format = "), lines[i:i + 2]
    lineinfo = header["enable lineinfo"] == "1"
    grid = tuple(int(x) for x in header["grid dim"][1:-1].split(","))
    block = tuple(int(x) for x in header["block dim"][1:-1].split(","))
    nwarps = -(-block[0] * block[1] * block[2] // 32)
    body = [ln for ln in lines[i + 2:] if ln != ""]
    tbs: dict[tuple[int, int, int], list[list[Inst]]] = {}
    j = 0
    while j < len(body):
        assert body[j] == "#BEGIN_TB", body[j]
        m = re.fullmatch(r"thread block = (\d+),(\d+),(\d+)", body[j + 1])
        assert m, body[j + 1]
        tb = tuple(int(x) for x in m.groups())
        assert tb not in tbs and all(a < g for a, g in zip(tb, grid, strict=True)), tb
        j += 2
        warps = []
        while body[j] != "#END_TB":
            assert body[j] == f"warp = {len(warps)}", body[j]
            m = re.fullmatch(r"insts = (\d+)", body[j + 1])
            assert m, body[j + 1]
            n = int(m.group(1))
            insts = [parse_inst(ln, lineinfo) for ln in body[j + 2:j + 2 + n]]
            assert len(insts) == n and not any(ln.startswith(("#", "warp", "insts")) for ln in body[j + 2:j + 2 + n])
            warps.append(insts)
            j += 2 + n
        assert len(warps) == nwarps, (tb, len(warps))
        tbs[tb] = warps
        j += 1
    assert len(tbs) == grid[0] * grid[1] * grid[2]
    return header, tbs


def heads(insts: list[Inst]) -> list[str]:
    return [i.opcode.split(".")[0] for i in insts]


# -------------------------------------------------------------------------------------- vadd
def _vadd(n: int):
    rng = np.random.default_rng(11)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    t = ptxjit.trace(bench_kernel("vadd"), 4, 256, (a, b, c, n))
    np.testing.assert_array_equal(c, a + b)
    return t, a, b, c


# per PTX line of vadd.ptx's 22 instructions (PC = index x 16): the opcode family expected
VADD_OPS = ["LDC"] * 4 + ["S2R", "MOV", "S2R", "IMAD", "ISETP", "BRA"] + \
    ["MOV", "IMAD", "IADD3", "MOV", "IADD3", "LDG", "LDG", "FADD", "MOV", "IADD3", "STG"] + ["EXIT"]


def test_accelsim_vadd_masks_registers_addresses(tmp_path):
    n = 980  # 4 CTAs x 256: CTA 3's warp 6 holds elements 960..991 (20 below n), warp 7 none
    t, a, b, c = _vadd(n)
    paths = t.to_accelsim(tmp_path)
    assert paths == {"kernelslist": tmp_path / "kernelslist.g", "kernel": tmp_path / "kernel-1.traceg"}
    header, tbs = read_accelsim(tmp_path)
    assert header["kernel name"] == "vadd" and header["grid dim"] == "(4,1,1)" and header["block dim"] == "(256,1,1)"
    assert header["accelsim tracer version"] == "4" and header["shmem"] == "0" and header["enable lineinfo"] == "0"
    assert set(tbs) == {(x, 0, 0) for x in range(4)}
    full = 0xFFFFFFFF
    for (x, _, _), warps in tbs.items():
        for w, insts in enumerate(warps):
            first = x * 256 + w * 32
            active = max(0, min(32, n - first))  # threads of this warp with i < n
            if active == 0:  # entry block and ret only
                assert heads(insts) == VADD_OPS[:10] + ["EXIT"]
                assert [i.pc for i in insts] == [16 * k for k in range(10)] + [21 * 16]
                assert all(i.mask == full for i in insts)
                continue
            assert heads(insts) == VADD_OPS
            assert [i.pc for i in insts] == [16 * k for k in range(22)]
            body = (1 << active) - 1
            assert [i.mask for i in insts] == [full] * 10 + [body] * 11 + [full]
            idx = np.arange(first, first + active)
            # ld.global.nc.f32 %f1, [%rd8] (b[i]), ld %f2, [%rd6] (a[i]), st [%rd10], %f3 (c[i])
            for inst, arr in ((insts[15], b), (insts[16], a), (insts[20], c)):
                assert inst.mode == 1 and inst.width == 4
                assert list(inst.addrs) == list(range(active))
                np.testing.assert_array_equal(list(inst.addrs.values()), arr.ctypes.data + 4 * idx)
    # registers by first appearance: %rd1-3 R0-2, %r2-5 R3-6, %r1 R7, %rd4-8 R8-12, %f1-3 R13-15, %rd9-10 R16-17
    w0 = tbs[(0, 0, 0)][0]
    assert (w0[7].dst, w0[7].src) == ([7], [4, 5, 6])        # mad.lo.s32 %r1, %r3, %r4, %r5
    assert (w0[8].dst, w0[8].src) == ([], [7, 3])            # setp.ge.s32 %p1, %r1, %r2: no predicate registers
    assert (w0[15].dst, w0[15].src) == ([13], [12])          # ld.global.nc.f32 %f1, [%rd8]
    assert (w0[17].dst, w0[17].src) == ([15], [14, 13])      # add.f32 %f3, %f2, %f1
    assert (w0[20].dst, w0[20].src) == ([], [17, 15])        # st.global.f32 [%rd10], %f3
    assert tbs[(3, 0, 0)][6][20].mask == 0x000FFFFF


def test_accelsim_uncompressed_and_lineinfo(tmp_path):
    n = 100  # one CTA's warps 0-2 full, warp 3 with 4 threads
    t, a, b, c = _vadd(n)
    accelsim.write_accelsim(t, tmp_path, compress=False, lineinfo=True)
    header, tbs = read_accelsim(tmp_path)
    assert header["enable lineinfo"] == "1"
    w3 = tbs[(0, 0, 0)][3]
    ld = w3[15]
    assert ld.line == 44 and ld.mode == 0 and ld.mask == 0xF  # vadd.ptx line 44: ld.global.nc.f32 %f1, [%rd8]
    assert ld.addrs == {lane: b.ctypes.data + 4 * (96 + lane) for lane in range(4)}
    assert [i.line for i in w3[:3]] == [28, 29, 30] and w3[-1].line == 52


# ------------------------------------------------------------------------------ divergence, loops
DIVERGE_PTX = r"""
.version 7.0
.target sm_80
.address_size 64
.visible .entry diverge(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    and.b32 %r2, %r1, 1;
    setp.eq.s32 %p1, %r2, 0;
    @%p1 bra EVEN;
    mul.lo.s32 %r3, %r1, 3;
    st.global.u32 [%rd3], %r3;
    bra.uni JOIN;
EVEN:
    shl.b32 %r3, %r1, 1;
JOIN:
    mov.u32 %r4, 0;
    and.b32 %r5, %r1, 3;
LOOP:
    add.s32 %r4, %r4, 1;
    setp.le.u32 %p2, %r4, %r5;
    @%p2 bra LOOP;
    setp.lt.u32 %p3, %r1, 5;
    @%p3 st.global.u32 [%rd3+256], %r4;
    ret;
}
"""


def test_accelsim_divergence_loops_and_guards(tmp_path):
    """Odd lanes take the fall-through path (PCs 7-9, a store), even lanes the branch (PC 10); the loop
    (PCs 13-15) runs tid % 4 + 1 times; a store guarded by tid < 5 (PC 17)."""
    k = ptxjit.Module(DIVERGE_PTX).get_function("diverge")
    out = np.zeros(128, np.uint32)
    t = ptxjit.trace(k, 1, 64, (out,))
    tid = np.arange(64)
    exp = np.zeros(128, np.uint32)
    exp[1:64:2] = 3 * tid[1::2]
    exp[64:69] = tid[:5] % 4 + 1
    np.testing.assert_array_equal(out, exp)
    t.to_accelsim(tmp_path)
    header, tbs = read_accelsim(tmp_path)
    warps = tbs[(0, 0, 0)]
    assert len(warps) == 2
    full, odd, even = 0xFFFFFFFF, 0xAAAAAAAA, 0x55555555
    loop = [full, 0xEEEEEEEE, 0xCCCCCCCC, 0x88888888]  # iteration k: lanes with tid % 4 >= k
    for w, insts in enumerate(warps):
        pcs = list(range(7)) + [7, 8, 9, 10, 11, 12] + [13, 14, 15] * 4 + [16, 17, 18]
        assert [i.pc // 16 for i in insts] == pcs
        masks = [full] * 7 + [odd] * 3 + [even] + [full] * 2 + [m for m in loop for _ in range(3)]
        store = 0x1F if w == 0 else 0  # guarded: lanes with tid < 5
        assert [i.mask for i in insts] == masks + [full, store, full]
        assert heads(insts) == ["LDC", "S2R", "IMAD", "IADD3", "LOP3", "ISETP", "BRA", "IMAD", "STG", "BRA", "SHF",
                                "MOV", "LOP3"] + ["IADD3", "ISETP", "BRA"] * 4 + ["ISETP", "STG", "EXIT"]
        # %rd1 R0, %r1 R1, %rd2 R2, %rd3 R3, %r2 R4, %r3 R5, %r4 R6, %r5 R7
        st1, st2 = insts[8], insts[-2]
        assert (st1.src, st2.src) == ([3, 5], [3, 6])
        # the odd lanes' store: not contiguous, so base + deltas (8 bytes apart)
        assert st1.mode == 2
        assert st1.addrs == {lane: out.ctypes.data + 4 * (32 * w + lane) for lane in range(1, 32, 2)}
        if w == 0:
            assert st2.mode == 1 and st2.addrs == {lane: out.ctypes.data + 256 + 4 * lane for lane in range(5)}
        else:  # no lane's guard held: the instruction with an empty mask and no addresses
            assert st2.mode == 0 and st2.addrs == {}


# ------------------------------------------------------------------------------- barriers, shared
DOT_RECORDS = ("blocks", "memory", "barriers")


@pytest.fixture(scope="module")
def dot():
    """dot.ptx on 4 CTAs of 256 threads, n = 3000 (a grid-stride loop of 3 or 2 iterations, 9 bar.sync):
    one trace for the Accel-Sim and the Perfetto tests (each record set is a translation of its own)."""
    n, nb = 3000, 4
    rng = np.random.default_rng(12)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    part = np.zeros(nb, np.float32)
    t = ptxjit.trace(bench_kernel("dot"), nb, 256, (x, y, part, n), records=DOT_RECORDS)
    j = np.arange(n)  # CTA c's threads take the elements j with j // 256 % 4 == c
    xy = x.astype(np.float64) * y
    np.testing.assert_allclose(part, [xy[j // 256 % nb == c].sum() for c in range(nb)], rtol=1e-5)
    return t, x, y, part, n, nb


def test_accelsim_dot_barriers_shared_memory(tmp_path, dot):
    t, x, y, part, n, nb = dot
    t.to_accelsim(tmp_path)
    header, tbs = read_accelsim(tmp_path)
    assert header["shmem"] == "1024"  # s[256] floats: thread i stores at 4 * i
    full = 0xFFFFFFFF
    for (c, _, _), warps in tbs.items():
        for w, insts in enumerate(warps):
            hs = heads(insts)
            bars = [i for i in insts if i.opcode.startswith("BAR")]
            assert len(bars) == 9 and all(b.mask == full and b.opcode == "BAR.SYNC" for b in bars)
            # grid-stride loop: j = 256c + 32w + lane, then + 1024 while below 3000 (3 iterations for j < 952)
            j = 256 * c + 32 * w + np.arange(32)
            ldg = [i for i in insts if i.opcode.startswith("LDG")]
            iters = [int(np.sum(j + 1024 * it < n)) for it in range(3)]
            exp_masks = [m for it in range(3) if iters[it] for m in [(1 << iters[it]) - 1] * 2]
            assert [i.mask for i in ldg] == exp_masks
            for it, pair in enumerate(zip(ldg[::2], ldg[1::2], strict=True)):  # y[j] then x[j]
                jj = j[:iters[it]] + 1024 * it
                assert list(pair[0].addrs.values()) == (y.ctypes.data + 4 * jj).tolist()
                assert list(pair[1].addrs.values()) == (x.ctypes.data + 4 * jj).tolist()
            # shared: one store per thread at 4 * tid, then the tree: in epoch k threads below 256 >> k
            sts = [i for i in insts if i.opcode.startswith("STS")]
            assert sts[0].mask == full and list(sts[0].addrs.values()) == [4 * (32 * w + i) for i in range(32)]
            lds = [i for i in insts if i.opcode.startswith("LDS")]
            exp = []
            for k in range(1, 8):
                h = 256 >> k
                lanes = [i for i in range(32) if 32 * w + i < h]
                if lanes:
                    exp += [{i: 4 * (32 * w + i) for i in lanes}, {i: 4 * (32 * w + i) + 4 * h for i in lanes}]
            if w == 0:
                exp += [{0: 4}, {0: 0}, {0: 0}]  # thread 0: s[1] + s[0], then s[0] for the result
            assert [i.addrs for i in lds] == exp
            assert [i.mask for i in lds] == [sum(1 << i for i in a) for a in exp]
            assert all(i.mode == 2 for i in lds if len(i.addrs) == 1)  # one lane: base, no deltas
            assert hs[-1] == "EXIT"
        stg = [i for i in warps[0] if i.opcode.startswith("STG")]
        assert len(stg) == 1 and stg[0].addrs == {0: part.ctypes.data + 4 * c}


def test_accelsim_needs_blocks_and_memory(tmp_path):
    a = np.zeros(64, np.float32)
    t = ptxjit.trace(bench_kernel("vadd"), 1, 64, (a, a.copy(), a.copy(), 64), records=("memory",))
    with pytest.raises(ValueError, match="'blocks'"):
        t.to_accelsim(tmp_path)


def test_sass_opcode_fallback_is_known():
    """PTX with no SASS counterpart falls back to an opcode Accel-Sim's table has."""
    assert accelsim.FALLBACK_OPCODE in AMPERE


# ------------------------------------------------------------------------------------- Perfetto
def test_perfetto_tracks_and_nesting(tmp_path, dot):
    t, x, y, part, n, nb = dot
    path = t.to_perfetto(tmp_path / "sub" / "dot.json")
    doc = json.loads(path.read_text())
    ev = doc["traceEvents"]
    assert all(e["ph"] in ("M", "X") for e in ev)
    meta = [e for e in ev if e["ph"] == "M"]
    spans = [e for e in ev if e["ph"] == "X"]
    procs = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert procs[0] == "kernel dot"
    # one track per CTA, under the process of the worker that ran it
    cta_tracks = {name: key for key, name in threads.items() if name.startswith("CTA")}
    assert sorted(cta_tracks) == [f"CTA {c} ({c},0,0)" for c in range(nb)]
    for key in cta_tracks.values():
        assert procs[key[0]].startswith("worker ")
    ctas = t.ctas().to_pydict()
    for c in range(nb):
        track = [e for e in spans if (e["pid"], e["tid"]) == cta_tracks[f"CTA {c} ({c},0,0)"]]
        ts = [e["ts"] for e in track]
        assert ts == sorted(ts)  # monotone per track
        top = [e for e in track if e["cat"] == "cta"]
        assert len(top) == 1
        span = top[0]
        assert span["ts"] == pytest.approx(ctas["start_ns"][c] / 1000, abs=1e-3)
        assert span["dur"] == pytest.approx((ctas["end_ns"][c] - ctas["start_ns"][c]) / 1000, abs=1e-3)
        epochs = [e for e in track if e["cat"] == "epoch"]
        assert [e["name"] for e in epochs] == [f"epoch {k}" for k in range(10)]  # dot.ptx: 9 bar.sync
        # nested in the CTA's span, one after the other, covering it
        assert epochs[0]["ts"] == pytest.approx(span["ts"], abs=1e-6)
        for e0, e1 in zip(epochs, epochs[1:], strict=False):
            assert e1["ts"] == pytest.approx(e0["ts"] + e0["dur"], abs=2e-3)
        assert epochs[-1]["ts"] + epochs[-1]["dur"] == pytest.approx(span["ts"] + span["dur"], abs=2e-3)
        assert all(e["dur"] >= 0 for e in epochs)
        lines = [int(e["args"]["ends at"].split("line ")[1].rstrip(")")) for e in epochs[:-1]]
        assert lines == [64, 74, 84, 94, 104, 114, 124, 134, 144]  # the bar.sync lines of dot.ptx
        assert all(e["args"]["arrivals"] == 256 for e in epochs[:-1])
    launch = [e for e in spans if e["pid"] == 0]
    assert len(launch) == 1 and launch[0]["name"] == "dot"


def test_perfetto_without_barrier_records(tmp_path):
    a = np.ones(300, np.float32)
    t = ptxjit.trace(bench_kernel("vadd"), 3, 128, (a, a.copy(), np.zeros(300, np.float32), 300))
    doc = json.loads(t.to_perfetto(tmp_path / "v.json").read_text())
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert sorted(e["name"] for e in spans if e["cat"] == "cta") == ["CTA (0,0,0)", "CTA (1,0,0)", "CTA (2,0,0)"]
    assert not [e for e in spans if e["cat"] == "epoch"]


# ------------------------------------------------------------------------------------- corpus
@pytest.mark.parametrize("launch", ["hist", "reduce_shfl", "calls", "local"])
def test_accelsim_corpus_kernels(tmp_path, launch):
    """Atomics, warp shuffles, device functions, local memory: the files read back, and every thread's
    execution of an instruction is in exactly one warp line (the mask popcounts add up to the per-line
    executions of the counting run), every memory record in exactly one address list."""
    make = {"hist": tt._launch_hist, "reduce_shfl": tt._launch_reduce_shfl, "calls": tt._launch_calls,
            "local": tt._launch_local}[launch]
    (stem, name), grid, block, args, check = make()
    t = ptxjit.trace(kernel(stem, name), grid, block, args)
    check()
    accelsim.write_accelsim(t, tmp_path, lineinfo=True)
    header, tbs = read_accelsim(tmp_path)
    per_line: dict[int, int] = {}
    naddr = 0
    for warps in tbs.values():
        for insts in warps:
            for i in insts:
                if i.width == 0:
                    per_line[i.line] = per_line.get(i.line, 0) + bin(i.mask).count("1")
                naddr += len(i.addrs)
    s = t.summary().to_pydict()
    execs = dict(zip(s["ptx_line"], s["executions"], strict=True))
    assert per_line == {line: execs[line] for line in per_line}
    m = t.table("memory")
    space = np.asarray(m.column("space").to_pylist(), dtype=object)
    part = np.array([t.plan.memory[i].part for i in m.column("site").to_numpy()])
    assert naddr == int(((space != "const") & (part == 0)).sum())
