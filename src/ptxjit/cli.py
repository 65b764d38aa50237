"""Command line: `ptxjit info` and `ptxjit run`."""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import click
import numpy as np
from rich.console import Console
from rich.table import Table

from ptxjit.errors import KernelError, PTXError

console = Console()
err_console = Console(stderr=True)

ARG_HELP = """\b
Argument forms (one --arg per kernel parameter, in order):
  zeros:DTYPE:SHAPE        e.g. zeros:float32:1024 or zeros:int32:64x64
  ones:DTYPE:SHAPE
  rand:DTYPE:SHAPE[:SEED]  uniform [0,1) floats / random ints in [0,100)
  arange:DTYPE:N
  full:DTYPE:SHAPE:VALUE
  PATH.npy                 an array loaded from a .npy file
  NUMBER                   a scalar (converted to the parameter's PTX type)
"""


def _shape(s: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in s.lower().split("x"))
    except ValueError as e:
        raise click.BadParameter(f"bad shape {s!r} (use e.g. 1024 or 32x32)") from e


def parse_arg(spec: str):
    """Turn one --arg spec into a NumPy array or a Python scalar."""
    parts = spec.split(":")
    kind = parts[0]
    if kind in ("zeros", "ones", "rand", "arange", "full"):
        if len(parts) < 3:
            raise click.BadParameter(f"{spec!r}: expected {kind}:DTYPE:SHAPE")
        try:
            dtype = np.dtype(parts[1])
        except TypeError as e:
            raise click.BadParameter(f"{spec!r}: unknown dtype {parts[1]!r}") from e
        if kind == "arange":
            return np.arange(int(parts[2]), dtype=dtype)
        shape = _shape(parts[2])
        if kind == "zeros":
            return np.zeros(shape, dtype)
        if kind == "ones":
            return np.ones(shape, dtype)
        if kind == "full":
            if len(parts) < 4:
                raise click.BadParameter(f"{spec!r}: expected full:DTYPE:SHAPE:VALUE")
            return np.full(shape, float(parts[3]) if dtype.kind == "f" else int(parts[3]), dtype)
        rng = np.random.default_rng(int(parts[3]) if len(parts) > 3 else 0)
        if dtype.kind == "f":
            return rng.random(shape).astype(dtype)
        return rng.integers(0, 100, size=shape).astype(dtype)
    if spec.endswith(".npy"):
        try:
            return np.load(spec)
        except OSError as e:
            raise click.BadParameter(f"cannot read {spec}: {e}") from e
    try:
        return int(spec, 0)
    except ValueError:
        pass
    try:
        return float(spec)
    except ValueError as e:
        raise click.BadParameter(f"{spec!r} is not an array spec, a .npy file or a number") from e


