"""tinygrad's own test/test_tiny.py, unchanged, on its CUDA backend through ptxjit's libcuda.so.1, beside the same
file on tinygrad's CPU backend (its C renderer compiled by clang: the peer that needs no GPU either).

Each configuration runs once in a fresh process with empty caches (ptxjit's translation cache and tinygrad's
compile cache), so the wall time is what a new user's first run costs: DEV=CUDA:PTX (tinygrad's PTX renderer),
DEV=CUDA (CUDA C through NVRTC), DEV=CPU.  Reported: wall seconds, tests passed/failed, and the ratio to the
CPU backend.  Run alone: python bench/ptxbench/tinygrad.py; bench/run.py adds it as a section.  Needs the
tinygrad extra and its source distribution in .venv/sdist (scripts/setup_venv.sh downloads it).
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

CONFIGS = [("CUDA:PTX", True), ("CUDA", True), ("CPU", False)]  # (DEV, through ptxjit's driver)


def tiny_test_file(dest: Path) -> Path | None:
    """test/test_tiny.py from tinygrad's source distribution, written into `dest`."""
    tars = sorted(glob.glob(os.path.join(sys.prefix, "sdist", "tinygrad-*.tar.gz")))
    if not tars:
        return None
    with tarfile.open(tars[-1]) as tf:
        member = next((m for m in tf.getmembers() if m.name.endswith("/test/test_tiny.py")), None)
        if member is None:
            return None
        out = dest / "test_tiny.py"
        out.write_bytes(tf.extractfile(member).read())
        return out


def _env(dev: str, driver: bool, tmp: Path) -> dict[str, str]:
    env = dict(os.environ, DEV=dev, PARALLEL="0", PTXJIT_CACHE_DIR=str(tmp / "ptxjit-cache"),
               CACHEDB=str(tmp / "tinygrad-cache.db"))
    env.pop("PTXJIT_DRIVER_LOG", None)
    if driver:
        from ptxjit.cli.driver import nvrtc_dirs
        from ptxjit.driver.build import ensure_built

        dirs = [str(ensure_built().parent), *nvrtc_dirs()]
        env["LD_LIBRARY_PATH"] = ":".join(dirs + ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []))
    return env


def measure() -> dict:
    try:
        import tinygrad  # noqa: F401
    except ImportError:
        return {"skipped": "tinygrad is not installed (the tinygrad extra)"}
    rows = {}
    with tempfile.TemporaryDirectory(prefix="ptxjit-tinygrad-") as tmp_s:
        tmp = Path(tmp_s)
        test = tiny_test_file(tmp)
        if test is None:
            return {"skipped": "tinygrad's source distribution is not in .venv/sdist"}
        for dev, driver in CONFIGS:
            run_dir = tmp / dev.replace(":", "_")
            run_dir.mkdir()
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
                               env=_env(dev, driver, run_dir), capture_output=True, text=True, timeout=1800,
                               cwd=tmp)
            wall = time.perf_counter() - t0
            tail = r.stdout[-2000:]
            counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error)", tail)}
            rows[dev] = {"wall_s": round(wall, 2), "exit": r.returncode, **counts}
    return {"configs": rows}


def markdown(sec: dict) -> list[str]:
    lines = ["### tinygrad's test/test_tiny.py (first run: empty caches)", ""]
    if "skipped" in sec:
        return lines + [f"Skipped: {sec['skipped']}.", ""]
    cpu = sec["configs"].get("CPU", {}).get("wall_s")
    lines += ["| DEV | backend | wall s | passed | failed | vs tinygrad's CPU backend |", "|---|---|---|---|---|---|"]
    backends = {"CUDA:PTX": "tinygrad's PTX renderer, ptxjit's driver", "CUDA": "CUDA C via NVRTC, ptxjit's driver",
                "CPU": "tinygrad's C renderer, clang"}
    for dev, row in sec["configs"].items():
        ratio = f"{row['wall_s'] / cpu:.2f}x" if cpu else "-"
        lines.append(f"| {dev} | {backends[dev]} | {row['wall_s']:.1f} | {row.get('passed', 0)} | "
                     f"{row.get('failed', 0) + row.get('error', 0)} | {ratio} |")
    return lines + [""]


def add_to(run, log=print) -> None:
    """bench/run.py: measure into run.res["tinygrad"] and add the section to results.md."""
    run.section("tinygrad", "tinygrad's test_tiny.py on its CUDA backend through ptxjit's driver", measure,
                markdown=markdown)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from ptxbench import run_alone

    sys.exit(run_alone(measure, markdown))
