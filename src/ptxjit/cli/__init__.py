"""The `ptxjit` command line.

- `entry`: the installed `ptxjit` script; `ptxjit exec` starts the program without loading the rest;
- `app`: the command group, `info`, `run`, `cache`, and the error handling every command shares;
- `common`: the launch options, argument parsing and one-line error exit of the kernel-running commands;
- `trace` (trace, profile), `check` (check), `driver` (exec, driver): a module per family of commands.

The names of `app` (`main`, `parse_arg`, ...) are reachable from here, loaded on first use, so that importing
`ptxjit.cli.entry` stays light.
"""

from __future__ import annotations

import importlib

_SUBMODULES = frozenset({"app", "check", "common", "driver", "entry", "trace"})


def __getattr__(name: str):
    if name.startswith("__") or name in _SUBMODULES:  # a submodule not imported yet: the import system's
        raise AttributeError(name)
    return getattr(importlib.import_module("ptxjit.cli.app"), name)
