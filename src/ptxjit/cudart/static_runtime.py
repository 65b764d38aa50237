"""Python extension modules that carry NVIDIA's CUDA runtime linked in statically, redirected to libcudart.so.13.

A statically linked runtime (libcudart_static.a) never loads libcudart.so: it reaches the driver through
NVIDIA's private export tables (cuGetExportTable), which ptxjit's libcuda.so.1 does not have, so every one of
its calls fails.  CuPy's wheels are built that way: cupy_backends.cuda.api.runtime (and cupy.cuda.cub,
cupy.cuda.thrust, cupy.cuda.jitify, cupy.random._generator_api) each hold a private copy of the runtime.

Such a copy's entry points are still named in the module's symbol table (local symbols).  `redirect` writes
a jump at the start of each one to ptxjit's function of the same name, so the module's calls land in
ptxjit's runtime with its semantics and error codes; the copy itself is never started.  Kernels the module
registered with its own copy before the redirect (nvcc's registration runs when the module is loaded) are
registered again, with ptxjit's runtime, by running the module's registration function once more.

`install()` (run by `ptxjit exec` in every Python it starts, through ptxjit's sitecustomize) applies this to
each extension module as it is imported.  x86-64 only; elsewhere modules are left as they are.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import platform
import struct
import sys
from dataclasses import dataclass, field

_JUMP_SIZE = 14  # jmp *0(%rip); .quad target - clobbers no register, reaches any address
_MARKER = b"cudaGetDeviceCount"  # every static runtime defines it; a program linked with the shared one does not
_REGISTER_ALL = "_ZL24__sti____cudaRegisterAllv"  # nvcc's per-translation-unit registration function
_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4


@dataclass
class Redirected:
    """What `redirect` did to one shared object."""

    path: str
    patched: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # the copy's entry points libcudart.so.13 does not export
    reregistered: int = 0


def _sections(data) -> list[tuple]:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:  # ELF64, little endian
        return []
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shoff == 0 or shentsize != 64:
        return []
    # (name, type, flags, addr, offset, size, link, info, addralign, entsize)
    return [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * 64) for i in range(shnum)]


def static_runtime_functions(path: str) -> dict[str, tuple[int, int]]:
    """The static CUDA runtime's entry points in the ELF file at `path`: name -> (address, size), addresses
    relative to the load base; empty when the file holds no statically linked runtime."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _scan(data)
    except (OSError, ValueError, struct.error):
        return {}


def _scan(data) -> dict[str, tuple[int, int]]:
    secs = _sections(data)
    symtab = next((s for s in secs if s[1] == 2), None)  # SHT_SYMTAB: absent when the file is stripped
    if symtab is None or symtab[6] >= len(secs):
        return {}
    strtab = secs[symtab[6]]
    str_off, str_end = strtab[4], strtab[4] + strtab[5]
    if data.find(_MARKER + b"\0", str_off, str_end) < 0:  # a cheap first test before reading every symbol
        return {}
    found: dict[str, tuple[int, int]] = {}
    binding_of: dict[str, int] = {}
    for i in range(symtab[5] // 24):
        name, info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, symtab[4] + i * 24)
        if info & 0xF != 2 or shndx == 0:  # defined functions only
            continue
        at = str_off + name
        if data[at:at + 4] != b"cuda" and data[at:at + 6] != b"__cuda":
            continue
        text = data[at:data.find(b"\0", at, str_end)].decode("ascii", "replace")
        found[text] = (value, size)
        binding_of[text] = info >> 4
    if binding_of.get(_MARKER.decode()) != 0:  # STB_LOCAL: a private copy, not a runtime library's export
        return {}
    return found


def _local_function(path: str, name: str) -> int | None:
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            secs = _sections(data)
            symtab = next((s for s in secs if s[1] == 2), None)
            if symtab is None:
                return None
            strtab = secs[symtab[6]]
            want = name.encode() + b"\0"
            for i in range(symtab[5] // 24):
                nm, info, _o, shndx, value, _size = struct.unpack_from("<IBBHQQ", data, symtab[4] + i * 24)
                at = strtab[4] + nm
                if info & 0xF == 2 and shndx and data[at:at + len(want)] == want:
                    return value
    except (OSError, ValueError, struct.error):
        pass
    return None


class _PhdrInfo(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_size_t), ("name", ctypes.c_char_p), ("phdr", ctypes.c_void_p),
                ("phnum", ctypes.c_uint16)]


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_PhdrInfo), ctypes.c_size_t, ctypes.c_void_p)


def load_bias(path: str) -> int | None:
    """The load bias of the shared object `path` in this process (dl_iterate_phdr); None when not loaded."""
    want = os.path.realpath(path)
    found: list[int] = []

    def visit(info, _size, _data) -> int:
        name = info.contents.name
        if name and os.path.realpath(name.decode(errors="replace")) == want:
            found.append(info.contents.addr)
            return 1
        return 0

    libc = ctypes.CDLL(None)
    libc.dl_iterate_phdr(_CALLBACK(visit), None)
    return found[0] if found else None