def _dims(s: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in s.replace("x", ",").split(",") if x)
    except ValueError as e:
        raise click.BadParameter(f"bad dimensions {s!r} (use e.g. 256 or 16,16 or 16x16)") from e


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
    from ptxjit.passes.validate import unsupported_instructions

    try:
        mod = _load_ir(ptx_file)
    except PTXError as e:
        err_console.print(f"[red]error:[/red] {e}")
        sys.exit(1)
    console.print(f"[bold]{ptx_file}[/bold]: PTX {mod.version}, target {', '.join(mod.target)}, "
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
        console.print("registers: " + ", ".join(f".{k}: {v}" for k, v in sorted(regs.items())))
        console.print(f"static shared: {sh.static_size} B, local: {local_size(f)} B per thread")
        if f.perf:
            console.print("directives: " + ", ".join(f".{k} {','.join(map(str, v))}" for k, v in f.perf.items()))
        mix = Counter(i.opcode for i in f.instructions)
        console.print(f"instructions: {sum(mix.values())} — " +
                      ", ".join(f"{k} {v}" for k, v in mix.most_common()))
        if summary:
            _print_summary(mod, f)
    funcs = [f for f in mod.functions.values() if not f.is_entry]
    if funcs:
        console.print("\ndevice functions: " + ", ".join(
            f.name + ("" if f.body is not None else " (extern)") for f in funcs))
    bad = unsupported_instructions(mod)
    if bad:
        console.print(f"\n[red]unsupported ({len(bad)}):[/red]")
        for e in bad:
            console.print(f"  {e}")
    else:
        console.print("\n[green]all instructions supported[/green]")
    if rules:
        from ptxjit.lower.rules import RULES

        t = Table("opcode", "family", "rule")
        for op, r in sorted(RULES.items(), key=lambda kv: (kv[1].family, kv[0])):
            t.add_row(op, r.family, r.doc)
        console.print(t)


def _ptx_text(path: str) -> str:
    """PTX of a .ptx file, or of a CUDA C++ .cu file compiled with NVRTC."""
    if path.endswith(".cu"):
        from ptxjit.cuda import load_module

        return load_module(path).source_text
    return Path(path).read_text()


def _load_ir(path: str):
    from ptxjit.frontend.parser import parse

    return parse(_ptx_text(path), path)


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


@main.command()
@click.argument("ptx_file", type=click.Path(exists=True, dir_okay=False))
@click.argument("kernel")
@click.option("--grid", default="1", show_default=True, help="Grid dimensions, e.g. 64 or 8,8.")
@click.option("--block", default="256", show_default=True, help="Block dimensions, e.g. 256 or 16,16.")
@click.option("--arg", "args", multiple=True, help="A kernel argument (see below); repeat per parameter.")
@click.option("--out", "outs", multiple=True, metavar="INDEX:PATH.npy",
              help="After the run, save argument INDEX (an array) to PATH.npy. Repeatable.")
@click.option("--shared-mem", default=0, show_default=True, help="Dynamic shared memory bytes.")
@click.option("--workers", type=int, default=None, help="Worker threads (default: all cores).")
@click.option("--repeat", default=1, show_default=True, help="Launch the kernel this many times (timing).")
@click.option("--show", is_flag=True, help="Print a summary of every array argument after the run.")
def run(ptx_file: str, kernel: str, grid: str, block: str, args: tuple[str, ...], outs: tuple[str, ...],
        shared_mem: int, workers: int | None, repeat: int, show: bool) -> None:
    """Run KERNEL from PTX_FILE (a .ptx file, or CUDA C++ .cu compiled with NVRTC) on the CPU.

    \b
    Example:
      ptxjit run vadd.ptx vadd --grid 4 --block 256 --arg rand:float32:1000 \\
          --arg rand:float32:1000 --arg zeros:float32:1000 --arg 1000 --out 2:c.npy
    """
    import ptxjit

    values = [parse_arg(a) for a in args]
    out_map: list[tuple[int, str]] = []
    for o in outs:
        idx, _, path = o.partition(":")
        if not idx.isdigit() or not path:
            raise click.BadParameter(f"--out {o!r}: expected INDEX:PATH.npy")
        if int(idx) >= len(values) or not isinstance(values[int(idx)], np.ndarray):
            raise click.BadParameter(f"--out {o!r}: argument {idx} is not an array")
        out_map.append((int(idx), path))
    if workers:
        ptxjit.set_workers(workers)
    try:
        if ptx_file.endswith(".cu"):
            from ptxjit.cuda import load_module

            mod = load_module(ptx_file)
        else:
            mod = ptxjit.Module.from_file(ptx_file)
        k = mod.get_function(kernel)
        t0 = time.perf_counter()
        k(_dims(grid), _dims(block), values, shared_mem=shared_mem)
        first = time.perf_counter() - t0
        times = []
        for _ in range(repeat - 1):
            t1 = time.perf_counter()
            k(_dims(grid), _dims(block), values, shared_mem=shared_mem)
            times.append(time.perf_counter() - t1)
    except (PTXError, KernelError, KeyError, TypeError, ValueError, ImportError) as e:
        msg = e.args[0] if isinstance(e, KeyError) else str(e)
        err_console.print(f"[red]error:[/red] {msg}")
        sys.exit(1)
    console.print(f"ran {k.name} grid={grid} block={block}: first launch {first * 1e3:.2f} ms"
                  + (f", then median {np.median(times) * 1e3:.3f} ms over {len(times)}" if times else ""))
    for idx, path in out_map:
        np.save(path, values[idx])
        console.print(f"wrote argument {idx} to {path}")
    if show:
        for i, v in enumerate(values):
            if isinstance(v, np.ndarray):
                console.print(f"arg {i}: {v.dtype}{list(v.shape)} first values {v.ravel()[:8]}")


@main.group("cache")
def cache_group() -> None:
    """Inspect or clear the on-disk translation cache ($PTXJIT_CACHE_DIR)."""


@cache_group.command("info")
def cache_info() -> None:
    """Show where the cache is and how much it holds."""
    from ptxjit.jit import cache

    i = cache.info()
    console.print(f"directory: {i['directory']}\nentries: {i['entries']}\nbytes: {i['bytes']}")


@cache_group.command("clear")
def cache_clear() -> None:
    """Delete every cached translation."""
    from ptxjit.jit import cache

    console.print(f"removed {cache.clear()} entries from {cache.kernels_dir()}")


if __name__ == "__main__":
    main()
