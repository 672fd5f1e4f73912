"""Named benchmark sources of the drift suite, read from a local cache (the IO edge).

A slice's ``source`` is a path in the tree, or a bare name (``source: mmlu``, as the
goldens document writes it): ``<cache>/<name>.jsonl``, the cache being
``GITEVALS_BENCHMARK_CACHE`` else ``~/.cache/gitevals/benchmarks``. Nothing is ever
downloaded: the file is put there by whoever sets up the machine (a CI cache step).

The file is outside the commit, so the run pins it by its content instead: the git
blob id of its bytes under ``benchmark:<name>`` in the goldens' ``files``, which a
baseline compares as it compares every other file of the measuring stick.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

#: A named source: a bare name, never a path (no ``/``, no ``.``).
NAMED = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
#: The key that pins a named source in a run's files (never a path of the tree).
PIN = "benchmark:"
#: The largest named source read (a benchmark of a few million rows).
MAX_BYTES = 2 << 30


def is_named(source: str) -> bool:
    return NAMED.fullmatch(source) is not None


def root() -> Path:
    from gitevals.files import cache_dir

    given = os.environ.get("GITEVALS_BENCHMARK_CACHE")
    return Path(os.path.expanduser(given)) if given else cache_dir("benchmarks")


def path_of(name: str) -> Path:
    return root() / f"{name}.jsonl"


def read(name: str) -> tuple[bytes | None, str]:
    """The bytes of the named source (None when it cannot be read) and, when it cannot,
    why, naming the path: one phrase."""
    path = path_of(name)
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            return None, f"{path} is not a regular file"
        if st.st_size > MAX_BYTES:
            return None, f"{path} is {st.st_size:,} bytes, over the bound of {MAX_BYTES:,}"
        return path.read_bytes(), ""
    except FileNotFoundError:
        return None, f"{path} does not exist"
    except OSError as exc:
        return None, f"{path} cannot be read ({exc.strerror or exc})"


def stamp(name: str) -> str:
    """Size and modification time of the named source ('' when absent): what a lint
    cache keys on instead of reading a large file again."""
    try:
        st = path_of(name).stat()
    except OSError:
        return ""
    return f"{st.st_size}:{st.st_mtime_ns}"


def blob_sha(data: bytes) -> str:
    """The git blob id of ``data`` (``git hash-object``): the named source's pin."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
