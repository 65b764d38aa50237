"""Numba ``@cuda.jit`` kernels on ptxjit (``pip install 'ptxjit[numba]'``).

    @ptxjit.numba.jit
    def add(a, b, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] + b[i]

    add[blocks, threads](a, b, out)                          # NumPy arrays are device memory
    ptxjit.numba.run(numba_cuda_kernel, blocks, threads, a, b, out)

Numba (numba-cuda, with NVVM from the nvidia-cuda-nvcc wheel) compiles the Python function to PTX for
the argument types of each call -- no GPU needed -- and ptxjit runs that PTX.  Arguments follow Numba's
kernel ABI: an array becomes (meminfo, parent, nitems, itemsize, data, shape..., strides...).
numba is imported on first use only.
"""

from __future__ import annotations

import contextlib
import re
import threading
import types as _pytypes
import weakref

import numpy as np

from ptxjit.api import Module
from ptxjit.runtime.memory import DeviceArray, Pointer

__all__ = ["NumbaKernel", "jit", "numba_stats", "run"]

_INSTALL_HINT = "install ptxjit[numba] (pip install 'ptxjit[numba]': numba, numba-cuda and nvidia-cuda-nvcc)"
DEFAULT_CC = (8, 0)

_stats = {"compiles": 0, "launches": 0}
_stats_lock = threading.Lock()


def numba_stats() -> dict[str, int]:
    """Counters: PTX compiles by Numba (one per kernel and signature) and launches."""
    with _stats_lock:
        return dict(_stats)


def _bump(key: str) -> None:
    with _stats_lock:
        _stats[key] += 1


def _numba():
    """(numba, numba.cuda, numba.core.types), imported on first use."""
    try:
        import numba
        from numba import cuda
        from numba.core import types
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise ImportError(f"Numba kernels need numba-cuda: {_INSTALL_HINT} ({e})") from e
    if not hasattr(cuda, "compile_ptx"):  # pragma: no cover
        raise ImportError(f"numba.cuda has no compile_ptx: {_INSTALL_HINT}")
    return numba, cuda, types


@contextlib.contextmanager
def _target_cc(cc: tuple[int, int]):
    """Compile as if the current device had compute capability `cc`.

    Numba compiles the ``cuda.jit(device=True)`` functions a kernel calls for ``get_current_device()``,
    which needs a GPU; while ptxjit compiles, that lookup answers `cc` instead (under Numba's compiler lock).
    """
    from numba.cuda import dispatcher as disp
    from numba.cuda.core.compiler_lock import global_compiler_lock

    fake = _pytypes.SimpleNamespace(compute_capability=tuple(cc))
    with global_compiler_lock:
        saved = getattr(disp, "get_current_device", None)
        if saved is not None:
            disp.get_current_device = lambda: fake
        try:
            yield
        finally:
            if saved is not None:
                disp.get_current_device = saved


def _compile_kernel_ptx(py_func, sig, cc: tuple[int, int], targetoptions: dict) -> str:
    """Numba's PTX for the kernel, with the CUDA C++ shims it links (cuda.fp16 ...) compiled by NVRTC and merged."""
    _, cuda, _ = _numba()
    try:
        from numba.cuda.compiler import _compile_pyfunc_with_fixup
        from numba.cuda.cudadrv.linkable_code import LinkableCode
    except ImportError:  # pragma: no cover - a numba-cuda without these internals: no shim linking
        return cuda.compile_ptx(py_func, sig, cc=cc, debug=False, **targetoptions)[0]
    lib, _ = _compile_pyfunc_with_fixup(py_func, sig, debug=False, lineinfo=targetoptions["lineinfo"],
                                        device=False, fastmath=targetoptions["fastmath"], cc=cc,
                                        opt=targetoptions["opt"], abi="numba", abi_info=None, forceinline=False,
                                        launch_bounds=None, lto=False)
    ptxs = list(lib.get_asm_strs(cc=cc))
    for item in sorted(lib._linking_files, key=str):
        obj = LinkableCode.from_path_or_obj(item)
        data = obj.data.decode() if isinstance(obj.data, bytes) else str(obj.data)
        if obj.kind == "cu":
            from ptxjit.cuda import compile_cuda

            opts = ["-rdc=true"] + (["-lineinfo"] if targetoptions["lineinfo"] else [])
            ptxs.append(compile_cuda(data, options=opts, arch=f"compute_{cc[0]}{cc[1]}",
                                     filename=str(obj.name)).ptx)
        elif obj.kind == "ptx":
            ptxs.append(data)
        else:
            raise NotImplementedError(f"ptxjit cannot link {obj.kind!r} code ({obj.name}) into a Numba kernel")
    return _merge_ptx(ptxs)


