"""CuPy-style RawModule / RawKernel over NVRTC + ptxjit, and load_module for .cu files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ptxjit.api import Kernel, Module
from ptxjit.cuda._nvrtc import CompiledCuda, compile_cuda


def _as_tuple(options) -> tuple[str, ...]:
    if options is None:
        return ()
    if isinstance(options, str):
        return (options,)
    return tuple(str(o) for o in options)


class RawModule:
    """CUDA C++ source compiled by NVRTC and loaded into ptxjit (like ``cupy.RawModule``).

    ``RawModule(code=src, options=(), name_expressions=None)``; ``get_function(name)`` takes a kernel's
    ``extern "C"`` name, the plain name of a C++ kernel, or one of `name_expressions` (``"axpy<float>"``).
    ``RawModule(path="k.cu")`` reads the source from a file (``.ptx`` files are loaded as they are).
    """

    def __init__(self, code: str | None = None, *, path: str | Path | None = None, options=(),
                 name_expressions=None, arch: str = "compute_80", filename: str | None = None) -> None:
        if (code is None) == (path is None):
            raise TypeError("RawModule() takes exactly one of code= or path=")
        self.options = _as_tuple(options)
        self.name_expressions = tuple(name_expressions or ())
        opts = list(self.options)
        if path is not None:
            p = Path(path)
            text = p.read_text()
            filename = filename or str(p)
            if p.suffix == ".ptx":
                self.code = None
                self.compiled = CompiledCuda(text)
                self.module = Module(text, filename)
                return
            code = text
            if p.parent != Path("."):
                opts.append(f"-I{p.parent}")
        self.code = code
        self.compiled = compile_cuda(code, list(self.name_expressions), opts, arch,
                                     filename=filename or "kernel.cu")
        self.module = Module(self.compiled.ptx, filename or "kernel.cu")

    @property
    def ptx(self) -> str:
        return self.compiled.ptx

    @property
    def log(self) -> str:
        return self.compiled.log

    @property
    def lowered_names(self) -> dict[str, str]:
        return dict(self.compiled.lowered_names)

    def get_function(self, name: str) -> RawKernel:
        lowered = self.compiled.lowered_names.get(name) or self.compiled.lowered_names.get(name.replace(" ", ""))
        try:
            k = self.module.get_function(lowered or name)
        except KeyError:
            if "<" in name and lowered is None:
                raise KeyError(f"no kernel named '{name}': template instances must be listed in "
                               f"name_expressions (have {list(self.name_expressions)})") from None
            raise
        return RawKernel._wrap(self, k, name)

    def get_global(self, name: str):
        """A NumPy uint8 view of a ``__device__``/``__constant__`` variable's bytes (name or name expression)."""
        return self.module.get_global(self.compiled.lowered_names.get(name, name), dtype=np.uint8)


class RawKernel:
    """One CUDA C++ kernel compiled by NVRTC (like ``cupy.RawKernel``).

    ``RawKernel(code, name, options=(), name_expressions=None)``; launch with
    ``kernel(grid, block, args, shared_mem=0)`` where NumPy arrays are device memory.
    """

    def __init__(self, code: str, name: str, options=(), name_expressions=None, arch: str = "compute_80") -> None:
        exprs = list(name_expressions or ())
        if "<" in name and name not in exprs:
            exprs.append(name)
        mod = RawModule(code=code, options=options, name_expressions=exprs, arch=arch)
        k = mod.get_function(name)
        self._init(mod, k.kernel, name)

    @classmethod
    def _wrap(cls, raw: RawModule, kernel: Kernel, name: str) -> RawKernel:
        self = cls.__new__(cls)
        self._init(raw, kernel, name)
        return self

    def _init(self, raw: RawModule, kernel: Kernel, name: str) -> None:
        self.raw_module = raw
        self.kernel = kernel
        self.name = name
        self.code = raw.code
        self.options = raw.options

    @property
    def ptx(self) -> str:
        return self.raw_module.ptx

    @property
    def mangled_name(self) -> str:
        return self.kernel.name

    @property
    def attributes(self) -> dict[str, int]:
        info = self.kernel.info
        maxnt = info.perf.get("maxntid") or info.perf.get("reqntid")
        limit = 1024
        if maxnt:
            limit = 1
            for d in maxnt:
                limit *= d
        return {
            "max_threads_per_block": limit,
            "shared_size_bytes": info.shared_size,
            "local_size_bytes": info.local_size,
            "const_size_bytes": 0,
            "num_regs": sum(info.registers.values()),
            "num_params": len(info.params),
            "num_instructions": info.num_instructions,
        }

    def __call__(self, grid, block, args=(), shared_mem: int = 0, stream=None,
                 enable_cooperative_groups: bool = False) -> None:
        """Launch as CuPy's RawKernel: `kernel(grid, block, args, shared_mem=0, stream=None)`;
        with a ptxjit.Stream the launch is asynchronous (ptxjit.Kernel.__call__).
        `enable_cooperative_groups=True` (CuPy's spelling) is a cooperative launch (grid.sync())."""
        self.kernel(grid, block, args, shared_mem=shared_mem, stream=stream, cooperative=enable_cooperative_groups)

    def __repr__(self) -> str:
        return f"<RawKernel {self.name!r} ({self.kernel.name})>"


def _looks_like_path(x) -> bool:
    if isinstance(x, Path):
        return True
    if not isinstance(x, str) or "\n" in x or len(x) > 4096:
        return False
    return x.endswith((".cu", ".cuh", ".ptx")) or Path(x).is_file()


def load_module(path_or_source: str | Path, options=(), *, name_expressions=None,
                arch: str = "compute_80") -> Module:
    """A ptxjit.Module from a ``.cu`` file (or CUDA C++ source text, or a ``.ptx`` file)."""
    if _looks_like_path(path_or_source):
        p = Path(path_or_source)
        if p.suffix == ".ptx":
            return Module.from_file(p)
        return RawModule(path=p, options=options, name_expressions=name_expressions, arch=arch).module
    return RawModule(code=str(path_or_source), options=options, name_expressions=name_expressions,
                     arch=arch).module
