"""Command line: `ptxjit trace` (run a kernel instrumented, write every export) and `ptxjit profile`
(per-line execution counts, memory efficiency where instrument/analysis.py provides it, a hot-line chart).

Registered on the command group by `add_commands(main)` (cli/app.py); the launch options, argument parsing
(--grid/--block/--arg, .cu through NVRTC) and the one-line error exit are cli/common.py's.
"""

from __future__ import annotations

import os
from pathlib import Path

import click
import numpy as np

from ptxjit.cli.common import console, error_exit, launch_options, parse_arg, parse_dims, ptx_text


def _run_trace(ptx_file: str, kernel: str, grid: str, block: str, args: tuple[str, ...], shared_mem: int,
               workers: int | None, records: tuple[str, ...], with_values: bool = False):
    """Load the module, parse the arguments as `ptxjit run` does, and trace one launch (with a spinner)."""
    import ptxjit

    g, b = parse_dims(grid, "grid"), parse_dims(block, "block")
    values = [parse_arg(a) for a in args]
    if workers:
        ptxjit.set_workers(workers)
    with console.status(f"compiling {Path(ptx_file).name}"):
        if ptx_file.endswith(".cu"):
            from ptxjit.cuda import load_module

            mod = load_module(ptx_file)
        else:
            mod = ptxjit.Module(ptx_text(ptx_file), ptx_file)
        k = mod.get_function(kernel)
    with console.status(f"tracing {k.name} grid={grid} block={block} ({', '.join(records)}): "
                        "counting run, then traced run"):
        try:
            t = ptxjit.trace(k, g, b, values, shared_mem, records=records, values=with_values)
        except ptxjit.TraceOverflow as e:  # the kernel took other paths in the traced run than counted
            raise error_exit(str(e), 1) from None
    return t


def _records_option(s: str) -> tuple[str, ...]:
    from ptxjit.instrument.probes import RECORD_TYPES

    recs = tuple(dict.fromkeys(r.strip() for r in s.split(",") if r.strip()))
    bad = [r for r in recs if r not in RECORD_TYPES]
    if bad or not recs:
        raise click.BadParameter(f"{s!r}: expected a comma-separated subset of {', '.join(RECORD_TYPES)}",
                                 param_hint="'--records'")
    return recs


@click.command("trace")
@launch_options
@click.option("--records", "records_spec", default="blocks,memory", show_default=True,
              help="Record types, comma-separated: blocks, memory, branches, barriers.")
@click.option("--values", "with_values", is_flag=True,
              help="Memory records also carry the value loaded or stored (a 'value' column).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory for the exports (created if missing).")