_HEADER = re.compile(r"^\s*\.(version|target|address_size)\b.*$", re.M)
_FUNC_DEF = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.func\s+(?:\([^)]*\)\s*)?([\w$.]+)\s*\([^)]*\)\s*\{",
                       re.M | re.S)
_EXTERN_FUNC = re.compile(r"^\s*\.extern\s+\.func\s+(?:\([^)]*\)\s*)?([\w$.]+)\s*(?:\([^)]*\))?\s*;",
                          re.M | re.S)


def _merge_ptx(ptxs: list[str]) -> str:
    """One PTX module from several: the first keeps its header, `.extern .func` prototypes of functions
    another module defines (or already declared) are dropped."""
    if len(ptxs) == 1:
        return ptxs[0]
    defined = {m.group(1) for p in ptxs for m in _FUNC_DEF.finditer(p)}
    declared: set[str] = set()

    def drop(m: re.Match) -> str:
        name = m.group(1)
        if name in defined or name in declared:
            return ""
        declared.add(name)
        return m.group(0)

    out = [_EXTERN_FUNC.sub(drop, ptxs[0])]
    for p in ptxs[1:]:
        out.append(_EXTERN_FUNC.sub(drop, _HEADER.sub("", p)))
    return "\n".join(out)


# ------------------------------------------------------------------ argument types and flattening
def _as_array(v):
    if isinstance(v, DeviceArray):
        return v.array
    if isinstance(v, np.ndarray):
        return v
    return None


def _typeof(v):
    numba, _, types = _numba()
    arr = _as_array(v)
    if arr is not None:
        return numba.typeof(arr)
    if isinstance(v, tuple):
        return types.BaseTuple.from_types([_typeof(x) for x in v])
    if isinstance(v, list | dict | set | str | bytes) or v is None:
        raise TypeError(f"cannot pass {type(v).__name__} to a Numba kernel on ptxjit: pass a NumPy array or a scalar")
    try:
        return numba.typeof(v)
    except ValueError as e:
        raise TypeError(f"cannot pass {type(v).__name__} to a Numba kernel: {e}") from None


def _flatten(ty, v, out: list, keep: list) -> None:
    """Append the kernel parameters Numba's ABI gives value `v` of Numba type `ty`."""
    _, _, types = _numba()
    if isinstance(ty, types.Array):
        arr = _as_array(v)
        if arr is None:
            raise TypeError(f"expected an array for {ty}, got {type(v).__name__}")
        keep.append(arr)
        # the data pointer is passed as an explicit ptxjit.Pointer: plain ints are refused for pointers
        out += [0, 0, arr.size, arr.itemsize, Pointer(arr.ctypes.data), *arr.shape, *arr.strides]
    elif isinstance(ty, types.Boolean):
        out.append(int(bool(v)))
    elif isinstance(ty, types.Integer):
        out.append(int(v))
    elif ty == types.float16:
        out.append(("f16", float(v)))
    elif isinstance(ty, types.Float):
        out.append(float(v))
    elif isinstance(ty, types.Complex):
        c = complex(v)
        out += [c.real, c.imag]
    elif isinstance(ty, types.NPDatetime | types.NPTimedelta):
        out.append(int(np.asarray(v).view(np.int64)))
    elif isinstance(ty, types.Record):
        buf = np.array(v)  # a device copy, as Numba makes
        keep.append(buf)
        out.append(Pointer(buf.ctypes.data))
    elif isinstance(ty, types.BaseTuple):
        if len(ty) != len(v):
            raise TypeError(f"tuple of {len(v)} items for {ty}")
        for t, x in zip(ty, v, strict=True):
            _flatten(t, x, out, keep)
    elif isinstance(ty, types.EnumMember):
        _flatten(ty.dtype, v.value, out, keep)
    elif isinstance(ty, types.CPointer):
        out.append(Pointer(int(v)))
    else:
        raise TypeError(f"ptxjit cannot pass a {ty} argument to a Numba kernel")


def _compatible(decl, actual) -> bool:
    """Whether a value of Numba type `actual` may be passed where a declared signature says `decl`."""
    _, _, types = _numba()
    if decl == actual:
        return True
    if isinstance(decl, types.Array):
        if not isinstance(actual, types.Array) or decl.dtype != actual.dtype or decl.ndim != actual.ndim:
            return False
        if decl.mutable and not actual.mutable:
            return False
        return decl.layout == "A" or decl.layout == actual.layout or (
            actual.layout == "C" and decl.layout in ("C", "F") and decl.ndim <= 1)
    if isinstance(decl, types.Number | types.Boolean):
        return isinstance(actual, types.Number | types.Boolean)
    if isinstance(decl, types.BaseTuple) and isinstance(actual, types.BaseTuple):
        return len(decl) == len(actual) and all(_compatible(d, a) for d, a in zip(decl, actual, strict=True))
    return False


