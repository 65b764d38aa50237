"""The Triton section: the corpus kernels (tools/triton_corpus) through `ptxjit.triton` against Triton's own
CPU interpreter (`TRITON_INTERPRET=1`) and NumPy, and a larger tl.dot matmul against NumPy's BLAS.

Every kernel runs at the corpus sizes (small: the interpreter executes each program's block operations in
NumPy, one program at a time); the interpreter runs in a subprocess, as TRITON_INTERPRET must be set before
Triton is imported.  Reported per kernel: the median launch time of each (ptxjit after its compile, the
interpreter after a first run), the ratio interpreter / ptxjit (goal: >= 1000x) and ptxjit / NumPy.
Outputs are checked against the corpus's NumPy references (record.py) before anything is timed.

    .venv/bin/python bench/ptxbench/triton.py [--reps N] [--arch 80|90] [--json FILE]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __name__ == "__main__":  # run as a script: this folder must not shadow the real triton package
    _here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _here]

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ["vector_add", "softmax", "matmul_fp16", "matmul_bf16", "matmul_tf32", "matmul_int8", "layer_norm",
           "attention", "row_sum", "atomics"]
MATMUL_SIZES = {"quick": 256, "full": 512}

# the interpreter's side, run in a subprocess with TRITON_INTERPRET=1; NumPy arrays stand in for torch tensors
_INTERP = r"""
import json, os, statistics, sys, time, zlib
sys.path.insert(0, sys.argv[1])
import numpy as np
from tools.triton_corpus import generate as gen, record as rec

sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
from ptxbench.triton_arrays import InterpArray as Arr

import triton.language as tl
names, reps = sys.argv[2].split(","), int(sys.argv[3])
out = {}
for name in names:
    case = next(c for c in gen.CASES if c["name"] == name)
    scalars = {n: v for n, _, v in case["args"] if v is not None}
    types = {n: t for n, t, _ in case["args"]}
    times = []
    for r in range(reps + 1):
        arrays, refs = rec.BUILDERS[name](scalars, np.random.default_rng(1234))
        args = [Arr(arrays[n], tl.bfloat16 if types[n] == "*bf16" else None) if types[n].startswith("*")
                else scalars[n] for n in case["kernel"].arg_names if n not in case["constexprs"]]
        t0 = time.perf_counter()
        case["kernel"][tuple(case["grid"])](*args, **case["constexprs"])
        if r:
            times.append(time.perf_counter() - t0)
    ok, why = rec.compare(arrays, refs)
    out[name] = {"median_s": statistics.median(times), "ok": ok, "why": why}
scaled = {}
if len(sys.argv) > 4:
    sys.path.insert(0, sys.argv[5])
    from ptxbench.triton import scaled_case
    for name in sys.argv[4].split(","):
        c = scaled_case(name, int(sys.argv[6]))
        args = [Arr(a) if isinstance(a, np.ndarray) else a for a in c["args"]]
        t0 = time.perf_counter()
        c["kernel"][c["grid"]](*args, **c["constexprs"])
        scaled[name] = {"median_s": time.perf_counter() - t0, "ok": bool(c["check"]())}
