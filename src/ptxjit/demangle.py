"""C++ symbol demangling (kernel names as CUDA users wrote them: `matmul_tiled<float, 16>`).

Uses the Itanium ABI demangler of the C++ runtime that llvmlite already loads (libstdc++'s
`__cxa_demangle`), so no extra dependency; a name it cannot demangle is returned unchanged.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools


@functools.cache
def _cxa_demangle():
    for lib in ("libstdc++.so.6", ctypes.util.find_library("stdc++"), ctypes.util.find_library("c++")):
        if not lib:
            continue
        try:
            fn = ctypes.CDLL(lib).__cxa_demangle
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_void_p  # malloc'd; freed below
        fn.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        return fn
    return None


@functools.cache
def _free():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.free.argtypes = [ctypes.c_void_p]
    return libc.free


@functools.lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    """`_Z12matmul_tiledIfLi16EEvPKT_S2_PS0_i` -> `void matmul_tiled<float, 16>(float const*, ...)`."""
    if not name.startswith("_Z"):
        return name
    fn = _cxa_demangle()
    if fn is None:
        return name
    status = ctypes.c_int(0)
    ptr = fn(name.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not ptr:
        return name
    try:
        return ctypes.string_at(ptr).decode("utf-8", errors="replace")
    finally:
        _free()(ptr)


def short_name(name: str) -> str:
    """The demangled name without return type and parameter list: `matmul_tiled<float, 16>`."""
    full = demangle(name)
    if full == name:
        return name
    # drop the parameter list: the last top-level '(' ... ')'
    depth = 0
    cut = len(full)
    for i in range(len(full) - 1, -1, -1):
        c = full[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                cut = i
                break
    head = full[:cut]
    # drop a leading return type ("void "), which templates spell before the name
    depth = 0
    for i, c in enumerate(head):
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif c == " " and depth == 0:
            return head[i + 1:]
    return head
