"""Run one benchmark kernel through ptxjit (and C/OpenMP for reference), check it, and time it.

For working on ptxjit's speed: `python bench/profile_one.py dot --reps 10`; with
PTXJIT_DUMP_DIR=dir the translation's LLVM IR (before/after optimization) and assembly land in dir.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ptxbench import peers as P  # noqa: E402
from ptxbench.suite import CASES, fresh, prepare  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("kernel", choices=sorted(CASES))
    ap.add_argument("--size", choices=("tiny", "quick", "full"), default="quick")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--peers", default="ptxjit,native_c")
    a = ap.parse_args()
    case = CASES[a.kernel]
    n = case.sizes[a.size]
    inputs = case.make(n, np.random.default_rng(1234))
    expected = case.reference(inputs)
    makers = {"ptxjit": P.PtxjitPeer, "native_c": P.NativePeer, "pocl": P.OpenCLPeer}
    for name in a.peers.split(","):
        peer = makers[name]()
        d = fresh(inputs)
        run, fetch = prepare(case, name, peer, d, n)
        t0 = time.perf_counter()
        run()
        first = time.perf_counter() - t0
        fetch()
        problems = case.check({k: d[k] for k in case.outputs}, expected)
        times = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        print(f"{a.kernel} {case.label(n)} {name:9s} median {statistics.median(times) * 1e3:8.2f} ms  "
              f"min {min(times) * 1e3:8.2f} ms  first {first * 1e3:8.1f} ms  "
              f"{'ok' if not problems else 'WRONG: ' + '; '.join(problems)}")


if __name__ == "__main__":
    main()
