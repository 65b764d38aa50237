"""CUDA device printf: format vprintf(fmt, args) calls on the host's stdout."""

from __future__ import annotations

import ctypes
import re
import struct
import sys
import threading

_SPEC = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|j|z|t|L)?([diouxXcsfFeEgGaAp%])")
_lock = threading.Lock()


def format_cuda(fmt: bytes, args_addr: int) -> str:
    """Apply a C printf format to CUDA's argument buffer (each argument aligned to its size)."""
    text = fmt.decode("utf-8", errors="replace")
    out: list[str] = []
    pos = 0
    off = 0

    def take(size: int) -> bytes:
        nonlocal off
        off = (off + size - 1) // size * size
        raw = ctypes.string_at(args_addr + off, size) if args_addr else b"\0" * size
        off += size
        return raw

    for m in _SPEC.finditer(text):
        out.append(text[pos:m.start()])
        pos = m.end()
        flags, width, prec, length, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if width == "*":
            width = str(struct.unpack("<i", take(4))[0])
        if prec == "*":
            prec = str(struct.unpack("<i", take(4))[0])
        spec = "%" + flags + (width or "") + ("." + prec if prec is not None else "")
        if conv in "diouxXc":
            wide = length in ("l", "ll", "j", "z", "t")
            raw = take(8 if wide else 4)
            signed = conv in "di"
            val = int.from_bytes(raw, "little", signed=signed)
            if not signed and length in ("h", "hh"):
                val &= 0xFFFF if length == "h" else 0xFF
            if conv == "c":
                out.append((spec + "c") % chr(val & 0xFF))
            else:
                out.append((spec + ("d" if conv in "diu" else conv)) % val)
        elif conv in "fFeEgGaA":
            val = struct.unpack("<d", take(8))[0]
            if conv in "aA":
                s = val.hex()
                out.append(s.upper() if conv == "A" else s)
            else:
                out.append((spec + conv) % val)
        elif conv == "s":
            ptr = struct.unpack("<Q", take(8))[0]
            s = ctypes.string_at(ptr).decode("utf-8", errors="replace") if ptr else "(null)"
            out.append((spec + "s") % s)
        elif conv == "p":
            ptr = struct.unpack("<Q", take(8))[0]
            out.append((spec + "s") % hex(ptr))
    out.append(text[pos:])
    return "".join(out)


@ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
def printf_callback(fmt: int, args: int) -> int:
    try:
        s = format_cuda(ctypes.string_at(fmt), args or 0)
        with _lock:
            sys.stdout.write(s)
            sys.stdout.flush()
        return len(s)
    except Exception as e:  # never let an exception cross into native code
        sys.stderr.write(f"ptxjit: printf failed: {e}\n")
        return -1


PRINTF_ADDRESS = ctypes.cast(printf_callback, ctypes.c_void_p).value
