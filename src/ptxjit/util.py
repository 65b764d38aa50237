"""Small helpers shared across stages."""

from __future__ import annotations

import gc
import os
import weakref
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a compiler stage allocates many small objects: its
    generational scans of the large, long-lived IR would otherwise make the stage superlinear."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# os.environ.get costs ~0.7 us (key encoding, value decoding); a launch reads two variables.  On
# POSIX, os.environ keeps its bytes in `_data` (updated by every assignment through os.environ)
ENV_DATA = getattr(os.environ, "_data", None) if os.name == "posix" else None


def getenv(name: str, key: bytes) -> str | None:
    """os.environ.get(name) for `key` == os.fsencode(name), without the encoding on POSIX."""
    if ENV_DATA is None:
        return os.environ.get(name)
    v = ENV_DATA.get(key)
    return None if v is None else os.fsdecode(v)


class PerObject:
    """A cache one subsystem keeps for each object (a Kernel: its probe plans, its tiers' states, ...) in
    a map of its own, beside the object instead of in its attributes; an object's entries go with it."""

    def __init__(self) -> None:
        self._maps: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def of(self, obj) -> dict:
        """obj's entries in this cache (an empty dict at first)."""
        try:
            return self._maps[obj]
        except KeyError:
            return self._maps.setdefault(obj, {})