# ------------------------------------------------------------------ compiled kernels
class _Compiled:
    """One specialization: its signature, its PTX, and the ptxjit kernel."""

    def __init__(self, argtypes: tuple, ptx: str, name: str) -> None:
        self.argtypes = argtypes
        self.ptx = ptx
        self.module = Module(ptx, name)
        entries = list(self.module.kernels)
        if len(entries) != 1:
            raise RuntimeError(f"expected one kernel in Numba's PTX for {name}, found {entries}")
        self.kernel = self.module.get_function(entries[0])
        self.param_types = [p.type for p in self.kernel.info.params]

    def launch(self, grid, block, args, shared_mem: int = 0) -> None:
        flat: list = []
        keep: list = []
        for ty, v in zip(self.argtypes, args, strict=True):
            _flatten(ty, v, flat, keep)
        if len(flat) != len(self.param_types):
            raise RuntimeError(f"Numba's kernel takes {len(self.param_types)} parameters; "
                               f"the arguments flatten to {len(flat)}")
        for i, v in enumerate(flat):
            if isinstance(v, tuple):  # float16: a .f16 parameter takes the float, a .b16/.u16 one its bits
                val = v[1]
                flat[i] = val if self.param_types[i] in ("f16",) else int(np.float16(val).view(np.uint16))
        self.kernel(grid, block, flat, shared_mem=shared_mem)
        _bump("launches")
        del keep


class NumbaKernel:
    """A Python function written with ``numba.cuda`` idioms, launched on ptxjit as ``kernel[grid, block](*args)``."""

    def __init__(self, py_func, *, signatures=None, fastmath: bool = False, lineinfo: bool = False,
                 opt: bool = True, cc: tuple[int, int] = DEFAULT_CC, debug: bool = False) -> None:
        if debug:
            raise ValueError("ptxjit runs Numba kernels compiled with debug=False only")
        if not callable(py_func):
            raise TypeError(f"expected a Python function, got {type(py_func).__name__}")
        self.py_func = py_func
        self.__name__ = getattr(py_func, "__name__", "kernel")
        self.__qualname__ = getattr(py_func, "__qualname__", self.__name__)
        self.__doc__ = getattr(py_func, "__doc__", None)
        self.__wrapped__ = py_func
        self.targetoptions = {"fastmath": bool(fastmath), "lineinfo": bool(lineinfo), "opt": bool(opt)}
        self.cc = tuple(cc)
        self._lock = threading.Lock()
        self._specs: dict[tuple, _Compiled] = {}
        self._declared: list[tuple] = []
        for sig in ([signatures] if isinstance(signatures, str) else list(signatures or ())):
            self.compile(sig)

    # -- compilation
    def _normalize(self, sig) -> tuple:
        numba, _, types = _numba()
        from numba.core import sigutils

        if isinstance(sig, tuple) and all(isinstance(t, types.Type) for t in sig):
            return sig
        args, ret = sigutils.normalize_signature(sig)
        if ret not in (None, types.void, types.none):
            raise TypeError(f"a kernel returns void, signature says {ret}")
        return tuple(args)

    def compile(self, sig) -> _Compiled:
        """Compile for a signature (``"void(float32[:], int64)"`` or a tuple of Numba types); returns it."""
        argtypes = self._normalize(sig)
        spec = self._specialization(argtypes)
        if argtypes not in self._declared:
            self._declared.append(argtypes)
        return spec

    def _specialization(self, argtypes: tuple) -> _Compiled:
        spec = self._specs.get(argtypes)
        if spec is not None:
            return spec
        with self._lock:
            spec = self._specs.get(argtypes)
            if spec is not None:
                return spec
            _, cuda, types = _numba()
            with _target_cc(self.cc):
                ptx = _compile_kernel_ptx(self.py_func, types.void(*argtypes), self.cc, self.targetoptions)
            _bump("compiles")
            spec = _Compiled(argtypes, ptx, f"<numba {self.__qualname__}>")
            self._specs[argtypes] = spec
            return spec

    def specialize(self, *args) -> _Compiled:
        """The compiled specialization for these arguments (compiling it if needed)."""
        actual = tuple(_typeof(a) for a in args)
        if self._declared:
            if actual in self._specs:
                return self._specs[actual]
            for decl in self._declared:
                if len(decl) == len(actual) and all(_compatible(d, a) for d, a in zip(decl, actual, strict=True)):
                    return self._specs[decl]
            sigs = ", ".join("(" + ", ".join(map(str, d)) + ")" for d in self._declared)
            raise TypeError(f"{self.__name__}: no declared signature matches ({', '.join(map(str, actual))}); "
                            f"declared: {sigs}")
        return self._specialization(actual)

    # -- introspection
    @property
    def signatures(self) -> list[tuple]:
        return list(self._specs)

    def inspect_ptx(self, signature=None):
        """PTX text of one signature, or {signature: PTX} for all compiled ones."""
        if signature is not None:
            return self._specialization(self._normalize(signature)).ptx
        return {k: v.ptx for k, v in self._specs.items()}

    def inspect_types(self):  # pragma: no cover - convenience
        return {k: str(k) for k in self._specs}

    # -- launch
    def __getitem__(self, config) -> _Configured:
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise ValueError("launch configuration must be kernel[grid, block] (optionally [.., stream, shared_mem])")
        grid, block = config[0], config[1]
        shared = config[3] if len(config) == 4 else 0
        return _Configured(self, grid, block, int(shared))

    def __call__(self, *args, **kwargs):
        raise ValueError(f"kernel '{self.__name__}' needs a launch configuration: kernel[grid, block](*args)")

    def launch(self, grid, block, args, shared_mem: int = 0) -> None:
        self.specialize(*args).launch(grid, block, args, shared_mem)

    def __repr__(self) -> str:
        return f"<ptxjit.numba kernel {self.__qualname__}>"


