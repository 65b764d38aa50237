"""The shared functions baseline translations call (lower/shared_code.py): each compiled once per process
(from the disk cache after the first time) and bound to its symbol with llvm.add_symbol before a
translation that names it is linked, the way the heap's and the texture table's symbols are."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

import llvmlite.binding as llvm

from ptxjit.jit import cache
from ptxjit.jit.engine import BASELINE, NativeCode, load_object, optimize_to_object
from ptxjit.lower.module import build_shared_module

_lock = threading.Lock()
_bound: dict[str, NativeCode] = {}  # symbol -> its code, kept alive for the process


def ensure(symbols: Iterable[str], cache_key: Callable[[str], str]) -> None:
    """Bind every symbol of `symbols` (names lower/shared_code.py made) to its compiled code;
    `cache_key(symbol)`: its key in the disk cache (translate.py's, bound to this translator's source)."""
    for symbol in symbols:
        if symbol not in _bound:
            with _lock:
                if symbol not in _bound:
                    _bound[symbol] = _compile(symbol, cache_key(symbol))


def _compile(symbol: str, key: str) -> NativeCode:
    hit = cache.load(key)
    native = None
    if hit is not None:
        try:
            native = load_object(hit[1], symbol, symbol)
        except Exception:  # unusable object (another LLVM build): compiled again below
            native = None
    if native is None:
        obj = optimize_to_object(str(build_shared_module(symbol)), opt_level=BASELINE, name=symbol)
        native = load_object(obj, symbol, symbol)
        cache.store(key, {"shared_code": symbol}, obj)
    llvm.add_symbol(symbol, native.address)
    return native


def bound() -> list[str]:
    """The symbols bound in this process so far."""
    return sorted(_bound)
