"""The trace command line: `ptxjit trace` (every export written to --out, read back here) and
`ptxjit profile` (the per-line table, the hot-line chart).  Expected counts are derived by hand from the
PTX (vadd: every thread runs the entry and return blocks, threads below n the body with 2 loads and a store).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ptxjit.cli import main
from tests.test_trace_export import read_accelsim

pq = pytest.importorskip("pyarrow.parquet")

ROOT = Path(__file__).parent.parent
VADD = str(ROOT / "bench" / "kernels" / "ptx" / "vadd.ptx")
DOT = str(ROOT / "bench" / "kernels" / "ptx" / "dot.ptx")


def vadd_args(n: int) -> list[str]:
    return ["--arg", f"rand:float32:{n}", "--arg", f"rand:float32:{n}:1", "--arg", f"zeros:float32:{n}",
            "--arg", str(n)]


def invoke(*argv: str):
    return CliRunner().invoke(main, list(argv))


def test_trace_writes_every_export(tmp_path):
    n = 1000
    out = tmp_path / "vadd-trace"
    r = invoke("trace", VADD, "vadd", "--grid", "4", "--block", "256", *vadd_args(n), "--records", "memory,blocks",
               "--out", str(out))
    assert r.exit_code == 0, r.output
    blocks, memory = 1024 + n + 1024, 3 * n
    assert f"{blocks:,}" in r.output and f"{memory:,}" in r.output
    # Parquet, one file per record type
    assert pq.read_table(out / "blocks.parquet").num_rows == blocks
    m = pq.read_table(out / "memory.parquet")
    assert m.num_rows == memory
    assert m.column("kind").to_pylist().count("store") == n
    # the per-line summary as CSV
    with open(out / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    by_instr = {row["instruction"]: row for row in rows}
    assert int(by_instr["st.global.f32"]["executions"]) == n and int(by_instr["ret"]["executions"]) == 1024
    assert int(by_instr["st.global.f32"]["memory_accesses"]) == n
    # Accel-Sim: blocks and memory were recorded
    header, tbs = read_accelsim(out / "accelsim")
    assert header["kernel name"] == "vadd" and len(tbs) == 4
    assert sum(len(w) for warps in tbs.values() for w in warps) == 32 * (10 + 1) + 31 * 11 + 11  # 1000 = 31 warps + 8
    # the Perfetto timeline, where the trace has CTA timing
    doc = json.loads((out / "trace.json").read_text())
    assert len([e for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") == "cta"]) == 4
    for name in ("blocks.parquet", "memory.parquet", "summary.csv", "kernel-1.traceg"):
        assert name in r.output


def test_trace_without_blocks_skips_accelsim(tmp_path):
    out = tmp_path / "t"
    r = invoke("trace", VADD, "vadd", "--grid", "1", "--block", "64", *vadd_args(50), "--records", "memory",
               "--out", str(out))
    assert r.exit_code == 0, r.output
    assert pq.read_table(out / "memory.parquet").num_rows == 150
    assert not (out / "accelsim").exists() and not (out / "blocks.parquet").exists()


def test_trace_barriers_cuda_source(tmp_path):
    """A .cu file (NVRTC) with a barrier: barrier records, one per thread per __syncthreads."""
    src = tmp_path / "rev.cu"
    src.write_text("""extern "C" __global__ void rev(float *a) {
    __shared__ float s[64];
    s[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    a[threadIdx.x] = s[63 - threadIdx.x];
}
""")
    x = np.arange(64, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "t"
    r = invoke("trace", str(src), "rev", "--block", "64", "--arg", str(tmp_path / "x.npy"),
               "--records", "blocks,memory,barriers", "--out", str(out))
    assert r.exit_code == 0, r.output
    bar = pq.read_table(out / "barriers.parquet")
    assert bar.num_rows == 64 and set(bar.column("kind").to_pylist()) == {"cta"}
    doc = json.loads((out / "trace.json").read_text())
    assert [e["name"] for e in doc["traceEvents"] if e.get("cat") == "epoch"] == ["epoch 0", "epoch 1"]
    header, tbs = read_accelsim(out / "accelsim")
    ops = [i.opcode.split(".")[0] for i in tbs[(0, 0, 0)][0]]
    assert ops.count("BAR") == 1 and ops.count("LDS") == 1 and ops.count("STS") == 1


def test_trace_bad_records_and_missing_out(tmp_path):
    r = invoke("trace", VADD, "vadd", *vadd_args(10), "--records", "memory,instructions", "--out", str(tmp_path))
    assert r.exit_code == 2 and "records" in r.output
    r = invoke("trace", VADD, "vadd", *vadd_args(10))
    assert r.exit_code == 2 and "--out" in r.output
    f = tmp_path / "file"
    f.write_text("")
    r = invoke("trace", VADD, "vadd", *vadd_args(10), "--out", str(f))
    assert r.exit_code == 2 and "is a file" in r.output


def test_profile_per_line_table():
    n = 700
    r = invoke("profile", VADD, "vadd", "--grid", "3", "--block", "256", *vadd_args(n))
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    # vadd.ptx line 45 (ld.global.nc.f32) runs for the n threads below n; line 52 (ret) for all 768
    row45 = next(ln for ln in lines if ln.split("│")[1:2] and ln.split("│")[1].strip() == "45")
    assert "ld.global.nc.f32" in row45 and f"{n:,}" in row45
    row52 = next(ln for ln in lines if ln.split("│")[1:2] and ln.split("│")[1].strip() == "52")
    assert "768" in row52
    total = 768 * 11 + n * 11  # 10 entry instructions + ret per thread, 11 body instructions below n
    assert f"{total:,} PTX instructions executed" in r.output and f"{3 * n:,} memory accesses" in r.output


def test_profile_top_lines():
    r = invoke("profile", DOT, "dot", "--grid", "2", "--block", "256", "--arg", "ones:float32:2000",
               "--arg", "ones:float32:2000", "--arg", "zeros:float32:2", "--arg", "2000", "--top", "3")
    assert r.exit_code == 0, r.output
    rows = [ln for ln in r.output.splitlines() if ln.startswith("│")]
    assert len(rows) == 3
    # the grid-stride loop's body (lines 43-51): 2000 iterations over the 512 threads (j < 2000, step 512)
    assert all("2,000" in row for row in rows)


def test_profile_plot(tmp_path):
    png = tmp_path / "hot.png"
    args = ["profile", VADD, "vadd", "--grid", "2", "--block", "128", *vadd_args(200), "--plot", str(png)]
    pytest.importorskip("matplotlib")  # the trace extra installs it
    r = invoke(*args, "--top", "5")
    assert r.exit_code == 0, r.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
