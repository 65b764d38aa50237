"""The benchmark run: peers, correctness checks, interleaved timing, STREAM, launch overhead, cold
start, scaling, the Numba simulator, and the summary written to results.json / .md / .png."""

from __future__ import annotations

import ctypes
import datetime
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ptxbench import peers as P

P.quiet_runtimes()

import numpy as np  # noqa: E402

from ptxbench import report  # noqa: E402
from ptxbench.suite import CASES, MEMORY_BOUND, prepare  # noqa: E402
from ptxbench.timing import geomean, interleaved, per_call, summarize  # noqa: E402

HERE = Path(__file__).resolve().parent

MODES = {
    #         reps, warm-up, seconds per kernel, STREAM n (doubles), empty launches, numba sizes, cold repeats
    "quick": dict(reps=5, warmup=1, budget_s=2.0, stream_n=1 << 24, launches=1000, numba=(4096, 32), cold=1,
                  scaling_reps=3),
    "full": dict(reps=11, warmup=2, budget_s=20.0, stream_n=1 << 26, launches=5000, numba=(4096, 32), cold=3,
                 scaling_reps=7),
}

TARGETS = {
    "speedup_vs_pocl_geomean >= 1.3": ("speedup_vs_pocl_geomean", 1.3),
    "speedup_vs_native_c_geomean >= 1.0": ("speedup_vs_native_c_geomean", 1.0),
    "no kernel < 0.6x native C": ("speedup_vs_native_c_min", 0.6),
    "memory-bound kernels >= 80% of STREAM": ("stream_fraction_min", 0.8),
    "speedup_vs_numba_sim >= 10000": ("speedup_vs_numba_sim", 10000.0),
    "scaling efficiency >= 0.8 (near-linear)": ("scaling_efficiency", 0.8),
}


