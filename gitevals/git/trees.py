"""``Tree``: the files of a working tree, the index, or a revision, behind one interface.

Everything downstream reads files through a ``Tree`` and never cares whether they came
from disk or git objects: a publish check of a commit reads exactly what the commit
holds, however the working tree looks. ``open_tree`` gives the tree a command reads.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import posixpath
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from gitevals.errors import RevisionError, UsageError
from gitevals.git.blobs import (
    EXEC_MODE,
    GITLINK_MODE,
    LINK_MODE,
    blob_bytes,
    blob_size,
    git_blob_sha,
    max_size,
    translated,
)
from gitevals.git.repo import Repo, commit_of, open_repo, require_repo, under

if TYPE_CHECKING:
    import pygit2

_KINDS = ((stat.S_ISLNK, "a symlink"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a directory"))


@dataclass(frozen=True)
class Entry:
    """One file of a tree: repo-relative posix ``path``, ``sha`` of its blob, ``size``."""

    path: str
    sha: str
    size: int
    is_link: bool = False
    executable: bool = False


def _over(size: int, path: str) -> str:
    return f"{size} bytes, over the {max_size(path) >> 20} MiB limit"


def _kind(mode: int) -> str | None:
    """What a non-regular directory entry is ("a symlink", "a FIFO"...); None for a file."""
    return next((what for test, what in _KINDS if test(mode)), None)


class Tree:
    """What every reader answers, whatever it reads. ``label`` names the source in
    messages; ``commit`` and ``tree_sha`` are set for a revision only."""

    label: str = ""
    commit: str | None = None
    tree_sha: str | None = None

    @property
    def location(self) -> str:
        """The absolute work dir this tree belongs to: it names the lint cache's manifest,
        so the working tree, the index and the revisions of one checkout share it."""
        raise NotImplementedError

    def entries(self, prefix: str = "") -> list[Entry]:
        """Every file under directory ``prefix`` ('' = all), sorted by path."""
        raise NotImplementedError

    def entry(self, path: str) -> Entry | None:
        """The file at ``path``, or None when it is absent or not a file."""
        raise NotImplementedError

    def read(self, path: str) -> bytes | None:
        """The bytes of ``path``, or None when there is no such file."""
        raise NotImplementedError

    def blob_shas(self, prefix: str = "") -> dict[str, str]:
        """``path -> blob sha`` of the regular files at or under ``prefix``, sorted by path.

        Nothing is sized: a lint or a diff needs only the SHAs to tell what changed. A
        ``prefix`` ending in "/" names a directory only. Symlinks are left out: their
        blob is a target path, never a case, grader or goldens file.
        """
        raise NotImplementedError

    def blob_sha(self, path: str) -> str | None:
        """The blob SHA of the file or symlink at ``path`` (None when absent), unsized."""
        raise NotImplementedError

    def hashed(self, entry: Entry) -> str:
        """The git blob SHA of ``entry`` even when it is a working-tree file over
        ``max_size``, whose ``sha`` only names its size and time: such a file is streamed
        through the hash (never held whole). A task's file map wants it; lint never
        reads such a file and keeps ``entry.sha``."""
        return entry.sha

    def read_blobs(self, shas: Sequence[str]) -> list[bytes]:
        """The content of blobs this tree answered SHAs for, in the order asked."""
        raise NotImplementedError

    def too_large(self, listed: dict[str, str]) -> dict[str, str]:
        """``path -> why`` for the files of ``listed`` (``path -> sha``, as ``blob_shas``
        gives them) over ``max_size``, found from sizes alone, before anything is read."""
        return {}

    def refused(self, prefix: str) -> dict[str, str]:
        """``path -> why`` for what gitevals will not read at or under ``prefix``, sorted.

        Regular files only are read: a symlink (its own or one of ``prefix``'s parents),
        a submodule, a FIFO, socket or device, and a working-tree file over ``max_size``
        are listed here (and left out of ``blob_shas``) so lint can refuse them.
        """
        raise NotImplementedError

    def exists(self, path: str) -> bool:
        """True when ``path`` is a file or symlink, or a directory that holds one."""
        return self.entry(path) is not None or bool(self.entries(path))

    def files(self, prefix: str = "") -> list[str]:
        """The paths of ``entries(prefix)``."""
        return [e.path for e in self.entries(prefix)]


# -- the working tree ---------------------------------------------------------------


class WorkingTree(Tree):
    """Files on disk below ``root`` (a repo's work dir, or any directory).

    A file's SHA costs reading it, so the tree keeps the bytes of every file it hashed
    (by SHA): ``read_blobs`` after ``blob_shas`` reads no file twice. That one read per
    file is what keeps a working-tree lint as fast as ``--rev`` (benchmarks/bench_lint.py).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._top = str(root)
        self.label = "working tree"
        self._kept: dict[str, bytes] = {}

    @property
    def location(self) -> str:
        return os.path.abspath(str(self.root))

    def _keep(self, data: bytes) -> str:
        sha = git_blob_sha(data)
        self._kept[sha] = data
        return sha

    def _stat(self, path: str) -> os.stat_result | None:
        try:
            return os.lstat(self.root / path)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def entries(self, prefix: str = "") -> list[Entry]:
        out = [e for path, _ in self._scan(prefix) if (e := self.entry(path))]
        out.sort(key=lambda e: e.path)
        return out

    def entry(self, path: str) -> Entry | None:
        st = None if any(self._linked_parents(path)) else self._stat(path)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(self.root / path).encode()
            return Entry(path, self._keep(target), len(target), is_link=True)
        if not stat.S_ISREG(st.st_mode):
            return None
        data = self.read(path)
        if data is None:  # over its size limit: named by size and time, never read
            return Entry(path, f"size:{st.st_size}:{st.st_mtime_ns}", st.st_size)
        return Entry(path, self._keep(data), st.st_size, executable=bool(st.st_mode & 0o111))

    def hashed(self, entry: Entry) -> str:
        if entry.is_link or entry.size <= max_size(entry.path):
            return entry.sha
        return self._stream_sha(entry.path) or entry.sha

    def _stream_sha(self, path: str) -> str | None:
        """``git_blob_sha`` of the regular file ``path`` read 1 MiB at a time; None when
        it is no regular file any more, or changed size while it was read."""
        if any(self._linked_parents(path)) or (fd := self._open(path)) is None:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            h = hashlib.sha1(b"blob %d\0" % st.st_size)
            left = st.st_size
            while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
                h.update(chunk)
                left -= len(chunk)
            return h.hexdigest() if left == 0 and not os.read(fd, 1) else None
        except OSError:
            return None
        finally:
            os.close(fd)

    def _open(self, path: str) -> int | None:
        """A descriptor of ``path`` that never follows a link nor blocks on a FIFO."""
        try:
            return os.open(os.path.join(self._top, path),
                           os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None

    def read(self, path: str) -> bytes | None:
        """The bytes of the regular file ``path`` (None for anything else, or one over
        ``max_size``): a FIFO would block the read, a symlink may lead out of the tree
        (``path`` itself or a directory above it)."""
        return None if any(self._linked_parents(path)) else self._read(path)

    def _read(self, path: str, st: os.stat_result | None = None) -> bytes | None:
        """``read`` for a path whose directories are known to be no links (a scan's, with
        its ``lstat`` as ``st``). O_NONBLOCK: a FIFO swapped in after the ``lstat`` reads
        as empty instead of blocking; at most ``max_size`` + 1 bytes are ever read."""
        if (fd := self._open(path)) is None:
            return None
        try:
            if st is None:
                st = os.fstat(fd)
            limit = max_size(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
                return None
            data = os.read(fd, st.st_size + 1)  # one call for a file that did not grow
            while len(data) > st.st_size and len(data) <= limit and (
                    more := os.read(fd, limit + 1 - len(data))):
                data += more
            return data
        except OSError:
            return None
        finally:
            os.close(fd)

    def blob_shas(self, prefix: str = "") -> dict[str, str]:
        out: dict[str, str] = {}
        for path, st in self._scan(prefix):
            if stat.S_ISREG(st.st_mode) and (data := self._read(path, st)) is not None:
                out[path] = self._keep(data)
        return dict(sorted(out.items()))

    def refused(self, prefix: str) -> dict[str, str]:
        out = dict(self._linked_parents(prefix))
        if out:
            return out
        for path, st in self._scan(prefix):
            what = _kind(st.st_mode)
            if what is None and st.st_size > max_size(path):
                what = _over(st.st_size, path)
            if what is not None:
                out[path] = what
        return dict(sorted(out.items()))

    def _linked_parents(self, prefix: str) -> Iterator[tuple[str, str]]:
        """The first directory above ``prefix`` that is a symlink (or no directory)."""
        parts = [p for p in prefix.strip("/").split("/") if p]
        for n in range(1, len(parts)):
            st = self._stat("/".join(parts[:n]))
            if st is not None and not stat.S_ISDIR(st.st_mode):
                yield "/".join(parts[:n]), _kind(st.st_mode) or "a file"
                return

    def _scan(self, prefix: str) -> Iterator[tuple[str, os.stat_result]]:
        """``(path, lstat)`` of every non-directory at or under ``prefix``: symlinks are
        listed, never followed (``.git`` left out)."""
        if any(self._linked_parents(prefix)):
            return  # its files are elsewhere: ``refused`` names the link
        top = prefix.strip("/")
        st = self._stat(top) if top else None
        if top and (st is None or not stat.S_ISDIR(st.st_mode)):
            if st is not None and not prefix.endswith("/"):
                yield top, st
            return
        stack = [top]
        while stack:
            rel = stack.pop()
            try:
                found = sorted(os.scandir(self.root / rel), key=lambda d: d.name)
            except OSError:
                continue
            for d in found:
                path = f"{rel}/{d.name}" if rel else d.name
                if d.is_dir(follow_symlinks=False):
                    if d.name != ".git":
                        stack.append(path)
                    continue
                yield path, d.stat(follow_symlinks=False)

    def blob_sha(self, path: str) -> str | None:
        e = self.entry(path)
        return e.sha if e else None

    def read_blobs(self, shas: Sequence[str]) -> list[bytes]:
        """The kept bytes (KeyError for a SHA this tree never answered): a directory has
        no object store to look a SHA up in."""
        return [self._kept[sha] for sha in shas]

    def exists(self, path: str) -> bool:
        # A look at the directory entry: no hashing of a whole directory to see it exists.
        return os.path.lexists(self.root / path)


# -- the trees of git objects -------------------------------------------------------


class _GitTree(Tree):
    """A tree of git objects of ``repo``: blobs are read by SHA from its object store."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo

    @property
    def location(self) -> str:
        return self.repo.location

    def read(self, path: str) -> bytes | None:
        """The bytes of the regular file ``path`` (a symlink's blob is a target, not content)."""
        e = self.entry(path)
        return None if e is None or e.is_link else self.repo.read_blobs([e.sha])[0]

    def read_blobs(self, shas: Sequence[str]) -> list[bytes]:
        return self.repo.read_blobs(shas)

    def too_large(self, listed: dict[str, str]) -> dict[str, str]:
        sizes = zip(listed, self.repo.blob_sizes(list(listed.values())), strict=True)
        return {path: _over(size, path) for path, size in sizes if size > max_size(path)}


#: What a git tree holds besides regular files and directories.
_GIT_KINDS = {LINK_MODE: "a symlink", GITLINK_MODE: "a submodule"}


def _prefixes(prefix: str) -> list[str]:
    """The directories above ``prefix``: ``a/b/c`` -> ``["a", "a/b"]``."""
    parts = [p for p in prefix.strip("/").split("/") if p]
    return ["/".join(parts[:n]) for n in range(1, len(parts))]


def _index_of(raw: pygit2.Repository) -> pygit2.Index:
    """The index git is using now: ``git commit -a`` / ``git commit PATH`` run hooks
    with GIT_INDEX_FILE pointing at a temporary index, which is what will be committed."""
    import pygit2

    override = os.environ.get("GIT_INDEX_FILE")
    with translated("read the index"):
        index: pygit2.Index = (pygit2.Index(str(Path(override).resolve())) if override
                               else raw.index)
        index.read()
    return index


class IndexTree(_GitTree):
    """What is staged: the content a commit made now would hold (read once, at creation)."""

    def __init__(self, repo: Repo) -> None:
        super().__init__(repo)
        self.label = "index"
        self._index = _index_of(repo.raw)
        self._regular: dict[str, str] | None = None
        self._special: list[tuple[str, str]] | None = None  # symlinks and submodules
        self._paths: list[str] | None = None  # every path, sorted (for ``exists``)

    def _make(self, ie: pygit2.IndexEntry) -> Entry:
        size = blob_size(self.repo.raw, ie.id)
        return Entry(os.fspath(ie.path), str(ie.id), size, ie.mode == LINK_MODE,
                     ie.mode == EXEC_MODE)

    def _lookup(self, path: str) -> pygit2.IndexEntry | None:
        try:
            return self._index[path]
        except KeyError:
            return None

    def entries(self, prefix: str = "") -> list[Entry]:
        out = [self._make(ie) for ie in self._index
               if under(ie.path, prefix) and ie.mode != GITLINK_MODE]
        out.sort(key=lambda e: e.path)
        return out

    def entry(self, path: str) -> Entry | None:
        ie = self._lookup(path)
        # A submodule's entry names a commit of another repository: no file here.
        return None if ie is None or ie.mode == GITLINK_MODE else self._make(ie)

    def blob_shas(self, prefix: str = "") -> dict[str, str]:
        path = prefix.strip("/")
        ie = self._lookup(path) if path and not prefix.endswith("/") else None
        if ie is not None:  # one lookup: the commit hook names single files
            return {} if ie.mode in _GIT_KINDS else {path: str(ie.id)}
        # SHAs from the index alone: reading blob headers for sizes is a measurable
        # share of the commit hook's budget (benchmarks/bench_lint.py, --staged).
        regular, _, _ = self._scan()
        return {p: sha for p, sha in regular.items() if under(p, prefix)}

    def _scan(self) -> tuple[dict[str, str], list[tuple[str, str]], list[str]]:
        """One pass over the index, shared by every listing, ``refused`` and ``exists``:
        regular files (path -> sha), links and submodules (path, what), all paths sorted.
        Each entry costs a Python-level call into pygit2, so the commit hook (which lints
        one named file) makes this pass once at most (benchmarks/bench_lint.py, --staged)."""
        if self._regular is None or self._special is None or self._paths is None:
            regular: dict[str, str] = {}
            special: list[tuple[str, str]] = []
            for ie in self._index:
                path, mode = ie.path, ie.mode
                if mode in _GIT_KINDS:
                    special.append((path, _GIT_KINDS[mode]))
                else:
                    regular[path] = str(ie.id)
            self._regular, self._special = dict(sorted(regular.items())), sorted(special)
            self._paths = sorted([*regular, *(p for p, _ in special)])
        return self._regular, self._special, self._paths

    def exists(self, path: str) -> bool:
        paths = self._scan()[2]
        top = path.strip("/")
        i = bisect.bisect_left(paths, top)  # the file itself
        j = bisect.bisect_left(paths, top + "/")  # the first file below it, were it a dir
        return (i < len(paths) and paths[i] == top) or (
            j < len(paths) and paths[j].startswith(top + "/"))

    def blob_sha(self, path: str) -> str | None:
        ie = self._lookup(path)
        return None if ie is None or ie.mode == GITLINK_MODE else str(ie.id)

    def refused(self, prefix: str) -> dict[str, str]:
        path = prefix.strip("/")
        ie = self._lookup(path) if path and not prefix.endswith("/") else None
        if ie is not None:  # one staged file: one lookup (its parents hold it: no links)
            return {path: _GIT_KINDS[ie.mode]} if ie.mode in _GIT_KINDS else {}
        parents = _prefixes(prefix)
        return {p: what for p, what in self._scan()[1] if under(p, prefix) or p in parents}


def _holds_blob(node: pygit2.Tree | pygit2.Object) -> bool:
    """True for a blob, or a tree with a blob somewhere beneath it."""
    from pygit2 import Blob, Tree

    if not isinstance(node, Tree):
        return isinstance(node, Blob)
    return any(_holds_blob(obj) for obj in node)


class RevisionTree(_GitTree):
    """The tree of one commit, read from git objects alone (no checkout)."""

    def __init__(self, repo: Repo, rev: str) -> None:
        super().__init__(repo)
        commit = commit_of(repo.raw, rev)
        self.commit = str(commit.id)
        self.tree_sha = str(commit.tree.id)
        self.label = f"{rev} ({self.commit[:12]})" if rev != self.commit else self.commit[:12]
        self._tree = commit.tree
        self._dirs: dict[str, pygit2.Tree | pygit2.Blob | None] = {"": commit.tree}

    def _entry(self, obj: pygit2.Object, path: str) -> Entry:
        return Entry(path, str(obj.id), blob_size(self.repo.raw, obj.id),
                     obj.filemode == LINK_MODE, obj.filemode == EXEC_MODE)

    def _walk(self, tree: pygit2.Tree, base: str) -> Iterator[Entry]:
        from pygit2 import Blob

        for obj, path in walk_tree(tree, base):
            if isinstance(obj, Blob):
                yield self._entry(obj, path)

    def _lookup(self, path: str) -> pygit2.Tree | pygit2.Blob | None:
        """The object at ``path`` ('' = the root tree), or None.

        Looked up in its directory's tree, kept once found: a lookup by the whole path
        parses every tree on the way again, and a directory of 1,000 cases costs a third
        of a millisecond to parse -- at every one of the several lookups per case a run
        makes."""
        from pygit2 import Tree

        if path in self._dirs:
            return self._dirs[path]
        parent, _, name = path.rpartition("/")
        if not name or path.startswith("/") or "//" in path:  # not plain: as libgit2 reads it
            return self._bypath(path)
        folder = self._dirs.get(parent, False)
        if folder is False:
            folder = self._dirs[parent] = self._lookup(parent)
        if not isinstance(folder, Tree):
            return None
        try:
            return folder[name]
        except KeyError:
            return None

    def _bypath(self, path: str) -> pygit2.Tree | pygit2.Blob | None:
        try:
            return self._tree[path]
        except KeyError:
            return None

    def entries(self, prefix: str = "") -> list[Entry]:
        from pygit2 import Tree

        top = prefix.strip("/")
        sub = self._lookup(top)
        if not isinstance(sub, Tree):
            e = self.entry(prefix)
            return [e] if e else []
        return sorted(self._walk(sub, top + "/" if top else ""), key=lambda e: e.path)

    def entry(self, path: str) -> Entry | None:
        obj = self._lookup(path)
        return self._entry(obj, path) if obj is not None and obj.type_str == "blob" else None

    def exists(self, path: str) -> bool:
        # One lookup, and a walk that stops at the first file: the base class's listing
        # reads the size of every blob under ``path`` (lint --rev asks this of the root).
        node = self._lookup(path.strip("/"))
        return node is not None and _holds_blob(node)

    def blob_shas(self, prefix: str = "") -> dict[str, str]:
        from pygit2 import Blob, Tree

        top = prefix.strip("/")
        node = self._lookup(top)
        if isinstance(node, Blob):
            regular = node.filemode != LINK_MODE and not prefix.endswith("/")
            return {top: str(node.id)} if regular else {}
        return _tree_shas(node, top + "/" if top else "") if isinstance(node, Tree) else {}

    def blob_sha(self, path: str) -> str | None:
        obj = self._lookup(path)
        return str(obj.id) if obj is not None and obj.type_str == "blob" else None

    def refused(self, prefix: str) -> dict[str, str]:
        from pygit2 import Tree

        for parent in _prefixes(prefix):
            obj = self._lookup(parent)
            if obj is not None and not isinstance(obj, Tree):
                return {parent: _GIT_KINDS.get(obj.filemode, "a file")}
        top = prefix.strip("/")
        node = self._lookup(top)
        if node is None:
            return {}
        if not isinstance(node, Tree):
            return {top: _GIT_KINDS[node.filemode]} if node.filemode in _GIT_KINDS else {}
        out: dict[str, str] = {}
        stack: list[tuple[pygit2.Tree, str]] = [(node, top + "/" if top else "")]
        while stack:
            tree, where = stack.pop()
            for item in tree:
                if item.filemode in _GIT_KINDS:
                    out[f"{where}{item.name}"] = _GIT_KINDS[item.filemode]
                elif isinstance(item, Tree):
                    stack.append((item, f"{where}{item.name}/"))
        return dict(sorted(out.items()))

    def materialize(self, dest: Path) -> None:
        """Write every file of the commit below ``dest`` (for runs, never for lint).

        Every entry is checked before anything is written (``unsafe_entry``): a tree
        built with ``git mktree`` may name an entry ``..`` or hold a symlink out of the
        tree. Regular files are written before symlinks, so no write passes through one.
        """
        bad = next(_bad_names(self._tree, ""), None)
        if bad is not None:
            self._refuse(bad, "is not a plain name (it is '.', '..', '.git', or holds '/' "
                         "or NUL)")
        entries = self.entries()
        raw = self.repo.raw
        for e in entries:
            why = _too_deep(e.path) or unsafe_entry(e, partial(blob_bytes, raw, e.sha))
            if why is not None:
                self._refuse(e.path, why)
        for e in sorted(entries, key=lambda e: e.is_link):
            target = dest / e.path
            target.parent.mkdir(parents=True, exist_ok=True)
            data = blob_bytes(self.repo.raw, e.sha)
            if e.is_link:
                os.symlink(data.decode("utf-8", "surrogateescape"), target)
                continue
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                         0o755 if e.executable else 0o644)
            with open(fd, "wb") as f:
                f.write(data)
        top = os.path.realpath(dest)
        for e in entries:  # links through links: only the resolved path tells
            real = os.path.realpath(dest / e.path) if e.is_link else top
            if os.path.commonpath([top, real]) != top:
                self._refuse(e.path, "is a symlink that leads out of the tree")

    def _refuse(self, path: str, why: str) -> NoReturn:
        shown = path if len(path) <= 120 else f"{path[:120]}…"
        raise RevisionError(f"commit {self.label}: tree entry {shown!r} {why}; refusing to "
                            "write the commit out, nothing was run (fix the commit)")


#: The deepest path and the longest one a run writes out: creating and removing a
#: deeper tree recurses once per level (pathlib, shutil), and the kernel refuses a path
#: past 4,096 bytes (PATH_MAX), of which the work directory's own path takes a part.
MAX_TREE_DEPTH = 200
MAX_PATH_BYTES = 3072


def _too_deep(path: str) -> str | None:
    """Why ``path`` is too deep or too long to write out, or None."""
    depth, size = path.count("/") + 1, len(path.encode("utf-8", "surrogateescape"))
    if depth > MAX_TREE_DEPTH:
        return (f"is {depth:,} levels deep, past the {MAX_TREE_DEPTH} a run "
                "writes out")
    if size > MAX_PATH_BYTES:
        return f"has a path of {size:,} bytes, past the {MAX_PATH_BYTES:,} a run writes out"
    return None


def _bad_names(tree: pygit2.Tree, base: str) -> Iterator[str]:
    """Paths of the entries whose own name could not be written as one plain file name."""
    for obj, path in walk_tree(tree, base, descend=lambda name: not _bad_name(name)):
        if _bad_name(obj.name or ""):
            yield path


def _bad_name(name: str) -> bool:
    return name in _BAD_NAMES or name.lower() == ".git" or "/" in name or "\0" in name


def walk_tree(tree: pygit2.Tree, base: str = "",
              descend: Callable[[str], bool] = lambda name: True
              ) -> Iterator[tuple[pygit2.Object, str]]:
    """Every entry below ``tree`` with its path, in the order a recursive walk gives
    (into the subtrees whose name ``descend`` accepts). Its own stack, not recursion: a
    commit's tree can nest thousands of levels deep (``git mktree`` makes any depth),
    past Python's recursion limit."""
    from pygit2 import Tree

    stack = [(iter(tree), base)]
    while stack:
        items, prefix = stack[-1]
        obj = next(items, None)
        if obj is None:
            stack.pop()
            continue
        name = obj.name or ""
        yield obj, f"{prefix}{name}"
        if isinstance(obj, Tree) and descend(name):
            stack.append((iter(obj), f"{prefix}{name}/"))


_BAD_NAMES = frozenset({"", ".", ".."})


def unsafe_entry(e: Entry, target: Callable[[], bytes]) -> str | None:
    """Why writing ``e`` out could reach outside the tree it is written to, or None.

    Refused: a path component ``.``, ``..`` or ``.git`` (any case), and a symlink whose
    target (``target()``) is absolute, holds NUL or climbs above the top of the tree.
    """
    if any(p in _BAD_NAMES or p.lower() == ".git" for p in e.path.split("/")):
        return "is not a plain path inside the tree (it names '.', '..' or '.git')"
    if not e.is_link:
        return None
    link = target().decode("utf-8", "surrogateescape")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(e.path), link))
    if "\0" in link or posixpath.isabs(link) or resolved == ".." or resolved.startswith("../"):
        return f"is a symlink to {link!r}, which leaves the tree"
    return None


def _tree_shas(tree: pygit2.Tree, base: str) -> dict[str, str]:
    """``path -> sha`` of the regular blobs below ``tree``, from tree objects alone."""
    from pygit2 import Blob, Tree

    out: dict[str, str] = {}
    stack = [(tree, base)]
    while stack:
        node, where = stack.pop()
        for obj in node:
            if isinstance(obj, Tree):
                stack.append((obj, f"{where}{obj.name}/"))
            elif isinstance(obj, Blob) and obj.filemode != LINK_MODE:
                out[f"{where}{obj.name}"] = str(obj.id)
    return dict(sorted(out.items()))


def open_tree(rev: str | None = None, staged: bool = False, start: Path | None = None) -> Tree:
    """The tree a command reads: a revision, the index, or the working tree."""
    if rev is not None and staged:
        raise UsageError("--rev and --staged name two different trees: give one")
    if rev is not None or staged:
        repo = require_repo(start)
        return IndexTree(repo) if staged else RevisionTree(repo, rev or "HEAD")
    found = open_repo(start)
    return WorkingTree(found.work_root if found else (start or Path.cwd()).resolve())


def previous_tree(tree: Tree) -> Tree | None:
    """The tree a commit of ``tree`` follows: a revision's first parent; HEAD for the
    index or a working tree. None for a root commit, an unborn branch, or a directory
    outside any repository (nothing came before it)."""
    if isinstance(tree, RevisionTree):
        with translated("read the parents of a commit"):
            parents = commit_of(tree.repo.raw, tree.commit or "HEAD").parent_ids
        return RevisionTree(tree.repo, str(parents[0])) if parents else None
    repo = tree.repo if isinstance(tree, _GitTree) else open_repo(Path(tree.location))
    if repo is None or repo.raw.head_is_unborn:
        return None
    return RevisionTree(repo, "HEAD")