def trace_cmd(ptx_file: str, kernel: str, grid: str, block: str, args: tuple[str, ...], shared_mem: int,
              workers: int | None, records_spec: str, with_values: bool, out_dir: str) -> None:
    """Run KERNEL from PTX_FILE instrumented and write the trace to --out: one Parquet file per record
    type, a Perfetto/Chrome JSON timeline (trace.json), Accel-Sim traces (accelsim/, with blocks and memory
    recorded) and the per-line summary (summary.csv).

    \b
    Example:
      ptxjit trace vadd.ptx vadd --grid 4 --block 256 --arg rand:float32:1000 \\
          --arg rand:float32:1000 --arg zeros:float32:1000 --arg 1000 --out vadd-trace
    """
    from rich.markup import escape
    from rich.table import Table


    recs = _records_option(records_spec)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise click.BadParameter(f"{out} is not a directory", param_hint="'--out'")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise error_exit(f"cannot create {out}: {e.strerror or e}", 2) from None
    t = _run_trace(ptx_file, kernel, grid, block, args, shared_mem, workers, recs, with_values)
    written: list[tuple[str, Path]] = []
    with console.status("writing the exports"):
        written += [(f"{k} records", p) for k, p in t.to_parquet(out).items()]
        summary = out / "summary.csv"
        _write_csv(t.summary(), summary)
        written.append(("per-line summary", summary))
        try:
            written.append(("Perfetto timeline", t.to_perfetto(out / "trace.json")))
        except ValueError as e:  # a trace without CTA timing
            console.print(f"[yellow]no Perfetto timeline: {escape(str(e))}[/yellow]")
        if "blocks" in recs and "memory" in recs:
            acc = t.to_accelsim(out / "accelsim")
            written += [("Accel-Sim kernel list", acc["kernelslist"]), ("Accel-Sim trace", acc["kernel"])]
    counts, cap, nbytes, dropped = t.counts(), t.capacity(), t.nbytes(), t.dropped()
    tab = Table("records", title=f"{t.kernel} grid={t.grid} block={t.block}")
    for c in ("count", "capacity", "bytes", "dropped"):
        tab.add_column(c, justify="right")
    for kind in t.record_types:
        tab.add_row(kind, f"{counts[kind]:,}", f"{cap[kind]:,}", f"{nbytes[kind]:,}", f"{dropped[kind]:,}")
    console.print(tab)
    tm = t.timings
    console.print("time: " + ", ".join(f"{k} {tm[k] * 1e3:.1f} ms" for k in
                                       sorted(tm, key=lambda k: STEPS.index(k) if k in STEPS else len(STEPS))),
                  soft_wrap=True)
    console.print(f"wrote to {escape(str(out))}:", soft_wrap=True)
    for what, p in written:
        console.print(f"  {escape(str(p.relative_to(out)))}  {what}, {p.stat().st_size:,} bytes", soft_wrap=True)


STEPS = ("snapshot", "count", "restore", "trace", "post")  # ptxjit.trace's steps, in order


def _write_csv(table, path: Path) -> None:
    import pyarrow.csv as pcsv

    pcsv.write_csv(table, path)


# ---------------------------------------------------------------------------------------- profile
@click.command("profile")
@launch_options
@click.option("--by", type=click.Choice(["ptx", "source"]), default="ptx", show_default=True,
              help="One row per PTX line, or per CUDA source line (from .loc).")
@click.option("--top", type=click.IntRange(min=1), default=None,
              help="Only the N most executed lines (default: every line, in order).")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              help="Also draw the hot lines as a bar chart (PNG; needs matplotlib).")
