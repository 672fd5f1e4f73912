"""Files gitevals writes: atomic replacement and the user's cache directory."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path


def is_path(what: str) -> bool:
    """Whether a command's ``ARTIFACT|REV`` names a file: a ``.json`` name, or anything on
    disk that is not a directory (a FIFO or a device is then refused as not a regular
    file, never mistaken for a revision)."""
    return what.endswith(".json") or (os.path.exists(what) and not os.path.isdir(what))


def cache_dir(*parts: str) -> Path:
    """``$XDG_CACHE_HOME/gitevals/<parts...>`` (default ``~/.cache/gitevals``); not created."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "gitevals", *parts)


def write_atomic(path: Path, data: str | bytes, *, fsync: bool = True,
                 private: bool = False) -> None:
    """Write ``data`` (``str`` as UTF-8) to ``path`` through a temp file in the same
    directory and ``os.replace``: a reader sees the old file or the whole new one.

    The directory is made when missing; the temp file is removed when anything fails.
    ``fsync=False`` skips flushing to disk, for caches (a lost entry is only a miss).
    The file gets the mode of the file it replaces, else the one ``open(path, "w")``
    would give (``0o666`` less the umask): a report or a run is as shareable as any file
    the user writes. ``private=True`` keeps the temp file's ``0o600`` (caches).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    _refuse_special(path)
    try:
        fd, tmp = _temp_beside(path)
    except FileNotFoundError:  # first file in its directory: make it only then
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _temp_beside(path)
    try:
        if not private:
            os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _refuse_special(path: Path) -> None:
    """``OSError`` when ``path`` is (or links to) a device, FIFO or socket: the rename
    would put a regular file in its place (``report -o /dev/null`` run as root replaced
    the device), and a FIFO's reader would never get the data."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # absent (or unreadable: the write says why)
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise OSError(errno.EINVAL, "cannot replace what is not a regular file (a device, "
                      "FIFO or socket); name a regular file", str(path))


def _mode_for(path: Path) -> int:
    """The permission bits of the file at ``path``, or ``0o666`` less the umask for a new
    one (setuid, setgid and sticky bits are never carried over)."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read where that changes nothing (``os.umask`` can only be
    read by setting it, a race with any thread creating a file meanwhile): Linux's
    ``/proc/self/status``; else ``0o022``, the common default."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _temp_beside(path: Path) -> tuple[int, str]:
    # A hidden name ending in .tmp: no glob of ours matches it (results/*.json, the
    # schema cache's pruning), and mkstemp never reuses a name a concurrent writer holds.
    # Imported here: tempfile (and random) would cost the commit hook's start-up ~1 ms.
    import tempfile

    return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