class Run:
    def __init__(self, mode: str, out: Path, kernels: list[str] | None, skip: set[str], log=print) -> None:
        self.mode = mode
        self.cfg = MODES[mode]
        self.out = out
        self.kernel_names = kernels or list(CASES)
        self.skip = skip
        self.log = log
        self.notes: list[str] = []
        self.peers: dict[str, object] = {}
        self.res: dict = {"mode": mode, "kernels": [], "notes": self.notes}

    def note(self, msg: str) -> None:
        self.notes.append(msg)
        self.log(f"  note: {msg}")

    def guard(self, what: str, fn, *args):
        """fn(*args), or None with a note if it fails: no measurement may crash the run."""
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001
            self.note(f"{what} failed: {type(e).__name__}: {str(e)[:400]}")
            return None

    # ------------------------------------------------------------------------------------ peers
    def load_peers(self) -> None:
        loaders = {"ptxjit": P.PtxjitPeer, "native_c": P.NativePeer, "pocl": P.OpenCLPeer}
        for name, cls in loaders.items():
            if name in self.skip:
                self.note(f"{name}: skipped (--skip {name})")
                continue
            try:
                self.peers[name] = cls()
            except P.PeerUnavailable as e:
                self.note(f"{name} unavailable: {e}")
            except Exception as e:  # noqa: BLE001
                self.note(f"{name} unavailable: {type(e).__name__}: {e}")
        if "ptxjit" in self.peers:
            for name, options in P.PTXJIT_VARIANTS.items():
                if name not in self.skip:
                    self.peers[name] = P.PtxjitVariant(name, options)
        if "numpy" not in self.skip:
            self.peers["numpy"] = None
        nat = self.peers.get("native_c")
        if nat is not None:
            for k, err in nat.errors.items():
                self.note(f"native_c/{k}.c: {err}")

    def environment(self) -> dict:
        env = {"python": platform.python_version(), "numpy": np.__version__, "cores": os.cpu_count(),
               "platform": platform.platform()}
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    env["cpu"] = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
        px = self.peers.get("ptxjit")
        if px is not None:
            env["ptxjit_version"] = px.ptxjit.__version__
            env["ptxjit_workers"] = px.ptxjit.worker_count()
        nat = self.peers.get("native_c")
        if nat is not None:
            v = subprocess.run([nat.gcc, "--version"], capture_output=True, text=True).stdout.splitlines()
            env["gcc"] = v[0] if v else "gcc"
            env["gcc_flags"] = " ".join(P.GCC_FLAGS)
            env["native_compile_s"] = nat.compile_s
        ocl = self.peers.get("pocl")
        if ocl is not None:
            env["pocl"] = f"{ocl.device.platform.version}; {ocl.device.name}"
            env["pyopencl"] = ocl.cl.VERSION_TEXT
        env["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY")
        return env

    # ----------------------------------------------------------------------------------- STREAM
    def stream(self) -> dict | None:
        nat = self.peers.get("native_c")
        if nat is None:
            return None
        try:
            fn = nat.function("stream", [ctypes.c_void_p] * 3 + [ctypes.c_double, ctypes.c_long], symbol="triad")
        except P.PeerUnavailable as e:
            self.note(f"STREAM triad unavailable: {e}")
            return None
        n = self.cfg["stream_n"]
        a, b, c = np.zeros(n), np.ones(n), np.full(n, 2.0)
        pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
        t = interleaved({"triad": lambda: fn(pa, pb, pc, 3.0, n)}, reps=10, warmup=2)["triad"]
        if not np.all(a[:: max(1, n // 1000)] == 7.0):
            self.note("STREAM triad gave a wrong result")
            return None
        bytes_ = 24 * n
        return {"n": n, "bytes": bytes_, **t, "GBs_median": bytes_ / t["median_s"] / 1e9,
                "GBs_best": bytes_ / t["min_s"] / 1e9}

    # -------------------------------------------------------------------------------- launches
    def launch_overhead(self) -> dict:
        out: dict = {}
        calls = self.cfg["launches"]
        px = self.peers.get("ptxjit")
        if px is not None:
            try:
                k = px.kernel("empty", "empty_kernel")
                out["ptxjit"] = per_call(lambda: k(1, 1, ()), calls)
            except Exception as e:  # noqa: BLE001
                self.note(f"ptxjit empty-kernel launch failed: {type(e).__name__}: {e}")
        ocl = self.peers.get("pocl")
        if ocl is not None:
            try:
                k = ocl.kernel("empty", "empty_kernel")
                out["pocl"] = per_call(lambda: ocl.launch(k, (1,), (1,)), max(100, calls // 5))
            except Exception as e:  # noqa: BLE001
                self.note(f"pocl empty-kernel launch failed: {type(e).__name__}: {e}")
        nat = self.peers.get("native_c")
        if nat is not None:
            try:
                out["ctypes_call"] = per_call(nat.function("empty", [], symbol="empty_kernel"), calls)
            except P.PeerUnavailable as e:
                self.note(f"native empty function unavailable: {e}")
        return out

    # --------------------------------------------------------------------------------- kernels
    def run_case(self, name: str) -> dict:
        case = CASES[name]
        n = case.sizes[self.mode]
        self.log(f"{name} ({case.label(n)})")
        t_case = time.perf_counter()
        rng = np.random.default_rng(1234)
        inputs = case.make(n, rng)
        expected = case.reference(inputs)
        t_ref = time.perf_counter() - t_case
        runs, checks = {}, {}
        for pname, peer in self.peers.items():
            if pname == "numpy" and case.numpy is None:
                continue
            d = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
            try:
                run, fetch = prepare(case, pname, peer, d, n)
                t0 = time.perf_counter()
                run()  # first call: includes ptxjit's translation, pocl's work-group compile
                first = time.perf_counter() - t0
                fetch()
                problems = case.check({k: d[k] for k in case.outputs}, expected)
            except P.PeerUnavailable as e:
                checks[pname] = f"unavailable: {e}"
                self.note(f"{name}/{pname}: {e}")
                continue
            except Exception as e:  # noqa: BLE001 - a peer failing is a result
                checks[pname] = f"error: {type(e).__name__}: {e}"
                self.note(f"{name}/{pname} failed: {type(e).__name__}: {str(e)[:400]}")
                continue
            if problems:
                checks[pname] = "wrong result: " + "; ".join(problems)
                self.note(f"{name}/{pname} gives a wrong result, not timed: {'; '.join(problems)}")
                continue
            checks[pname] = "ok"
            runs[pname] = run
            if pname == "ptxjit":
                first_call = first
        del inputs, expected
        P.settle_tiers({p: r for p, r in runs.items() if p == "ptxjit" or p.startswith("ptxjit_")})
        timing = interleaved(runs, self.cfg["reps"], self.cfg["warmup"], self.cfg["budget_s"]) if runs else {}
        rec = {"name": name, "kind": case.kind, "what": case.what, "size": n, "label": case.label(n),
               "check": checks, "timing": timing, "speedup": {}, "bandwidth_GBs": {}, "stream_fraction": {},
               "gflops": {}}
        if "ptxjit" in runs:
            rec["ptxjit_first_call_s"] = first_call
        px = timing.get("ptxjit")
        for pname, t in timing.items():
            if px and pname != "ptxjit":
                rec["speedup"][pname] = t["median_s"] / px["median_s"]
            if case.bytes_moved:
                rec["bandwidth_GBs"][pname] = case.bytes_moved(n) / t["median_s"] / 1e9
            if case.flops:
                rec["gflops"][pname] = case.flops(n) / t["median_s"] / 1e9
        if case.bytes_moved:
            rec["bytes_moved"] = case.bytes_moved(n)
        del runs
        gc.collect()
        line = "   ".join(f"{p} {t['median_s'] * 1e3:.2f} ms" for p, t in timing.items())
        self.log(f"    {line}   [inputs+reference {t_ref:.1f} s, case {time.perf_counter() - t_case:.1f} s]")
        return rec

    # --------------------------------------------------------------------------------- scaling
    def scaling(self, kernel: str = "nbody") -> dict | None:
        px = self.peers.get("ptxjit")
        if px is None:
            return None
        case = CASES[kernel]
        n = case.sizes[self.mode]
        d = case.make(n, np.random.default_rng(5))
        try:
            run, _ = prepare(case, "ptxjit", px, d, n)
        except Exception as e:  # noqa: BLE001
            self.note(f"scaling: {kernel} unavailable: {e}")
            return None
        cores = os.cpu_count() or 1
        counts = sorted({1, cores, *[w for w in (2, 4, 8, 16, 32, 64) if w < cores]})
        def with_workers(fn, setter, w):
            def go() -> None:
                setter(w)
                fn()
            return go

        runs = {("ptxjit", w): with_workers(run, px.ptxjit.set_workers, w) for w in counts}
        # the same kernel in C/OpenMP with 1, 2, ... threads: how far this machine lets any code scale
        nat, omp = self.peers.get("native_c"), None
        if nat is not None and kernel in nat.libs:
            try:
                omp = nat.libs[kernel].omp_set_num_threads
                omp.argtypes = [ctypes.c_int]
                crun, _ = prepare(case, "native_c", nat, {k: v.copy() for k, v in d.items()}, n)
                runs.update({("native_c", w): with_workers(crun, omp, w) for w in counts})
            except (AttributeError, P.PeerUnavailable) as e:
                self.note(f"scaling: no C/OpenMP reference: {e}")
        try:  # interleaved like the kernels: 1, 2, ..., all cores, 1, 2, ...
            ts = interleaved(runs, self.cfg["scaling_reps"], warmup=1)
        except Exception as e:  # noqa: BLE001
            self.note(f"scaling: {kernel} failed: {type(e).__name__}: {e}")
            return None
        finally:
            px.ptxjit.set_workers(None)
            if omp is not None:
                omp(os.cpu_count() or 1)
        out = {"kernel": kernel, "size": n}
        for peer, key in (("ptxjit", "points"), ("native_c", "native_c_points")):
            if (peer, 1) not in ts:
                continue
            pts = [{"workers": w, **{k: ts[peer, w][k] for k in ("median_s", "min_s", "max_s", "reps")}}
                   for w in counts]
            for p in pts:
                p["speedup"] = pts[0]["median_s"] / p["median_s"]
                p["efficiency"] = p["speedup"] / p["workers"]
            out[key] = pts
        return out

    # ----------------------------------------------------------------------------- subprocesses
    def _subprocess_json(self, args: list[str], env: dict, what: str, timeout: float = 300) -> dict | None:
        try:
            p = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.note(f"{what}: timed out after {timeout:.0f} s")
            return None
        if p.returncode != 0:
            self.note(f"{what}: failed (exit {p.returncode}): {p.stderr.strip()[-400:]}")
            return None
        try:
            return json.loads(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            self.note(f"{what}: unreadable output: {p.stdout[-200:]!r}")
            return None

    def numba_sim(self, kernels: list[dict]) -> dict | None:
        try:
            import numba  # noqa: F401
            import numba_cuda  # noqa: F401
        except ImportError as e:
            self.note(f"Numba CUDA simulator unavailable: {e}")
            return None
        n1, n2 = self.cfg["numba"]
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
        r = self._subprocess_json([str(HERE / "numba_sim.py"), str(n1), str(n2)], env, "Numba CUDA simulator")
        if r is None:
            return None
        by = {k["name"]: k for k in kernels}
        out = {"extrapolated": True, "raw": r, "kernels": {}}
        # the same Numba kernels, compiled by numba-cuda and run by ptxjit (the Numba front door)
        nr = self._subprocess_json([str(HERE / "numba_ptxjit.py")], dict(os.environ), "Numba kernels on ptxjit")
        if nr is not None:
            out["numba_on_ptxjit"] = {
                "saxpy": {"size": f"n={nr['saxpy_n']}", "s_per_unit": nr["saxpy_s_per_element"],
                          "ratio_vs_sim": r["saxpy_s_per_element"] / nr["saxpy_s_per_element"]},
                "sgemm": {"size": f"{nr['sgemm_n']}x{nr['sgemm_n']}", "s_per_unit": nr["sgemm_s_per_fma"],
                          "ratio_vs_sim": r["sgemm_s_per_fma"] / nr["sgemm_s_per_fma"]},
            }

        def ptx_per_unit(name, units):
            k = by.get(name)
            t = k and k["timing"].get("ptxjit")
            return t["median_s"] / units(k["size"]) if t else None

        for name, sim_size, sim_s, sim_unit, units in (
                ("saxpy", f"n={n1}", r["saxpy_s"], r["saxpy_s_per_element"], lambda n: n),
                ("sgemm", f"{n2}x{n2}", r["sgemm_s"], r["sgemm_s_per_fma"], lambda n: n ** 3)):
            pu = ptx_per_unit(name, units)
            out["kernels"][name] = {"sim_size": sim_size, "sim_s": sim_s, "sim_s_per_unit": sim_unit,
                                    "unit": "element" if name == "saxpy" else "multiply-add",
                                    "ptxjit_size": by[name]["size"] if name in by else None,
                                    "ptxjit_s_per_unit": pu, "ratio": sim_unit / pu if pu else None,
                                    "extrapolated": True}
        return out

    def cold(self) -> dict:
        out: dict = {}
        n = 64
        for which in ("ptxjit", "pocl"):
            if which not in self.peers:
                continue
            samples = []
            for _ in range(self.cfg["cold"]):
                with tempfile.TemporaryDirectory(prefix="ptxjit-bench-cold-") as tmp:
                    env = dict(os.environ, PTXJIT_CACHE_DIR=tmp, POCL_CACHE_DIR=tmp, POCL_KERNEL_CACHE="0",
                               PYOPENCL_NO_CACHE="1", XDG_CACHE_HOME=tmp)
                    r = self._subprocess_json([str(HERE / "cold.py"), which, str(n)], env, f"cold SGEMM ({which})")
                if r is None:
                    break
                if not r.get("ok"):
                    self.note(f"cold SGEMM ({which}): wrong result")
                samples.append(r)
            if samples:
                keys = [k for k in samples[0] if k.endswith("_s")]
                out[which] = {k: float(np.median([s[k] for s in samples])) for k in keys}
                out[which]["runs"] = len(samples)
                out[which]["n"] = n
        return out

    # ---------------------------------------------------------------------------------- summary
    def summarize(self) -> dict:
        res = self.res
        ks = res["kernels"]

        def speedups(peer):
            return {k["name"]: k["speedup"][peer] for k in ks if peer in k["speedup"]}

        s: dict = {}  # plain numbers only (the contract); which kernel a min/max comes from goes to `which`
        which: dict = {}
        for peer in ("pocl", "native_c", "numpy"):
            sp = speedups(peer)
            s[f"speedup_vs_{peer}_geomean"] = geomean(list(sp.values()))
            s[f"speedup_vs_{peer}_kernels"] = len(sp)
            if peer == "native_c":
                worst = min(sp, key=sp.get) if sp else None
                s["speedup_vs_native_c_min"] = sp[worst] if worst else None
                which["speedup_vs_native_c_min"] = worst
        # the cost of ptxjit's default memory safety: checked (default) time / unchecked time
        cost = speedups("ptxjit_unchecked")
        s["checking_overhead_geomean"] = 1 / geomean(list(cost.values())) if cost else None
        worst = min(cost, key=cost.get) if cost else None
        s["checking_overhead_max"] = 1 / cost[worst] if worst else None
        which["checking_overhead_max"] = worst
        st = res.get("stream")
        s["stream_triad_GBs"] = st["GBs_median"] if st else None
        fr = {}
        for k in ks:
            if k["name"] in MEMORY_BOUND and st:
                for p, bw in k["bandwidth_GBs"].items():
                    k["stream_fraction"][p] = bw / st["GBs_median"]
                if "ptxjit" in k["stream_fraction"]:
                    fr[k["name"]] = k["stream_fraction"]["ptxjit"]
        worst = min(fr, key=fr.get) if fr else None
        s["stream_fraction_min"] = fr[worst] if worst else None
        which["stream_fraction_min"] = worst
        plain = [fr[k] for k in ("vadd", "saxpy") if k in fr]  # the pure streaming kernels alone
        s["stream_fraction_vadd_saxpy_min"] = min(plain) if plain else None
        nb = res.get("numba_sim")
        ratios = [r["ratio"] for r in (nb or {}).get("kernels", {}).values() if r.get("ratio")]
        s["speedup_vs_numba_sim"] = geomean(ratios)  # extrapolated: see numba_sim
        lo = res.get("launch_overhead", {})
        s["empty_launch_us"] = lo.get("ptxjit", {}).get("median_us")
        s["empty_launch_pocl_us"] = lo.get("pocl", {}).get("median_us")
        cold = res.get("cold_start", {})
        s["cold_sgemm_ptxjit_s"] = cold.get("ptxjit", {}).get("first_launch_s")
        s["cold_sgemm_pocl_build_s"] = cold.get("pocl", {}).get("build_s")
        s["cold_sgemm_pocl_first_launch_s"] = cold.get("pocl", {}).get("first_launch_s")
        sc = res.get("scaling")
        if sc:
            last = sc["points"][-1]
            s["scaling_max_workers"] = last["workers"]
            s["scaling_speedup"] = last["speedup"]
            s["scaling_efficiency"] = last["efficiency"]
        else:
            s["scaling_max_workers"] = s["scaling_speedup"] = s["scaling_efficiency"] = None
        nsc = (sc or {}).get("native_c_points")
        s["scaling_efficiency_native_c"] = nsc[-1]["efficiency"] if nsc else None
        for key, why in (("speedup_vs_pocl_geomean", "pocl"), ("speedup_vs_native_c_geomean", "C/OpenMP"),
                         ("speedup_vs_numba_sim", "the Numba CUDA simulator"),
                         ("stream_fraction_min", "STREAM (C/OpenMP) or ptxjit"),
                         ("empty_launch_us", "ptxjit")):
            if s.get(key) is None:
                self.note(f"summary.{key} is null: {why} unavailable (see the notes above)")
        targets = {}
        for label, (key, thr) in TARGETS.items():
            targets[label] = None if s.get(key) is None else bool(s[key] >= thr)
        targets["empty launch <= 20 us"] = None if s["empty_launch_us"] is None else s["empty_launch_us"] <= 20
        c_px, c_cl = s["cold_sgemm_ptxjit_s"], s["cold_sgemm_pocl_build_s"]
        targets["cold SGEMM (Module + first launch) faster than pocl build()"] = (
            None if c_px is None or c_cl is None else c_px < c_cl)
        res["targets"] = targets
        res["summary_kernels"] = which
        return s

    # -------------------------------------------------------------------------------------- all
    def execute(self) -> dict:
        t_start = time.perf_counter()
        self.load_peers()
        self.res["environment"] = env = self.environment()
        env["loadavg_start"] = _loadavg()
        self.log(f"peers: {', '.join(self.peers)}")
        st1 = self.guard("STREAM triad", self.stream)
        self.log("launch overhead")
        self.res["launch_overhead"] = self.guard("launch overhead", self.launch_overhead) or {}
        for name in self.kernel_names:
            try:
                self.res["kernels"].append(self.run_case(name))
            except Exception as e:  # noqa: BLE001
                self.note(f"{name}: harness error: {type(e).__name__}: {e}")
        st2 = self.guard("STREAM triad", self.stream)
        if st1 and st2:  # one measurement before the kernels and one after: all samples together
            times = st1["times_s"] + st2["times_s"]
            t = summarize(times)
            self.res["stream"] = {"n": st1["n"], "bytes": st1["bytes"], **t,
                                  "GBs_median": st1["bytes"] / t["median_s"] / 1e9,
                                  "GBs_best": st1["bytes"] / t["min_s"] / 1e9}
        else:
            self.res["stream"] = st1 or st2
        for part in ("scaling", "numba", "cold", "tracing", "checking"):
            if part in self.skip:
                self.note(f"{part}: skipped (--skip {part})")
        if "scaling" not in self.skip:
            self.log("scaling")
            self.res["scaling"] = self.guard("scaling", self.scaling, "nbody")
        if "numba" not in self.skip:
            self.log("numba simulator")
            self.res["numba_sim"] = self.guard("Numba CUDA simulator", self.numba_sim, self.res["kernels"])
        if "tracing" not in self.skip and "ptxjit" in self.peers:
            from ptxbench import tracing

            self.log("instrumentation (ptxjit.trace)")
            self.res["tracing"] = self.guard("tracing", tracing.measure, self.peers["ptxjit"], self.mode,
                                             self.kernel_names, 3 if self.mode == "quick" else 5, self.log) or {}
        if "checking" not in self.skip and "ptxjit" in self.peers:
            from ptxbench import checking

            self.log("checking (ptxjit check)")
            self.res["checking"] = self.guard("checking", checking.measure, self.peers["ptxjit"], self.mode,
                                              self.kernel_names, 3, self.log) or {}
        if "cold" not in self.skip:
            self.log("cold start")
            self.res["cold_start"] = self.guard("cold start", self.cold) or {}
        env["loadavg_end"] = _loadavg()
        busy = max(env["loadavg_start"] or 0.0, env["loadavg_end"] or 0.0)
        if busy > 0.5 * (os.cpu_count() or 1):
            self.note(f"other processes were running (1-minute load average up to {busy:.1f} on "
                      f"{os.cpu_count()} cores): absolute times are noisy; ratios are fairer (interleaved runs)")
        self.res["summary"] = self.summarize()
        self.res["generated"] = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
        self.res["elapsed_s"] = time.perf_counter() - t_start
        self.write()
        return self.res

    def section(self, key: str, title: str, measure, *args, markdown) -> None:
        """Measure a section (`measure(*args)`, guarded), then add_section it with `markdown(results)`."""
        self.log(title)
        sec = self.guard(key, measure, *args)
        if sec:
            self.add_section(key, sec, markdown(sec))

    def add_section(self, key: str, sec: dict, lines: list[str] | str) -> None:
        """A section measured after the main run (streams, tiers, distributed, triton): its results under
        res[key] and its markdown `lines` (or one text) after the main tables; results written again."""
        if isinstance(lines, str):
            lines = lines.rstrip("\n").split("\n")
        self.res[key] = sec
        self.__dict__.setdefault("_extra_md", {})[key] = lines
        self.write()

    def write(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "results.json").write_text(json.dumps(self.res, indent=1, default=_jsonable) + "\n")
        extra = "".join("\n".join(lines) + "\n" for lines in self.__dict__.get("_extra_md", {}).values())
        (self.out / "results.md").write_text(report.markdown(self.res) + extra)
        try:
            report.chart(self.res, self.out / "results.png")
        except Exception as e:  # noqa: BLE001
            self.note(f"chart not written: {type(e).__name__}: {e}")
            (self.out / "results.json").write_text(json.dumps(self.res, indent=1, default=_jsonable) + "\n")


def _loadavg() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def _jsonable(o):
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(type(o).__name__)
