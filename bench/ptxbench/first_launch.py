"""Translation throughput and the cold first launch, over every kernel the repository has.

Every entry of every PTX file in corpus/, bench/kernels/, examples/ and tests/data/ (Triton, NVRTC and
nvcc output; the one-instruction breadth kernels sampled every `--breadth-every`th), translated cold (a
fresh Module, an empty PTXJIT_CACHE_DIR) as a first launch translates it: bounds-checked, tier 0's
baseline build (jit/engine.py BASELINE), the generic code where tier 0 uses it.  Optionally also at
LLVM O2 (the level tier 0 had before the baseline build) or O3 (`--levels baseline,O3`: tier 1's unspecialized build,
the PTXJIT_TIERS=0 translation).

Reported per level: the distribution of the translation time per kernel (p50/p90/max; and again in a
new process that finds every translation in the disk cache the first one filled), PTX
instructions per second over all kernels, and where the time goes (parsing the PTX, the passes over
it, building the LLVM IR, its text, LLVM's passes, code generation, linking).  Files that ptxjit
refuses (the error-path test data) are counted and left out.  The run time of a first launch on top
of its translation depends on the launch; the tiers section measures whole first launches.

Run alone: python bench/ptxbench/first_launch.py [--levels baseline,O3] [--limit N] [--json FILE];
bench/run.py adds it as a section (skip key "first_launch").
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("corpus", "bench/kernels", "examples", "tests/data")
PHASES = ("parse", "analysis", "ir_build", "ir_text", "llvm_passes", "codegen", "link")
LEVELS = {"baseline": 0, "O2": 2, "O3": 3}


def ptx_files(breadth_every: int = 10) -> list[Path]:
    files: list[Path] = []
    for src in SOURCES:
        files += sorted((ROOT / src).rglob("*.ptx"))
    breadth = [f for f in files if "breadth" in f.parts]
    return [f for f in files if "breadth" not in f.parts] + breadth[::max(1, breadth_every)]


def _percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def measure_level(files: list[Path], level: str, limit: int | None = None) -> dict:
    """Translate every kernel of `files` cold at `level`; in this process (run it in a fresh one)."""
    import ptxjit
    from ptxjit.tiers.state import _generic_ok

    opt = LEVELS[level]
    warm = ptxjit.Module.from_file(ROOT / "bench" / "kernels" / "ptx" / "vadd.ptx")  # LLVM's one-time setup
    warm.translation(warm.get_function("vadd").fn, None, False, opt_level=opt)  # (unchecked: not measured)
    kernels: list[dict] = []
    refused: list[str] = []
    for path in files:
        t0 = time.perf_counter()
        try:
            mod = ptxjit.Module.from_file(path)
        except Exception as e:  # noqa: BLE001 - error-path test data: counted, not measured
            refused.append(f"{path.relative_to(ROOT)}: {type(e).__name__}")
            continue
        parse_s = time.perf_counter() - t0
        entries = [f for f in mod.ir.functions.values() if f.is_entry and f.body is not None]
        for fn in entries:
            block = None if _generic_ok(fn) else tuple((list(fn.perf.get("reqntid", fn.perf.get("maxntid", (128,))))
                                                        + [1, 1])[:3])
            t1 = time.perf_counter()
            try:
                tr = mod.translation(fn, block, True, opt_level=opt)
            except Exception as e:  # noqa: BLE001 - refused at translation (unsupported forms): counted
                refused.append(f"{path.relative_to(ROOT)}:{fn.name}: {type(e).__name__}")
                continue
            seconds = time.perf_counter() - t1 + parse_s / len(entries)
            ph = dict(getattr(tr, "phases", None) or {})  # (getattr: also measures older checkouts)
            ph["parse"] = parse_s / len(entries)
            kernels.append({"file": str(path.relative_to(ROOT)), "kernel": fn.name, "seconds": seconds,
                            "instructions": len(fn.instructions), "llvm_lines": getattr(tr, "llvm_lines", 0),
                            "phases": ph})
            if limit and len(kernels) >= limit:
                break
        if limit and len(kernels) >= limit:
            break
    secs = [k["seconds"] for k in kernels]
    total_s = sum(secs)
    instrs = sum(k["instructions"] for k in kernels)
    phase_s = {p: sum(k["phases"].get(p, 0.0) for k in kernels) for p in PHASES}
    slowest = sorted(kernels, key=lambda k: -k["seconds"])[:5]
    return {
        "level": level, "kernels": len(kernels), "refused": len(refused), "refused_list": refused[:20],
        "p50_ms": 1e3 * _percentile(secs, 0.5), "p90_ms": 1e3 * _percentile(secs, 0.9),
        "max_ms": 1e3 * max(secs), "mean_ms": 1e3 * statistics.fmean(secs),
        "instructions": instrs, "instructions_per_s": instrs / total_s, "total_s": total_s,
        "llvm_lines_per_instruction": sum(k["llvm_lines"] for k in kernels) / max(1, instrs),
        "phase_share": {p: phase_s[p] / total_s for p in PHASES},
        "slowest": [{"kernel": f"{k['file']}:{k['kernel']}", "ms": 1e3 * k["seconds"],
                     "instructions": k["instructions"]} for k in slowest],
        "per_kernel": [{"kernel": f"{k['file']}:{k['kernel']}", "ms": round(1e3 * k["seconds"], 2),
                        "instructions": k["instructions"]} for k in kernels],
    }


def measure(levels: tuple[str, ...] = ("baseline",), limit: int | None = None, breadth_every: int = 10) -> dict:
    """Each level in a fresh process with an empty cache directory (cold: nothing from earlier runs)."""
    out: dict = {"levels": {}}
    for level in levels:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, PTXJIT_CACHE_DIR=cache)
            args = [sys.executable, str(Path(__file__).resolve()), "--child", level, "--breadth-every",
                    str(breadth_every)] + (["--limit", str(limit)] if limit else [])
            runs = []
            for _ in range(2):  # cold, then a new process on the disk cache the first one filled
                r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=7200, check=False)
                if r.returncode != 0:
                    raise RuntimeError(f"first-launch child ({level}) failed: {r.stderr[-800:]}")
                runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
            cold, disk = runs
            cold["disk_p50_ms"], cold["disk_p90_ms"] = disk["p50_ms"], disk["p90_ms"]
            out["levels"][level] = cold
    return out


def markdown(sec: dict) -> list[str]:
    lines = ["### First launch: translation time over the repository's kernels (cold, bounds-checked)", "",
             "| level | kernels | p50 | p90 | max | from the disk cache: p50, p90 | PTX instructions/s |"
             " LLVM IR lines per PTX instruction | " + " | ".join(PHASES) + " |", "|---" * (7 + len(PHASES)) + "|"]
    for level, s in sec["levels"].items():
        share = " | ".join(f"{100 * s['phase_share'][p]:.0f}%" for p in PHASES)
        lines.append(f"| {level} | {s['kernels']} | {s['p50_ms']:.0f} ms | {s['p90_ms']:.0f} ms | {s['max_ms']:.0f} ms"
                     f" | {s['disk_p50_ms']:.1f} ms, {s['disk_p90_ms']:.1f} ms"
                     f" | {s['instructions_per_s']:.0f} | {s['llvm_lines_per_instruction']:.1f} | {share} |")
    lines.append("")
    for level, s in sec["levels"].items():
        slow = ", ".join(f"{k['kernel'].split('/')[-1]} {k['ms']:.0f} ms ({k['instructions']} instr.)"
                         for k in s["slowest"][:3])
        lines.append(f"Slowest at {level}: {slow}.  Refused (error-path test data): {s['refused']}.")
    lines.append("")
    return lines


def add_to(run, log=print) -> None:
    """bench/run.py: measure into run.res["first_launch"] and add the section to results.md."""
    log("first launch: translation time over the repository's kernels")
    levels = ("baseline",) if run.mode == "quick" else ("baseline", "O3")
    sec = run.guard("first_launch", measure, levels, 60 if run.mode == "quick" else None)
    if sec:
        for s in sec["levels"].values():
            s.pop("per_kernel", None)
        run.add_section("first_launch", sec, markdown(sec))


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--levels", default="baseline")
    ap.add_argument("--limit", type=int, default=None, help="stop after this many kernels")
    ap.add_argument("--breadth-every", type=int, default=10)
    ap.add_argument("--json", type=Path, default=None, help="also write the full results (per kernel) here")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(measure_level(ptx_files(a.breadth_every), a.child, a.limit)))
        return 0
    sec = measure(tuple(a.levels.split(",")), a.limit, a.breadth_every)
    if a.json:
        a.json.write_text(json.dumps(sec, indent=1))
    print("\n".join(markdown(sec)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