class _Configured:
    def __init__(self, kernel: NumbaKernel, grid, block, shared_mem: int) -> None:
        self.kernel, self.grid, self.block, self.shared_mem = kernel, grid, block, shared_mem

    def __call__(self, *args) -> None:
        self.kernel.launch(self.grid, self.block, args, self.shared_mem)


def jit(func_or_sig=None, *, device: bool = False, fastmath: bool = False, lineinfo: bool = False,
        opt: bool = True, cc: tuple[int, int] = DEFAULT_CC, debug: bool = False, **kwargs):
    """Like ``numba.cuda.jit``, but the kernel runs on ptxjit: ``@jit``, ``@jit(fastmath=True)``,
    ``@jit("void(float32[:])")``.  ``device=True`` returns Numba's own device function (call it from kernels)."""
    if device:
        _, cuda, _ = _numba()
        dopts = {"device": True, "fastmath": fastmath, "lineinfo": lineinfo, "opt": opt, **kwargs}
        return cuda.jit(**dopts) if func_or_sig is None else cuda.jit(func_or_sig, **dopts)
    if kwargs:
        raise TypeError(f"ptxjit.numba.jit: unsupported options {sorted(kwargs)}")
    opts = {"fastmath": fastmath, "lineinfo": lineinfo, "opt": opt, "cc": cc, "debug": debug}
    if callable(func_or_sig) and not isinstance(func_or_sig, str):
        return NumbaKernel(_py_func(func_or_sig), **opts)
    sigs = func_or_sig

    def wrap(f):
        return NumbaKernel(_py_func(f), signatures=sigs, **opts)

    return wrap


def _py_func(obj):
    """The Python function behind a Numba dispatcher, a NumbaKernel or a plain function."""
    if isinstance(obj, NumbaKernel):
        return obj.py_func
    return getattr(obj, "py_func", obj)


_run_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_run_lock = threading.Lock()


def _as_kernel(obj) -> NumbaKernel:
    if isinstance(obj, NumbaKernel):
        return obj
    with _run_lock:
        try:
            k = _run_cache.get(obj)
        except TypeError:
            k = None
        if k is None:
            opts = {}
            to = getattr(obj, "targetoptions", None)
            if isinstance(to, dict):
                if to.get("device"):
                    raise TypeError(f"{obj!r} is a device function, not a kernel")
                opts = {k: bool(to[k]) for k in ("fastmath", "lineinfo") if k in to}
                if to.get("opt") is not None:
                    opts["opt"] = bool(to["opt"])
            k = NumbaKernel(_py_func(obj), **opts)
            try:
                _run_cache[obj] = k
            except TypeError:
                pass
        return k


def run(kernel, grid, block, *args, shared_mem: int = 0) -> None:
    """Launch a Numba kernel on ptxjit: `kernel` is a ``numba.cuda.jit`` kernel, a plain Python function
    written with ``numba.cuda`` idioms, or a ``ptxjit.numba.jit`` kernel."""
    _as_kernel(kernel).launch(grid, block, args, shared_mem)
