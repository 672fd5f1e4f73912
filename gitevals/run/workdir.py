"""Temporary work directories for runs: a materialized commit, removed afterwards even when
the process that made it was killed.

Each directory ``<tmp>/gitevals-<kind>-XXXX/`` holds ``tree/`` (the commit's files) and
``owner.lock``, on which its process holds an exclusive ``flock`` while it lives. The
kernel drops the lock when the process dies, however it dies (``kill -9`` included), so
the next run can tell a stale directory from one in use by taking the lock without
waiting: whoever gets it removes the directory. No pid files, so no pid reuse.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

_LOCK = "owner.lock"


@contextlib.contextmanager
def workdir(kind: str) -> Iterator[Path]:
    """A fresh ``tree/`` directory to materialize a commit into, removed on exit; stale
    directories of earlier killed runs are removed first."""
    remove_stale()
    base = Path(tempfile.mkdtemp(prefix=f"gitevals-{kind}-"))
    # Locked before it takes its name: another run never sees an unlocked owner.lock.
    fd = os.open(base / ".owner.tmp", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.replace(base / ".owner.tmp", base / _LOCK)
        tree = base / "tree"
        tree.mkdir()
        yield tree
    finally:
        shutil.rmtree(base, ignore_errors=True)
        os.close(fd)


def remove_stale(parent: Path | None = None) -> list[Path]:
    """Remove ``gitevals-*`` work directories whose owner is gone; the ones removed."""
    removed = []
    for base in Path(parent or tempfile.gettempdir()).glob("gitevals-*-*"):
        if base.is_dir() and not base.is_symlink() and _orphaned(base):
            shutil.rmtree(base, ignore_errors=True)
            removed.append(base)
    return removed


def _orphaned(base: Path) -> bool:
    """True when nobody holds ``base``'s lock (its owner died); the lock is taken then."""
    try:
        fd = os.open(base / _LOCK, os.O_RDWR | os.O_NOFOLLOW)
    except OSError:
        return False  # no lock file: not ours, or still being set up: leave it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # held: a live run
    finally:
        os.close(fd)
    return True
