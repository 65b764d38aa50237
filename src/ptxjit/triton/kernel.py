"""``ptxjit.triton.jit(kernel)[grid](*args, **meta)``: Triton compiles, ptxjit runs.

The specialization is Triton's own: its binder (built from the kernel's signature, honouring
``do_not_specialize`` and annotations) turns the arguments into (type, attribute) pairs exactly as
``JITFunction.run`` does, and ``JITFunction._pack_args`` turns those into the signature, constexprs and
``tt.divisibility`` attributes it compiles with -- so the PTX is the PTX a GPU launch would have run.
"""

from __future__ import annotations

import inspect
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction, create_function_from_signature

from ptxjit.api import Kernel, Module
from ptxjit.runtime.memory import Pointer
from ptxjit.triton.args import launch_value, reinterpret, to_triton

__all__ = ["TritonKernel", "jit", "reinterpret", "triton_stats"]

DEFAULT_ARCH = 80
_ARCHS = (80, 86, 89, 90)  # what ptxjit's sm_80/sm_90 instruction coverage runs (90 = sm_90a: wgmma)
_HIDDEN = ("global_scratch", "profile_scratch")  # the two pointers Triton appends to every kernel

_stats = {"compiles": 0, "launches": 0}
_stats_lock = threading.Lock()


def triton_stats() -> dict[str, int]:
    """Counters: Triton compiles (one per kernel, target and specialization) and launches."""
    with _stats_lock:
        return dict(_stats)


def _bump(key: str) -> None:
    with _stats_lock:
        _stats[key] += 1


def _arch(target: str | int | None, arch: int | None) -> int:
    """The compute capability from `target` ("sm_80", "sm_90a", 90) or `arch` (90)."""
    if target is not None and arch is not None:
        raise TypeError("give either target= or arch=, not both")
    v: Any = arch if arch is not None else target
    given = v
    if v is None:
        return DEFAULT_ARCH
    if isinstance(v, str):
        s = v.strip().lower().removeprefix("sm_").removeprefix("sm").removeprefix("compute_").rstrip("a")
        if not s.isdigit():
            raise ValueError(f"target {v!r}: expected 'sm_80', 'sm_90' (or arch=80/90)")
        v = int(s)
    if not isinstance(v, int) or v not in _ARCHS:
        raise ValueError(f"target {given!r}: ptxjit.triton compiles for {', '.join(f'sm_{a}' for a in _ARCHS)}")
    return v


@dataclass
class Compiled:
    """One specialization: Triton's compiled kernel (metadata, PTX) and ptxjit's loaded module."""

    compiled: Any  # triton.compiler.CompiledKernel
    module: Module
    kernel: Kernel
    params: list[tuple[str, str]]  # the non-constexpr parameters in .entry order: (name, Triton type)
    block: tuple[int, int, int]
    shared: int
    num_ctas: int
    scratch: tuple[tuple[int, int], tuple[int, int]]  # (bytes per program, alignment) of the hidden pointers

    @property
    def ptx(self) -> str:
        return self.compiled.asm["ptx"]


