"""CUDA C++ -> PTX with NVRTC (from the `nvidia-cuda-nvrtc` wheel, through ctypes), with an on-disk cache."""

from __future__ import annotations

import ctypes
import glob
import hashlib
import json
import os
import sys
import sysconfig
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ptxjit import config
from ptxjit.errors import PTXError
from ptxjit.jit.cache_dir import NotRegularFile, cache_root, read_regular_file, trusted_dir

_INSTALL_HINT = "install ptxjit[cuda] (pip install 'ptxjit[cuda]', which brings the nvidia-cuda-nvrtc wheel)"
_CACHE_FORMAT = 1


class CudaCompileError(PTXError):
    """NVRTC rejected the CUDA C++ source; the message holds NVRTC's log (with `file(line): error: ...`)."""

    def __init__(self, filename: str, log: str, options: list[str] | None = None) -> None:
        self.filename = filename
        self.log = log
        self.options = list(options or [])
        super().__init__(f"NVRTC failed to compile {filename}:\n{log.strip()}")


class NvrtcNotFoundError(ImportError):
    """libnvrtc could not be found or loaded."""


@dataclass(frozen=True)
class CompiledCuda:
    """The result of `compile_cuda`: PTX text, NVRTC's log, and name expression -> lowered (mangled) name."""

    ptx: str
    log: str = ""
    lowered_names: dict[str, str] = field(default_factory=dict)
    from_cache: bool = False


_stats = {"compiles": 0, "disk_hits": 0, "disk_writes": 0, "corrupt_entries": 0}
_stats_lock = threading.Lock()


def nvrtc_stats() -> dict[str, int]:
    """Counters: NVRTC compiles run, disk-cache hits and writes, corrupted cache entries found (and replaced)."""
    with _stats_lock:
        return dict(_stats)


def _bump(key: str) -> None:
    with _stats_lock:
        _stats[key] += 1


