"""What the `ptxjit` commands share: the console, the launch options (PTX file, kernel, --grid, --block, --arg,
--shared-mem, --workers), argument parsing and the one-line error exit."""

from __future__ import annotations

import os
from pathlib import Path

import click
import numpy as np
from rich.console import Console

console = Console()

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
        shape = tuple(int(x) for x in s.lower().split("x"))
    except ValueError as e:
        raise click.BadParameter(f"bad shape {s!r} (use e.g. 1024 or 32x32)") from e
    if any(d < 0 for d in shape):
        raise click.BadParameter(f"bad shape {s!r}: dimensions must not be negative")
    return shape


def _memory_limit() -> int:
    try:  # an --arg array larger than physical memory would only get the process killed
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 40


def parse_arg(spec: str):
    """Turn one --arg spec into a NumPy array or a Python scalar (click.BadParameter if it is bad)."""
    try:
        return _parse_arg(spec)
    except click.BadParameter as e:
        e.param_hint = e.param_hint or "'--arg'"
        raise
    except (ValueError, TypeError, OverflowError, MemoryError) as e:
        raise click.BadParameter(f"{spec!r}: {e}", param_hint="'--arg'") from None


def _parse_arg(spec: str):
    parts = spec.split(":")
    kind = parts[0]
    if kind in ("zeros", "ones", "rand", "arange", "full"):
        if len(parts) < 3:
            raise click.BadParameter(f"{spec!r}: expected {kind}:DTYPE:SHAPE")
        try:
            dtype = np.dtype(parts[1])
        except TypeError as e:
            raise click.BadParameter(f"{spec!r}: unknown dtype {parts[1]!r}") from e
        if dtype.hasobject:
            raise click.BadParameter(f"{spec!r}: arrays of Python objects cannot be passed to a kernel")
        shape = (int(parts[2]),) if kind == "arange" else _shape(parts[2])
        nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if nbytes > _memory_limit():
            raise click.BadParameter(f"{spec!r}: {nbytes} bytes is more than this machine's memory")
        if kind == "arange":
            return np.arange(shape[0], dtype=dtype)
        if kind == "zeros":
            return np.zeros(shape, dtype)
        if kind == "ones":
            return np.ones(shape, dtype)
        if kind == "full":
            if len(parts) < 4:
                raise click.BadParameter(f"{spec!r}: expected full:DTYPE:SHAPE:VALUE")
            return np.full(shape, float(parts[3]) if dtype.kind in "fc" else int(parts[3], 0), dtype)
        rng = np.random.default_rng(int(parts[3]) if len(parts) > 3 else 0)
        if dtype.kind == "f":
            return rng.random(shape).astype(dtype)
        return rng.integers(0, 100, size=shape).astype(dtype)
    if spec.endswith(".npy"):
        try:
            a = np.load(spec, allow_pickle=False)
        except OSError as e:
            raise click.BadParameter(f"cannot read {spec}: {e.strerror or e}", param_hint="'--arg'") from None
        except ValueError as e:  # numpy calls any non-.npy file "pickled data": say what it is
            with open(spec, "rb") as f:
                npy = f.read(6) == b"\x93NUMPY"
            if not npy:
                why = f"{spec} is not a .npy file"
            elif "pickle" in str(e):
                why = f"{spec} holds Python objects, which cannot be passed to a kernel"
            else:
                why = f"{spec} is a damaged .npy file ({e})"
            raise click.BadParameter(why, param_hint="'--arg'") from None
        if not isinstance(a, np.ndarray):
            raise click.BadParameter(f"{spec} does not hold a single array", param_hint="'--arg'")
        return a
    try:
        return int(spec, 0)
    except ValueError:
        pass
    try:
        return float(spec)
    except ValueError as e:
        raise click.BadParameter(f"{spec!r} is not an array spec, a .npy file or a number") from e


def parse_dims(s: str, what: str = "dimensions") -> tuple[int, ...]:
    try:
        d = tuple(int(x) for x in s.replace("x", ",").split(",") if x.strip())
    except ValueError:
        d = ()
    if not 1 <= len(d) <= 3:
        raise click.BadParameter(f"bad {what} {s!r} (use e.g. 256 or 16,16 or 16x16)", param_hint=f"'--{what}'")
    return d


def error_exit(msg: str, code: int) -> click.exceptions.Exit:
    """Print one error line; the caller raises the returned Exit (exit code `code`)."""
    msg = str(msg).strip() or "unknown error"
    click.echo(f"Error: {msg}", err=True)
    return click.exceptions.Exit(code)


def ptx_text(path: str) -> str:
    """PTX of a .ptx file, or of a CUDA C++ .cu file compiled with NVRTC."""
    if path.endswith(".cu"):
        from ptxjit.cuda import load_module

        return load_module(path).source_text
    # bytes, decoded leniently: a non-UTF-8 file becomes a syntax error with a position, not a crash
    return Path(path).read_bytes().decode("utf-8", errors="replace")


_ARG_HELP = "A kernel argument, as for `ptxjit run` (see its --help); repeat per parameter."


def launch_option_list(arg_help: str = _ARG_HELP) -> list:
    """The PTX file, kernel and launch options every kernel-running command takes (run, trace, profile,
    check), in one place; `arg_help` is --arg's help line."""
    return [
        click.argument("ptx_file", type=click.Path(exists=True, dir_okay=False)),  # .ptx or .cu
        click.argument("kernel"),
        click.option("--grid", default="1", show_default=True, help="Grid dimensions, e.g. 64 or 8,8."),
        click.option("--block", default="256", show_default=True, help="Block dimensions, e.g. 256 or 16,16."),
        click.option("--arg", "args", multiple=True, help=arg_help),
        click.option("--shared-mem", default=0, show_default=True, type=click.IntRange(min=0),
                     help="Dynamic shared memory bytes."),
        click.option("--workers", type=click.IntRange(min=1), default=None,
                     help="Worker threads (default: all cores)."),
    ]


def launch_options(f, arg_help: str = _ARG_HELP):
    """Decorate a command with launch_option_list()."""
    for deco in reversed(launch_option_list(arg_help)):
        f = deco(f)
    return f
