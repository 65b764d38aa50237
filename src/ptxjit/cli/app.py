"""Command line: `ptxjit info` and `ptxjit run`.

Bad input never ends in a traceback: a usage or input error (missing file, bad --arg/--grid/--out,
unknown kernel, malformed PTX, refused launch) prints one `Error: ...` line and exits with 2, click's
convention; a kernel that fails while running (trap, deadlock) exits with 1; an unexpected internal
error prints one line too (PTXJIT_DEBUG=1 shows its traceback) and exits with 1.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections import Counter
from pathlib import Path

import click
import numpy as np
from rich.markup import escape
from rich.table import Table

from ptxjit import config
from ptxjit.cli import check, driver, trace
from ptxjit.cli.common import ARG_HELP, console, error_exit, launch_options, parse_arg, parse_dims, ptx_text
from ptxjit.errors import KernelError, PTXError


class _Main(click.Group):
    """The command group: turns every exception a command raises into one line and an exit code."""

    def invoke(self, ctx: click.Context):
        from ptxjit.cuda import CudaCompileError

        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:  # output piped into `head`: stop quietly
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except OSError:
                pass
            raise click.exceptions.Exit(1) from None
        except KernelError as e:  # the kernel failed while running (trap, deadlock): not a usage error
            raise error_exit(str(e), 1) from None
        except CudaCompileError as e:  # NVRTC's log, several lines, is the useful part
            raise error_exit(str(e), 2) from None
        except (PTXError, TypeError, ValueError, OverflowError, ImportError, MemoryError) as e:
            raise error_exit(" ".join(str(e).split()) or type(e).__name__, 2) from None
        except KeyError as e:
            raise error_exit(str(e.args[0]) if e.args else "key error", 2) from None
        except OSError as e:
            where = f"{e.filename}: " if e.filename else ""
            raise error_exit(f"{where}{e.strerror or e}", 2) from None
        except Exception as e:
            if config.DEBUG.raw():
                raise
            raise error_exit(f"internal error in ptxjit: {' '.join(str(e).split()) or type(e).__name__} "
                         f"(set PTXJIT_DEBUG=1 for the traceback)", 1) from None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ptxjit")
def main() -> None:
    """ptxjit: run NVIDIA PTX kernels on the CPU.

    \b
    Examples:
      ptxjit info kernels.ptx
      ptxjit run kernels.ptx vadd --grid 4 --block 256 \\
          --arg rand:float32:1024 --arg rand:float32:1024 --arg zeros:float32:1024 --arg 1024 \\
          --out 2:c.npy
    """


@main.command()
@click.argument("ptx_file", type=click.Path(exists=True, dir_okay=False))  # .ptx or .cu
@click.option("--rules", is_flag=True, help="Also list the instruction rule table.")
@click.option("--summary", is_flag=True,
              help="Also show the summary pass: parameter accesses and strides, CFG, barriers, liveness.")
def info(ptx_file: str, rules: bool, summary: bool) -> None:
    """Show kernels, parameters, registers, memory sizes, instruction mix and unsupported instructions."""
    from ptxjit.lower.layout import local_size, param_layout, shared_layout
    from ptxjit.lower.validate import unsupported_instructions

    mod = _load_ir(ptx_file)
    console.print(f"[bold]{escape(ptx_file)}[/bold]: PTX {mod.version}, target {', '.join(mod.target)}, "
                  f"address size {mod.address_size}")
    for f in mod.entries:
        lay = param_layout(f.params)
        sh = shared_layout(mod, f)
        console.print(f"\n[bold cyan]kernel {f.name}[/bold cyan]")
        t = Table("#", "parameter", "type", "offset", "size")
        for i, (p, off) in enumerate(zip(f.params, lay.offsets, strict=True)):
            t.add_row(str(i), p.name, "." + p.type + (f"[{p.dims[0]}]" if p.dims else ""), str(off),
                      str(max(p.size, p.elem_size)))
        console.print(t)
        regs = Counter(f.regs.values())
        counts = ", ".join(f".{k}: {v}" for k, v in sorted(regs.items()))
        console.print(f"PTX virtual registers (not a hardware register count): {counts}")
        console.print(f"static shared: {sh.static_size} B, local: {local_size(f)} B per thread")
        if f.perf:
            console.print("directives: " + ", ".join(f".{k} {','.join(map(str, v))}" for k, v in f.perf.items()))
        mix = Counter(i.opcode for i in f.instructions)
        console.print(f"instructions: {sum(mix.values())} — " +
                      ", ".join(f"{k} {v}" for k, v in mix.most_common()))
        if summary:
            _print_summary(mod, f)
        _print_tier_candidates(mod, f)
    funcs = [f for f in mod.functions.values() if not f.is_entry]
    if funcs:
        console.print("\ndevice functions: " + ", ".join(
            f.name + ("" if f.body is not None else " (extern)") for f in funcs))
    bad = unsupported_instructions(mod)
    bad += _rule_gaps(mod, {(e.pos.line, e.pos.col) for e in bad if e.pos is not None})
    if bad:
        console.print(f"\n[red]unsupported ({len(bad)}):[/red]")
        for e in bad:
            console.print(f"  {e}")
    else:
        console.print("\n[green]all instructions supported[/green]")
    if rules:
        from ptxjit.isa import SPECS
        from ptxjit.lower.rules import RULES

        # every opcode of the ISA table, with its rule (or none) and its spec summary
        t = Table("opcode", "family", "rule", "ISA spec")
        def fam(o: str) -> str:
            return SPECS[o].family if o in SPECS else RULES[o].family

        for op in sorted(set(SPECS) | set(RULES), key=lambda o: (fam(o), o)):
            sp, r = SPECS.get(op), RULES.get(op)
            t.add_row(op, sp.family if sp else r.family, r.doc if r else "[dim]no rule[/dim]",
                      sp.describe() if sp else "[dim]ptxjit-internal[/dim]")
        console.print(t)


def _rule_gaps(mod, reported: set) -> list:
    """Instructions without a rule (or refused by their rule) that validation did not report: its ISA
    check fails open on a table defect, and `info` must never call such a module fully supported."""
    from ptxjit.errors import UnsupportedInstructionError
    from ptxjit.lower.rules import RULES

    out = []
    for fn in mod.functions.values():
        for ins in fn.instructions if fn.body is not None else ():
            if (ins.pos.line, ins.pos.col) in reported:
                continue
            r = RULES.get(ins.opcode)
            try:
                why = "no rule for this opcode" if r is None else (r.check(ins) if r.check else None)
            except Exception as e:  # a rule's check failing is no proof of support
                why = f"its rule's check failed ({type(e).__name__})"
            if why is not None:
                out.append(UnsupportedInstructionError(ins.pos, ins.text, why))
    return out


def _print_tier_candidates(mod, f) -> None:
    """What tier 1 (ptxjit/tiers, PTXJIT_TIERS=1) may specialize: the scalar parameters."""
    from ptxjit import tiers
    from ptxjit.lower.layout import param_layout
    from ptxjit.runtime.access import analyze
    from ptxjit.tiers.profile import candidates

    try:
        cands = candidates(f.params, param_layout(f.params).offsets, analyze(mod, f))
    except Exception:  # noqa: BLE001 - an unanalyzable kernel only lacks this line
        return
    state = "on" if tiers.enabled() else "off (PTXJIT_TIERS=1 turns them on)"
    names = ", ".join(f"{c.name} (.{c.type})" for c in cands) or "none"
    console.print(f"tiers: {state}; tier 1 may specialize on the grid and on: {names}")


def _print_tiers(st: dict) -> None:
    """After `run`: per tiered kernel its tier, launches per tier, swaps, specializations, guards."""
    for name, s in st.items():
        builds = ", ".join(f"tier {b['level']} {b['seconds']:.2f} s" + (" (disk)" if b["from_disk"] else "")
                           for b in s["builds"])
        console.print(f"tiers {escape(name)}: tier {s['tier']}, launches per tier {s['launches']}, "
                      f"swaps {s['swaps']}, guard failures {s['guard_failures']}, re-optimizations "
                      f"{s['reoptimizations']}; built: {builds}")
        for sp in s["specializations"]:
            console.print("  specialized: " + escape(", ".join(f"{k}={v}" for k, v in sp.items())))
        _print_counters(s)


def _print_counters(s: dict) -> None:
    """Tier 0's counters of a kernel (after a counted launch): branches with their bias and uniformity,
    memory accesses with their alignment, x-stride and sectors per warp request."""
    if s["branches"]:
        t = Table("branch (PTX line)", "taken", "fall-through", "warp-uniform", "CTA-uniform", title="branches")
        for br in s["branches"]:
            uni = [f"{br[k]:.0%}" if k in br else "" for k in ("warp_uniform", "cta_uniform")]
            t.add_row(str(br["line"]) + (" (loop)" if br["back_edge"] else ""), str(br["taken"]),
                      str(br["fallthrough"]), *uni)
        console.print(t)
    if s["memory"]:
        t = Table("line", "source", "instruction", "accesses", "align", "x-stride", "warps", "sectors/req",
                  title="memory accesses (sampled CTAs)")
        for m in s["memory"]:
            t.add_row(str(m["line"]), escape(Path(m["source"]).name), escape(m["instruction"]), str(m["accesses"]),
                      str(m["alignment"]), "" if m["stride"] is None else str(m["stride"]),
                      ", ".join(f"{k} {v}" for k, v in m["warps"].items()),
                      "" if m["sectors_per_request"] is None else f"{m['sectors_per_request']:.2f}")
        console.print(t)


def _load_ir(path: str):
    from ptxjit.frontend.parser import parse

    return parse(ptx_text(path), path)


def _print_summary(mod, f) -> None:
    import copy

    from ptxjit.passes.preprocess import preprocess
    from ptxjit.passes.summary import summarize

    fn = copy.copy(f)
    rep = preprocess(fn)
    s = summarize(fn)
    t = Table("parameter", "type", "access")
    for p in s.params:
        t.add_row(p.name, "." + p.type, p.describe())
    console.print(t)
    console.print(f"control flow: {s.blocks} blocks, {s.edges} edges, {s.loops} loops (back edges)")
    console.print(f"barriers: {len(s.barriers)}, warp collectives: {len(s.warp_collectives)}, "
                  f"registers live across a suspension point: at most {s.max_live_at_suspension}")
    for where in s.barriers + s.warp_collectives:
        console.print(f"  {where}")
    console.print(f"use-def: {s.defs} register definitions, {s.uses} uses")
    if rep.changed:
        console.print(f"preprocess: removed {len(rep.removed_noops)} no-op and {len(rep.removed_unreachable)} "
                      f"unreachable instructions; {len(rep.self_loops)} self-loops become traps")
        for x in rep.self_loops:
            console.print(f"  self-loop: {x}")


@main.command(epilog=ARG_HELP)  # the --arg forms, below the options
@functools.partial(launch_options, arg_help="A kernel argument (see below); repeat per parameter.")
@click.option("--out", "outs", multiple=True, metavar="INDEX:PATH.npy",
              help="After the run, save argument INDEX (an array) to PATH.npy. Repeatable.")
@click.option("--const", "consts", multiple=True, metavar="NAME=PATH.npy",
              help="Before the run, fill the module variable NAME (a __constant__ or __device__ variable: "
                   ".const/.global) with the bytes of the array in PATH.npy, as cudaMemcpyToSymbol. Repeatable.")
@click.option("--repeat", default=1, show_default=True, type=click.IntRange(min=1),
              help="Launch the kernel this many times (timing).")
@click.option("--show", is_flag=True, help="Print a summary of every array argument after the run.")
@click.option("--fmad/--no-fmad", default=True, show_default=True,
              help="Fuse mul + add into fma as ptxas does (the GPU's results); --no-fmad rounds each separately.")
def run(ptx_file: str, kernel: str, grid: str, block: str, args: tuple[str, ...], outs: tuple[str, ...],
        shared_mem: int, consts: tuple[str, ...], workers: int | None, repeat: int, show: bool, fmad: bool) -> None:
    """Run KERNEL from PTX_FILE (a .ptx file, or CUDA C++ .cu compiled with NVRTC) on the CPU.

    \b
    Example:
      ptxjit run vadd.ptx vadd --grid 4 --block 256 --arg rand:float32:1000 \\
          --arg rand:float32:1000 --arg zeros:float32:1000 --arg 1000 --out 2:c.npy
    """
    import ptxjit

    g, b = parse_dims(grid, "grid"), parse_dims(block, "block")
    values = [parse_arg(a) for a in args]
    out_map = [_out_spec(o, values) for o in outs]  # checked before the run: a bad path fails fast
    const_data = [_const_spec(c) for c in consts]
    if workers:
        ptxjit.set_workers(workers)
    if not fmad:  # read by every Module this command creates (also the one NVRTC's PTX goes into)
        os.environ[config.FMAD.name] = "0"
    if ptx_file.endswith(".cu"):
        from ptxjit.cuda import load_module

        mod = load_module(ptx_file)
    else:
        mod = ptxjit.Module(ptx_text(ptx_file), ptx_file)
    k = mod.get_function(kernel)
    for name, data in const_data:
        _set_global(mod, name, data)
    t0 = time.perf_counter()
    k(g, b, values, shared_mem=shared_mem)
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat - 1):
        t1 = time.perf_counter()
        k(g, b, values, shared_mem=shared_mem)
        times.append(time.perf_counter() - t1)
    console.print(f"ran {k.name} grid={grid} block={block}: first launch {first * 1e3:.2f} ms"
                  + (f", then median {np.median(times) * 1e3:.3f} ms over {len(times)}" if times else ""))
    _print_tiers(ptxjit.stats())
    for idx, path in out_map:
        try:
            np.save(path, values[idx])
        except OSError as e:
            raise error_exit(f"cannot write {path}: {e.strerror or e}", 2) from None
        console.print(f"wrote argument {idx} to {escape(path)}")
    if show:
        for i, v in enumerate(values):
            if isinstance(v, np.ndarray):
                console.print(f"arg {i}: {v.dtype}{list(v.shape)} first values {v.ravel()[:8]}")


def _const_spec(c: str) -> tuple[str, np.ndarray]:
    """--const NAME=PATH.npy -> (name, the array), refused unless the file holds a NumPy array."""
    name, eq, path = c.partition("=")
    if not eq or not name or not path:
        raise click.BadParameter(f"{c!r}: expected NAME=PATH.npy", param_hint="'--const'")
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise click.BadParameter(f"{c!r}: cannot read a NumPy array from {path}: {e}", param_hint="'--const'") \
            from None
    if not isinstance(data, np.ndarray):  # an .npz archive
        raise click.BadParameter(f"{c!r}: {path} is not a single array (.npy)", param_hint="'--const'")
    return name, data


def _set_global(mod, name: str, data: np.ndarray) -> None:
    """Copy `data`'s bytes to the start of module variable `name` (what cudaMemcpyToSymbol does)."""
    try:
        view = mod.get_global(name, dtype=np.uint8)
    except KeyError as e:
        raise click.BadParameter(str(e.args[0]), param_hint="'--const'") from None
    raw = np.ascontiguousarray(data).view(np.uint8).ravel()
    if raw.size > view.size:
        raise click.BadParameter(f"{name}: the array has {raw.size} bytes ({data.dtype}{list(data.shape)}); the "
                                 f"variable has {view.size}", param_hint="'--const'")
    view[:raw.size] = raw