def _runtime_library() -> ctypes.CDLL | None:
    """ptxjit's libcudart.so.13 as the library path finds it (`ptxjit exec` puts its folder first); None when
    there is none.  Another libcudart.so.13 may be loaded already (numba-cuda's import loads NVIDIA's, from
    the nvidia-cuda-runtime wheel, for cuda.bindings.runtime): loading by its name then returns that one,
    so ptxjit's is loaded by its path, from the library path's folders."""
    names = ["libcudart.so.13"] + [os.path.join(d, "libcudart.so.13")
                                   for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    for name in names:
        if name != names[0] and not os.path.isfile(name):
            continue
        try:
            rt = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        if hasattr(rt, "PyInit__ptxjit_libcudart"):
            return rt
    return None


def _write_jump(at: int, target: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page = mmap.PAGESIZE
    start = at & ~(page - 1)
    length = ((at + _JUMP_SIZE - start) + page - 1) & ~(page - 1)
    # writable and executable at once where the system allows it (other threads may run code on these pages)
    if libc.mprotect(start, length, _PROT_READ | _PROT_WRITE | _PROT_EXEC) != 0 and \
            libc.mprotect(start, length, _PROT_READ | _PROT_WRITE) != 0:
        raise OSError(ctypes.get_errno(), f"mprotect({start:#x}): {os.strerror(ctypes.get_errno())}")
    try:
        ctypes.memmove(at, b"\xff\x25\x00\x00\x00\x00" + struct.pack("<Q", target), _JUMP_SIZE)
    finally:
        libc.mprotect(start, length, _PROT_READ | _PROT_EXEC)


def redirect(path: str) -> Redirected | None:
    """Point the statically linked CUDA runtime in the loaded shared object `path` at libcudart.so.13;
    None when it holds none (or this is not x86-64)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    functions = static_runtime_functions(path)
    if not functions:
        return None
    bias = load_bias(path)
    rt = _runtime_library()
    if bias is None or rt is None:
        return None
    done = Redirected(path)
    for name, (value, size) in sorted(functions.items()):
        try:
            target = ctypes.cast(getattr(rt, name), ctypes.c_void_p).value
        except AttributeError:
            done.missing.append(name)
            continue
        if size < _JUMP_SIZE:
            done.missing.append(name)
            continue
        _write_jump(bias + value, target)
        done.patched.append(name)
    # kernels the module registered with its own copy at load time: registered again, now with ptxjit's
    register_all = _local_function(path, _REGISTER_ALL)
    if register_all is not None and "__cudaRegisterFatBinary" in done.patched:
        from ptxjit.cudart import registry  # the runtime library has started ptxjit by now

        for fb in registry.registered_by(ctypes.CFUNCTYPE(None)(bias + register_all)):
            fb.launch_errors_unread = True
        done.reregistered = 1
    _log(done)
    return done


def _log(done: Redirected) -> None:
    if not os.environ.get("PTXJIT_DRIVER_LOG"):  # a note, not an error: only into a log file
        return
    from ptxjit.driver import errors as DE  # the runtime library has started ptxjit by now

    DE.log(f"ptxjit runtime: {os.path.basename(done.path)} links the CUDA runtime statically: its "
           f"{len(done.patched)} entry points call libcudart.so.13 now (the {len(done.missing)} ptxjit does not "
           "export keep the module's own copy, which returns cudaErrorNotSupported)")


class _Finder:
    """A meta path entry that redirects each extension module right after it is loaded, before its code runs."""

    def find_spec(self, fullname, path=None, target=None):
        from importlib.machinery import ExtensionFileLoader, PathFinder

        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None or not isinstance(spec.loader, ExtensionFileLoader):
            return None
        loader = spec.loader
        create = loader.create_module

        def create_module(spec_):
            module = create(spec_)
            try:
                redirect(spec_.origin)
            except Exception as exc:  # noqa: BLE001 - the module still imports; its CUDA calls then fail
                sys.stderr.write(f"ptxjit runtime: could not redirect {spec_.origin}'s static CUDA runtime: "
                                 f"{exc}\n")
            return module

        loader.create_module = create_module
        return spec


_installed = False


def install() -> None:
    """Redirect the static CUDA runtime of every extension module imported from now on (and of those already
    imported)."""
    global _installed
    if _installed:
        return
    _installed = True
    for module in list(sys.modules.values()):
        origin = getattr(getattr(module, "__spec__", None), "origin", None)
        if origin and origin.endswith(".so"):
            redirect(origin)
    sys.meta_path.insert(0, _Finder())
