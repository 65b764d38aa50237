"""CuPy-style RawModule / RawKernel over NVRTC + ptxjit, and load_module for .cu files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ptxjit.api import Kernel, Module
from ptxjit.cuda._nvrtc import CompiledCuda, compile_cuda

_BACKENDS = ("nvrtc", "nvcc")


def _cupy_keywords(who: str, code: str | None, backend: str, translate_cucomplex: bool, jitify: bool) -> None:
    """CuPy's RawKernel/RawModule keywords ptxjit takes: `backend` 'nvrtc' or 'nvcc' (both compile with
    NVRTC here, which gives the same PTX); `translate_cucomplex` and `jitify` are refused when they would
    change the program (ptxjit has neither CuPy's complex header nor Jitify)."""
    if backend not in _BACKENDS:
        raise ValueError(f"{who}: backend={backend!r} is not one of {', '.join(map(repr, _BACKENDS))}")
    if translate_cucomplex and code is not None and "cuComplex.h" in code:
        raise NotImplementedError(f"{who}: translate_cucomplex=True is not supported (ptxjit compiles cuComplex.h "
                                  "as it is; use thrust/cuda::std complex or float2/double2)")
    if jitify:
        raise NotImplementedError(f"{who}: jitify=True is not supported (ptxjit compiles with NVRTC directly; "
                                  "pass include directories with options=('-I<dir>',))")


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
    CuPy's other keywords: ``backend`` ('nvrtc'/'nvcc'), ``enable_cooperative_groups`` (the kernels'
    launches are cooperative), ``translate_cucomplex`` and ``jitify`` (refused where they matter).
    """

    def __init__(self, code: str | None = None, *, path: str | Path | None = None, options=(),
                 name_expressions=None, arch: str = "compute_80", filename: str | None = None,
                 backend: str = "nvrtc", translate_cucomplex: bool = False, enable_cooperative_groups: bool = False,
                 jitify: bool = False) -> None:
        """Compile `code` (or the file at `path`) with NVRTC and load the PTX."""
        if (code is None) == (path is None):
            raise TypeError("RawModule() takes exactly one of code= or path=")
        _cupy_keywords("RawModule", code, backend, translate_cucomplex, jitify)
        self.backend = backend
        self.enable_cooperative_groups = bool(enable_cooperative_groups)
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
        """The PTX NVRTC produced."""
        return self.compiled.ptx

    @property
    def log(self) -> str:
        """NVRTC's compilation log (warnings)."""
        return self.compiled.log

    @property
    def lowered_names(self) -> dict[str, str]:
        """name expression -> mangled kernel name."""
        return dict(self.compiled.lowered_names)

    def get_function(self, name: str) -> RawKernel:
        """The kernel `name` (extern "C" name, plain C++ name or one of the name expressions)."""
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
    ``kernel(grid, block, args, shared_mem=0)`` where NumPy arrays are device memory.  CuPy's keywords
    ``backend``, ``translate_cucomplex``, ``enable_cooperative_groups`` and ``jitify`` as in RawModule.
    """

    def __init__(self, code: str, name: str, options=(), backend: str = "nvrtc", translate_cucomplex: bool = False,
                 *, enable_cooperative_groups: bool = False, jitify: bool = False, name_expressions=None,
                 arch: str = "compute_80") -> None:
        """Compile `code` with NVRTC and find kernel `name` in it."""
        exprs = list(name_expressions or ())
        if "<" in name and name not in exprs:
            exprs.append(name)
        mod = RawModule(code=code, options=options, name_expressions=exprs, arch=arch, backend=backend,
                        translate_cucomplex=translate_cucomplex, enable_cooperative_groups=enable_cooperative_groups,
                        jitify=jitify)
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
        self.backend = raw.backend
        self.enable_cooperative_groups = raw.enable_cooperative_groups

    @property
    def ptx(self) -> str:
        """The PTX of the kernel's module."""
        return self.raw_module.ptx

    @property
    def mangled_name(self) -> str:
        """The kernel's name in the PTX (C++ names are mangled)."""
        return self.kernel.name

    @property
    def attributes(self) -> dict[str, int]:
        """CuPy's kernel attributes; num_regs counts PTX virtual registers (not hardware registers)."""
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
                 enable_cooperative_groups: bool | None = None) -> None:
        """Launch as CuPy's RawKernel: `kernel(grid, block, args, shared_mem=0, stream=None)`;
        with a ptxjit.Stream the launch is asynchronous (ptxjit.Kernel.__call__).
        `enable_cooperative_groups=True` (CuPy's spelling; default: the RawKernel/RawModule's) is a
        cooperative launch (grid.sync())."""
        coop = self.enable_cooperative_groups if enable_cooperative_groups is None else enable_cooperative_groups
        self.kernel(grid, block, args, shared_mem=shared_mem, stream=stream, cooperative=bool(coop))

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
