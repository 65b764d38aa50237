"""Time to first result of programs of many distinct kernels: what a kernel library's test suite or a notebook
pays, where every kernel is launched once.

Two programs, each checked against NumPy, each run in a fresh process per way:

* many_kernels_app.py: 23 Numba kernels, run on numba-cuda's real target under `ptxjit exec`
  (cuda), through ptxjit.numba (ptxjit) and on Numba's simulator (sim);
* many_kernels_triton_app.py: the 10 Triton corpus kernels, through ptxjit.triton (ptxjit) and on
  Triton's interpreter (interp, TRITON_INTERPRET=1).

ptxjit's ways run twice: cold (empty translation cache) and warm (the cache the cold run filled; Numba's
and Triton's own compiles still run, they cache separately).  Reported: the whole program's seconds,
the slowest kernel, and for Numba the part of the time that is Numba's own compile to PTX.
Run alone: python bench/ptxbench/many_kernels.py [--skip-triton]; bench/run.py adds it as a section.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
NUMBA_APP = HERE / "many_kernels_app.py"
TRITON_APP = HERE / "many_kernels_triton_app.py"


def _run(app: Path, mode: str, cache: str, under_exec: bool = False) -> dict:
    env = dict(os.environ, PTXJIT_CACHE_DIR=cache)
    env.pop("PTXJIT_DRIVER_LOG", None)
    cmd = [sys.executable, str(app), mode]
    if under_exec:
        exe = shutil.which("ptxjit", path=str(Path(sys.executable).parent)) or "ptxjit"
        cmd = [exe, "exec", "--", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env)
    line = next((ln for ln in reversed(r.stdout.splitlines()) if ln.startswith("RESULT")), None)
    if r.returncode != 0 or line is None:
        return {"error": f"exit {r.returncode}: {(r.stdout + r.stderr)[-400:]}"}
    rec = json.loads(line[len("RESULT"):])
    per = rec.get("per_kernel_s", {})
    if per:
        slow = max(per, key=per.get)
        rec["slowest"] = [slow, per[slow]]
    comp = rec.get("numba_compile_s") or {}
    rec["numba_compile_total_s"] = sum(comp.values()) if comp else None
    return rec


def measure(triton: bool = True) -> dict:
    out: dict = {"numba": {}, "triton": {}}
    with tempfile.TemporaryDirectory(prefix="ptxjit-many-") as tmp:
        if importlib.util.find_spec("numba") is not None:
            for mode, under_exec in (("ptxjit", False), ("cuda", True)):
                cache = str(Path(tmp) / f"numba-{mode}")
                out["numba"][mode] = {"cold": _run(NUMBA_APP, mode, cache, under_exec),
                                      "warm": _run(NUMBA_APP, mode, cache, under_exec)}
            out["numba"]["sim"] = {"cold": _run(NUMBA_APP, "sim", str(Path(tmp) / "sim"))}
        if triton and importlib.util.find_spec("triton") is not None:
            cache = str(Path(tmp) / "triton")
            out["triton"]["ptxjit"] = {"cold": _run(TRITON_APP, "ptxjit", cache),
                                       "warm": _run(TRITON_APP, "ptxjit", cache)}
            out["triton"]["interp"] = {"cold": _run(TRITON_APP, "interp", str(Path(tmp) / "interp"))}
    return out


_WAYS = {("numba", "ptxjit"): "ptxjit.numba", ("numba", "cuda"): "numba-cuda's target under `ptxjit exec`",
         ("numba", "sim"): "Numba's simulator", ("triton", "ptxjit"): "ptxjit.triton",
         ("triton", "interp"): "Triton's interpreter"}


def _cell(rec: dict | None) -> str:
    if rec is None:
        return "-"
    if "error" in rec:
        return "error"
    bad = " (mismatch: " + ", ".join(rec["mismatches"]) + ")" if rec.get("mismatches") else ""
    return f"{rec['total_s']:.1f}{bad}"


def markdown(sec: dict) -> list[str]:
    lines = ["### Many distinct kernels, each launched once (seconds to the last result, whole process)", "",
             "| program | way | kernels | cold | warm (ptxjit's cache filled) | slowest kernel (cold) |"
             " Numba's compile to PTX (cold) |", "|---|---|---|---|---|---|---|"]
    for prog in ("numba", "triton"):
        for mode, runs in sec.get(prog, {}).items():
            cold, warm = runs.get("cold"), runs.get("warm")
            n = cold.get("kernels", "") if cold else ""
            slow = cold.get("slowest") if cold and "error" not in cold else None
            comp = cold.get("numba_compile_total_s") if cold and "error" not in cold else None
            lines.append(f"| {prog} | {_WAYS[(prog, mode)]} | {n} | {_cell(cold)} | {_cell(warm)} | "
                         f"{f'{slow[0]} {slow[1]:.2f}' if slow else '-'} | {f'{comp:.1f}' if comp else '-'} |")
    errors = [f"{p} {m} {w}: {r['error'][:200]}" for p in ("numba", "triton") for m, runs in sec.get(p, {}).items()
              for w, r in runs.items() if r and "error" in r]
    return lines + [""] + [f"- {e}" for e in errors] + ([""] if errors else [])


def add_to(run, log=print) -> None:
    """bench/run.py: measure into run.res["many_kernels"] and add the section to results.md."""
    run.section("many_kernels", "many distinct kernels, each launched once (Numba, Triton; cold and warm)",
                measure, run.mode != "quick", markdown=markdown)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skip-triton", action="store_true")
    a = ap.parse_args(argv)
    sec = measure(triton=not a.skip_triton)
    print(json.dumps(sec))
    print("\n".join(markdown(sec)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