def profile_cmd(ptx_file: str, kernel: str, grid: str, block: str, args: tuple[str, ...], shared_mem: int,
                workers: int | None, by: str, top: int | None, plot_path: str | None) -> None:
    """Trace KERNEL from PTX_FILE once and print how often each PTX line ran, with its memory accesses
    (and the memory efficiency per line where ptxjit's analyses provide it).

    \b
    Example:
      ptxjit profile dot.ptx dot --grid 4 --block 256 --arg rand:float32:3000 \\
          --arg rand:float32:3000 --arg zeros:float32:4 --arg 3000 --top 15 --plot dot.png
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table


    if plot_path:
        _check_plot_path(plot_path)
    t = _run_trace(ptx_file, kernel, grid, block, args, shared_mem, workers, ("blocks", "memory"))
    s = t.summary(by).to_pydict()
    n = len(s["instruction"])
    rows = list(range(n))
    if top:
        rows = sorted(rows, key=lambda i: -s["executions"][i])[:top]
    eff_cols, eff = _efficiency(t) if by == "ptx" else ([], {})
    line_col = "ptx_line" if by == "ptx" else "source"
    tab = Table(title=f"{t.kernel} grid={t.grid} block={t.block}: instruction executions per "
                      f"{'PTX line' if by == 'ptx' else 'source line'}")
    tab.add_column("line", justify="right")
    sources = by == "ptx" and any(s["source"])
    if sources:
        tab.add_column("source")
    tab.add_column("instruction")
    tab.add_column("executions", justify="right")
    tab.add_column("memory accesses", justify="right")
    for c in eff_cols:
        tab.add_column(c.replace("_per_", "/").replace("request", "req").replace("_", " "), justify="right")
    total = sum(s["executions"]) or 1
    for i in rows:
        line = s[line_col][i]
        cells = [str(line)] + ([s["source"][i]] if sources else []) + [
            escape(s["instruction"][i]), f"{s['executions'][i]:,}",
            "" if s["memory_accesses"][i] is None else f"{s['memory_accesses'][i]:,}"]
        cells += [_cell(v) for v in eff.get((s["function"][i], line), [None] * len(eff_cols))]
        tab.add_row(*cells, style="bold" if s["executions"][i] >= 0.05 * total else None)
    # piped or captured: rich would squeeze the table into 80 columns; a file has no width to fit
    (console if console.is_terminal else Console(width=200)).print(tab)
    console.print(f"{sum(s['executions']):,} PTX instructions executed (per thread), "
                  f"{sum(v or 0 for v in s['memory_accesses']):,} memory accesses")
    if not eff_cols and by == "ptx":
        console.print("[dim](memory efficiency columns: not available in this build)[/dim]")
    if plot_path:
        hot = sorted(range(n), key=lambda i: -s["executions"][i])[:top or 20]
        plot_hot_lines([(f"{s[line_col][i]}: {s['instruction'][i]}", s["executions"][i]) for i in hot],
                       plot_path, f"{t.kernel}: hottest {'PTX' if by == 'ptx' else 'source'} lines")
        console.print(f"wrote {escape(plot_path)}")


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.2f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


# the efficiency columns of t.memory_efficiency() shown per line (the others repeat the summary's counts)
EFFICIENCY = ("requests", "sectors_per_request", "wavefronts_per_request", "bank_conflicts")
KEYS = {"function", "ptx_line", "source", "instruction", "site", "space", "kind", "text", "ptx"}


def _efficiency(t) -> tuple[list[str], dict[tuple[str, int], list]]:
    """Columns of t.memory_efficiency() keyed by (function, PTX line), or nothing where the analysis is not
    there (instrument/analysis.py is optional) or gives no per-line table."""
    try:
        tab = t.memory_efficiency()
    except (ImportError, AttributeError, NotImplementedError):
        return [], {}
    d = tab.to_pydict() if hasattr(tab, "to_pydict") else None
    if not d or "ptx_line" not in d:
        return [], {}
    cols = [c for c in EFFICIENCY if c in d] or [c for c in d if c not in KEYS]
    cols = [c for c in cols if any(v is not None for v in d[c])]  # e.g. no shared-memory columns without shared
    out: dict[tuple[str, int], list] = {}
    funcs = d.get("function", [t.kernel] * len(d["ptx_line"]))
    for i, line in enumerate(d["ptx_line"]):
        key = (funcs[i], line)
        vals = [d[c][i] for c in cols]
        if key in out:  # two memory sites on one line (e.g. cp.async's two sides): keep both
            out[key] = [f"{_cell(a)} / {_cell(b)}" for a, b in zip(out[key], vals, strict=True)]
        else:
            out[key] = vals
    return cols, out


def _check_plot_path(path: str) -> None:
    parent = Path(path).parent
    if not parent.is_dir():
        raise click.BadParameter(f"directory {parent} does not exist", param_hint="'--plot'")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise click.UsageError("--plot needs matplotlib (pip install matplotlib, or ptxjit[bench])") from None


def plot_hot_lines(items: list[tuple[str, int]], path: str, title: str) -> None:
    """A horizontal bar chart of executions per line, hottest at the top."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display here
    import matplotlib.pyplot as plt

    labels = [lab if len(lab) <= 48 else lab[:45] + "..." for lab, _ in items][::-1]
    values = np.array([v for _, v in items][::-1], dtype=float)
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(items) + 1.2))
    ax.barh(range(len(items)), values, color="#4c72b0")
    ax.set_yticks(range(len(items)), labels, fontsize=8, family="monospace")
    ax.set_xlabel("executions (threads x times)")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def add_commands(group: click.Group) -> None:
    """Register `trace` and `profile` on the command group (cli/app.py)."""
    group.add_command(trace_cmd)
    group.add_command(profile_cmd)
