"""Where ptxjit keeps its on-disk caches ($PTXJIT_CACHE_DIR, else the per-user cache directory), and
whether that place can be trusted.

The translation cache holds native code that is loaded and run in the user's process, so whoever can
write to the directory can run code as the user.  Like ssh with ~/.ssh, ptxjit refuses a directory
that is not owned by the user or that group or others can write to (and one under an ancestor that
anyone may write to without the sticky bit, which lets them rename it away and put their own in its
place).  A refused or unusable directory costs only the disk cache: ptxjit warns once and runs
without it.  Files are only read through `read_regular_file`: no symlinks, FIFOs or devices, and at
most a given size.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import warnings
from pathlib import Path

from ptxjit import config
from ptxjit.errors import PtxjitWarning

_warned: set[str] = set()
_warn_lock = threading.Lock()


def cache_root() -> Path:
    env = config.CACHE_DIR.raw()
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError):  # no HOME and no passwd entry (bare containers)
            import tempfile

            return Path(tempfile.gettempdir()) / f"ptxjit-{_euid()}"  # checked like any other: must be ours
    return Path(base) / "ptxjit"


def _euid() -> int:
    """The user the cache must belong to (a function so that tests can pretend to be someone else)."""
    return os.geteuid() if hasattr(os, "geteuid") else -1


def warn_once(key: str, message: str) -> None:
    """Warn about the cache once per process for each key (a cache problem repeats at every kernel)."""
    with _warn_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(f"ptxjit: {message}", PtxjitWarning, stacklevel=3)


def untrusted_reason(path: Path) -> str | None:
    """Why an existing directory must not be used for cached code, or None if it may."""
    if _euid() < 0:  # no POSIX ownership (Windows): nothing to check
        return None
    try:
        st = os.stat(path)
    except OSError as e:
        return f"cannot stat it ({e.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != _euid():
        return f"it is owned by uid {st.st_uid}, not by you (uid {_euid()})"
    if st.st_mode & 0o022:
        who = {0o022: "group and others", 0o020: "group", 0o002: "others"}[st.st_mode & 0o022]
        return f"it is writable by {who} (mode {stat.S_IMODE(st.st_mode):#o}; fix with chmod 700 {path})"
    for parent in Path(os.path.abspath(path)).parents:
        try:
            pst = os.stat(parent)
        except OSError:
            continue
        if pst.st_mode & 0o002 and not pst.st_mode & stat.S_ISVTX:
            return f"its parent {parent} is writable by everyone without the sticky bit"
    return None


def trusted_dir(path: Path, create: bool = True) -> Path | None:
    """`path` if cached code may be read from and written to it (created with mode 0700 if missing and
    `create`); None otherwise, after a one-time warning that names the directory and the reason."""
    try:
        if create:
            os.makedirs(path, mode=0o700, exist_ok=True)
        elif not os.path.lexists(path):
            return None
    except OSError as e:
        warn_once(f"unusable:{path}", f"cannot create the cache directory {path} ({e.strerror or e}); "
                                      f"running without the disk cache")
        return None
    reason = untrusted_reason(path)
    if reason is not None:
        warn_once(f"untrusted:{path}", f"not using the cache directory {path}: {reason}; "
                                       f"running without the disk cache")
        return None
    return path


class NotRegularFile(Exception):
    """A cache file that must not be read (symlink, FIFO, device, directory, too large, foreign)."""


def read_regular_file(path: Path, max_bytes: int) -> bytes | None:
    """The content of `path` if it is a regular file of at most max_bytes owned by the user; None if it
    does not exist.  Raises NotRegularFile (with the reason) for anything else, without reading it:
    the file is opened with O_NOFOLLOW (a symlink fails) and O_NONBLOCK (a FIFO does not block the
    open) and checked with fstat on the open descriptor (no race between check and read)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | \
        getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegularFile("it is a symbolic link") from None
        raise NotRegularFile(f"it cannot be opened ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or
                    stat.S_ISBLK(st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode) else
                    "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise NotRegularFile(f"it is {kind}")
        if _euid() >= 0 and st.st_uid != _euid():
            raise NotRegularFile(f"it is owned by uid {st.st_uid}")
        if st.st_size > max_bytes:
            raise NotRegularFile(f"it is {st.st_size} bytes, more than the {max_bytes} an entry may have")
        chunks = []
        left = st.st_size
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)
    finally:
        os.close(fd)