# ------------------------------------------------------------------ locating and loading libnvrtc
def _site_dirs() -> list[Path]:
    dirs: list[str] = []
    for key in ("purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p and p not in dirs:
            dirs.append(p)
    for p in sys.path:
        if p.endswith(("site-packages", "dist-packages")) and p not in dirs:
            dirs.append(p)
    return [Path(d) for d in dirs if Path(d).is_dir()]


def _candidates() -> list[Path]:
    out: list[Path] = []
    env = config.NVRTC.raw()
    if env:
        out.append(Path(env))
    # nvidia-cuda-nvrtc 13.x installs nvidia/cu13/lib; the -cu12 wheel installs nvidia/cuda_nvrtc/lib.
    for d in _site_dirs():
        for sub in ("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"):
            hits = [h for h in sorted(glob.glob(str(d / sub / "libnvrtc.so*"))) if ".alt." not in h]
            out.extend(Path(h) for h in hits)
    return out


class _Nvrtc:
    def __init__(self, path: Path) -> None:
        self.path = path
        libdir = path.parent
        # libnvrtc dlopens libnvrtc-builtins at compile time; make it resolvable whatever LD_LIBRARY_PATH says.
        for b in sorted(glob.glob(str(libdir / "libnvrtc-builtins.so*"))):
            if ".alt." in b:
                continue
            try:
                ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError:
                continue
        self.lib = ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        lib = self.lib
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        lib.nvrtcGetErrorString.argtypes = [ctypes.c_int]
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        lib.nvrtcCreateProgram.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                           ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p)]
        lib.nvrtcCompileProgram.argtypes = [vp, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(vp)]
        lib.nvrtcGetProgramLogSize.argtypes = [vp, ctypes.POINTER(sz)]
        lib.nvrtcGetProgramLog.argtypes = [vp, ctypes.c_char_p]
        lib.nvrtcGetPTXSize.argtypes = [vp, ctypes.POINTER(sz)]
        lib.nvrtcGetPTX.argtypes = [vp, ctypes.c_char_p]
        lib.nvrtcAddNameExpression.argtypes = [vp, ctypes.c_char_p]
        lib.nvrtcGetLoweredName.argtypes = [vp, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
        self.version = (major.value, minor.value)
        self.include_dirs = _include_dirs(libdir)
        self.lock = threading.Lock()

    def _check(self, rc: int, what: str) -> None:
        if rc != 0:
            msg = self.lib.nvrtcGetErrorString(rc)
            raise RuntimeError(f"{what} failed: {msg.decode() if msg else rc}")

    def compile(self, source: str, filename: str, options: list[str],
                name_expressions: list[str]) -> tuple[str, str, dict[str, str]]:
        prog = ctypes.c_void_p()
        self._check(self.lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), filename.encode(),
                                                0, None, None), "nvrtcCreateProgram")
        try:
            for expr in name_expressions:
                self._check(self.lib.nvrtcAddNameExpression(prog, expr.encode()), f"nvrtcAddNameExpression({expr!r})")
            copts = (ctypes.c_char_p * max(len(options), 1))(*[o.encode() for o in options])
            rc = self.lib.nvrtcCompileProgram(prog, len(options), copts)
            size = ctypes.c_size_t()
            self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(max(size.value, 1))
            self.lib.nvrtcGetProgramLog(prog, buf)
            log = buf.value.decode(errors="replace")
            if rc != 0:
                if not log.strip():
                    log = self.lib.nvrtcGetErrorString(rc).decode()
                raise CudaCompileError(filename, log, options)
            self._check(self.lib.nvrtcGetPTXSize(prog, ctypes.byref(size)), "nvrtcGetPTXSize")
            buf = ctypes.create_string_buffer(size.value)
            self._check(self.lib.nvrtcGetPTX(prog, buf), "nvrtcGetPTX")
            ptx = buf.value.decode(errors="replace")
            lowered: dict[str, str] = {}
            for expr in name_expressions:
                out = ctypes.c_char_p()
                self._check(self.lib.nvrtcGetLoweredName(prog, expr.encode(), ctypes.byref(out)),
                            f"nvrtcGetLoweredName({expr!r})")
                lowered[expr] = out.value.decode()
            return ptx, log, lowered
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _include_dirs(libdir: Path) -> list[Path]:
    """The CUDA headers (cuda_fp16.h, cooperative_groups.h, ...) shipped beside this NVRTC, if any, and
    CCCL's (cub/, thrust/, cuda/std/: the nvidia-cuda-cccl wheel puts them in include/cccl)."""
    dirs: list[Path] = []
    root = libdir.parent  # nvidia/cu13 or nvidia/cuda_nvrtc
    for d in (root / "include", root.parent / "cuda_runtime" / "include"):
        if (d / "cuda_fp16.h").is_file() and d not in dirs:
            dirs.append(d)
            break
    for d in (root / "include" / "cccl", root.parent / "cuda_cccl" / "include"):
        if (d / "cub" / "version.cuh").is_file():
            dirs.append(d)
            break
    return dirs


_lib: _Nvrtc | None = None
_lib_lock = threading.Lock()


def _nvrtc() -> _Nvrtc:
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        errors: list[str] = []
        for cand in _candidates():
            try:
                _lib = _Nvrtc(cand)
                return _lib
            except (OSError, AttributeError, RuntimeError) as e:
                errors.append(f"{cand}: {e}")
        detail = ("; tried " + "; ".join(errors)) if errors else ""
        raise NvrtcNotFoundError(f"NVRTC (libnvrtc) is not available: {_INSTALL_HINT}{detail}")


def nvrtc_available() -> bool:
    try:
        _nvrtc()
    except ImportError:
        return False
    return True


