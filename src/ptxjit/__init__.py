"""ptxjit: run NVIDIA PTX kernels on multi-core CPUs through LLVM.

The names below load on first use (PEP 562): `import ptxjit` stays cheap for what needs only part of the
package (`ptxjit exec`, the driver and runtime libraries, a child process of the tiers' builds).  Only
PTXJIT_BACKEND=ray or PTXJIT_CHECK make it load the API: their launchers go under every launch from here
(ptxjit/env_launchers.py), before a program installs a launch hook of its own.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ptxjit import config as _config

# public name -> the module that defines it (None: the name is the submodule itself)
_EXPORTS: dict[str, str | None] = {
    "cuda": None, "numba": None, "texture": None,  # front doors: CUDA C++ via NVRTC, Numba kernels, textures
    **dict.fromkeys(["Kernel", "KernelInfo", "Module", "ParamInfo", "Launch", "add_launch_hook", "launch_hook",
                     "launch_hooks"], "ptxjit.api"),
    "check": "ptxjit.checking",
    **dict.fromkeys(["CompiledCuda", "CudaCompileError", "RawKernel", "RawModule", "compile_cuda"], "ptxjit.cuda"),
    **dict.fromkeys(["KernelDeadlock", "KernelError", "KernelFault", "KernelTimeout", "KernelTrap", "PTXError",
                     "PtxjitWarning", "PTXSyntaxError", "PTXValidationError", "UnsupportedInstructionError"],
                    "ptxjit.errors"),
    **dict.fromkeys(["Trace", "TraceOverflow", "trace"], "ptxjit.instrument.trace"),
    "cache_stats": "ptxjit.jit.translate",
    **dict.fromkeys(["set_stack_size", "stack_size"], "ptxjit.passes.stack"),
    "encode_tensor_map": "ptxjit.lower.rules.tma",
    "ClusterLaunchError": "ptxjit.runtime.clusters",
    **dict.fromkeys(["CooperativeLaunchTooLarge", "max_active_blocks_per_multiprocessor", "multiprocessor_count"],
                    "ptxjit.runtime.cooperative"),
    **dict.fromkeys(["heap_leaks", "heap_size", "set_heap_size"], "ptxjit.runtime.heap"),
    **dict.fromkeys(["set_workers", "worker_count"], "ptxjit.runtime.launch"),
    **dict.fromkeys(["DeviceArray", "Pointer", "empty", "to_device", "zeros"], "ptxjit.runtime.memory"),
    **dict.fromkeys(["Event", "Graph", "Stream", "copy_async", "get_elapsed_time", "synchronize"], "ptxjit.streams"),
    "stats": "ptxjit.tiers",
}


def __getattr__(name: str):
    if name not in _EXPORTS:  # a submodule (ptxjit.api, ptxjit.triton, ...) as an attribute, loaded on first use
        if name.startswith("_"):
            raise AttributeError(f"module 'ptxjit' has no attribute {name!r}")
        try:
            return importlib.import_module(f"ptxjit.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ptxjit.{name}":
                raise
            raise AttributeError(f"module 'ptxjit' has no attribute {name!r}") from None
    where = _EXPORTS[name]
    module = importlib.import_module(f"ptxjit.{name}" if where is None else where)
    value = module if where is None else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # what static checkers and IDEs see
    from ptxjit import cuda, numba, texture  # noqa: F401
    from ptxjit.api import Kernel, KernelInfo, Module, ParamInfo  # noqa: F401
    from ptxjit.cuda import CompiledCuda, CudaCompileError, RawKernel, RawModule, compile_cuda  # noqa: F401
    from ptxjit.errors import KernelError, PTXError  # noqa: F401
    from ptxjit.runtime.memory import DeviceArray, Pointer, empty, to_device, zeros  # noqa: F401
    from ptxjit.streams import Event, Graph, Stream  # noqa: F401

__version__ = "0.1.0"

__all__ = [
    "CompiledCuda", "CudaCompileError", "DeviceArray", "Kernel", "KernelDeadlock", "KernelError", "KernelFault",
    "KernelInfo", "KernelTimeout", "KernelTrap", "Module", "PTXError", "PTXSyntaxError", "PTXValidationError",
    "ParamInfo", "Pointer", "check",
    "PtxjitWarning", "RawKernel", "RawModule", "UnsupportedInstructionError", "cache_stats", "compile_cuda",
    "Trace", "TraceOverflow", "cuda", "empty", "numba", "texture", "set_workers", "to_device", "trace", "worker_count",
    "zeros",
    "heap_leaks", "heap_size", "set_heap_size", "set_stack_size", "stack_size",
    "Event", "Graph", "Stream", "copy_async", "get_elapsed_time", "synchronize", "stats", "encode_tensor_map",
    "ClusterLaunchError", "CooperativeLaunchTooLarge", "max_active_blocks_per_multiprocessor", "multiprocessor_count",
    "Launch", "add_launch_hook", "launch_hook", "launch_hooks",
]

if _config.BACKEND.text().lower() == "ray" or _config.CHECK.text():  # read once, here
    from ptxjit.env_launchers import install_from_config as _install_env_launchers

    _install_env_launchers()
    del _install_env_launchers
del _config
