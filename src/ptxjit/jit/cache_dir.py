"""Where ptxjit keeps its on-disk caches: $PTXJIT_CACHE_DIR, else the per-user cache directory."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    env = os.environ.get("PTXJIT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ptxjit"
