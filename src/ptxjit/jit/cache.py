"""The on-disk translation cache.

An entry holds a translation's object code and the metadata the runtime needs, under a key made of
everything that can change the code: PTX content hash, kernel, binding (block shape), ptxjit
version, LLVM version and host CPU features.  Writes are atomic (temporary file + rename), so
concurrent processes are safe; every entry carries a SHA-256 of its payload, so a truncated or
corrupted file is detected, deleted and rebuilt — never loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from pathlib import Path

from ptxjit.jit.cache_dir import cache_root

MAGIC = b"PTXJITC1"
_HEADER = struct.Struct("<8s32sQQ")  # magic, sha256(payload), len(meta), len(object)


def kernels_dir() -> Path:
    return cache_root() / "kernels"


def cache_key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def load(key: str) -> tuple[dict, bytes] | None:
    """(metadata, object code) for key, or None if absent or damaged (a damaged entry is removed)."""
    path = kernels_dir() / f"{key}.bin"
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        magic, digest, nmeta, nobj = _HEADER.unpack_from(data)
        payload = data[_HEADER.size:]
        if magic != MAGIC or len(payload) != nmeta + nobj or hashlib.sha256(payload).digest() != digest:
            raise ValueError("damaged cache entry")
        meta = json.loads(payload[:nmeta])
        return meta, payload[nmeta:]
    except (ValueError, struct.error):
        try:
            path.unlink()
        except OSError:
            pass
        return None


def store(key: str, meta: dict, obj: bytes) -> None:
    """Write an entry atomically; failures (read-only disk, ...) only cost the cache."""
    d = kernels_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        m = json.dumps(meta).encode()
        payload = m + obj
        blob = _HEADER.pack(MAGIC, hashlib.sha256(payload).digest(), len(m), len(obj)) + payload
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, d / f"{key}.bin")
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


def info() -> dict:
    d = kernels_dir()
    files = list(d.glob("*.bin")) if d.exists() else []
    return {"directory": str(d), "entries": len(files), "bytes": sum(f.stat().st_size for f in files)}


def clear() -> int:
    d = kernels_dir()
    n = 0
    if d.exists():
        for f in d.glob("*"):
            try:
                f.unlink()
                n += 1
            except OSError:
                pass
    return n
