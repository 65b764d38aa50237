"""Launch overhead through the CUDA driver API's C ABI (ptxjit's libcuda.so.1) and the runtime API's
(libcudart.so.13, nvcc's <<<>>>) against ptxjit's Python launch.

The empty kernel (kernels/empty.cu) launched N times, each followed by a synchronization, four ways: a C
program calling cuLaunchKernel + cuCtxSynchronize; the same program launching a one-node graph
(cuGraphLaunch); N C launches then one synchronize (throughput); and, in this process, `kernel(1, 32, ())`
of ptxjit's Python API (synchronous); and a CUDA C++ program (native/runtime_launch.cu) launching with
<<<>>>: an empty kernel and one with four parameters, each followed by cudaDeviceSynchronize.  Reported in
microseconds per launch and as ratios to Python (the C paths add the C-to-Python call, the parameter
gathering and the stream).
Run alone: python bench/ptxbench/driver_launch.py [--launches N]; bench/run.py adds it as a section.
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

HERE = Path(__file__).resolve().parent.parent
EMPTY_PTX = HERE / "kernels" / "ptx" / "empty.ptx"
SOURCE = HERE / "native" / "driver_launch.c"
RUNTIME_PROGRAM = HERE / "native" / "runtime_launch"  # bench/native/runtime_launch.cu, built by build.sh


def _cuda_include() -> str | None:
    for d in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        if d and (Path(d) / "include" / "cuda.h").is_file():
            return str(Path(d) / "include")
    try:
        import nvidia.cu13  # the nvidia-cuda-runtime wheel ships cuda.h

        inc = Path(list(nvidia.cu13.__path__)[0]) / "include"
        return str(inc) if (inc / "cuda.h").is_file() else None
    except ImportError:
        return None


def measure(launches: int = 2000) -> dict:
    import ptxjit
    from ptxjit.driver.build import ensure_built

    lib = ensure_built().parent
    inc = _cuda_include()
    cc = shutil.which("gcc") or shutil.which("cc")
    out: dict = {"launches": launches}
    if inc is None or cc is None:
        out["note"] = "no cuda.h or C compiler: the C-ABI side was not measured"
    else:
        with tempfile.TemporaryDirectory() as tmp:
            exe = Path(tmp) / "driver_launch"
            subprocess.run([cc, "-O2", f"-I{inc}", str(SOURCE), "-o", str(exe), f"-L{lib}", "-lcuda"], check=True)
            env = dict(os.environ, LD_LIBRARY_PATH=str(lib))
            r = subprocess.run([str(exe), str(EMPTY_PTX), str(launches)], env=env, capture_output=True, text=True,
                               timeout=900)
            out.update(json.loads(r.stdout.strip().splitlines()[-1]))
    if RUNTIME_PROGRAM.is_file():  # the runtime API: nvcc's <<<>>> through libcudart.so.13 (a committed binary)
        env = dict(os.environ, LD_LIBRARY_PATH=str(lib))
        r = subprocess.run([str(RUNTIME_PROGRAM), str(launches)], env=env, capture_output=True, text=True,
                           timeout=900)
        lines = r.stdout.strip().splitlines()
        if r.returncode == 0 and lines:
            out.update(json.loads(lines[-1]))
        else:
            out["runtime_note"] = f"runtime_launch exited {r.returncode}: {r.stdout[-300:]}{r.stderr[-300:]}"
    k = ptxjit.Module.from_file(EMPTY_PTX).get_function("empty_kernel")
    for _ in range(50):
        k(1, 32, ())
    t0 = time.perf_counter()
    for _ in range(launches):
        k(1, 32, ())
    out["python_sync_us"] = round((time.perf_counter() - t0) / launches * 1e6, 2)
    if "launch_sync_us" in out:
        out["c_abi_over_python"] = round(out["launch_sync_us"] / out["python_sync_us"], 2)
        out["graph_over_python"] = round(out["graph_us"] / out["python_sync_us"], 2)
    if "rt_launch_sync_us" in out:
        out["runtime_over_python"] = round(out["rt_launch_sync_us"] / out["python_sync_us"], 2)
    return out


def markdown(sec: dict) -> str:
    if "launch_sync_us" not in sec:
        return f"### Driver API launch overhead\n\n{sec.get('note', 'not measured')}\n"
    return ("### Driver API launch overhead (empty kernel, µs per launch)\n\n"
            "| cuLaunchKernel + sync (C ABI) | cuGraphLaunch + sync | C launches, one sync | Python `kernel()` |"
            " C ABI / Python |\n|---|---|---|---|---|\n"
            f"| {sec['launch_sync_us']} | {sec['graph_us']} | {sec['launch_async_us']} | {sec['python_sync_us']} |"
            f" {sec['c_abi_over_python']}× |\n" + _runtime_markdown(sec))


def _runtime_markdown(sec: dict) -> str:
    if "rt_launch_sync_us" not in sec:
        return f"\nRuntime API (`<<<>>>`): {sec.get('runtime_note', 'not measured')}\n"
    return ("\n#### Runtime API launch overhead (nvcc's `<<<>>>` through libcudart.so.13, µs per launch)\n\n"
            "| empty kernel + cudaDeviceSynchronize | empty kernel, one sync | 4 parameters (2 pointers) + sync |"
            " `<<<>>>` / Python `kernel()` |\n|---|---|---|---|\n"
            f"| {sec['rt_launch_sync_us']} | {sec['rt_launch_async_us']} | {sec['rt_params_sync_us']} |"
            f" {sec['runtime_over_python']}× |\n")


def add_to(run, log=print) -> None:
    """bench/run.py: measure into run.res["driver_launch"] and add the section to results.md."""
    run.section("driver_launch", "driver API launch overhead (libcuda.so.1)",
                measure, 500 if run.mode == "quick" else 2000, markdown=markdown)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--launches", type=int, default=2000)
    a = ap.parse_args(argv)
    sec = measure(a.launches)
    print(json.dumps(sec))
    print(markdown(sec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
