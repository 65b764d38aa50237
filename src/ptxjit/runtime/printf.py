"""CUDA device printf: format vprintf(fmt, args) calls on the host's stdout — without ever crashing.

A kernel's printf hands the host two addresses: the format string and the argument buffer.  Both come
from the kernel, so both can be wrong (`printf("%s", 42)`, a dangling pointer, more conversions than
arguments).  The host therefore never dereferences them blindly:

- strings (the format and every `%s`) are read only from memory the running launches know: the
  kernel's array arguments and the module's globals/constants (where nvcc puts string literals).
  Anything else prints `(bad pointer 0x...)` — on a GPU it would fault or print garbage;
- the argument buffer (in the thread's local memory, which only the launch's workers know) is read
  through /proc/self/mem where available, so an address that is not mapped reads as "missing"
  instead of faulting;
- widths and precisions are capped at MAX_WIDTH (a `%*d` with width 2**31-1 would take seconds and
  gigabytes), strings at MAX_STRING bytes; a conversion Python cannot format is printed as written.

Output goes to sys.stdout as it is produced.  In a C program (ptxjit's libcuda.so.1 or libcudart.so.13
started the interpreter) it is held instead, as a GPU holds it in its printf buffer, until the host
synchronizes (flush_held), and then written to the C stdout the program's own printf writes to: host and
device lines come out in program order whatever stdout's buffering (a pipe's included).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import struct
import sys
import threading
from collections.abc import Iterator

import numpy as np

MAX_WIDTH = 4096  # cap on field width and precision
MAX_STRING = 4096  # cap on the bytes one %s prints
MAX_FORMAT = 16384  # cap on the format string

_SPEC = re.compile(rb"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|j|z|t|L)?([diouxXcsfFeEgGaAp%])")
_lock = threading.Lock()

# ------------------------------------------------------------------ memory the launches know
_known_lock = threading.Lock()
_known: dict[tuple[int, int], int] = {}  # (start, end) -> number of running launches that hold it


def _ranges(objs, globals_buf: np.ndarray | None) -> list[tuple[int, int]]:
    from ptxjit.runtime.memory import memory_of

    out = []
    for obj in [*objs, globals_buf]:
        v = memory_of(obj)
        if v is not None and v.nbytes:
            start = v.__array_interface__["data"][0]
            out.append((start, start + v.nbytes))
    return out


@contextlib.contextmanager
def known_memory(objs, globals_buf: np.ndarray | None = None) -> Iterator[None]:
    """While a launch runs, device printf may read strings from its arrays and the module's globals."""
    ranges = _ranges(objs, globals_buf)
    with _known_lock:
        for r in ranges:
            _known[r] = _known.get(r, 0) + 1
    try:
        yield
    finally:
        with _known_lock:
            for r in ranges:
                n = _known[r] - 1
                if n:
                    _known[r] = n
                else:
                    del _known[r]


def _known_end(addr: int) -> int | None:
    """The end of the known range holding addr, or None."""
    with _known_lock:
        best = None
        for start, end in _known:
            if start <= addr < end and (best is None or end > best):
                best = end
        return best


def read_string(addr: int, limit: int = MAX_STRING) -> bytes | None:
    """The NUL-terminated string at addr, at most `limit` bytes and never beyond the known range that
    holds it; None if addr is not in memory a running launch knows."""
    end = _known_end(addr) if addr else None
    if end is None:
        return None
    raw = ctypes.string_at(addr, min(end - addr, limit))
    nul = raw.find(b"\0")
    return raw if nul < 0 else raw[:nul]


_mem_fd: int | None = None
_mem_checked = False