def _out_spec(o: str, values: list) -> tuple[int, str]:
    """--out INDEX:PATH -> (index, path np.save writes), refused unless the path can be written."""
    idx, _, path = o.partition(":")
    if not idx.isdigit() or not path:
        raise click.BadParameter(f"{o!r}: expected INDEX:PATH.npy", param_hint="'--out'")
    if int(idx) >= len(values) or not isinstance(values[int(idx)], np.ndarray):
        raise click.BadParameter(f"{o!r}: argument {idx} is not an array", param_hint="'--out'")
    dest = Path(path if path.endswith(".npy") else path + ".npy")  # np.save adds the suffix
    parent = dest.parent if str(dest.parent) else Path(".")
    if dest.is_dir():
        raise click.BadParameter(f"{o!r}: {dest} is a directory", param_hint="'--out'")
    if not parent.is_dir():
        raise click.BadParameter(f"{o!r}: directory {parent} does not exist", param_hint="'--out'")
    if not os.access(parent, os.W_OK) or (dest.exists() and not os.access(dest, os.W_OK)):
        raise click.BadParameter(f"{o!r}: {dest} is not writable", param_hint="'--out'")
    return int(idx), str(dest)


@main.group("cache")
def cache_group() -> None:
    """Inspect or clear the on-disk translation cache ($PTXJIT_CACHE_DIR)."""


@cache_group.command("info")
def cache_info() -> None:
    """Show where the cache is, whether it is used and how much it holds."""
    from ptxjit.jit import cache

    i = cache.info()
    click.echo(f"directory: {i['directory']}\nstatus: {i['status']}\nentries: {i['entries']}\nbytes: {i['bytes']}")


@cache_group.command("clear")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def cache_clear(yes: bool) -> None:
    """Delete every cached translation (asks first unless --yes)."""
    from ptxjit.jit import cache

    d = cache.kernels_dir()
    if not yes:
        click.confirm(f"Delete every cached translation in {d}?", abort=True)
    click.echo(f"removed {cache.clear()} entries from {d}")


for _commands in (trace, check, driver):  # trace and profile, check, exec and driver: a module each
    _commands.add_commands(main)

if __name__ == "__main__":
    main()
