"""The distributed section: one launch across Ray actors (ptxjit.distributed), on a local cluster.

* overhead: a tiny launch (vadd, one CTA of 32 threads) through 2 actors against the same launch in
  one process -- what a distributed launch costs besides its CTAs (submitting, the object store,
  the actor's packing and diff, the merge);
* bytes shipped: saxpy on 1M floats (x read-only, y written), as pd.stats() reports it: in (argument
  bytes the actors fetched, each its copy) and out (the changed bytes and deltas they returned);
* speedup on a compute-bound kernel: nbody (all pairs) with 2 actors of one thread each, against one
  process with one worker thread (the same work per core: ideally 2x) and with two (the same cores as
  the actors together: ideally 1x).  On a machine of N cores the local cluster's actors share them with
  the driver: this measures the overheads, not a real cluster's network.

Every result is checked (vadd exactly, saxpy byte for byte against one process, nbody against NumPy on
a sample of bodies) before it is reported.  Standalone: `python bench/ptxbench/distributed.py [--quick]`.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

KERNELS = Path(__file__).resolve().parents[1] / "kernels" / "ptx"
SIZES = {"quick": {"tiny": 100, "saxpy": 1 << 20, "bodies": 4096, "reps": 3},
         "full": {"tiny": 500, "saxpy": 1 << 22, "bodies": 8192, "reps": 5}}
EPS2 = 0.01


def _module(name: str):
    import ptxjit

    return ptxjit.Module.from_file(KERNELS / f"{name}.ptx")


def overhead(pd, mode: str, log=print) -> dict:
    n = 32
    launches = SIZES[mode]["tiny"]
    m = _module("vadd")
    a, b = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    c = np.zeros(n, np.float32)
    args = (a, b, c, np.int32(n))
    dk, lk = pd.kernel(m, "vadd"), m.get_function("vadd")
    dk(1, 32, args)
    lk(1, 32, args)
    times = {}
    for name, k in (("distributed", dk), ("local", lk)):
        ts = []
        for _ in range(launches):
            c[:] = 0
            t0 = time.perf_counter()
            k(1, 32, args)
            ts.append(time.perf_counter() - t0)
            assert (c == a + b).all(), name
        times[name] = statistics.median(ts)
    out = {"launches": launches, "distributed_us": times["distributed"] * 1e6, "local_us": times["local"] * 1e6}
    log(f"  tiny launch: {out['distributed_us']:.0f} us distributed (2 actors), {out['local_us']:.1f} us local")
    return out


def shipped(pd, mode: str, log=print) -> dict:
    n = SIZES[mode]["saxpy"]
    m = _module("saxpy")
    rng = np.random.default_rng(11)
    x, y0 = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    y, y1 = y0.copy(), y0.copy()
    grid = -(-n // 256)
    k = pd.kernel(m, "saxpy")
    k(grid, 256, (np.int32(n), np.float32(2.0), x, y1.copy()))  # the actors translate saxpy
    k(grid, 256, (np.int32(n), np.float32(2.0), x, y))
    st = pd.stats()[-1]
    m.get_function("saxpy")(grid, 256, (np.int32(n), np.float32(2.0), x, y1))
    assert y.tobytes() == y1.tobytes(), "saxpy: distributed != one process"
    changed = int(np.count_nonzero(y.view(np.uint8) != y0.view(np.uint8)))
    out = {"n": n, "array_bytes": int(x.nbytes), "bytes_in": st.bytes_in, "bytes_out": st.bytes_out,
           "changed_bytes": changed, "seconds": st.t_total, "actors": st.actors}
    log(f"  saxpy n={n}: in {st.bytes_in / 1e6:.1f} MB, out {st.bytes_out / 1e6:.1f} MB "
        f"(changed bytes {changed / 1e6:.1f} MB), {st.t_total * 1e3:.0f} ms")
    return out


def _nbody_reference(pos: np.ndarray, rows: np.ndarray) -> np.ndarray:
    p = pos.astype(np.float64)
    dp = p[None, :, :3] - p[rows, None, :3]
    r2 = (dp * dp).sum(-1) + EPS2
    w = p[None, :, 3] / (r2 * np.sqrt(r2))
    return (dp * w[..., None]).sum(1)


def speedup(pd, mode: str, log=print) -> dict:
    import ptxjit

    n = SIZES[mode]["bodies"]
    reps = SIZES[mode]["reps"]
    m = _module("nbody")
    rng = np.random.default_rng(12)
    pos = rng.random((n, 4), dtype=np.float32)
    pos[:, 3] = 0.5 + 0.5 * pos[:, 3]
    acc = np.zeros((n, 4), np.float32)
    args = (pos, acc, np.int32(n), np.float32(EPS2))
    grid = n // 256
    dk, lk = pd.kernel(m, "nbody"), m.get_function("nbody")
    rows = np.arange(0, n, max(1, n // 64))
    ref = _nbody_reference(pos, rows)
    res: dict = {"bodies": n, "ctas": grid}
    from ptxjit.runtime import launch

    saved = launch._workers_override
    try:
        for name, k, workers in (("local_1_worker", lk, 1), ("local_2_workers", lk, 2), ("distributed_2x1", dk, 1)):
            ptxjit.set_workers(workers)  # the driver's own workers (the actors run one thread each)
            acc[:] = 0
            k(grid, 256, args)  # translation (per node, for the actors), and the check
            np.testing.assert_allclose(acc[rows, :3], ref, rtol=1e-3, atol=1e-3)
            ts = []
            for _ in range(reps):
                t0 = time.perf_counter()
                k(grid, 256, args)
                ts.append(time.perf_counter() - t0)
            res[name] = min(ts)
            log(f"  nbody {n}: {name} {min(ts) * 1e3:.0f} ms")
    finally:
        ptxjit.set_workers(saved)
    st = pd.stats()[-1]
    res["distributed_run_s"] = max(st.t_run)
    res["vs_1_worker"] = res["local_1_worker"] / res["distributed_2x1"]
    res["vs_2_workers"] = res["local_2_workers"] / res["distributed_2x1"]
    log(f"  speedup with 2 actors: {res['vs_1_worker']:.2f}x over one worker, {res['vs_2_workers']:.2f}x over "
        f"one process of two workers")
    return res


def measure(mode: str, log=print) -> dict:
    import ptxjit.distributed as pd

    t0 = time.perf_counter()
    pd.init(actors=2, threads=1, num_cpus=2)
    start = time.perf_counter() - t0
    log(f"  local Ray cluster and 2 actors started in {start:.1f} s")
    try:
        return {"startup_s": start, "overhead": overhead(pd, mode, log), "shipped": shipped(pd, mode, log),
                "speedup": speedup(pd, mode, log)}
    finally:
        pd.shutdown()


def markdown(sec: dict) -> list[str]:
    o, s, p = sec["overhead"], sec["shipped"], sec["speedup"]
    return ["", "## Across machines (Ray, local cluster of 2 actors)", "",
            "| measure | value |", "|---|---|",
            f"| tiny launch (1 CTA of 32 threads) | {o['distributed_us']:.0f} µs distributed, "
            f"{o['local_us']:.1f} µs in one process |",
            f"| saxpy {s['n']} floats: bytes in / out | {s['bytes_in'] / 1e6:.1f} MB / {s['bytes_out'] / 1e6:.1f} MB "
            f"({s['actors']} actors; arrays {s['array_bytes'] / 1e6:.1f} MB each) |",
            f"| nbody {p['bodies']} bodies: one worker / one process of 2 workers / 2 actors | "
            f"{p['local_1_worker'] * 1e3:.0f} / {p['local_2_workers'] * 1e3:.0f} / "
            f"{p['distributed_2x1'] * 1e3:.0f} ms ({p['vs_1_worker']:.2f}×, {p['vs_2_workers']:.2f}×) |",
            f"| cluster start (ray.init + actors) | {sec['startup_s']:.1f} s |"]


def add_to(run, log=print) -> None:
    """bench/run.py: measure into run.res["distributed"] and add the section to results.md."""
    try:
        import ray  # noqa: F401
    except ImportError:
        run.note("distributed: skipped (pip install 'ptxjit[ray]')")
        return
    log("distributed (ptxjit.distributed over Ray)")
    sec = run.guard("distributed", measure, run.mode, log)
    if sec:
        run.add_section("distributed", sec, markdown(sec))


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    sec = measure("quick" if a.quick else "full")
    print("\n".join(markdown(sec)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
