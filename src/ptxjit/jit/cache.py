"""The on-disk translation cache.

An entry holds a translation's object code and the metadata the runtime needs, under a key made of
everything that can change the code: PTX content hash, kernel, binding (block shape), ptxjit
version, LLVM version and host CPU features.  Object code is run in the user's process, so:

- the directory must be trusted (cache_dir.trusted_dir: owned by the user, not writable by others),
  otherwise ptxjit warns once and runs without the disk cache;
- entries are read only if they are regular files of at most MAX_ENTRY_BYTES (no symlinks, FIFOs,
  devices: cache_dir.read_regular_file);
- every entry carries a SHA-256 of its payload, and the payload starts with the digest of the entry's
  own key: a truncated, corrupted or foreign entry (one copied or renamed from another key) is
  detected, removed with a one-time warning and rebuilt — never loaded;
- writes are atomic (temporary file + rename), so concurrent processes are safe.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import tempfile
from pathlib import Path

from ptxjit.jit.cache_dir import NotRegularFile, cache_root, read_regular_file, trusted_dir, untrusted_reason, warn_once

MAGIC = b"PTXJITC2"  # C1 entries (no key binding) are not read: they count as damaged and are rebuilt
_HEADER = struct.Struct("<8s32s32sQQ")  # magic, sha256(payload), key digest, len(meta), len(object)
MAX_ENTRY_BYTES = 64 << 20  # a kernel's object code is kilobytes to a few megabytes
_ENTRY = re.compile(r"[0-9a-f]{64}\.bin")


def kernels_dir() -> Path:
    return cache_root() / "kernels"


# the directory found trusted last, with its identity then: every translation reads and writes the cache,
# and the full check (the directory, its owner, its mode, every parent's) costs a quarter millisecond
_trusted: tuple[Path, tuple[int, int, int, int]] | None = None


def _identity(path: Path) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_uid, st.st_mode


def _usable_dir(create: bool) -> Path | None:
    global _trusted
    kernels = cache_root() / "kernels"
    seen = _trusted
    if seen is not None and seen[0] == kernels and _identity(kernels) == seen[1]:
        return kernels  # the same directory, owner and mode as when it was checked in full
    root = trusted_dir(cache_root(), create)
    if root is None:
        return None
    d = trusted_dir(kernels, create)
    if d is not None:
        ident = _identity(d)
        _trusted = (d, ident) if ident is not None else None
    return d


def cache_key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def _key_digest(key: str) -> bytes:
    return hashlib.sha256(b"ptxjit-cache-key\0" + key.encode()).digest()


def _discard(path: Path, why: str) -> None:
    """Remove a bad entry (unlink removes a symlink or FIFO itself, never what it points to)."""
    warn_once(f"entry:{why}", f"ignored the translation cache entry {path}: {why}; "
                                            f"the kernel is translated again")
    try:
        if not path.is_dir():
            path.unlink()
    except OSError:
        pass


def load(key: str) -> tuple[dict, bytes] | None:
    """(metadata, object code) for key, or None if absent, damaged or not to be trusted."""
    d = _usable_dir(create=False)
    if d is None:
        return None
    path = d / f"{key}.bin"
    try:
        data = read_regular_file(path, MAX_ENTRY_BYTES)
    except NotRegularFile as e:
        _discard(path, str(e))
        return None
    if data is None:
        return None
    try:
        magic, digest, kd, nmeta, nobj = _HEADER.unpack_from(data)
        payload = data[_HEADER.size:]
        if magic != MAGIC or len(payload) != nmeta + nobj or hashlib.sha256(payload).digest() != digest:
            raise ValueError("it is damaged (truncated, corrupted or of an older format)")
        if kd != _key_digest(key):
            raise ValueError("it belongs to another key (copied or renamed)")
        meta = json.loads(payload[:nmeta])
        if not isinstance(meta, dict):
            raise ValueError("its metadata is malformed")
        return meta, payload[nmeta:]
    except (ValueError, struct.error) as e:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        _discard(path, str(e) if isinstance(e, ValueError) and str(e).startswith("it") else "it is damaged")
        return None


def store(key: str, meta: dict, obj: bytes) -> None:
    """Write an entry atomically; failures (read-only disk, ...) only cost the cache (warned once)."""
    d = _usable_dir(create=True)
    if d is None:
        return
    m = json.dumps(meta).encode()
    payload = m + obj
    if _HEADER.size + len(payload) > MAX_ENTRY_BYTES:
        return
    blob = _HEADER.pack(MAGIC, hashlib.sha256(payload).digest(), _key_digest(key), len(m), len(obj)) + payload
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")  # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, d / f"{key}.bin")
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as e:
        warn_once(f"write:{d}", f"cannot write to the translation cache {d} ({e.strerror or e}); "
                                f"translations are not kept for other processes")


def _entries(d: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(d) as it:
            return list(it)
    except OSError:
        return []


def info() -> dict:
    d = kernels_dir()
    n = size = 0
    for e in _entries(d):
        if _ENTRY.fullmatch(e.name) and e.is_file(follow_symlinks=False):
            try:
                size += e.stat(follow_symlinks=False).st_size
                n += 1
            except OSError:
                pass
    root = cache_root()

    reason = untrusted_reason(root) if os.path.lexists(root) else None
    if reason is None and os.path.lexists(d):
        reason = untrusted_reason(d)
    return {"directory": str(d), "entries": n, "bytes": size,
            "status": "usable" if reason is None else f"not used: {reason}"}


def clear() -> int:
    """Remove the cache's entries (and stray temporary files): only names the cache writes, never
    following links, so a misdirected $PTXJIT_CACHE_DIR cannot make it delete other files."""
    d = kernels_dir()
    n = 0
    if os.path.islink(d):
        return 0
    for e in _entries(d):
        if not (_ENTRY.fullmatch(e.name) or e.name.startswith(".tmp-")) or e.is_dir(follow_symlinks=False):
            continue
        try:
            os.unlink(e.path)
            n += 1
        except OSError:
            pass
    return n