class TritonKernel:
    """A ``@triton.jit`` function that runs on ptxjit: ``k[grid](*args, **kwargs)``."""

    def __init__(self, fn: JITFunction, target: str | int | None = None, arch: int | None = None,
                 fp_fusion: bool | None = None) -> None:
        if not isinstance(fn, JITFunction):
            raise TypeError(f"ptxjit.triton.jit takes a @triton.jit function (or a plain Python function), "
                            f"got {type(fn).__name__}")
        self.fn = fn
        self.name = fn.__name__
        self.arch = _arch(target, arch)
        self.target = GPUTarget("cuda", self.arch, 32)
        # Triton's default (TRITON_DEFAULT_FP_FUSION, on unless set to 0): mul+add fused into fma by
        # ptxas, which ptxjit matches by contracting the same pairs (Module(fmad=...))
        self.fp_fusion = fp_fusion
        from triton.compiler.compiler import make_backend

        self._backend = make_backend(self.target)
        self._binder = create_function_from_signature(fn.signature, fn.params, self._backend)
        self._cache: dict[str, Compiled] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<ptxjit.triton kernel {self.name} sm_{self.arch}, {len(self._cache)} specialization(s)>"

    def __getitem__(self, grid):
        """``k[grid]`` -> a launcher: ``k[grid](*args, **kwargs)``, as Triton's launch syntax."""
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    # ------------------------------------------------------------ compilation
    def _bind(self, args: tuple, kwargs: dict) -> tuple[dict, list, dict, dict]:
        """(bound arguments as Triton sees them, the specialization, the options, user values by name)."""
        sig = self.fn.signature
        names = set(sig.parameters)
        user_args = {k: v for k, v in kwargs.items() if k in names}
        try:
            bound = sig.bind_partial(*args, **user_args)
        except TypeError as e:
            raise TypeError(f"Triton kernel '{self.name}': {e}") from None
        bound.apply_defaults()
        missing = [n for n in sig.parameters if n not in bound.arguments]
        if missing:
            raise TypeError(f"Triton kernel '{self.name}': missing argument(s) {', '.join(repr(m) for m in missing)} "
                            f"(parameters: {', '.join(sig.parameters)})")
        values = dict(bound.arguments)
        conv = {n: to_triton(self.name, n, v) for n, v in values.items()}
        opts = {k: v for k, v in kwargs.items() if k not in names}
        if self.fp_fusion is not None:
            opts.setdefault("enable_fp_fusion", self.fp_fusion)
        elif os.environ.get("TRITON_DEFAULT_FP_FUSION") is None:
            opts.setdefault("enable_fp_fusion", True)  # Triton's default, stated (silences its warning)
        opts.setdefault("debug", self.fn.debug or False)
        bound_args, specialization, options = self._binder(**conv, **opts)
        return bound_args, specialization, options, values

    def specialize(self, *args, **kwargs) -> Compiled:
        """Compile (or find in the cache) the kernel for these arguments, without launching it."""
        return self._compiled(*self._bind(args, kwargs)[:3], kwargs)

    def _compiled(self, bound_args: dict, specialization: list, options: dict, kwargs: dict) -> Compiled:
        key = str(specialization) + str(sorted(options.items(), key=lambda kv: kv[0]))
        c = self._cache.get(key)
        if c is not None:
            return c
        with self._lock:
            c = self._cache.get(key)
            if c is None:
                c = self._cache[key] = self._compile(bound_args, specialization, options, kwargs)
        return c

    def _compile(self, bound_args: dict, specialization: list, options: dict, kwargs: dict) -> Compiled:
        names = set(self.fn.signature.parameters)
        try:
            opts, signature, constexprs, attrs = self.fn._pack_args(
                self._backend, {k: v for k, v in options.items() if k not in names}, bound_args, specialization,
                options)
        except KeyError as e:  # Triton's words for an unknown keyword
            raise TypeError(f"Triton kernel '{self.name}': {e.args[0] if e.args else e} "
                            f"(parameters: {', '.join(self.fn.signature.parameters)})") from None
        for n, t in signature.items():
            if isinstance(t, str) and t.startswith("tensordesc"):
                raise NotImplementedError(f"Triton kernel '{self.name}' argument '{n}': tensor descriptors "
                                          f"(TMA) are not supported by ptxjit.triton")
        src = ASTSource(self.fn, signature, constexprs, attrs)
        compiled = triton.compile(src, target=self.target, options=opts.__dict__)
        _bump("compiles")
        md = compiled.metadata
        ptx = compiled.asm["ptx"]
        module = Module(ptx, f"<triton {self.name} sm_{self.arch}>", fmad=bool(opts.enable_fp_fusion))
        kernel = module.get_function(md.name)
        params = [(n, t) for n, t in signature.items() if t != "constexpr"]
        nparams = len(kernel.fn.params)
        if nparams != len(params) + len(_HIDDEN):
            raise RuntimeError(f"Triton kernel '{self.name}': the PTX entry takes {nparams} parameters, "
                               f"expected {len(params)} plus Triton's {len(_HIDDEN)} hidden pointers")
        return Compiled(compiled, module, kernel, params, (32 * md.num_warps, 1, 1), md.shared,
                        md.num_ctas, ((md.global_scratch_size, md.global_scratch_align),
                                      (md.profile_scratch_size, md.profile_scratch_align)))

    # ------------------------------------------------------------ launch
    def run(self, *args, grid, **kwargs) -> Compiled:
        """Launch on `grid` (a tuple of 1-3 ints, or a callable of the meta-parameters giving one)."""
        bound_args, specialization, options, values = self._bind(args, kwargs)
        c = self._compiled(bound_args, specialization, options, kwargs)
        if callable(grid):
            grid = grid({**values, **{k: v for k, v in kwargs.items() if k not in values}})
        g = _grid(self.name, grid)
        if g[0] * g[1] * g[2] == 0:  # as Triton's launcher: an empty grid launches nothing
            return c
        if c.num_ctas != 1:
            raise NotImplementedError(f"Triton kernel '{self.name}': num_ctas={c.num_ctas} (clusters) is not "
                                      f"supported by ptxjit.triton")
        launch_args = [launch_value(self.name, n, t, bound_args[n]) for n, t in c.params]
        nprog = g[0] * g[1] * g[2] * c.num_ctas
        launch_args += [_scratch(size, align, nprog) for size, align in c.scratch]
        c.kernel(g, c.block, launch_args, shared_mem=c.shared)
        _bump("launches")
        return c

    def warmup(self, *args, **kwargs) -> Compiled:
        """Compile for these arguments without running (Triton's ``warmup``; `grid` is ignored)."""
        kwargs.pop("grid", None)
        return self.specialize(*args, **kwargs)


