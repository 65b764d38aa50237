#!/usr/bin/env python3
"""ptxjit benchmark harness: `python bench/run.py [--quick] [--out DIR]`, or `--soak` (see bench/README.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--soak" in argv:  # the soak mode has options of its own (ptxbench/soak.py)
        from ptxbench import soak

        return soak.main([a for a in argv if a != "--soak"])
    ap = argparse.ArgumentParser(description="Benchmark ptxjit against pocl, C/OpenMP, NumPy and Numba's simulator.")
    ap.add_argument("--quick", action="store_true", help="small sizes and few repetitions (< 2 minutes)")
    ap.add_argument("--soak", action="store_true",
                    help="soak mode instead: --launches N --kernels REGEX --threads T --budget SECONDS (README)")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default: bench/results)")
    ap.add_argument("--kernels", help="comma-separated subset of kernels to run")
    ap.add_argument("--skip", default="",
                    help="comma-separated: pocl, native_c, numpy, numba, cold, scaling, tracing, checking, streams, "
                         "tiers, distributed, triton, driver, samples, tinygrad, many_kernels, first_launch")
    args = ap.parse_args(argv)

    from ptxbench.harness import Run
    from ptxbench.suite import CASES

    kernels = None
    if args.kernels:
        kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
        unknown = [k for k in kernels if k not in CASES]
        if unknown:
            ap.error(f"unknown kernels {unknown}; known: {', '.join(CASES)}")
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    run = Run("quick" if args.quick else "full", args.out, kernels, skip, log=lambda m: print(m, flush=True))
    res = run.execute()
    if "streams" not in skip:  # after the rest: results.json / results.md get the section added
        from ptxbench import streams

        streams.add_to(run, log=run.log)
    if "distributed" not in skip:  # a local Ray cluster (needs the ray extra; skipped without it)
        from ptxbench import distributed

        distributed.add_to(run, log=run.log)
    if "triton" not in skip:  # ptxjit.triton vs TRITON_INTERPRET=1 and NumPy (needs the triton extra)
        from ptxbench import triton as triton_section

        triton_section.add_to(run, log=run.log)
    if "driver" not in skip:  # the CUDA driver API's C ABI (libcuda.so.1) against the Python launch
        from ptxbench import driver_launch

        driver_launch.add_to(run, log=run.log)
    if "samples" not in skip:  # the CUDA C++ sample programs under ptxjit exec: where their time goes
        from ptxbench import samples

        samples.add_to(run, log=run.log)
    if "tinygrad" not in skip:  # tinygrad's test_tiny.py on its CUDA backend, beside its CPU backend
        from ptxbench import tinygrad

        tinygrad.add_to(run, log=run.log)
    if "many_kernels" not in skip:  # programs of many distinct kernels, each launched once (Numba, Triton)
        from ptxbench import many_kernels

        many_kernels.add_to(run, log=run.log)
    if "first_launch" not in skip:  # translation time and throughput over the repository's kernels
        from ptxbench import first_launch

        first_launch.add_to(run, log=run.log)
    if "tiers" not in skip:  # ptxjit/tiers (PTXJIT_TIERS=1): first launch and steady state vs today
        from ptxbench import tiers

        tiers.add_to(run, log=run.log)
    print()
    print((args.out / "results.md").read_text())
    return 0 if res["summary"] else 1


if __name__ == "__main__":
    sys.exit(main())