print("RESULT" + json.dumps({"corpus": out, "scaled": scaled}))
"""


def _np_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _np_layer_norm(a: dict, s: dict) -> np.ndarray:
    x = a["x_ptr"][:, :s["N"]]
    mean = x.mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + np.float32(s["eps"])) * a["w_ptr"] + a["b_ptr"]


def _np_attention(a: dict, s: dict) -> np.ndarray:
    q, k, v = (a[n].astype(np.float32) for n in ("q_ptr", "k_ptr", "v_ptr"))
    return (_np_softmax(q @ k.transpose(0, 2, 1) * np.float32(s["sm_scale"])) @ v).astype(np.float16)


def _np_atomics(a: dict, s: dict) -> None:
    w = np.zeros(37, np.float32)
    np.add.at(w, a["bins_ptr"], a["x_ptr"])
    np.bincount(a["bins_ptr"], minlength=37)
    a["x_ptr"].sum()


def _bf16(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


# what a NumPy user writes for the same result, in the kernels' own precision (float32 for the half types)
NUMPY = {
    "vector_add": lambda a, s: a["x_ptr"] + a["y_ptr"],
    "softmax": lambda a, s: _np_softmax(a["in_ptr"][:, :s["n_cols"]]),
    "matmul_fp16": lambda a, s: (a["a_ptr"].astype(np.float32) @ a["b_ptr"].astype(np.float32)).astype(np.float16),
    "matmul_bf16": lambda a, s: _bf16(a["a_ptr"]) @ _bf16(a["b_ptr"]),
    "matmul_tf32": lambda a, s: a["a_ptr"] @ a["b_ptr"],
    "matmul_int8": lambda a, s: a["a_ptr"].astype(np.int32) @ a["b_ptr"].astype(np.int32),
    "layer_norm": _np_layer_norm,
    "attention": _np_attention,
    "row_sum": lambda a, s: a["x_ptr"][:, :s["n_cols"]].sum(axis=1),
    "atomics": _np_atomics,
}


SCALED = ["vector_add", "softmax", "row_sum", "layer_norm", "atomics"]
PROGRAMS = {"quick": 1024, "full": 4096}


def scaled_case(name: str, programs: int) -> dict:
    """Corpus kernel `name` on `programs` programs (the interpreter's cost grows with their number): the
    kernel, its arguments (NumPy arrays and scalars), constexprs, grid, and check() against NumPy."""
    from tools.triton_corpus import kernels as K

    rng = np.random.default_rng(11)
    P = programs
    if name == "vector_add":
        x, y = rng.standard_normal(256 * P, dtype=np.float32), rng.standard_normal(256 * P, dtype=np.float32)
        out = np.zeros_like(x)
        return {"kernel": K.vector_add, "args": [x, y, out, x.size], "constexprs": {"BLOCK": 256}, "grid": (P,),
                "check": lambda: np.array_equal(out, x + y)}
    if name == "softmax":
        x = rng.standard_normal((P, 128), dtype=np.float32)
        out = np.zeros_like(x)
        return {"kernel": K.softmax, "args": [out, x, 128, 128, 100], "constexprs": {"BLOCK": 128}, "grid": (P,),
                "check": lambda: np.allclose(out[:, :100], _np_softmax(x[:, :100].astype(np.float64)), atol=1e-6)}
    if name == "row_sum":
        x = rng.standard_normal((8 * P, 300), dtype=np.float32)
        out = np.zeros(8 * P, np.float32)
        return {"kernel": K.row_sum, "args": [x, out, 8 * P, 300, 300], "constexprs": {"BLOCK_R": 8, "BLOCK_C": 128},
                "grid": (P,), "check": lambda: np.allclose(out, x.astype(np.float64).sum(axis=1), atol=1e-4)}
    if name == "layer_norm":
        N = 200
        x = rng.standard_normal((P, N), dtype=np.float32) * 2 + 0.5
        w, b = rng.uniform(0.5, 1.5, N).astype(np.float32), rng.uniform(-0.5, 0.5, N).astype(np.float32)
        y, mean, rstd = np.zeros_like(x), np.zeros(P, np.float32), np.zeros(P, np.float32)
        xd = x.astype(np.float64)
        ref = (xd - xd.mean(axis=1, keepdims=True)) / np.sqrt(xd.var(axis=1, keepdims=True) + 1e-5) * w + b
        return {"kernel": K.layer_norm_fwd, "args": [x, y, w, b, mean, rstd, N, N, 1e-5], "constexprs": {"BLOCK": 128},
                "grid": (P,), "check": lambda: np.allclose(y, ref, atol=1e-4, rtol=1e-4)}
    if name == "atomics":
        n = 512 * P
        x = rng.uniform(-1, 1, n).astype(np.float32)
        bins = rng.integers(0, 37, n, dtype=np.int32)
        total, wsum, hist = np.zeros(1, np.float32), np.zeros(37, np.float32), np.zeros(37, np.int32)
        return {"kernel": K.atomics, "args": [x, bins, total, wsum, hist, n], "constexprs": {"BLOCK": 512},
                "grid": (P,), "check": lambda: np.array_equal(hist, np.bincount(bins, minlength=37))}
    raise KeyError(name)


def _native_atomics(programs: int, reps: int) -> float | None:
    """Median seconds of the atomics case's C/OpenMP version (bench/native/triton_atomics.c): the same
    atomics (a float compare-and-swap loop and an int fetch-add per element) on this CPU's cores, the
    bound for any implementation; None without gcc."""
    import ctypes

    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    from ptxbench.peers import NativePeer, PeerUnavailable

    try:
        peer = NativePeer(["triton_atomics"])
        P = ctypes.c_void_p
        fn = peer.function("triton_atomics", [P, P, P, P, P, ctypes.c_int, ctypes.c_int])
    except PeerUnavailable:
        return None
    c = scaled_case("atomics", programs)
    x, bins, total, wsum, hist, n = c["args"]
    times = []
    for _ in range(reps + 1):
        for a in (total, wsum, hist):
            a[:] = 0
        t0 = time.perf_counter()
        fn(x.ctypes.data, bins.ctypes.data, total.ctypes.data, wsum.ctypes.data, hist.ctypes.data, n, 512)
        times.append(time.perf_counter() - t0)
    if not c["check"]():
        raise RuntimeError("bench/native/triton_atomics.c: histogram differs from NumPy's")
    return statistics.median(times[1:])


def _scaled_ptxjit(name: str, programs: int, arch: int, reps: int) -> dict:
    import ptxjit.triton as pt

    _corpus()
    c = scaled_case(name, programs)
    launch = pt.jit(c["kernel"], arch=arch)[c["grid"]]
    launch(*c["args"], **c["constexprs"])
    ok = bool(c["check"]())
    _settle(lambda: launch(*c["args"], **c["constexprs"]))
    times, cpu = [], []
    for _ in range(reps):
        c0, t0 = _cpu_s(), time.perf_counter()
        launch(*c["args"], **c["constexprs"])
        times.append(time.perf_counter() - t0)
        cpu.append(_cpu_s() - c0)
    # CPU seconds of the whole process (all workers): on a shared machine wall times vary with the load
    return {"name": name, "programs": programs, "median_s": statistics.median(times), "cpu_s": statistics.median(cpu),
            "ok": ok}


def _settle(launch) -> None:
    """Tier 1 built and its race against the plain code decided before a launch is timed (with tiers on,
    the default, the first launches run tier 0: row sum at 1024 programs 656 ms instead of 5 ms)."""
    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    from ptxbench.peers import settle_tiers

    settle_tiers({"launch": launch})


def _cpu_s() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _corpus():
    sys.path.insert(0, str(ROOT))
    from tools.triton_corpus import generate as gen
    from tools.triton_corpus import record as rec

    return gen, rec


def _ptxjit_case(name: str, arch: int, reps: int) -> dict:
    """ptxjit.triton launch time of corpus case `name` (median of `reps`, after a checked first launch)
    and NumPy's time for the same result (NUMPY)."""
    import ptxjit.triton as pt

    gen, rec = _corpus()
    case = next(c for c in gen.CASES if c["name"] == name)
    scalars = {n: v for n, _, v in case["args"] if v is not None}
    types = {n: t for n, t, _ in case["args"]}
    arrays, refs = rec.BUILDERS[name](scalars, np.random.default_rng(1234))
    fresh = {k: v.copy() for k, v in arrays.items()}
    args = [pt.reinterpret(arrays[n], "bf16") if types[n] == "*bf16" else arrays[n] if types[n].startswith("*")
            else scalars[n] for n in case["kernel"].arg_names if n not in case["constexprs"]]
    k = pt.jit(case["kernel"], arch=arch)
    launch = k[tuple(case["grid"])]
    # the corpus's PTX ISA version: the same PTX as tests/data/triton (ptxjit's translation cache is shared)
    kw = {**case["constexprs"], "num_warps": case["num_warps"], "num_stages": case["num_stages"],
          "ptx_version": gen.PTX_VERSION}
    t0 = time.perf_counter()
    launch(*args, **kw)
    first = time.perf_counter() - t0
    ok, why = rec.compare(arrays, refs)
    _settle(lambda: launch(*args, **kw))
    times = []
    for _ in range(reps):
        for kk, v in fresh.items():  # accumulators (atomics) start again from their inputs
            np.copyto(arrays[kk], v)
        t0 = time.perf_counter()
        launch(*args, **kw)
        times.append(time.perf_counter() - t0)
    np_times = []
    for _ in range(max(3, reps)):
        t0 = time.perf_counter()
        NUMPY[name](fresh, scalars)
        np_times.append(time.perf_counter() - t0)
    return {"name": name, "first_s": first, "median_s": statistics.median(times), "ok": ok, "why": why,
            "numpy_s": statistics.median(np_times)}


def _interpreter(names: list[str], reps: int, timeout: float, scaled: list[str] = (), programs: int = 0) -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "1", "TRITON_DEFAULT_FP_FUSION": "1"}
    extra = [",".join(scaled), str(Path(__file__).resolve().parents[1]), str(programs)] if scaled else []
    r = subprocess.run([sys.executable, "-c", _INTERP, str(ROOT), ",".join(names), str(reps), *extra], env=env,
                       capture_output=True, text=True, timeout=timeout)
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT")), None)
    if line is None:
        raise RuntimeError(f"TRITON_INTERPRET=1 run failed: {(r.stderr or r.stdout)[-600:]}")
    return json.loads(line[len("RESULT"):])


