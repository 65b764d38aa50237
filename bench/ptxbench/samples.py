"""CUDA C++ sample programs under `ptxjit exec`: where each one's wall time goes.

The runtime API's test programs (tests/cudart: vector add, tiled matmul, reductions, scan, histogram,
transpose, bitonic sort, n-body, Black-Scholes, streams, graphs, textures, printf, ...), each run twice with
`ptxjit exec --stats`: cold (an empty translation cache: every kernel translated) and warm (the disk cache
filled by the cold run).  Reported per program: the wall time of the process, and of it the translations the
program waited for, the kernels' runs, the copies, and the rest (interpreter and ptxjit start-up, the program's
own host work).  Run alone: python bench/ptxbench/samples.py; bench/run.py adds it as a section.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "cudart"
# (program, arguments): the samples of the suite that exit 0 and run no longer than a few seconds
SAMPLES = [("vector_add", ()), ("matmul_tiled", ()), ("reduce", ()), ("scan", ()), ("histogram", ()),
           ("transpose", ()), ("bitonic_sort", ()), ("nbody", ()), ("black_scholes", ()), ("streams_events", ()),
           ("constant_symbol", ()), ("grid_sync", ()), ("graphs", ()), ("textures", ()),
           ("printf_assert", ("printf",))]


def _ptxjit() -> str:
    return shutil.which("ptxjit", path=str(Path(sys.executable).parent)) or "ptxjit"


def _run(name: str, args: tuple[str, ...], cache: str, stats: Path) -> dict:
    env = dict(os.environ, PTXJIT_CACHE_DIR=cache)
    env.pop("PTXJIT_DRIVER_LOG", None)
    before = stats.read_text().count("\n") if stats.exists() else 0
    t0 = time.perf_counter()
    r = subprocess.run([_ptxjit(), "exec", f"--stats={stats}", "--", str(PROGRAMS / name), *args],
                       capture_output=True, text=True, timeout=600, env=env)
    wall = time.perf_counter() - t0
    lines = stats.read_text().splitlines() if stats.exists() else []
    if r.returncode != 0 or len(lines) <= before:
        return {"error": f"exit {r.returncode}: {(r.stdout + r.stderr)[-300:]}"}
    rec = json.loads(lines[-1])
    rec["process_s"] = round(wall, 3)
    return rec


def measure(programs: list[tuple[str, tuple[str, ...]]] | None = None) -> dict:
    rows = {}
    with tempfile.TemporaryDirectory(prefix="ptxjit-samples-") as tmp:
        stats = Path(tmp) / "stats.json"
        for name, args in programs or SAMPLES:
            if not (PROGRAMS / name).is_file():
                continue
            cache = str(Path(tmp) / f"cache-{name}")
            rows[name] = {"cold": _run(name, args, cache, stats), "warm": _run(name, args, cache, stats)}
    return {"programs": rows}


def _row(name: str, cold: dict, warm: dict) -> str:
    if "error" in cold or "error" in warm:
        return f"| {name} | {(cold.get('error') or warm.get('error'))[:80]} | | | | | | |"
    rest = cold["process_s"] - cold["translate_s"] - cold["kernel_s"] - cold["copy_s"]
    return (f"| {name} | {cold['process_s']:.2f} | {cold['translate_s']:.2f} ({cold['translations']}) | "
            f"{cold['kernel_s']:.3f} ({cold['launches']}) | {cold['copy_s']:.3f} ({cold['copy_bytes'] / 1e6:.1f} MB) |"
            f" {max(0.0, rest):.2f} | {warm['process_s']:.2f} | {warm['translate_s']:.2f} |")


def markdown(sec: dict) -> list[str]:
    lines = ["### CUDA C++ samples under `ptxjit exec` (seconds)", "",
             "Cold: an empty translation cache; warm: the disk cache the cold run filled. Translation: what the "
             "program waited for (kernels translated); kernels: their runs (launches); rest: interpreter and "
             "ptxjit start-up and the program's own host work.", "",
             "| program | cold wall | translation | kernels | copies | rest | warm wall | warm: cache loads |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [_row(n, r["cold"], r["warm"]) for n, r in sec["programs"].items()]
    return lines + [""]


def add_to(run, log=print) -> None:
    """bench/run.py: measure into run.res["samples"] and add the section to results.md."""
    run.section("samples", "CUDA C++ samples under ptxjit exec (cold and warm translation cache)",
                measure, markdown=markdown)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from ptxbench import run_alone

    sys.exit(run_alone(measure, markdown))
