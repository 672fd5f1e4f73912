"""Blobs of the object store: reading them (verified, unverified, several at once in
threads), their SHA and size limits, and pygit2's errors turned into gitevals' own.

The git layer (``blobs`` -> ``repo`` -> ``trees``) is the one place that touches pygit2:
its types and its errors stop here (a failing libgit2 call raises ``GitError``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from gitevals.errors import GitError

if TYPE_CHECKING:
    import pygit2

LINK_MODE = 0o120000
EXEC_MODE = 0o100755
GITLINK_MODE = 0o160000
#: The largest file a working tree reads (yamlsafe.MAX_BYTES: cases, graders, settings);
#: ``goldens.jsonl`` may grow to ``MAX_GOLDENS``. Larger files are listed by ``refused``,
#: never read: a 3 GB file under the eval tree costs an ``lstat``, not 3 GB of memory.
MAX_FILE = 1024 * 1024
MAX_GOLDENS = 256 * 1024 * 1024
#: Blobs at least this large are read by ``read_blobs_unverified`` (threads, the pack
#: reader); below it a thread costs more than libgit2's plain read (benchmarks/bench_diff.py).
LARGE = 1 << 20


def git_blob_sha(data: bytes) -> str:
    """The SHA git would give ``data`` as a blob (``git hash-object``)."""
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def max_size(path: str) -> int:
    """The most bytes gitevals reads of the file at ``path``: JSON lines files (goldens,
    the drift suite's benchmark sources) may be as large as goldens."""
    return MAX_GOLDENS if path.endswith(".jsonl") else MAX_FILE


@contextmanager
def translated(action: str) -> Iterator[None]:
    """pygit2's errors as gitevals' own: no pygit2 exception leaves this module (libgit2
    reports some failures, a locked ref among them, as OSError)."""
    import pygit2

    try:
        yield
    except (pygit2.GitError, OSError) as exc:
        reason = str(exc).rstrip(": ")  # libgit2 ends some messages with ": "
        raise GitError(f"git could not {action}: {reason}; check the repository "
                       "(`git status`, `git fsck`) and try again") from exc


@contextmanager
def unverified() -> Iterator[None]:
    """libgit2 without re-hashing objects on read (git itself does not): strict hash
    verification doubles the cost of reading a large blob (a 44 MB goldens.jsonl); the
    objects come from this repository's own store."""
    import pygit2

    pygit2.settings.enable_strict_hash_verification(False)
    try:
        yield
    finally:
        pygit2.settings.enable_strict_hash_verification(True)


def blob_bytes(raw: pygit2.Repository, sha: str) -> bytes:
    """The content of blob ``sha``, verified."""
    import pygit2

    obj = raw[sha]
    if not isinstance(obj, pygit2.Blob):
        raise GitError(f"object {sha} is a {obj.type_str}, not a blob")
    return obj.data


def blob_size(raw: pygit2.Repository, oid: pygit2.Oid | str) -> int:
    """The size of a blob from its object header alone: listing a tree never inflates
    the blobs in it (a 44 MB goldens.jsonl costs nothing until it is read)."""
    return raw.odb.read_header(oid)[1]


def read_blob_unverified(raw: pygit2.Repository, sha: str) -> bytes:
    """Blob ``sha`` without libgit2 re-hashing it on read (see ``unverified``)."""
    with unverified():
        data: bytes = raw.odb.read(sha)[1]
    return data


def read_blobs_unverified(raw: pygit2.Repository, shas: list[str]) -> list[bytes]:
    """Several blobs at once (see ``read_blob_unverified``), the loose ones inflated in threads.

    ``zlib`` releases the GIL while it inflates, so with two large loose objects (a
    goldens.jsonl at two commits) both cores work. Packed ones are read from the pack
    files by ``packfile.read_packed`` (a delta base they share inflated once); whatever neither
    way yields, or yields at the wrong size, is left to libgit2.
    """
    import threading
    import zlib

    objects = Path(raw.path) / "objects"
    out: list[bytes | None] = [None] * len(shas)
    sizes = [raw.odb.read_header(sha)[1] for sha in shas]

    def inflate(i: int) -> None:
        # Inflate the "blob <size>\0" header on its own, then the body straight into
        # its final bytes object (no 40 MB copy to strip the header).
        header = b"blob %d\0" % sizes[i]
        try:
            d = zlib.decompressobj()
            if d.decompress((objects / shas[i][:2] / shas[i][2:]).read_bytes(),
                            len(header)) != header:
                return
            body = d.flush(sizes[i])  # the rest, into one buffer of the exact size
        except (OSError, zlib.error):
            return
        if len(body) == sizes[i]:
            out[i] = body

    threads = [threading.Thread(target=inflate, args=(i,)) for i in range(len(shas))[1:]]
    for t in threads:
        t.start()
    inflate(0)
    for t in threads:
        t.join()
    if any(data is None for data in out):
        from gitevals.git.packfile import read_packed

        packed = read_packed(objects, [sha for sha, data in zip(shas, out, strict=True)
                                       if data is None])
        out = [data if data is not None else packed.get(sha) for data, sha in
               zip(out, shas, strict=True)]
    return [data if data is not None and len(data) == size
            else read_blob_unverified(raw, sha)
            for data, sha, size in zip(out, shas, sizes, strict=True)]