def _matmul_vs_blas(n: int, arch: int, reps: int) -> dict:
    """An n x n x n fp16 tl.dot matmul (fp32 accumulation) through ptxjit vs NumPy's BLAS (float32 @)."""
    import ptxjit.triton as pt

    gen, _ = _corpus()
    from tools.triton_corpus import kernels as K

    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float16)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float16)
    c = np.zeros((n, n), np.float16)
    import triton.language as tl

    BM = BN = 64
    k = pt.jit(K.matmul, arch=arch)
    grid = ((n // BM) * (n // BN),)
    kw = {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": 32, "GROUP_M": 8, "ACC_TYPE": tl.float32,
          "INPUT_PRECISION": "ieee", "num_warps": 4, "num_stages": 3}
    k[grid](a, b, c, n, n, n, n, n, n, **kw)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    ref = af @ bf
    err = float(np.max(np.abs(c.astype(np.float32) - ref)))
    _settle(lambda: k[grid](a, b, c, n, n, n, n, n, n, **kw))
    times, blas = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        k[grid](a, b, c, n, n, n, n, n, n, **kw)
        times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        af @ bf
        blas.append(time.perf_counter() - t0)
    t, tb = statistics.median(times), statistics.median(blas)
    return {"n": n, "ptxjit_s": t, "blas_s": tb, "ratio": t / tb, "gflops": 2 * n ** 3 / t / 1e9,
            "max_abs_err": err, "ok": err < 0.05 * np.sqrt(n)}


def measure(mode: str = "quick", reps: int | None = None, arch: int = 80, log=print) -> dict:
    reps = reps or (3 if mode == "quick" else 5)
    rows = []
    for name in KERNELS:
        try:
            rows.append(_ptxjit_case(name, arch, reps))
        except Exception as e:  # noqa: BLE001 - a kernel ptxjit cannot run yet is reported, not fatal
            rows.append({"name": name, "error": f"{type(e).__name__}: {str(e)[:160]}"})
        r = rows[-1]
        log(f"triton {name}: " + (r.get("error") or f"ptxjit {r['median_s'] * 1e3:.2f} ms ok={r['ok']}"))
    programs = PROGRAMS.get(mode, 256)
    scaled = []
    for name in SCALED:
        try:
            scaled.append(_scaled_ptxjit(name, programs, arch, reps))
            if name == "atomics":
                scaled[-1]["native_s"] = _native_atomics(programs, reps)
        except Exception as e:  # noqa: BLE001
            scaled.append({"name": name, "programs": programs, "error": f"{type(e).__name__}: {str(e)[:160]}"})
    try:
        res = _interpreter(KERNELS, 1 if mode == "quick" else 2, 1800, SCALED, programs)
        interp, interp_scaled = res["corpus"], res["scaled"]
    except Exception as e:  # noqa: BLE001
        interp, interp_scaled, note = {}, {}, f"{type(e).__name__}: {e}"
        log(f"triton interpreter: {note}")
    for r in scaled:
        i = interp_scaled.get(r["name"])
        if i and "median_s" in r:
            r["interp_s"], r["interp_ok"], r["interp_x"] = i["median_s"], i["ok"], i["median_s"] / r["median_s"]
        log(f"triton {r['name']} x{programs} programs: " + (r.get("error") or
            f"ptxjit {r['median_s'] * 1e3:.2f} ms, interpreter / ptxjit {r.get('interp_x', 0):.0f}x"))
    for r in rows:
        i = interp.get(r["name"])
        if i:
            r["interp_s"], r["interp_ok"] = i["median_s"], i["ok"]
            if "median_s" in r:
                r["interp_x"] = i["median_s"] / r["median_s"]
        if "median_s" in r:
            r["numpy_x"] = r["median_s"] / r["numpy_s"]
    try:
        mm = _matmul_vs_blas(MATMUL_SIZES.get(mode, 256), arch, reps)
    except Exception as e:  # noqa: BLE001
        mm = {"error": f"{type(e).__name__}: {str(e)[:160]}"}
    xs = [r["interp_x"] for r in rows if "interp_x" in r and r.get("ok")]
    geo = float(np.exp(np.mean(np.log(xs)))) if xs else None
    sx = [r["interp_x"] for r in scaled if "interp_x" in r and r.get("ok")]
    return {"arch": arch, "kernels": rows, "scaled": scaled, "matmul_blas": mm,
            "summary": {"interp_x_geomean": geo, "interp_x_min": min(xs) if xs else None,
                        "scaled_interp_x_geomean": float(np.exp(np.mean(np.log(sx)))) if sx else None}}


def markdown(sec: dict) -> list[str]:
    if not sec or not sec.get("kernels"):
        return []
    lines = ["", f"## Triton kernels (`ptxjit.triton`, sm_{sec['arch']}) vs `TRITON_INTERPRET=1` and NumPy", "",
             "Corpus sizes (tools/triton_corpus); median launch time after the first (compiling) launch.", "",
             "| kernel | ptxjit | first launch | interpreter | interpreter / ptxjit | NumPy | ptxjit / NumPy | "
             "correct |", "|---|---|---|---|---|---|---|---|"]
    for r in sec["kernels"]:
        if "error" in r:
            lines.append(f"| {r['name']} | — | — | {_ms(r.get('interp_s'))} | — | — | — | {r['error'][:80]} |")
            continue
        lines.append(f"| {r['name']} | {_ms(r['median_s'])} | {_ms(r['first_s'])} | {_ms(r.get('interp_s'))} | "
                     f"{_x(r.get('interp_x'))} | {_ms(r['numpy_s'])} | {_x(r.get('numpy_x'), 2)} | "
                     f"{'yes' if r['ok'] else 'NO: ' + r['why'][:60]} |")
    s, mm = sec["summary"], sec.get("matmul_blas", {})
    lines += ["", f"Interpreter / ptxjit at the corpus sizes (4 to 48 programs): geometric mean "
                  f"{_x(s.get('interp_x_geomean'))}, least {_x(s.get('interp_x_min'))} (goal: at least 1000x)."]
    if sec.get("scaled"):
        lines += ["", "The fair comparison: with many programs the interpreter's per-program NumPy work dominates "
                      "its time, as it would for a real problem size. CPU: ptxjit's CPU time per launch, all workers.",
                  "C/OpenMP: the same work written in C where it bounds every implementation (atomics: the same "
                  "atomics, bench/native/triton_atomics.c).",
                  "", "| kernel, more programs | programs | ptxjit | ptxjit CPU | interpreter | interpreter / ptxjit | "
                  "C/OpenMP |", "|---|---|---|---|---|---|---|"]
        for r in sec["scaled"]:
            if "error" in r:
                lines.append(f"| {r['name']} | {r['programs']} | {r['error'][:80]} | — | — | — | — |")
                continue
            lines.append(f"| {r['name']} | {r['programs']} | {_ms(r.get('median_s'))} | {_ms(r.get('cpu_s'))} | "
                         f"{_ms(r.get('interp_s'))} | {_x(r.get('interp_x'))} | {_ms(r.get('native_s'))} |")
        lines.append(f"Geometric mean {_x(s.get('scaled_interp_x_geomean'))}.")
    if "ratio" in mm:
        lines.append(f"fp16 tl.dot matmul {mm['n']}^3: ptxjit {_ms(mm['ptxjit_s'])} ({mm['gflops']:.1f} GFLOP/s), "
                     f"NumPy BLAS (float32) {_ms(mm['blas_s'])}: {mm['ratio']:.1f}x BLAS's time; "
                     f"max |error| {mm['max_abs_err']:.3g}.")
    elif mm:
        lines.append(f"matmul vs BLAS: {mm.get('error')}")
    return lines


def _ms(v) -> str:
    return "—" if v is None else f"{v * 1e3:.2f} ms"


def _x(v, digits: int = 0) -> str:
    return "—" if v is None else f"{v:.{digits}f}×"


def add_to(run, log=print) -> None:
    """bench/run.py: measure into run.res["triton"] and add the section to results.md (needs Triton)."""
    try:
        import triton  # noqa: F401
    except ImportError:
        log("triton: skipped (Triton is not installed: pip install 'ptxjit[triton]')")
        return
    log("triton (ptxjit.triton vs TRITON_INTERPRET=1)")
    sec = run.guard("triton", measure, run.mode, None, 80, log)
    if sec:
        run.res["triton"] = sec
        run.write()
        md = run.out / "results.md"
        md.write_text(md.read_text() + "\n".join(markdown(sec)) + "\n")


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="quick", choices=("quick", "full"))
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--arch", type=int, default=80)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    sec = measure(a.mode, a.reps, a.arch)
    if a.json:
        a.json.write_text(json.dumps(sec, indent=1, default=str))
    print("\n".join(markdown(sec)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