def _grid(name: str, grid) -> tuple[int, int, int]:
    if isinstance(grid, int | np.integer):
        grid = (grid,)
    if not isinstance(grid, tuple | list) or not 1 <= len(grid) <= 3:
        raise TypeError(f"Triton kernel '{name}': the grid must be a tuple of 1 to 3 ints (or a callable "
                        f"of the meta-parameters returning one), got {grid!r}")
    out = []
    for x in grid:
        if isinstance(x, bool) or not isinstance(x, int | np.integer) or x < 0:
            raise TypeError(f"Triton kernel '{name}': grid dimensions must be non-negative ints, got {grid!r}")
        out.append(int(x))
    return (*out, *(1,) * (3 - len(out)))  # type: ignore[return-value]


def _scratch(size: int, align: int, nprog: int):
    """A hidden scratch pointer: NULL when the kernel needs none (as Triton passes), else zeroed bytes
    for every program, aligned as the metadata asks."""
    if size <= 0:
        return Pointer(0)
    align = max(int(align or 1), 16)
    raw = np.zeros(size * nprog + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + size * nprog]


def jit(fn=None, *, target: str | int | None = None, arch: int | None = None, fp_fusion: bool | None = None):
    """Wrap a ``@triton.jit`` kernel (or a plain function: it is ``triton.jit``-ed) to run on ptxjit.

    ``ptxjit.triton.jit(k)``, ``ptxjit.triton.jit(k, target="sm_90")``, or as a decorator
    ``@ptxjit.triton.jit(arch=90)`` above the Python function.  `fp_fusion` overrides Triton's
    ``enable_fp_fusion`` default (mul+add -> fma)."""
    def wrap(f):
        if not isinstance(f, JITFunction):
            if not inspect.isfunction(f):
                raise TypeError(f"ptxjit.triton.jit takes a @triton.jit function, got {type(f).__name__}")
            f = triton.jit(f)
        return TritonKernel(f, target=target, arch=arch, fp_fusion=fp_fusion)
    return wrap if fn is None else wrap(fn)
