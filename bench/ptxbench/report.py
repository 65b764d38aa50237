"""results.md (tables) and results.png (speedup bar chart) from the results dictionary."""

from __future__ import annotations

from pathlib import Path

PEER_TITLES = {"ptxjit": "ptxjit", "pocl": "pocl (OpenCL)", "native_c": "C/OpenMP (gcc)", "numpy": "NumPy"}
PEERS = ["pocl", "native_c", "numpy"]


def fmt_time(s: float | None) -> str:
    if s is None:
        return "—"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def fmt_num(x: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "—" if x is None else f"{x:{spec}}{suffix}"


def pct(x: float | None) -> float | None:
    return None if x is None else 100 * x


def markdown(res: dict) -> str:
    s = res["summary"]
    which = res.get("summary_kernels", {})
    env = res["environment"]
    lines = [
        f"# ptxjit benchmark ({res['mode']} mode)",
        "",
        f"{env.get('cpu', '?')}, {env.get('cores')} cores; ptxjit {env.get('ptxjit_version')} with "
        f"{env.get('ptxjit_workers')} workers; {env.get('gcc', 'gcc ?')}; pocl: {env.get('pocl', 'n/a')}; "
        f"NumPy {env.get('numpy')}.  {res['generated']}, total run {res['elapsed_s']:.0f} s.",
        "",
        "Times are medians over interleaved repetitions (warm-up excluded), range in brackets.  "
        "**×** = that peer's time / ptxjit's time: above 1 ptxjit is faster.  *1st call*: ptxjit's first "
        "launch, translation included (from ptxjit's on-disk cache when it has the kernel).",
        "",
        "| kernel | size | ptxjit | " + " | ".join(f"{PEER_TITLES[p]} | ×" for p in PEERS)
        + " | ptxjit % STREAM | ptxjit 1st call |",
        "|---|---|---|" + "---|---|" * len(PEERS) + "---|---|",
    ]
    for k in res["kernels"]:
        t = k["timing"]
        px = t.get("ptxjit")
        cells = [k["name"], k["label"],
                 (f"{fmt_time(px['median_s'])} [{fmt_time(px['min_s'])}–{fmt_time(px['max_s'])}]" if px else "—")]
        for p in PEERS:
            pt = t.get(p)
            cells.append(fmt_time(pt["median_s"]) if pt else "—")
            cells.append(fmt_num(k["speedup"].get(p), ".2f", "×"))
        sf = k.get("stream_fraction", {}).get("ptxjit")
        cells.append(fmt_num(pct(sf), ".0f", " %"))
        cells.append(fmt_time(k.get("ptxjit_first_call_s")))
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Summary",
        "",
        "| measure | value |",
        "|---|---|",
        f"| ptxjit vs pocl, geometric mean | {fmt_num(s.get('speedup_vs_pocl_geomean'), '.2f', '×')} |",
        f"| ptxjit vs C/OpenMP, geometric mean | {fmt_num(s.get('speedup_vs_native_c_geomean'), '.2f', '×')} |",
        f"| ptxjit vs C/OpenMP, worst kernel ({which.get('speedup_vs_native_c_min') or '—'}) | "
        f"{fmt_num(s.get('speedup_vs_native_c_min'), '.2f', '×')} |",
        f"| ptxjit vs NumPy, geometric mean | {fmt_num(s.get('speedup_vs_numpy_geomean'), '.2f', '×')} |",
        f"| STREAM triad (C/OpenMP) | {fmt_num(s.get('stream_triad_GBs'), '.1f', ' GB/s')} |",
        f"| worst memory-bound kernel / STREAM ({which.get('stream_fraction_min') or '—'}) | "
        f"{fmt_num(pct(s.get('stream_fraction_min')), '.0f', ' %')} |",
        f"| vadd / saxpy alone: worst / STREAM | "
        f"{fmt_num(pct(s.get('stream_fraction_vadd_saxpy_min')), '.0f', ' %')} |",
        f"| ptxjit vs Numba CUDA simulator (extrapolated) | {fmt_num(s.get('speedup_vs_numba_sim'), ',.0f', '×')} |",
        f"| empty kernel launch, ptxjit | {fmt_num(s.get('empty_launch_us'), '.1f', ' µs')} |",
        f"| empty kernel launch, pocl (enqueue + finish) | {fmt_num(s.get('empty_launch_pocl_us'), '.1f', ' µs')} |",
        f"| cold SGEMM: new Module + first launch, ptxjit | {fmt_time(s.get('cold_sgemm_ptxjit_s'))} |",
        f"| cold SGEMM: cl.Program.build(), pocl | {fmt_time(s.get('cold_sgemm_pocl_build_s'))} |",
        f"| cold SGEMM: build + first launch, pocl | {fmt_time(s.get('cold_sgemm_pocl_first_launch_s'))} |",
        f"| {res.get('scaling', {}).get('kernel', 'scaling')} scaling, 1 → {s.get('scaling_max_workers')} workers | "
        f"{fmt_num(s.get('scaling_speedup'), '.2f', '×')} "
        f"(efficiency {fmt_num(pct(s.get('scaling_efficiency')), '.0f', ' %')}) |",
        "",
    ]
    scaling = res.get("scaling") or {}
    sc = scaling.get("points")
    if sc:
        nsc = scaling.get("native_c_points") or [None] * len(sc)
        lines += [f"## Scaling ({scaling['kernel']}, {scaling['size']} bodies; C/OpenMP alongside, as the "
                  "machine's reference)", "",
                  "| workers | ptxjit median | ptxjit speedup | C/OpenMP median | C/OpenMP speedup |",
                  "|---|---|---|---|---|"]
        for p, q in zip(sc, nsc, strict=True):
            lines.append(f"| {p['workers']} | {fmt_time(p['median_s'])} | {p['speedup']:.2f}× | "
                         f"{fmt_time(q['median_s']) if q else '—'} | {fmt_num(q and q['speedup'], '.2f', '×')} |")
        lines.append("")
    nb = res.get("numba_sim") or {}
    if nb.get("kernels"):
        lines += ["## Numba CUDA simulator (small sizes, **extrapolated** per element)", "",
                  "| kernel | simulator size | simulator time | per unit | ptxjit per unit | ratio |",
                  "|---|---|---|---|---|---|"]
        for name, r in nb["kernels"].items():
            lines.append(f"| {name} | {r['sim_size']} | {fmt_time(r['sim_s'])} | {r['sim_s_per_unit']:.3g} s | "
                         f"{fmt_num(r.get('ptxjit_s_per_unit'), '.3g', ' s')} | "
                         f"{fmt_num(r.get('ratio'), ',.0f', '×')} |")
        lines.append("")
        non = nb.get("numba_on_ptxjit") or {}
        if non:
            lines += ["### The same Numba kernels run by ptxjit (`ptxjit.numba`) vs the simulator", "",
                      "| kernel | ptxjit size | ptxjit per unit | × vs simulator (extrapolated) |", "|---|---|---|---|"]
            for name, r in non.items():
                lines.append(f"| {name} | {r['size']} | {r['s_per_unit']:.3g} s | {r['ratio_vs_sim']:,.0f}× |")
            lines.append("")
    from ptxbench import tracing

    lines += tracing.markdown(res.get("tracing") or {})
    from ptxbench import checking

    lines += checking.markdown(res.get("checking") or {})
    t = res.get("targets")
    if t:
        lines += ["## Targets", "", "| target | met |", "|---|---|"]
        lines += [f"| {name} | {'yes' if ok else ('no' if ok is False else 'n/a')} |" for name, ok in t.items()]
        lines.append("")
    if res.get("notes"):
        lines += ["## Notes", ""] + [f"- {n}" for n in res["notes"]] + [""]
    return "\n".join(lines)


def chart(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kernels = res["kernels"]
    names = [k["name"] for k in kernels]
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(names) + 2), 4.8))
    width = 0.8 / len(PEERS)
    for i, p in enumerate(PEERS):
        xs, ys = [], []
        for j, k in enumerate(kernels):
            v = k["speedup"].get(p)
            if v:
                xs.append(j + (i - (len(PEERS) - 1) / 2) * width)
                ys.append(v)
        if xs:
            bars = ax.bar(xs, ys, width, label=f"vs {PEER_TITLES[p]}")
            ax.bar_label(bars, labels=[f"{y:.2g}" for y in ys], fontsize=7, rotation=90, padding=2)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.margins(y=0.15)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.set_ylabel("ptxjit speedup (peer time / ptxjit time)")
    ax.set_title(f"ptxjit speedup per kernel ({res['mode']} mode; > 1: ptxjit faster)")
    ax.legend()
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