def _read_raw(addr: int, n: int) -> bytes | None:
    """n bytes at addr, or None if they are not mapped (read via /proc/self/mem, which reports an
    unmapped address as an error instead of faulting; plain memory access where there is none)."""
    global _mem_fd, _mem_checked
    if not _mem_checked:
        with _lock:
            if not _mem_checked:
                try:
                    _mem_fd = os.open("/proc/self/mem", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                except OSError:
                    _mem_fd = None
                _mem_checked = True
    if addr <= 0 or addr + n > 2 ** 63:
        return None
    if _mem_fd is None:
        return ctypes.string_at(addr, n)
    try:
        data = os.pread(_mem_fd, n, addr)
    except (OSError, OverflowError):
        return None
    return data if len(data) == n else None


def read_cstring(addr: int, limit: int = MAX_STRING) -> bytes | None:
    """The NUL-terminated string at any address (at most `limit` bytes), read without faulting: page by
    page through _read_raw, stopping at the first unmapped page; None when addr itself is unreadable."""
    out = b""
    page = 4096
    at = addr
    while len(out) < limit:
        n = min(page - at % page, limit - len(out))
        chunk = _read_raw(at, n)
        if chunk is None:
            return out or None
        nul = chunk.find(b"\0")
        if nul >= 0:
            return out + chunk[:nul]
        out += chunk
        at += n
    return out


# ------------------------------------------------------------------ formatting
def _cap(n: int) -> int:
    return max(-MAX_WIDTH, min(MAX_WIDTH, n))


def format_cuda(fmt: bytes, args_addr: int) -> str:
    """Apply a C printf format to CUDA's argument buffer (each argument aligned to its size)."""
    out: list[str] = []
    pos = 0
    off = 0
    missing = False

    def take(size: int) -> bytes:
        nonlocal off, missing
        off = (off + size - 1) // size * size
        raw = _read_raw(args_addr + off, size) if args_addr else None
        off += size
        if raw is None:
            missing = True
            return b"\0" * size
        return raw

    def text(b: bytes) -> str:
        return b.decode("utf-8", errors="replace")

    for m in _SPEC.finditer(fmt):
        out.append(text(fmt[pos:m.start()]))
        pos = m.end()
        flags_b, width_b, prec_b, length_b, conv_b = m.groups()
        flags, conv, length = flags_b.decode(), conv_b.decode(), (length_b or b"").decode()
        if conv == "%":
            out.append("%")
            continue
        width: int | None = None
        prec: int | None = None
        if width_b == b"*":
            width = struct.unpack("<i", take(4))[0]
            if width < 0:  # C: a negative * width means left-justified
                flags += "-"
                width = -width
        elif width_b:
            width = int(width_b[:8])  # digits beyond 8 would be capped anyway
        if prec_b == b"*":
            prec = struct.unpack("<i", take(4))[0]
            if prec < 0:  # C: a negative * precision is taken as omitted
                prec = None
        elif prec_b is not None:
            prec = int(prec_b[:8] or b"0")
        width = None if width is None else _cap(width)
        prec = None if prec is None else _cap(prec)
        try:
            out.append(_convert(conv, flags, width, prec, length, take))
        except (ValueError, TypeError, OverflowError):
            out.append(text(m.group(0)))
    out.append(text(fmt[pos:]))
    s = "".join(out)
    if missing:  # say so rather than print zeros as if they were the values
        nl = "\n" if s.endswith("\n") else ""
        s = s[:len(s) - len(nl)] + " (printf: argument buffer unreadable)" + nl
    return s


def _convert(conv: str, flags: str, width: int | None, prec: int | None, length: str, take) -> str:
    def spec(c: str, fl: str = flags, pr: int | None = prec) -> str:
        return "%" + fl + ("" if width is None else str(width)) + ("" if pr is None else f".{pr}") + c

    if conv in "diouxXc":
        wide = length in ("l", "ll", "j", "z", "t")
        raw = take(8 if wide else 4)
        signed = conv in "di"
        val = int.from_bytes(raw, "little", signed=signed)
        if length in ("h", "hh"):  # C converts to (unsigned) short / char first
            bits = 16 if length == "h" else 8
            val &= (1 << bits) - 1
            if signed and val >= 1 << (bits - 1):
                val -= 1 << bits
        if conv == "c":
            return spec("s", flags.replace("#", "").replace("0", ""), None) % chr(val & 0xFF)
        if conv == "o" and "#" in flags:  # C's alternate octal form is a leading 0, Python's is 0o
            body = ("%" + (f".{prec}" if prec is not None else "") + "o") % val
            if not body.startswith("0"):
                body = "0" + body
            return spec("s", flags.replace("#", "").replace("0", ""), None) % body
        fl = flags if conv in "xX" else flags.replace("#", "")
        return spec("d" if conv in "diu" else conv, fl) % val
    if conv in "fFeEgGaA":
        val = struct.unpack("<d", take(8))[0]
        if conv in "aA":
            s = val.hex()
            return spec("s", flags.replace("#", "").replace("0", ""), None) % (s.upper() if conv == "A" else s)
        return spec(conv) % val
    if conv == "s":
        ptr = struct.unpack("<Q", take(8))[0]
        if ptr == 0:
            s = "(null)"
        else:
            limit = MAX_STRING if prec is None else min(prec, MAX_STRING)
            raw = read_string(ptr, limit)
            s = f"(bad pointer {ptr:#x})" if raw is None else raw.decode("utf-8", errors="replace")
        return spec("s", flags.replace("#", "").replace("0", "")) % s
    # %p
    ptr = struct.unpack("<Q", take(8))[0]
    return spec("s", flags.replace("#", "").replace("0", ""), None) % hex(ptr)


_muted = 0  # > 0: output is dropped (muted())
_held: list[bytes] | None = None  # None: output goes to sys.stdout; else what waits for flush_held()
_flush_lock = threading.Lock()


def hold_for_c_stdout() -> None:
    """From now on hold device output for flush_held(), which writes it to C's stdout (C programs)."""
    global _held
    with _lock:
        if _held is None:
            _held = []
            import atexit

            atexit.register(flush_held)  # what is still held when the program exits is not lost


def flush_held() -> None:
    """Write the held device output to C's stdout and flush that stream: a synchronization point."""
    if not _held:  # every launch calls this: nothing held (or not holding) costs one test, no lock
        return
    with _flush_lock:
        with _lock:
            if not _held:
                return
            data = b"".join(_held)
            _held.clear()
        libc = _libc()
        out = ctypes.c_void_p.in_dll(libc, "stdout")  # read each time: the program may have reopened it
        libc.fwrite(data, 1, len(data), out)
        libc.fflush(out)


_libc_handle: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL:
    global _libc_handle
    if _libc_handle is None:
        libc = ctypes.CDLL(None)
        libc.fwrite.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
        libc.fwrite.restype = ctypes.c_size_t
        libc.fflush.argtypes = [ctypes.c_void_p]
        _libc_handle = libc
    return _libc_handle


@contextlib.contextmanager
def muted() -> Iterator[None]:
    """Drop device printf output while this is active: ptxjit.trace's counting run must not print what
    the traced run prints again.  (Process-wide: a launch running concurrently in another Python thread
    is muted too.)"""
    global _muted
    with _lock:
        _muted += 1
    try:
        yield
    finally:
        with _lock:
            _muted -= 1


@ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
def printf_callback(fmt: int, args: int) -> int:
    try:
        raw = read_string(fmt or 0, MAX_FORMAT) if fmt else None
        if raw is None:
            s = f"(printf: bad format pointer {fmt or 0:#x})\n"
        else:
            s = format_cuda(raw, args or 0)
        with _lock:
            if _muted:
                pass
            elif _held is not None:
                _held.append(s.encode("utf-8", errors="replace"))
            else:
                sys.stdout.write(s)
                sys.stdout.flush()
        return len(s)
    except BaseException as e:  # never let an exception cross into native code
        try:
            sys.stderr.write(f"ptxjit: printf failed: {e}\n")
        except BaseException:
            pass
        return -1


PRINTF_ADDRESS = ctypes.cast(printf_callback, ctypes.c_void_p).value
