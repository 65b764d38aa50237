"""Draw a ptxjit Perfetto/Chrome JSON trace (Trace.to_perfetto, `ptxjit trace`) as a timeline PNG.

    python tools/trace_timeline.py trace.json -o timeline.png
    python tools/trace_timeline.py --demo scan -o docs/trace_timeline.png   # trace a benchmark kernel first

A static picture of what ui.perfetto.dev shows for the file: a lane per process (the launch, then each
worker), the spans of its tracks stacked by nesting depth (CTA spans, the barrier epochs inside them).
Needs matplotlib (the bench extra).  --demo traces bench/kernels/ptx/<kernel>.ptx with barrier records.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMOS = {  # kernel: (grid, block, arguments from n, n)
    "scan": (24, 512, lambda np, n: (np.random.default_rng(0).integers(0, 10, n, dtype=np.int32),
                                     np.zeros(n, np.int32)), 24 * 512),
    "dot": (8, 256, lambda np, n: (np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(8, np.float32), n),
            8 * 256 * 3),
}


def demo_trace(kernel: str, out_json: Path, runs: int = 1) -> Path:
    """Trace a benchmark kernel with barrier records and export its Perfetto JSON: of `runs` traces the
    shortest (on a shared machine, the one least disturbed by other processes)."""
    import numpy as np

    sys.path.insert(0, str(ROOT / "src"))
    import ptxjit

    grid, block, make, n = DEMOS[kernel]
    k = ptxjit.Module.from_file(ROOT / "bench" / "kernels" / "ptx" / f"{kernel}.ptx").get_function(kernel)
    args = make(np, n)
    k(grid, block, args)  # translate first: the traced run's times are then the kernel's own
    best, span = None, None
    for _ in range(runs):
        t = ptxjit.trace(k, grid, block, args, records=("blocks", "barriers"))
        end = int(t.ctas().column("end_ns").to_numpy().max())
        if span is None or end < span:
            best, span = t, end
    return best.to_perfetto(out_json)


def load(path: Path) -> tuple[dict[int, str], list[dict]]:
    """(process names, spans with a `depth`: their nesting level in their track)."""
    doc = json.loads(Path(path).read_text())
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    spans = sorted((e for e in events if e.get("ph") == "X"), key=lambda e: (e["pid"], e.get("tid", 0), e["ts"],
                                                                            -e["dur"]))
    stacks: dict[tuple, list[float]] = {}
    for e in spans:  # depth: how many open spans of the same track enclose it
        st = stacks.setdefault((e["pid"], e.get("tid", 0)), [])
        while st and st[-1] <= e["ts"] + 1e-9:
            st.pop()
        e["depth"] = len(st)
        st.append(e["ts"] + e["dur"])
    return procs, spans


def draw(path: Path, out: Path, title: str | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    procs, spans = load(path)
    pids = sorted({e["pid"] for e in spans})
    depth = {p: max(e["depth"] for e in spans if e["pid"] == p) + 1 for p in pids}  # each lane's own depth
    lane_h, gap = 0.8, 0.5
    y0, y = {}, 0.0
    for p in pids:
        y0[p], y = y, y + depth[p] * lane_h + gap
    cmap = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(12, 1.6 + 0.45 * sum(depth.values())))
    epochs: dict[str, tuple] = {}
    total = max((e["ts"] + e["dur"] for e in spans), default=1.0) or 1.0
    for e in spans:
        y = y0[e["pid"]] + e["depth"] * lane_h
        if e.get("cat") == "epoch":
            k = int(e["name"].split()[-1])
            color = cmap(k % 10)
            label = e["name"] + (f": to {e['args']['ends at']}" if "ends at" in e.get("args", {}) else "")
            epochs.setdefault(e["name"], (k, color, label.replace("(PTX line", "(line")))
        else:
            color = "#d9dde3" if e.get("cat") == "cta" else "#9aa5b1"
        ax.broken_barh([(e["ts"], max(e["dur"], 1e-3))], (y, lane_h * 0.9), facecolors=color, edgecolors="#39424e",
                       linewidth=0.5)
        if e.get("cat") in ("cta", "launch") and e["dur"] >= 0.035 * total:  # labels only where they fit
            text = e["name"] if e.get("cat") == "launch" else e["name"].replace("CTA ", "")
            ax.text(e["ts"] + e["dur"] / 2, y + lane_h * 0.45, text, ha="center", va="center", fontsize=7,
                    clip_on=True)
    ax.set_yticks([y0[p] + depth[p] * lane_h / 2 for p in pids], [procs.get(p, f"process {p}") for p in pids])
    ax.invert_yaxis()
    ax.set_xlabel("time since the traced run began (µs)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlim(left=0)
    if epochs:
        items = sorted(epochs.values())
        ax.legend(handles=[Patch(facecolor=c, edgecolor="#39424e", label=lab) for _, c, lab in items],
                  loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=min(3, len(items)), fontsize=8, frameon=False)
    ax.set_title(title or f"{Path(path).name}: CTAs per worker, barrier epochs nested", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", type=Path, help="a Perfetto/Chrome JSON trace from ptxjit")
    ap.add_argument("-o", "--out", type=Path, required=True, help="the PNG to write")
    ap.add_argument("--demo", choices=sorted(DEMOS), help="trace this benchmark kernel first (ignores TRACE)")
    ap.add_argument("--json", type=Path, help="with --demo: keep the Perfetto JSON here")
    ap.add_argument("--runs", type=int, default=1, help="with --demo: trace this often, draw the shortest run")
    ap.add_argument("--title")
    a = ap.parse_args(argv)
    if a.demo:
        path = demo_trace(a.demo, a.json or Path(tempfile.mkdtemp()) / f"{a.demo}.json", a.runs)
        title = a.title or (f"ptxjit trace of bench/kernels/ptx/{a.demo}.ptx ({DEMOS[a.demo][0]} CTAs of "
                            f"{DEMOS[a.demo][1]} threads): CTAs per worker, barrier epochs nested")
    elif a.trace:
        path, title = a.trace, a.title
    else:
        ap.error("give a trace file or --demo")
    draw(path, a.out, title)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
