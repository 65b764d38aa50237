"""`ptxjit exec` and `ptxjit driver`: run unmodified CUDA programs on ptxjit's libcuda.so.1 and
libcudart.so.13."""

from __future__ import annotations

import os
import sys

import click

from ptxjit import config


def _libdir() -> str:
    """The folder of ptxjit's libcuda.so.1 and libcudart.so.13, both built first when out of date."""
    from ptxjit.cudart.build import ensure_built as ensure_runtime
    from ptxjit.driver.build import ensure_built

    try:
        folder = ensure_built().parent
    except Exception as exc:  # noqa: BLE001 - a build failure is the user's to see, with its reason
        raise click.ClickException(f"could not build ptxjit's libcuda.so.1: {exc}") from None
    try:
        ensure_runtime()
    except Exception as exc:  # noqa: BLE001 - driver-API programs still run; runtime-API ones are told why not
        click.echo(f"ptxjit: could not build libcudart.so.13 (CUDA runtime API programs will not find it): {exc}",
                   err=True)
    return str(folder)


def nvrtc_dirs() -> list[str]:
    """The folders of the NVRTC/NVVM wheels (nvidia-cuda-nvrtc), for clients that look for libnvrtc.so on the
    library path (tinygrad's DEV=CUDA); absent wheels give nothing."""
    import glob
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    found = []
    for root in spec.submodule_search_locations:
        found += sorted({os.path.dirname(p) for p in glob.glob(os.path.join(root, "*", "lib", "libnvrtc.so*"))})
    return found


@click.command("exec", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                                        "help_option_names": ["-h", "--help"]})
@click.option("--device", default=None, help="The virtual GPU: sm_90 (H100, default) or sm_80 (A100).")
@click.option("--log", "log", default=None, type=click.Path(dir_okay=False),
              help="Write the driver's reports (errors, faults) to this file instead of stderr.")
@click.option("--stats", "stats", default=None, is_flag=False, flag_value="1",
              help="At exit, report where the time went (translations, kernel runs, copies): to the log, "
                   "or appended as JSON to --stats=FILE.json.")
@click.option("--check", "check", default=None, metavar="TOOLS",
              help="Run every launch under these checking tools, comma-separated: memcheck, racecheck, "
                   "initcheck, synccheck (compute-sanitizer's); reports on stderr, ERROR SUMMARY at exit.")
@click.option("--error-exitcode", "error_exitcode", type=click.IntRange(1, 255), default=None, metavar="N",
              help="With --check: exit with status N when the tools reported errors.")
@click.option("--print-limit", "print_limit", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --check: print at most N reports (the summary counts them all).")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def exec_command(device: str | None, log: str | None, stats: str | None, check: str | None,
                 error_exitcode: int | None, print_limit: int | None, command: tuple[str, ...]) -> None:
    """Run COMMAND with ptxjit's libcuda.so.1 first on the library path: a CUDA program, a cuda-python
    or numba-cuda script runs unchanged, its kernels on the CPU cores.

        ptxjit exec -- python my_numba_app.py
        ptxjit exec -- ./vectorAdd
        ptxjit exec --check memcheck,racecheck -- ./vectorAdd
    """
    tools = [t for t in (check or "").replace(" ", "").split(",") if t]
    if check is not None and (not tools or set(tools) - set(config.CHECK_TOOLS)):
        raise click.BadParameter(f"expected tools from {', '.join(config.CHECK_TOOLS)}, comma-separated; got "
                                 f"{check!r}", param_hint="--check")
    if check is None and (error_exitcode is not None or print_limit is not None):
        raise click.UsageError("--error-exitcode and --print-limit go with --check TOOLS")
    env = dict(os.environ)
    lib = _libdir()
    path = [lib, *([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []), *nvrtc_dirs()]
    env["LD_LIBRARY_PATH"] = os.pathsep.join(path)
    # clients that look for the driver by path (numba-cuda, cuda-pathfinder) find it here
    env["NUMBA_CUDA_DRIVER"] = os.path.join(lib, "libcuda.so.1")
    # Python extension modules that link the CUDA runtime statically (CuPy's) are pointed at
    # libcudart.so.13 when imported (cudart/static_runtime.py, through this folder's sitecustomize)
    site = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cudart", "site")  # ptxjit/
    env["PYTHONPATH"] = os.pathsep.join([site, *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    env.setdefault("CUDA_VISIBLE_DEVICES", "0")
    if device:
        env[config.DEVICE.name] = device
    if log:
        env[config.DRIVER_LOG.name] = os.path.abspath(log)
    if stats:
        env[config.STATS.name] = stats if stats == "1" else os.path.abspath(stats)
    if check:
        env[config.CHECK.name] = check
    if error_exitcode is not None:
        env[config.CHECK_ERROR_EXITCODE.name] = str(error_exitcode)
    if print_limit is not None:
        env[config.CHECK_PRINT_LIMIT.name] = str(print_limit)
    try:
        os.execvpe(command[0], list(command), env)
    except OSError as exc:
        raise click.ClickException(f"cannot run {command[0]!r}: {exc.strerror}") from None


def add_commands(main: click.Group) -> None:
    main.add_command(exec_command)

    @main.command("driver")
    @click.option("--libdir", is_flag=True, help="Print the folder holding libcuda.so.1 (building it if needed).")
    @click.option("--build", "rebuild", is_flag=True, help="Rebuild libcuda.so.1 now.")
    def driver_command(libdir: bool, rebuild: bool) -> None:
        """ptxjit's CUDA driver (libcuda.so.1): where it is, and what it provides."""
        from ptxjit.driver.build import build, implemented, library_path

        if rebuild:
            click.echo(build())
            return
        if libdir:
            click.echo(_libdir())
            return
        path = _libdir()
        click.echo(f"libcuda.so.1: {library_path()}\nfolder: {path}\nimplemented entry points: {len(implemented())}"
                   f"\nuse: ptxjit exec -- COMMAND ARGS   (or LD_LIBRARY_PATH={path})")
        sys.stdout.flush()
