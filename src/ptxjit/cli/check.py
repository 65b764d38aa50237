"""Command line: `ptxjit check` (compute-sanitizer's tools on one launch, ptxjit/checking).

    ptxjit check --tool memcheck --tool racecheck kernel.cu KERNEL --grid 4 --block 256 --arg ... \\
        [--print-limit N] [--error-exitcode N] [--leak-check full]

The arguments are `ptxjit run`'s (cli/common.py's launch options and parsing); the output is
compute-sanitizer's: the reports, then `========= ERROR SUMMARY: N errors`.  The exit status is 0, or
--error-exitcode when there are reports (compute-sanitizer's convention); usage errors exit 2 as
everywhere in the CLI.
"""

from __future__ import annotations

from pathlib import Path

import click

from ptxjit.checking.report import PREFIX, TOOLS
from ptxjit.cli.common import console, launch_options, parse_arg, parse_dims, ptx_text


def _tools(values: tuple[str, ...]) -> tuple[str, ...]:
    tools = tuple(dict.fromkeys(t.strip() for v in values for t in v.split(",") if t.strip()))
    bad = [t for t in tools if t not in TOOLS]
    if bad:
        raise click.BadParameter(f"{', '.join(bad)}: expected {', '.join(TOOLS)}", param_hint="'--tool'")
    return tools or ("memcheck",)


@click.command("check")
@launch_options
@click.option("--tool", "tool_values", multiple=True, metavar="TOOL",
              help=f"A checking tool: {', '.join(TOOLS)} (repeat, or comma-separate; default memcheck).")
@click.option("--print-limit", type=click.IntRange(min=0), default=100, show_default=True,
              help="Print at most N reports (0: all); the summary counts all.")
@click.option("--error-exitcode", type=int, default=0, show_default=True,
              help="Exit status when there are reports.")
@click.option("--leak-check", type=click.Choice(["full", "no"]), default="no", show_default=True,
              help="memcheck: report device malloc'd memory not freed by the launch's end.")
def check_cmd(ptx_file: str, kernel: str, grid: str, block: str, args: tuple[str, ...], shared_mem: int,
              workers: int | None, tool_values: tuple[str, ...], print_limit: int, error_exitcode: int,
              leak_check: str = "no") -> None:
    """Run KERNEL from PTX_FILE (.ptx, or .cu through NVRTC) once under compute-sanitizer's tools, on the CPU:
    memcheck (out-of-bounds, misaligned), racecheck (shared and global memory, within and between blocks),
    synccheck (divergent barriers, barrier counts), initcheck (uninitialized shared, local memory).

    \b
    Example:
      ptxjit check --tool racecheck --tool synccheck reduce.ptx reduce --grid 4 --block 256 \\
          --arg rand:float32:1000 --arg zeros:float32:1 --arg 1000
    """
    import ptxjit
    from ptxjit.checking import check, format_reports

    tools = _tools(tool_values)
    g, b = parse_dims(grid, "grid"), parse_dims(block, "block")
    values = [parse_arg(a) for a in args]
    if workers:
        ptxjit.set_workers(workers)
    if ptx_file.endswith(".cu"):
        from ptxjit.cuda import load_module

        mod = load_module(ptx_file)
    else:
        mod = ptxjit.Module(ptx_text(ptx_file), ptx_file)
    k = mod.get_function(kernel)
    with console.status(f"checking {k.name} ({', '.join(tools)}) on {Path(ptx_file).name}"):
        reports = check(k, g, b, values, shared_mem, tools, leak_check=leak_check == "full")
    click.echo(f"{PREFIX}PTXJIT CHECK ({', '.join(tools)}): {k.name} grid={g} block={b}")
    click.echo(format_reports(reports, print_limit))
    if reports and error_exitcode:
        raise click.exceptions.Exit(error_exitcode)


def add_commands(group: click.Group) -> None:
    """Register `check` on the command group (cli/app.py)."""
    group.add_command(check_cmd)
