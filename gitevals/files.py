"""Files gitevals writes: atomic replacement and the user's cache directory."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """``$XDG_CACHE_HOME/gitevals/<parts...>`` (default ``~/.cache/gitevals``); not created."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "gitevals", *parts)


def write_atomic(path: Path, data: str | bytes, *, fsync: bool = True) -> None:
    """Write ``data`` (``str`` as UTF-8) to ``path`` through a temp file in the same
    directory and ``os.replace``: a reader sees the old file or the whole new one.

    The directory is made when missing; the temp file is removed when anything fails.
    ``fsync=False`` skips flushing to disk, for caches (a lost entry is only a miss).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd, tmp = _temp_beside(path)
    except FileNotFoundError:  # first file in its directory: make it only then
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _temp_beside(path)
    try:
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


def _temp_beside(path: Path) -> tuple[int, str]:
    # A hidden name ending in .tmp: no glob of ours matches it (results/*.json, the
    # schema cache's pruning), and mkstemp never reuses a name a concurrent writer holds.
    # Imported here: tempfile (and random) would cost the commit hook's start-up ~1 ms.
    import tempfile

    return tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