def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC ptxjit uses; raises ImportError if none is installed."""
    return _nvrtc().version


# ------------------------------------------------------------------ the disk cache
def _cache_dir() -> Path | None:
    """The NVRTC cache directory, or None when $PTXJIT_CACHE_DIR is not to be trusted (cached PTX is
    compiled and run like the translation cache's code: see jit/cache_dir.py)."""
    root = trusted_dir(cache_root())
    return None if root is None else trusted_dir(root / "nvrtc")


def _payload_digest(entry: dict) -> str:
    # the key (the file's name) is inside the checksummed payload: an entry copied to another name is refused
    body = json.dumps({k: entry.get(k) for k in ("ptx", "log", "lowered_names", "key")}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def _cache_load(path: Path) -> CompiledCuda | None:
    try:  # only a regular file of sane size: never a FIFO (blocks), a device or a symlink (/dev/zero)
        raw = read_regular_file(path, 64 << 20)
    except (NotRegularFile, OSError):
        raw = b""  # unusable: removed and recompiled below
    if raw is None:
        return None
    try:
        entry = json.loads(raw.decode())
        if entry.get("format") != _CACHE_FORMAT or entry.get("sha256") != _payload_digest(entry) or \
                entry.get("key") != path.stem:
            raise ValueError("checksum mismatch")
        ptx, log, lowered = entry["ptx"], entry["log"], entry["lowered_names"]
        if not isinstance(ptx, str) or not isinstance(log, str) or not isinstance(lowered, dict):
            raise ValueError("bad entry")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, AttributeError):
        _bump("corrupt_entries")
        try:
            path.unlink()
        except OSError:
            pass
        return None
    return CompiledCuda(ptx, log, dict(lowered), from_cache=True)


def _cache_store(path: Path, res: CompiledCuda) -> None:
    entry = {"format": _CACHE_FORMAT, "ptx": res.ptx, "log": res.log, "lowered_names": res.lowered_names,
             "key": path.stem}
    entry["sha256"] = _payload_digest(entry)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        return  # a read-only or full cache directory only costs recompiles
    _bump("disk_writes")


# ------------------------------------------------------------------ public entry point
def _normalize_arch(arch: str) -> str:
    a = str(arch).strip()
    if a.isdigit():
        a = "compute_" + a
    if a.startswith("sm_"):
        a = "compute_" + a[3:]
    return a


def compile_cuda(source: str, name_expressions: list[str] | tuple[str, ...] | None = None,
                 options: list[str] | tuple[str, ...] = (), arch: str = "compute_80", *,
                 filename: str = "kernel.cu", cache: bool = True) -> CompiledCuda:
    """Compile CUDA C++ `source` to PTX with NVRTC.

    `name_expressions` (e.g. ``"axpy<float>"``) instantiate templates; `.lowered_names` maps each one to its
    mangled PTX entry name.  `options` are NVRTC options (``-DN=4``, ``-I/dir``, ``--use_fast_math``...);
    `arch` is a virtual architecture (``compute_80``; ``sm_80`` and ``80`` also accepted) unless `options`
    already hold ``-arch``/``--gpu-architecture``.  Results are cached on disk under
    ``cache_root()/nvrtc`` (``$PTXJIT_CACHE_DIR``).  Raises CudaCompileError with NVRTC's log.
    """
    if isinstance(source, bytes):
        source = source.decode()
    if not isinstance(source, str):
        raise TypeError(f"compile_cuda() takes CUDA C++ source text, got {type(source).__name__}")
    if isinstance(options, str):
        options = (options,)
    if isinstance(name_expressions, str):
        name_expressions = [name_expressions]
    exprs = list(dict.fromkeys(name_expressions or ()))
    opts = [str(o) for o in options]
    if not any(o.startswith(("-arch", "--gpu-architecture")) for o in opts):
        opts.insert(0, f"--gpu-architecture={_normalize_arch(arch)}")
    lib = _nvrtc()
    full = opts + [f"-I{d}" for d in lib.include_dirs if f"-I{d}" not in opts]
    key_src = json.dumps({"source": source, "options": opts, "name_expressions": exprs, "filename": filename,
                          "nvrtc": list(lib.version), "lib": str(lib.path), "format": _CACHE_FORMAT})
    key = hashlib.sha256(key_src.encode()).hexdigest()
    cdir = _cache_dir() if cache else None
    cache = cdir is not None
    path = cdir / key[:2] / f"{key}.json" if cdir is not None else Path()
    if cache:
        hit = _cache_load(path)
        if hit is not None:
            _bump("disk_hits")
            return hit
    with lib.lock:
        ptx, log, lowered = lib.compile(source, filename, full, exprs)
    _bump("compiles")
    res = CompiledCuda(ptx, log, lowered)
    if cache:
        _cache_store(path, res)
    return res
